/**
 * @fileoverview Benchmarks (DESIGN §5), shared by `npm run bench` (bench/run.ts), `specc bench`
 * and the CI smoke test (tests/bench-smoke.test.ts).
 *
 * One *case* is a spec × a vocabulary × a transcript. The transcript (DESIGN §4) is tokenized with
 * the vocabulary's real tokenizer, segment by segment, and replayed:
 *
 * - specc: prompt text from its first marker is fed with `feedText`, env text with `feedEnv`, and
 *   every LLM token goes through `fillMask` (timed) and `commit`.
 * - XGrammar (`@mlc-ai/web-xgrammar`, the WebAssembly build, in the same process): the grammar is
 *   `emitGrammar(byteDfa, "ebnf")` — the spec's exact language — compiled for a TokenizerInfo built
 *   from the same tokenizer.json with the same special/EOS tokens. Prompt and env tokens are
 *   accepted without timing (the grammar contains the env text), every LLM token goes through the
 *   mask call (timed) and `acceptToken`. The first pass checks that XGrammar accepts every token and
 *   compares its bitmask with specc's at every step.
 * - llama.cpp (node-llama-cpp, `benchLlamaCpp`): the GBNF of the same spec on the small GGUF model's
 *   own 512-token vocabulary; sampling per token with and without the grammar on the same sequence.
 *
 * Timings are process.hrtime.bigint() around one call, reported as percentiles (the timer's own
 * overhead, ~60 ns, is reported, not subtracted). The per-token comparison with XGrammar times R
 * back-to-back calls at each token and divides by R (`perToken`, R = 32 for specc, 4 for XGrammar,
 * whose calls take microseconds), because specc's calls are shorter than the timer itself; both
 * engines are measured the same way. Microbenchmarks also go through benny (ops/s). Nothing
 * here asserts a time: `caseTargets` only compares measurements with DESIGN §5's numbers.
 *
 * Heavy peers (benny, XGrammar, node-llama-cpp) are imported lazily: they are devDependencies.
 */
import { spawnSync, type SpawnSyncReturns } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { arch, cpus, loadavg, platform, release, tmpdir, totalmem } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { compileGrammarSource, compileSource, compileToWasm, isGrammarFile } from "../compiler/compile.js";
import { emitGrammar } from "../compiler/emit-grammar.js";
import type { Compiled } from "../compiler/ir.js";
import { firstMarker, parseTrace, type Trace } from "../compiler/trace.js";
import { encoderFor, exactEncoder } from "./encode.js";
import { sampleTraces } from "./replay.js";
import { Spec, type Matcher } from "./spec.js";
import { Vocabulary } from "./vocab.js";

// ---- Small helpers ---------------------------------------------------------------------------------

export interface BenchIo {
  out(s: string): void;
  err(s: string): void;
}

/** Percentiles of a sample, in nanoseconds (milliseconds where the field name says so). */
export interface Stats {
  n: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

const now = (): bigint => process.hrtime.bigint();
const since = (t0: bigint): number => Number(process.hrtime.bigint() - t0);

export function stats(samples: ArrayLike<number>): Stats {
  const s = Float64Array.from(samples).sort();
  const n = s.length;
  if (n === 0) return { n: 0, p50: NaN, p90: NaN, p99: NaN, max: NaN, mean: NaN };
  const at = (p: number) => s[Math.min(n - 1, Math.floor(p * n))]!;
  let sum = 0;
  for (const x of s) sum += x;
  return { n, p50: at(0.5), p90: at(0.9), p99: at(0.99), max: s[n - 1]!, mean: sum / n };
}

const median = (xs: number[]): number => stats(xs).p50;

/** The repository root (this file is bindings/bench.ts, or dist/bindings/bench.js once built). */
export function repoRoot(): string {
  let d = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 4; i++) {
    const p = join(d, "package.json");
    if (existsSync(p)) {
      try {
        if ((JSON.parse(readFileSync(p, "utf8")) as { name?: string }).name === "specc") return d;
      } catch { /* keep looking */ }
    }
    d = dirname(d);
  }
  return process.cwd();
}

const require = createRequire(import.meta.url);

/** Version of an installed package, or null. */
export function packageVersion(name: string): string | null {
  try {
    return (JSON.parse(readFileSync(require.resolve(`${name}/package.json`), "utf8")) as { version: string }).version;
  } catch {
    try {
      // Packages whose "exports" hide package.json: walk up from the entry point.
      let d = dirname(require.resolve(name));
      for (let i = 0; i < 5; i++, d = dirname(d)) {
        const p = join(d, "package.json");
        if (existsSync(p)) {
          const j = JSON.parse(readFileSync(p, "utf8")) as { name?: string; version?: string };
          if (j.name === name) return j.version ?? null;
        }
      }
    } catch { /* not installed */ }
    return null;
  }
}

export interface MachineInfo {
  cpu: string;
  cores: number;
  memoryGiB: number;
  os: string;
  node: string;
  date: string;
  /** os.loadavg() when the info was taken (the machine may be shared with other work). */
  loadavg: number[];
  packages: Record<string, string | null>;
}

export function machineInfo(): MachineInfo {
  const c = cpus();
  let llamaCpp: string | null = null;
  try {
    let d = dirname(require.resolve("node-llama-cpp"));
    while (!existsSync(join(d, "llama", "llama.cpp.info.json")) && dirname(d) !== d) d = dirname(d);
    const info = join(d, "llama", "llama.cpp.info.json");
    llamaCpp = (JSON.parse(readFileSync(info, "utf8")) as { tag?: string }).tag ?? null;
  } catch { /* not installed */ }
  let specc: string | null = null;
  try {
    specc = (JSON.parse(readFileSync(join(repoRoot(), "package.json"), "utf8")) as { version: string }).version;
  } catch { /* not in the repository */ }
  return {
    cpu: c[0]?.model.trim() ?? "unknown",
    cores: c.length,
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    os: `${platform()} ${release()} ${arch()}`,
    node: process.version,
    date: new Date().toISOString(),
    loadavg: loadavg().map((x) => Math.round(x * 100) / 100),
    packages: {
      specc,
      "@mlc-ai/web-xgrammar": packageVersion("@mlc-ai/web-xgrammar"),
      benny: packageVersion("benny"),
      "node-llama-cpp": packageVersion("node-llama-cpp"),
      "llama.cpp (release named by node-llama-cpp)": llamaCpp,
      "@lenml/tokenizers": packageVersion("@lenml/tokenizers"),
    },
  };
}

// ---- Transcript → token steps ---------------------------------------------------------------------

/** One segment of a transcript, tokenized with the real tokenizer. */
export interface ReplaySegment {
  by: "prompt" | "llm" | "env";
  /** Text handed to specc (a first prompt segment is cut at its first marker). */
  text: string;
  tokens: number[];
}

export interface Replay {
  segments: ReplaySegment[];
  llmTokens: number;
  promptTokens: number;
  envTokens: number;
}

/**
 * Tokenizes a transcript segment by segment (DESIGN §4): prompt text before the first marker is
 * context and dropped; the rest of the prompt, the env answers and the LLM text are tokenized with
 * `encode` (which must spell each segment's bytes exactly: see `exactEncoder`).
 */
export function tokenizeTrace(trace: Trace, markers: string[], encode: (text: string) => number[]): Replay {
  const segments: ReplaySegment[] = [];
  let started = false;
  const count = { llm: 0, prompt: 0, env: 0 };
  for (const seg of trace.segments) {
    let text = seg.text;
    if (seg.by === "prompt" && !started) {
      const at = firstMarker(text, markers);
      if (at < 0) continue;
      text = text.slice(at);
    }
    started = true;
    if (text.length === 0) continue;
    const tokens = encode(text);
    count[seg.by] += tokens.length;
    segments.push({ by: seg.by, text, tokens });
  }
  return { segments, llmTokens: count.llm, promptTokens: count.prompt, envTokens: count.env };
}

/** Drives a specc matcher through a replay; `onToken` runs before each LLM token's commit. */
function replaySpecc(m: Matcher, r: Replay, onToken: (m: Matcher, tok: number) => void): void {
  m.reset();
  for (const seg of r.segments) {
    if (seg.by === "env") m.feedEnv(seg.text);
    else if (seg.by === "prompt") m.feedText(seg.text);
    else {
      for (const tok of seg.tokens) {
        onToken(m, tok);
        if (m.commit(tok) === "rejected") throw new Error(`specc rejected token ${tok} of a conformant transcript`);
      }
    }
  }
}

// ---- Vocabularies ----------------------------------------------------------------------------------

/** A tokenizer.json, loaded once per run: specc's vocabulary, the real tokenizer, the raw pieces. */
export interface LoadedVocab {
  name: string;
  path: string;
  vocab: Vocabulary;
  encode: (text: string) => number[];
  /** Token strings by id as written in tokenizer.json (model vocab, then added tokens). */
  pieces: string[];
  /** The decoder family as XGrammar names it. */
  xgrammarVocabType: "byte_level" | "byte_fallback" | "raw";
  loadMs: number;
}

export async function loadVocab(path: string, name = basename(dirname(dirname(path)))): Promise<LoadedVocab> {
  const t0 = now();
  const json = JSON.parse(readFileSync(path, "utf8")) as {
    model: { vocab: Record<string, number> | [string, number][] };
    added_tokens?: { id: number; content: string }[];
    decoder?: { type?: string; decoders?: { type?: string }[] } | null;
  };
  const vocab = Vocabulary.fromTokenizerJsonObject(json, {}, path);
  const loadMs = since(t0) / 1e6;
  const pieces: string[] = [];
  const v = json.model.vocab;
  if (Array.isArray(v)) v.forEach((e, i) => (pieces[i] = e[0]));
  else for (const k in v) pieces[v[k]!] = k;
  for (const a of json.added_tokens ?? []) pieces[a.id] = a.content;
  const dec = json.decoder;
  const decoders = dec?.type === "Sequence" ? (dec.decoders ?? []) : dec ? [dec] : [];
  const xgrammarVocabType = decoders.some((d) => d?.type === "ByteLevel") ? "byte_level" : decoders.some((d) => d?.type === "ByteFallback") ? "byte_fallback" : "raw";
  const encode = exactEncoder(await encoderFor(path), (id) => vocab.tokenBytes(id));
  return { name, path, vocab, encode, pieces, xgrammarVocabType, loadMs };
}

// ---- XGrammar ------------------------------------------------------------------------------------------

/* The parts of @mlc-ai/web-xgrammar used here (its classes' public API plus the raw binding handle). */
interface XgrVector { size(): number; get(i: number): string; delete(): void }
interface XgrTokenizerInfo { getVocabSize(): number; getDecodedVocabHandle(): XgrVector; dispose(): void }
interface XgrCompiled { dispose(): void }
interface XgrCompiler { compileGrammar(g: string): Promise<XgrCompiled>; dispose(): void }
interface XgrMatcher {
  acceptToken(id: number): boolean;
  getNextTokenBitmask(): Promise<Int32Array>;
  isTerminated(): boolean;
  reset(): void;
  dispose(): void;
  /** @internal the embind handle: GetNextTokenBitmask(vocabSize) fills a fresh std::vector. */
  handle: { GetNextTokenBitmask(vocabSize: number): XgrVector };
  vocab_size: number;
}
export interface XGrammarModule {
  TokenizerInfo: { createTokenizerInfo(vocab: string[], type: string, prependSpace: boolean, vocabSize?: number, stop?: number[]): Promise<XgrTokenizerInfo> };
  GrammarCompiler: { createGrammarCompiler(ti: XgrTokenizerInfo, cache?: boolean): Promise<XgrCompiler> };
  GrammarMatcher: { createGrammarMatcher(cg: XgrCompiled, stop?: number[], terminateWithoutStop?: boolean): Promise<XgrMatcher> };
}

let xgrammarModule: Promise<XGrammarModule> | undefined;

/**
 * Loads @mlc-ai/web-xgrammar in Node. Its lib/index.js is a UMD bundle for browsers: imported as
 * an ES module (its package.json says "type": "module") it exports nothing and sets
 * `globalThis.xgrammar`, and it reads `require('url')` and `__filename` — CommonJS globals an ES
 * module does not have — both when it is evaluated and when the Emscripten module starts (the
 * first API call). So both are provided on globalThis for the import and that first call, then
 * removed again.
 */
export function loadXGrammar(): Promise<XGrammarModule> {
  xgrammarModule ??= (async () => {
    let entry: string;
    try {
      entry = require.resolve("@mlc-ai/web-xgrammar");
    } catch {
      throw new Error("@mlc-ai/web-xgrammar is not installed (npm install -D @mlc-ai/web-xgrammar)");
    }
    const g = globalThis as Record<string, unknown>;
    const saved = { require: g["require"], __filename: g["__filename"] };
    g["require"] = require;
    g["__filename"] = entry;
    try {
      if (!g["xgrammar"]) await import(pathToFileURL(entry).href);
      const x = g["xgrammar"] as XGrammarModule | undefined;
      if (!x?.TokenizerInfo) throw new Error(`${entry} did not define globalThis.xgrammar`);
      (await x.TokenizerInfo.createTokenizerInfo([""], "raw", false)).dispose(); // starts the wasm module
      return x;
    } finally {
      for (const k of ["require", "__filename"] as const) {
        if (saved[k] === undefined) delete g[k];
        else g[k] = saved[k];
      }
    }
  })();
  return xgrammarModule;
}

/**
 * XGrammar's TokenizerInfo for a vocabulary: the tokenizer.json's own token strings with its
 * decoder type (what `TokenizerInfo.from_huggingface` would read), except that every token specc
 * treats as special is given as "" (XGrammar's marker for a special token: never allowed) and the
 * EOS ids are passed as the stop tokens, so both engines work on the same token set.
 */
export async function xgrammarTokenizerInfo(x: XGrammarModule, v: LoadedVocab): Promise<{ info: XgrTokenizerInfo; ms: number; decodedMismatches: { count: number; checked: number; examples: { id: number; piece: string; specc: string; xgrammar: string }[] } }> {
  const { vocab, pieces } = v;
  const enc: string[] = new Array<string>(vocab.size);
  for (let id = 0; id < vocab.size; id++) enc[id] = vocab.isSpecial(id) && !vocab.isEos(id) ? "" : (pieces[id] ?? "");
  const t0 = now();
  const info = await x.TokenizerInfo.createTokenizerInfo(enc, v.xgrammarVocabType, vocab.addsPrefixSpace, vocab.size, [...vocab.eos]);
  const ms = since(t0) / 1e6;
  // Does XGrammar decode every token to the bytes specc uses? (Where specc's bytes are valid UTF-8:
  // the binding hands back JS strings, so lone bytes cannot be compared.)
  const dv = info.getDecodedVocabHandle();
  const td = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
  const examples: { id: number; piece: string; specc: string; xgrammar: string }[] = [];
  let count = 0;
  let checked = 0;
  try {
    for (let id = 0; id < vocab.size; id++) {
      const b = vocab.tokenBytes(id);
      if (!b) continue;
      let s: string;
      try {
        s = td.decode(b);
      } catch {
        continue;
      }
      checked++;
      const got = dv.get(id);
      if (got !== s) {
        count++;
        if (examples.length < 5) examples.push({ id, piece: pieces[id] ?? "", specc: s, xgrammar: got });
      }
    }
  } finally {
    dv.delete();
  }
  return { info, ms, decodedMismatches: { count, checked, examples } };
}

/** as-emitted: the EBNF `specc compile --emit ebnf` writes; original: a .gbnf/.ebnf spec's own text. */
export type XGrammarVariant = "as-emitted" | "original";

export interface MaskDiffExample {
  step: number;
  afterFirstEnv: boolean;
  context: string;
  nextToken: string;
  onlySpecc: number;
  onlyXGrammar: number;
  /** Differing tokens that are not well-formed UTF-8 from a character boundary. */
  illFormedUtf8: number;
  sample: { id: number; text: string; allowedBy: "specc" | "xgrammar" }[];
}

export interface XGrammarResult {
  variant: XGrammarVariant;
  version: string | null;
  grammarChars: number;
  tokenizerInfoMs: number;
  compileMs: number;
  /** Timed: the binding's GetNextTokenBitmask (FillNextTokenBitmask into a fresh 16 KB std::vector, no copy out). */
  fill: Stats;
  /** Timed once per token in one pass: `await matcher.getNextTokenBitmask()` (the public API, copies to an Int32Array). */
  fillPublicApi: Stats;
  acceptToken: Stats;
  /** Back-to-back calls timed together per token (see the file note). */
  reps: number;
  /** XGrammar fill p50 / specc's per-token fillMask p50 (the 16 KB copy into the caller's Int32Array), and p99 / p99. */
  ratioP50: number;
  ratioP99: number;
  /** XGrammar fill p50 / specc's per-token zero-copy maskView p50, and p99 / p99. */
  ratioViewP50: number;
  ratioViewP99: number;
  /** Tokens of the conformant transcript XGrammar did not accept (must be empty). */
  rejected: { segment: number; by: string; index: number; token: number; text: string; context: string }[];
  /** EOS accepted at the end and the matcher terminated. */
  endsWithEos: boolean;
  masks: {
    compared: number;
    differing: number;
    differingBeforeFirstEnv: number;
    stepsBeforeFirstEnv: number;
    bitsOnlySpecc: number;
    bitsOnlyXGrammar: number;
    /** Of the differing bits: tokens that are not well-formed UTF-8 from a character boundary (see wellFormedUtf8Start). */
    bitsIllFormedUtf8: number;
    /** Steps (before the first env text) whose differences are not all such tokens. */
    differingBeforeFirstEnvBeyondUtf8: number;
    examples: MaskDiffExample[];
  };
  decodedVocab: { checked: number; mismatches: number; examples: { id: number; piece: string; specc: string; xgrammar: string }[] };
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** A token's text for reports: its characters, or its bytes as \xHH where they are not UTF-8. */
const tokenText = (v: Vocabulary, id: number): string => {
  const b = v.tokenBytes(id);
  if (!b) return v.isEos(id) ? `<eos ${id}>` : `<special ${id}>`;
  try {
    return strictUtf8.decode(b);
  } catch {
    return [...b].map((x) => (x >= 0x20 && x < 0x7f ? String.fromCharCode(x) : "\\x" + x.toString(16).padStart(2, "0"))).join("");
  }
};

/**
 * Whether bytes can start at a character boundary of well-formed UTF-8 (a complete text, possibly
 * cut inside its last character). Tokens that cannot — a lone continuation byte, 0xC0/0xC1/0xF5–0xFF,
 * a surrogate's encoding — can only be allowed by an engine that works on bytes, like specc's
 * automaton, not by a grammar over code points.
 */
export function wellFormedUtf8Start(b: Uint8Array): boolean {
  let i = 0;
  while (i < b.length) {
    const c = b[i]!;
    const need = c < 0x80 ? 1 : c >= 0xc2 && c < 0xe0 ? 2 : c >= 0xe0 && c < 0xf0 ? 3 : c >= 0xf0 && c < 0xf5 ? 4 : 0;
    if (need === 0) return false;
    for (let k = 1; k < need; k++) {
      if (i + k >= b.length) return true; // cut inside the last character
      const d = b[i + k]!;
      if ((d & 0xc0) !== 0x80) return false;
      if (k === 1 && ((c === 0xe0 && d < 0xa0) || (c === 0xed && d >= 0xa0) || (c === 0xf0 && d < 0x90) || (c === 0xf4 && d >= 0x90))) return false;
    }
    i += need;
  }
  return true;
};

/** Per vocabulary: the TokenizerInfo and compiler, shared by the specs of a run. */
export interface XGrammarVocab {
  x: XGrammarModule;
  info: XgrTokenizerInfo;
  compiler: XgrCompiler;
  infoMs: number;
  decoded: { checked: number; mismatches: number; examples: { id: number; piece: string; specc: string; xgrammar: string }[] };
}

export async function prepareXGrammarVocab(v: LoadedVocab): Promise<XGrammarVocab> {
  const x = await loadXGrammar();
  const { info, ms, decodedMismatches } = await xgrammarTokenizerInfo(x, v);
  const compiler = await x.GrammarCompiler.createGrammarCompiler(info, false);
  return { x, info, compiler, infoMs: ms, decoded: { checked: decodedMismatches.checked, mismatches: decodedMismatches.count, examples: decodedMismatches.examples } };
}

export function disposeXGrammarVocab(xv: XGrammarVocab): void {
  xv.compiler.dispose();
  xv.info.dispose();
}

/**
 * XGrammar on one case: compile the spec's EBNF as emitted (or a grammar spec's own text), then replay
 * the transcript: a checking pass (every token accepted? bitmask equal to specc's at each step?)
 * and `iterations` timed passes.
 */
export async function benchXGrammar(xv: XGrammarVocab, c: PreparedCase, variant: XGrammarVariant, iterations: number, specc: PerToken): Promise<XGrammarResult> {
  const { vocab } = c.vocab;
  const emitted = emitGrammar(c.compiled.byteDfa, "ebnf", c.compiled.ir.name);
  // For a grammar spec, XGrammar also gets the grammar text itself: its pushdown automaton on the
  // real grammar (unbounded nesting) against specc's bounded-nesting DFA.
  const grammar = variant === "original" ? readFileSync(c.specPath, "utf8") : emitted;
  let t0 = now();
  const cg = await xv.compiler.compileGrammar(grammar);
  const compileMs = since(t0) / 1e6;
  const m = await xv.x.GrammarMatcher.createGrammarMatcher(cg);
  const words = c.spec.maskWords;
  const vsize = m.vocab_size;
  const specMask = new Int32Array(words);
  const sm = c.spec.matcher();
  const rejected: XGrammarResult["rejected"] = [];
  const masks: XGrammarResult["masks"] = { compared: 0, differing: 0, differingBeforeFirstEnv: 0, stepsBeforeFirstEnv: 0, bitsOnlySpecc: 0, bitsOnlyXGrammar: 0, bitsIllFormedUtf8: 0, differingBeforeFirstEnvBeyondUtf8: 0, examples: [] };
  const wellFormed = new Uint8Array(vocab.size);
  for (let id = 0; id < vocab.size; id++) { const b = vocab.tokenBytes(id); wellFormed[id] = b === null || wellFormedUtf8Start(b) ? 1 : 0; }
  const publicTimes: number[] = [];
  let context = "";
  let afterEnv = false;
  let step = 0;
  const compare = async (next: number | null) => {
    sm.fillMask(specMask);
    const a = now();
    const xm = await m.getNextTokenBitmask();
    publicTimes.push(since(a));
    let onlyS = 0;
    let onlyX = 0;
    let ill = 0;
    const sample: MaskDiffExample["sample"] = [];
    const illSample: MaskDiffExample["sample"] = [];
    for (let wi = 0; wi < words; wi++) {
      let sx = specMask[wi]! ^ xm[wi]!;
      if (wi === words - 1 && (vocab.size & 31)) sx &= (1 << (vocab.size & 31)) - 1;
      while (sx) {
        const bit = 31 - Math.clz32(sx & -sx);
        sx &= sx - 1;
        const id = wi * 32 + bit;
        const bySpecc = ((specMask[wi]! >>> bit) & 1) === 1;
        if (bySpecc) onlyS++;
        else onlyX++;
        const item = { id, text: tokenText(vocab, id), allowedBy: bySpecc ? "specc" as const : "xgrammar" as const };
        if (!wellFormed[id]) {
          ill++;
          if (illSample.length < 4) illSample.push(item);
        } else if (sample.length < 4) sample.push(item);
      }
    }
    while (sample.length < 4 && illSample.length) sample.push(illSample.shift()!);
    masks.bitsIllFormedUtf8 += ill;
    masks.compared++;
    if (!afterEnv) masks.stepsBeforeFirstEnv++;
    if (onlyS + onlyX > 0) {
      masks.differing++;
      if (!afterEnv) masks.differingBeforeFirstEnv++;
      if (!afterEnv && ill < onlyS + onlyX) masks.differingBeforeFirstEnvBeyondUtf8++;
      masks.bitsOnlySpecc += onlyS;
      masks.bitsOnlyXGrammar += onlyX;
      // Keep a few examples: the first step differing only in ill-formed UTF-8 tokens, the first
      // steps with other differences before the first env text, and the first one after it.
      const ex: MaskDiffExample = { step, afterFirstEnv: afterEnv, context: context.slice(-48), nextToken: next === null ? "(end)" : tokenText(vocab, next), onlySpecc: onlyS, onlyXGrammar: onlyX, illFormedUtf8: ill, sample };
      const kind = afterEnv ? "env" : ill === onlyS + onlyX ? "utf8" : "other";
      const have = masks.examples.filter((e) => (e.afterFirstEnv ? "env" : e.illFormedUtf8 === e.onlySpecc + e.onlyXGrammar ? "utf8" : "other") === kind).length;
      if (have < (kind === "other" ? 3 : 1)) masks.examples.push(ex);
    }
  };
  // Checking pass.
  sm.reset();
  let ok = true;
  for (let si = 0; si < c.replay.segments.length && ok; si++) {
    const seg = c.replay.segments[si]!;
    if (seg.by === "env") sm.feedEnv(seg.text);
    else if (seg.by === "prompt") sm.feedText(seg.text);
    for (let k = 0; k < seg.tokens.length; k++) {
      const tok = seg.tokens[k]!;
      if (seg.by === "llm") await compare(tok);
      if (!m.acceptToken(tok)) {
        rejected.push({ segment: si, by: seg.by, index: k, token: tok, text: tokenText(vocab, tok), context: context.slice(-60) });
        ok = false;
        break;
      }
      if (seg.by === "llm") {
        sm.commit(tok);
        step++;
      }
      context += tokenText(vocab, tok);
    }
    if (seg.by === "env") afterEnv = true;
  }
  let endsWithEos = false;
  if (ok) {
    await compare(null);
    const eos = vocab.eos[0];
    if (eos !== undefined) endsWithEos = m.acceptToken(eos) && m.isTerminated();
  }
  // Timed passes: the binding's call, which is what getNextTokenBitmask does minus the copy out.
  const fillTimes: number[] = [];
  const acceptTimes: number[] = [];
  if (ok) {
    for (let it = 0; it < iterations; it++) {
      m.reset();
      for (const seg of c.replay.segments) {
        for (const tok of seg.tokens) {
          if (seg.by === "llm") {
            t0 = now();
            for (let r = 0; r < XGRAMMAR_REPS; r++) m.handle.GetNextTokenBitmask(vsize).delete();
            fillTimes.push(since(t0) / XGRAMMAR_REPS);
            t0 = now();
            m.acceptToken(tok);
            acceptTimes.push(since(t0));
          } else m.acceptToken(tok);
        }
      }
    }
  }
  m.dispose();
  cg.dispose();
  const fill = stats(fillTimes);
  return {
    variant,
    version: packageVersion("@mlc-ai/web-xgrammar"),
    grammarChars: grammar.length,
    tokenizerInfoMs: xv.infoMs,
    compileMs,
    fill,
    fillPublicApi: stats(publicTimes),
    acceptToken: stats(acceptTimes),
    reps: XGRAMMAR_REPS,
    ratioP50: fill.p50 / specc.fill.p50,
    ratioP99: fill.p99 / specc.fill.p99,
    ratioViewP50: fill.p50 / specc.view.p50,
    ratioViewP99: fill.p99 / specc.view.p99,
    rejected,
    endsWithEos,
    masks,
    decodedVocab: xv.decoded,
  };
}

// ---- specc suites -----------------------------------------------------------------------------------

export interface PreparedCase {
  specPath: string;
  specName: string;
  vocab: LoadedVocab;
  tracePath: string;
  compiled: Compiled;
  wasm: Uint8Array;
  spec: Spec;
  replay: Replay;
  loadMs: number;
  /** How the spec was compiled (re-used to time the in-process compile). */
  compile: (path: string) => Compiled;
}

/** Default seed transcripts of the example specs (each conforms: tests/fixtures/traces/index.json). */
export const DEFAULT_TRACES: Record<string, string> = {
  "react.agent": "tests/fixtures/traces/001-fig7-react-hotpotqa-colorado.json",
  "react-brackets.agent": "tests/fixtures/traces/000-fig1-react-milhouse.json",
  "reflexion.agent": "tests/fixtures/traces/reflexion-two-trials.json",
  "chat-bot.agent": "tests/fixtures/traces/chat-bot-two-turns.json",
  "react-tools.agent": "tests/fixtures/traces/001-fig1-react-fever-beautiful.json",
  "react-calculator.agent": "tests/fixtures/traces/calc-gsm8k-natalia.json",
  "tool-json.agent": "tests/fixtures/traces/json-weather.json",
  "json.gbnf": "bench/traces/json-nested.json",
  "arithmetic.gbnf": "bench/traces/arith-nested.json",
};

/** A spec file compiled the way `specc compile` would (an agent spec, or a standalone grammar). */
export function compileSpecFile(p: string): Compiled {
  const text = readFileSync(p, "utf8");
  return isGrammarFile(p) ? compileGrammarSource(text, p) : compileSource(text, p);
}

/**
 * Compiles a spec and loads it with a vocabulary; tokenizes its transcript (the given one, the
 * spec's default seed transcript, or — for any other spec — a seeded sample under the masks).
 */
export async function prepareCase(specPath: string, v: LoadedVocab, tracePath?: string, compile: (path: string) => Compiled = compileSpecFile): Promise<PreparedCase> {
  const compiled = compile(specPath);
  const wasm = compileToWasm(compiled);
  const t0 = now();
  const spec = await Spec.load(wasm, { vocab: v.vocab });
  const loadMs = since(t0) / 1e6;
  const markers = spec.states.map((s) => s.marker);
  let trace: Trace;
  let tp = tracePath ?? DEFAULT_TRACES[basename(specPath)];
  if (tp && !tracePath) tp = join(repoRoot(), tp);
  if (tp && existsSync(tp)) {
    trace = parseTrace(readFileSync(tp, "utf8"), tp);
  } else if (tracePath) {
    throw new Error(`${tracePath}: no such file`);
  } else {
    trace = sampleTraces(spec, v.vocab, { n: 1, seed: 1, maxStateTokens: 12 })[0]!;
    tp = "(sampled under the masks, seed 1)";
  }
  const replay = tokenizeTrace(trace, markers, v.encode);
  return { specPath, specName: basename(specPath), vocab: v, tracePath: tp, compiled, wasm, spec, replay, loadMs, compile };
}

export interface CaseResult {
  spec: string;
  vocab: string;
  vocabSize: number;
  trace: string;
  tokens: { llm: number; prompt: number; env: number };
  byteStates: number;
  /** A pushdown grammar: masks per configuration (no full precompute; `cold` = first mask of each configuration reached). */
  pushdown?: boolean;
  /** A standalone grammar or an agent spec with grammar content: DESIGN §5's per-token target against XGrammar is ≥ 10× (grammars), not ≥ 100×. */
  grammar?: boolean;
  distinctMasks: number;
  wasmBytes: number;
  /** Spec.load with the vocabulary (trie build, copy, validation), ms. */
  loadMs: number;
  timerOverheadNs: number;
  /** Warm fillMask (the 16 KB copy into the caller's Int32Array included), per LLM token. */
  warmFill: Stats;
  /** Zero-copy maskView(), per LLM token. */
  warmView: Stats;
  /** The same two calls without the timer's cost: R back-to-back calls per token, divided by R. */
  perToken: PerToken;
  /** First visit of each state on a freshly loaded spec (lazy mask computation). */
  cold: Stats;
  precomputeMs: number;
  commit: Stats;
  /** fillMask + commit per token, amortized over whole replays without timers. */
  stepAmortizedNs: number;
  batch256: Stats;
  batch256Raw: Stats;
  memory: {
    matcherRecordBytes: number;
    matcherWasmBytesAmortized: number;
    matcherJsBytes: number | null;
    maskCacheBytes: number;
    instanceBytesLoaded: number;
    instanceBytesPrecomputed: number;
  };
  compile: {
    /** compileSource + compileToWasm in this process, median, ms. */
    inProcessMs: number;
    /** In-process compile + Spec.load(vocab) + precompute: all masks ready (compare: XGrammar's compile). */
    readyMs: number;
  };
  benny?: BennyResult[];
  xgrammar?: XGrammarResult[];
}

/** Per-token cost of the warm mask calls, timed R calls at a time (the calls are shorter than the timer). */
export interface PerToken {
  reps: number;
  /** fillMask: the 16 KB copy into the caller's Int32Array included. */
  fill: Stats;
  /** maskView: the cached mask, read in place (no copy). */
  view: Stats;
  /** The copy alone: `Int32Array.set` of one cached mask into the same buffer, no runtime call (the floor of `fill`). */
  copyOnly: Stats;
}

/** Back-to-back calls per timed sample in `PerToken` (specc) and in XGrammar's timed passes. */
export const SPECC_REPS = 32;
export const XGRAMMAR_REPS = 4;

export interface BennyResult {
  name: string;
  ops: number;
  /** ± relative margin of error, %. */
  margin: number;
  samples: number;
  nsPerOp: number;
}

export interface CaseOptions {
  /** Timed replays of the transcript for fillMask / commit. */
  iterations: number;
  /** Samples of the 256-sequence batch. */
  batchSamples: number;
  /** Matchers created for the memory figure. */
  memoryMatchers: number;
  /** In-process compile repetitions. */
  compileRuns: number;
}

/** Timer overhead: two hrtime.bigint() calls back to back, p50. */
export function timerOverhead(): number {
  const o = new Float64Array(20_000);
  for (let i = 0; i < o.length; i++) {
    const a = now();
    o[i] = since(a);
  }
  return stats(o).p50;
}

/** The specc suites of one case (everything but the peers and benny). */
export async function benchSpecc(c: PreparedCase, o: CaseOptions): Promise<CaseResult> {
  const { spec, replay, wasm, compiled } = c;
  const v = c.vocab.vocab;
  const words = spec.maskWords;
  const bitmask = new Int32Array(words);

  // Cold: a fresh instance, the first mask request of every state. A pushdown grammar's masks
  // belong to configurations (state + stack), which exist only once a run reaches them: there the
  // cold figure is the first mask of each configuration the transcript reaches, and there is no
  // "full precompute" (the configurations are unbounded).
  const fresh = await Spec.load(wasm, { vocab: v });
  let coldNs: Float64Array;
  if (spec.pushdown) {
    const seen = new Set<number>();
    const cold: number[] = [];
    const fm = fresh.matcher();
    replaySpecc(fm, replay, (x) => {
      if (seen.has(x.state)) return;
      seen.add(x.state);
      const a = now();
      x.fillMask(bitmask);
      cold.push(since(a));
    });
    coldNs = Float64Array.from(cold);
  } else {
    coldNs = new Float64Array(fresh.stateCount);
    for (let s = 0; s < coldNs.length; s++) {
      const a = now();
      fresh.exports.mask_id(s);
      coldNs[s] = since(a);
    }
  }
  // Full precompute on another fresh instance (pushdown: one replay instead, see above).
  const fresh2 = await Spec.load(wasm, { vocab: v });
  const instanceBytesLoaded = fresh2.exports.memory.buffer.byteLength;
  let t0 = now();
  let distinct: number;
  let precomputeMs: number;
  if (spec.pushdown) {
    replaySpecc(fresh2.matcher(), replay, (x) => x.fillMask(bitmask));
    distinct = fresh2.distinctMasks;
    precomputeMs = NaN;
  } else {
    distinct = fresh2.precompute();
    precomputeMs = since(t0) / 1e6;
  }
  const instanceBytesPrecomputed = fresh2.exports.memory.buffer.byteLength;

  // Warm: every state of the transcript visited once, then the JIT warmed up.
  const m = spec.matcher();
  for (let i = 0; i < 10; i++) replaySpecc(m, replay, (x) => x.fillMask(bitmask));
  const overhead = timerOverhead();
  const n = replay.llmTokens * o.iterations;
  const fill = new Float64Array(n);
  let k = 0;
  for (let it = 0; it < o.iterations; it++) {
    replaySpecc(m, replay, (x) => {
      const a = now();
      x.fillMask(bitmask);
      fill[k++] = since(a);
    });
  }
  const view = new Float64Array(n);
  let sink = 0;
  k = 0;
  for (let it = 0; it < o.iterations; it++) {
    replaySpecc(m, replay, (x) => {
      const a = now();
      sink ^= x.maskView()[0]!;
      view[k++] = since(a);
    });
  }
  // Per token without the timer's cost: SPECC_REPS calls at each token, timed together.
  const repFill = new Float64Array(n);
  const repView = new Float64Array(n);
  k = 0;
  for (let it = 0; it < o.iterations; it++) {
    replaySpecc(m, replay, (x) => {
      let a = now();
      for (let r = 0; r < SPECC_REPS; r++) x.fillMask(bitmask);
      repFill[k] = since(a) / SPECC_REPS;
      a = now();
      for (let r = 0; r < SPECC_REPS; r++) sink ^= x.maskView()[0]!;
      repView[k++] = since(a) / SPECC_REPS;
    });
  }
  // The copy alone, the floor of fillMask: the same bytes between the same two buffers.
  const src = spec.maskAt(spec.exports.m_mask(m.handle));
  const copyOnly = new Float64Array(Math.min(n, 4000));
  for (let i = 0; i < copyOnly.length; i++) {
    const a = now();
    for (let r = 0; r < SPECC_REPS; r++) bitmask.set(src);
    copyOnly[i] = since(a) / SPECC_REPS;
  }
  // commit alone
  const commit: number[] = [];
  for (let it = 0; it < o.iterations; it++) {
    m.reset();
    for (const seg of replay.segments) {
      if (seg.by === "env") m.feedEnv(seg.text);
      else if (seg.by === "prompt") m.feedText(seg.text);
      else {
        for (const tok of seg.tokens) {
          const a = now();
          m.commit(tok);
          commit.push(since(a));
        }
      }
    }
  }
  t0 = now();
  for (let it = 0; it < o.iterations; it++) replaySpecc(m, replay, (x) => x.fillMask(bitmask));
  const stepAmortizedNs = since(t0) / Math.max(1, o.iterations * replay.llmTokens);

  // Batch of 256 matchers spread over the transcript's positions.
  const { batch } = batchMatchers(spec, replay);
  const out = new Int32Array(256 * words);
  for (let i = 0; i < 20; i++) spec.fillMasks(batch, out);
  const bs = new Float64Array(o.batchSamples);
  for (let i = 0; i < bs.length; i++) {
    const a = now();
    spec.fillMasks(batch, out);
    bs[i] = since(a);
  }
  const ex = spec.exports;
  const handles = ex.out_ptr(256 * 4 + 256 * words * 4);
  new Int32Array(ex.memory.buffer, handles, 256).set(batch.map((b) => b.handle));
  const bsRaw = new Float64Array(o.batchSamples);
  for (let i = 0; i < bsRaw.length; i++) {
    const a = now();
    ex.fill_masks(handles, 256, handles + 256 * 4);
    bsRaw[i] = since(a);
  }

  // Memory per matcher: wasm growth (the record array doubles) and the JS wrapper.
  const mem0 = fresh2.exports.memory.buffer.byteLength;
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  const heap0 = process.memoryUsage().heapUsed;
  const many: Matcher[] = [];
  for (let i = 0; i < o.memoryMatchers; i++) many.push(fresh2.matcher());
  gc?.();
  const heap1 = process.memoryUsage().heapUsed;
  const grown = fresh2.exports.memory.buffer.byteLength - mem0;
  if (many.length < 0 || sink === 0.5) throw new Error("unreachable");

  // In-process compile time (reading the file included).
  const ct: number[] = [];
  for (let i = 0; i < o.compileRuns; i++) {
    t0 = now();
    compileToWasm(c.compile(c.specPath));
    ct.push(since(t0) / 1e6);
  }
  const inProcessMs = median(ct);
  t0 = now();
  const ready = await Spec.load(compileToWasm(c.compile(c.specPath)), { vocab: v });
  if (!spec.pushdown) ready.precompute();
  const readyMs = inProcessMs + since(t0) / 1e6;

  return {
    spec: c.specName,
    vocab: c.vocab.name,
    vocabSize: v.size,
    trace: c.tracePath.startsWith(repoRoot()) ? c.tracePath.slice(repoRoot().length + 1) : c.tracePath,
    tokens: { llm: replay.llmTokens, prompt: replay.promptTokens, env: replay.envTokens },
    byteStates: compiled.byteDfa.nStates,
    pushdown: spec.pushdown,
    grammar: "grammar" in compiled || compiled.ir.states.some((st) => st.content.kind === "grammar"),
    distinctMasks: distinct,
    wasmBytes: wasm.length,
    loadMs: c.loadMs,
    timerOverheadNs: overhead,
    warmFill: stats(fill),
    warmView: stats(view),
    perToken: { reps: SPECC_REPS, fill: stats(repFill), view: stats(repView), copyOnly: stats(copyOnly) },
    cold: stats(coldNs),
    precomputeMs,
    commit: stats(commit),
    stepAmortizedNs,
    batch256: stats(bs),
    batch256Raw: stats(bsRaw),
    memory: {
      matcherRecordBytes: MATCHER_RECORD_BYTES,
      matcherWasmBytesAmortized: grown / o.memoryMatchers,
      matcherJsBytes: gc ? (heap1 - heap0) / o.memoryMatchers : null,
      maskCacheBytes: distinct * words * 4,
      instanceBytesLoaded,
      instanceBytesPrecomputed,
    },
    compile: { inProcessMs, readyMs },
  };
}

/** Bytes of one matcher record in the runtime's linear memory (runtime-wasm/index.ts, REC). */
export const MATCHER_RECORD_BYTES = readRecordBytes();

function readRecordBytes(): number {
  try {
    const src = readFileSync(join(repoRoot(), "runtime-wasm", "index.ts"), "utf8");
    const m = /const REC: usize = (\d+);/.exec(src);
    if (m) return Number(m[1]);
  } catch { /* not in the repository */ }
  return NaN;
}

/** 256 matchers at positions spread over the transcript, and the token each commits next. */
function batchMatchers(spec: Spec, replay: Replay): { batch: Matcher[]; positions: number[]; tokens: number[] } {
  const m = spec.matcher();
  const positions: number[] = [];
  const tokens: number[] = [];
  replaySpecc(m, replay, (x, tok) => {
    positions.push(x.state);
    tokens.push(tok);
  });
  const batch = Array.from({ length: 256 }, (_, i) => {
    const b = spec.matcher();
    b.state = positions[Math.floor((i * positions.length) / 256)]!;
    return b;
  });
  return { batch, positions, tokens };
}

/** Runs `fn` with console.log/info going to stderr (benny prints its progress with console.log). */
async function quietStdout<T>(fn: () => Promise<T>): Promise<T> {
  const saved = { log: console.log, info: console.info };
  console.log = console.info = (...a: unknown[]) => process.stderr.write(a.map(String).join(" ") + "\n");
  try {
    return await fn();
  } finally {
    console.log = saved.log;
    console.info = saved.info;
  }
}

export interface BennyOptions {
  /** Seconds per case (benchmark.js maxTime). */
  maxTime: number;
  minSamples: number;
  /** Write benny's JSON (bench/results/<file>.json) when set. */
  save?: { folder: string; file: string };
}

/**
 * benny microbenchmarks for a set of cases (one suite): warm fillMask over the transcript's
 * states, commit (restore a snapshot + commit the transcript's token), one batch of 256.
 */
export async function bennySuite(name: string, cases: PreparedCase[], o: BennyOptions): Promise<Map<string, BennyResult[]>> {
  const b = await import("benny");
  const adds: unknown[] = [];
  const keyOf: string[] = [];
  for (const c of cases) {
    const { spec, replay } = c;
    const { batch, positions, tokens } = batchMatchers(spec, replay);
    const bitmask = new Int32Array(spec.maskWords);
    const out = new Int32Array(256 * spec.maskWords);
    const ms = positions.map((p) => {
      const x = spec.matcher();
      x.state = p;
      return x;
    });
    const key = `${c.vocab.name}/${c.specName}`;
    let i = 0;
    adds.push(b.add(`${key} fillMask (warm)`, () => {
      ms[i]!.fillMask(bitmask);
      i = i + 1 === ms.length ? 0 : i + 1;
    }));
    keyOf.push(key);
    const m = spec.matcher();
    let j = 0;
    adds.push(b.add(`${key} restore + commit`, () => {
      m.state = positions[j]!;
      m.commit(tokens[j]!);
      j = j + 1 === positions.length ? 0 : j + 1;
    }));
    keyOf.push(key);
    adds.push(b.add(`${key} fillMasks × 256`, () => {
      spec.fillMasks(batch, out);
    }));
    keyOf.push(key);
  }
  const parts: unknown[] = [
    b.configure({ cases: { maxTime: o.maxTime, minSamples: o.minSamples, delay: 0.005 } }),
    ...adds,
    b.cycle(() => undefined),
    b.complete(() => undefined),
  ];
  if (o.save) parts.push(b.save({ file: o.save.file, folder: o.save.folder, format: "json", details: false }));
  const summary = await quietStdout(() => (b.suite as (n: string, ...f: unknown[]) => Promise<{ results: { name: string; ops: number; margin: number; samples: number }[] }>)(name, ...parts));
  const byKey = new Map<string, BennyResult[]>();
  summary.results.forEach((r, idx) => {
    const key = keyOf[idx]!;
    const list = byKey.get(key) ?? [];
    list.push({ name: r.name.slice(key.length + 1), ops: r.ops, margin: r.margin, samples: r.samples, nsPerOp: 1e9 / r.ops });
    byKey.set(key, list);
  });
  return byKey;
}

// ---- Whole-command compile --------------------------------------------------------------------------

export interface CompileCommandResult {
  spec: string;
  runs: number;
  medianMs: number;
  minMs: number;
  maxMs: number;
  wasmBytes: number;
}

/**
 * Wall time of the whole `specc compile SPEC -o OUT.wasm` command (a fresh node process, as a user
 * runs it; the approach of bench/compile.bench.ts). Needs dist/ (npm run build); null without it.
 */
export function benchCompileCommand(specPath: string, runs: number): CompileCommandResult | null {
  const bin = join(repoRoot(), "bin", "specc.js");
  if (!existsSync(join(repoRoot(), "dist", "compiler", "cli.js"))) return null;
  const tmp = mkdtempSync(join(tmpdir(), "specc-bench-"));
  try {
    const out = join(tmp, basename(specPath).replace(/\.[^.]*$/, "") + ".wasm");
    const times: number[] = [];
    for (let i = 0; i < runs; i++) {
      const t0 = now();
      const r = spawnSync(process.execPath, [bin, "compile", specPath, "-o", out], { encoding: "utf8" });
      times.push(since(t0) / 1e6);
      if (r.status !== 0) throw new Error(`specc compile ${specPath} failed:\n${r.stderr}`);
    }
    const s = stats(times);
    return { spec: basename(specPath), runs, medianMs: s.p50, minMs: Math.min(...times), maxMs: s.max, wasmBytes: statSync(out).size };
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

// ---- llama.cpp (node-llama-cpp) -----------------------------------------------------------------------

export interface LlamaCppResult {
  spec: string;
  trace: string;
  model: string;
  vocabSize: number;
  tokens: number;
  llmTokens: number;
  grammarChars: number;
  /** Why llama.cpp refused the GBNF exactly as emitted (then \^ and \- were rewritten as \x5e / \x2d), or null. */
  emittedGrammarError: string | null;
  createGrammarMs: number;
  /** Tokens of the conformant transcript llama.cpp's grammar did not allow (must be empty). */
  rejected: { index: number; token: number; text: string }[];
  /** evaluate + sample one token (probabilities requested, so the grammar is applied to every candidate). */
  sampleWithout: Stats;
  sampleWith: Stats;
  /** p50 with − p50 without: the grammar's share of a sampling step. */
  grammarDeltaP50Ns: number;
  /** The allowed-token set from the grammar state: canBeNextToken for every id (one N-API call each). */
  maskViaCanBeNext: Stats;
  /** specc's warm fillMask on the same 512-token vocabulary and sequence. */
  speccFill: Stats;
  /** Steps where llama.cpp's allowed set and specc's mask differ. */
  maskDiffering: number;
  /**
   * Steps before the first env text whose differences go beyond the explained ones (ill-formed
   * UTF-8 / NUL that only specc allows, control tokens that only llama.cpp lets through). After env
   * text the grammar's env rule can absorb everything, so llama.cpp allows everything there.
   */
  maskDifferingBeyondKnown: number;
  maskStepsBeforeFirstEnv: number;
  maskCompared: number;
  maskDiffExamples: { step: number; kind: "known" | "other" | "env"; context: string; onlySpecc: string[]; onlyLlamaCpp: string[] }[];
}

/**
 * llama.cpp's grammar engine through node-llama-cpp, on the model's own vocabulary (stories260K:
 * 512 tokens). Each step evaluates the transcript's previous token and samples the next with
 * probabilities requested (so the grammar is applied to the whole candidate list, not only to the
 * greedy choice); the grammar state is a clone of one that follows the transcript, and the
 * transcript's token is fed next whatever was sampled. The same sequence is run without grammar.
 */
export async function benchLlamaCpp(specPaths: string[], modelPath: string, iterations: number, onProgress: (s: string) => void = () => {}): Promise<LlamaCppResult[]> {
  const nlc = await import("node-llama-cpp");
  const { vocabularyFromLlamaModel } = await import("./llama.js");
  const logs: string[] = [];
  const llama = await nlc.getLlama({ gpu: false, build: "never", logLevel: nlc.LlamaLogLevel.error, logger: (_level, message) => void logs.push(message) });
  const model = await llama.loadModel({ modelPath });
  const results: LlamaCppResult[] = [];
  type Bindings = { AddonSampler: { acceptGrammarEvaluationStateToken(s: unknown, t: number): void; canBeNextTokenForGrammarEvaluationState(s: unknown, t: number): boolean } };
  const sampler = (llama as unknown as { _bindings: Bindings })._bindings.AddonSampler;
  const stateOf = (s: unknown) => (s as { _state: unknown })._state;
  try {
    const vocab = vocabularyFromLlamaModel(model);
    const encode = exactEncoder((t) => [...model.tokenize(t)], (id) => vocab.tokenBytes(id));
    for (const specPath of specPaths) {
      onProgress(`llama.cpp × ${basename(specPath)}`);
      const compiled = compileSource(readFileSync(specPath, "utf8"), specPath);
      const spec = await Spec.load(compileToWasm(compiled), { vocab });
      const tracePath = join(repoRoot(), DEFAULT_TRACES[basename(specPath)] ?? "");
      const trace = parseTrace(readFileSync(tracePath, "utf8"), tracePath);
      const replay = tokenizeTrace(trace, spec.states.map((s) => s.marker), encode);
      const seq: { id: number; llm: boolean }[] = [];
      for (const seg of replay.segments) for (const id of seg.tokens) seq.push({ id, llm: seg.by === "llm" });
      let gbnf = emitGrammar(compiled.byteDfa, "gbnf", compiled.ir.name);
      // Does llama.cpp take the GBNF exactly as emitted? Asked in a child process: its parser prints
      // the whole rest of the grammar to stderr on an error, which would bury the progress output.
      const emittedError = gbnfParseErrorInChild(gbnf);
      if (emittedError !== null) {
        // llama.cpp's GBNF parser refuses emit-grammar's \^ ("unknown escape"): retry with \^ (and
        // \-, to be safe) written as hex escapes of the same characters.
        gbnf = gbnf.replace(/\\\\|\\\^|\\-/g, (m) => (m === "\\^" ? "\\x5e" : m === "\\-" ? "\\x2d" : m));
      }
      let t0 = now();
      const grammar = await llama.createGrammar({ grammar: gbnf });
      const createGrammarMs = since(t0) / 1e6;
      // Correctness + the allowed set per LLM step, against specc's mask.
      const rejected: LlamaCppResult["rejected"] = [];
      const check = new nlc.LlamaGrammarEvaluationState({ model, grammar });
      const sm = spec.matcher();
      const mask = new Int32Array(spec.maskWords);
      const canTimes: number[] = [];
      const speccTimes: number[] = [];
      const diffs: LlamaCppResult["maskDiffExamples"] = [];
      let differing = 0;
      let differingBeyondKnown = 0;
      let compared = 0;
      let stepsBeforeEnv = 0;
      let afterEnv = false;
      let context = "";
      let step = 0;
      sm.reset();
      outer: for (const seg of replay.segments) {
        if (seg.by === "env") sm.feedEnv(seg.text);
        else if (seg.by === "prompt") sm.feedText(seg.text);
        for (const id of seg.tokens) {
          if (seg.by === "llm") {
            t0 = now();
            const allowed: number[] = [];
            for (let t = 0; t < vocab.size; t++) if (sampler.canBeNextTokenForGrammarEvaluationState(stateOf(check), t)) allowed.push(t);
            canTimes.push(since(t0));
            sm.fillMask(mask);
            const onlyL: string[] = [];
            const onlyS: string[] = [];
            let explained = 0;
            const set = new Set(allowed);
            for (let t = 0; t < vocab.size; t++) {
              const s = ((mask[t >> 5]! >>> (t & 31)) & 1) === 1;
              if (s === set.has(t)) continue;
              (s ? onlyS : onlyL).push(tokenText(vocab, t));
              const b = vocab.tokenBytes(t);
              // Known, explained differences: specc allows ill-formed UTF-8 and NUL bytes in free text
              // (llama.cpp's grammar decodes code points and stops at NUL); llama.cpp lets control tokens
              // with an empty piece through (specc never allows a special token).
              if ((s && b && (!wellFormedUtf8Start(b) || b.includes(0))) || (!s && vocab.isSpecial(t) && !vocab.isEos(t))) explained++;
            }
            compared++;
            if (!afterEnv) stepsBeforeEnv++;
            if (onlyL.length + onlyS.length) {
              differing++;
              const beyond = !afterEnv && explained < onlyL.length + onlyS.length;
              if (beyond) differingBeyondKnown++;
              const kind = afterEnv ? "env" : beyond ? "other" : "known";
              if (diffs.filter((d) => d.kind === kind).length < (kind === "other" ? 3 : 1)) diffs.push({ step, kind, context: context.slice(-40), onlySpecc: onlyS.slice(0, 6), onlyLlamaCpp: onlyL.slice(0, 6) });
            }
            step++;
          }
          if (!sampler.canBeNextTokenForGrammarEvaluationState(stateOf(check), id)) {
            rejected.push({ index: step, token: id, text: tokenText(vocab, id) });
            break outer;
          }
          sampler.acceptGrammarEvaluationStateToken(stateOf(check), id);
          if (seg.by === "llm") sm.commit(id);
          context += tokenText(vocab, id);
        }
        if (seg.by === "env") afterEnv = true;
      }
      // specc on the same vocabulary and sequence, warm.
      spec.precompute();
      for (let it = 0; it < 20; it++) {
        replaySpecc(sm, replay, (x) => {
          const a = now();
          x.fillMask(mask);
          if (it >= 10) speccTimes.push(since(a));
        });
      }
      // Sampling with and without the grammar on the same sequence.
      const ctx = await model.createContext({ threads: 1, contextSize: Math.max(256, Math.ceil((seq.length + 8) / 256) * 256) });
      const sequence = ctx.getSequence();
      const run = async (withGrammar: boolean): Promise<number[]> => {
        await sequence.clearHistory();
        const follow = new nlc.LlamaGrammarEvaluationState({ model, grammar });
        const times: number[] = [];
        const it = sequence.evaluateWithMetadata([seq[0]!.id as never], { probabilities: true }, { temperature: 0, ...(withGrammar ? { grammarEvaluationState: () => follow.clone() } : {}) });
        await it.next();
        sampler.acceptGrammarEvaluationStateToken(stateOf(follow), seq[0]!.id);
        for (let i = 1; i < seq.length; i++) {
          t0 = now();
          const r = await it.next(seq[i]!.id as never);
          const dt = since(t0);
          if (r.done) break;
          if (seq[i]!.llm) times.push(dt);
          sampler.acceptGrammarEvaluationStateToken(stateOf(follow), seq[i]!.id);
        }
        await it.return(undefined);
        return times;
      };
      const without: number[] = [];
      const withG: number[] = [];
      if (rejected.length === 0) {
        await run(false); // warm-up
        for (let i = 0; i < iterations; i++) {
          without.push(...(await run(false)));
          withG.push(...(await run(true)));
        }
      }
      await ctx.dispose();
      const sw = stats(without);
      const sg = stats(withG);
      results.push({
        spec: basename(specPath),
        trace: tracePath.slice(repoRoot().length + 1),
        model: basename(modelPath),
        vocabSize: vocab.size,
        tokens: seq.length,
        llmTokens: replay.llmTokens,
        grammarChars: gbnf.length,
        emittedGrammarError: emittedError,
        createGrammarMs,
        rejected,
        sampleWithout: sw,
        sampleWith: sg,
        grammarDeltaP50Ns: sg.p50 - sw.p50,
        maskViaCanBeNext: stats(canTimes),
        speccFill: stats(speccTimes),
        maskDiffering: differing,
        maskDifferingBeyondKnown: differingBeyondKnown,
        maskStepsBeforeFirstEnv: stepsBeforeEnv,
        maskCompared: compared,
        maskDiffExamples: diffs,
      });
    }
  } finally {
    await model.dispose();
    await llama.dispose();
  }
  return results;
}

/** null when llama.cpp (node-llama-cpp, in a child process) accepts the GBNF, else its error. */
export function gbnfParseErrorInChild(gbnf: string): string | null {
  let entry: string;
  try {
    entry = pathToFileURL(require.resolve("node-llama-cpp")).href;
  } catch {
    return "node-llama-cpp is not installed";
  }
  const script = `import { readFileSync } from "node:fs";
const { getLlama, LlamaLogLevel } = await import(process.env.SPECC_NLC);
const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.disabled });
try { await llama.createGrammar({ grammar: readFileSync(0, "utf8") }); console.log("OK"); }
catch (e) { console.log("ERR " + String(e?.message ?? e).split("\\n")[0]); }
await llama.dispose();`;
  // A script file, not `node -e`: node-llama-cpp tests its binary in a child that inherits execArgv.
  const dir = mkdtempSync(join(tmpdir(), "specc-gbnf-"));
  const file = join(dir, "check.mjs");
  writeFileSync(file, script);
  let r: SpawnSyncReturns<string>;
  try {
    r = spawnSync(process.execPath, [file], { input: gbnf, encoding: "utf8", env: { ...process.env, SPECC_NLC: entry }, timeout: 120_000 });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const out = (r.stdout ?? "").trim().split("\n").pop() ?? "";
  if (out === "OK") return null;
  const why = (r.stderr ?? "").split("\n").find((l) => /error parsing grammar/.test(l));
  return `${out.replace(/^ERR /, "") || `exit ${r.status}`}${why ? ` — ${why.slice(0, 140)}` : ""}`;
}

// ---- Targets (DESIGN §5) ---------------------------------------------------------------------------------

export interface TargetCheck {
  target: string;
  measured: string;
  met: boolean;
  /** "" when met, else "MISSED by 1.6×". */
  verdict: string;
  /** measured / limit for ≤ targets, limit / measured for ≥ targets (> 1 = missed). */
  factor: number;
}

const fmtUs = (ns: number): string => (ns >= 1e6 ? `${(ns / 1e6).toFixed(2)} ms` : ns < 100 ? `${ns.toFixed(1)} ns` : `${(ns / 1e3).toFixed(ns < 1e4 ? 2 : 1)} µs`);
const fmtMs = (ms: number): string => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(ms < 10 ? 2 : 0)} ms`);
const fmtX = (x: number): string => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2)) + "×";
export { fmtUs, fmtMs, fmtX };

function check(target: string, measured: string, value: number, limit: number, atMost: boolean): TargetCheck {
  const factor = atMost ? value / limit : limit / value;
  const met = Number.isFinite(factor) && factor <= 1;
  return { target, measured, met, verdict: met ? "met" : `MISSED by ${fmtX(factor)}`, factor };
}

/** DESIGN §5 for one case (the latency targets are stated for the 128k vocabulary; shown for every case). */
export function caseTargets(r: CaseResult, compileCmd?: CompileCommandResult | null): TargetCheck[] {
  const out: TargetCheck[] = [
    check("warm mask p50 ≤ 2 µs", fmtUs(r.warmFill.p50), r.warmFill.p50, 2000, true),
    check("warm mask p99 ≤ 10 µs", fmtUs(r.warmFill.p99), r.warmFill.p99, 10_000, true),
    ...(r.pushdown ? [] : [check("full precompute < 1 s", fmtMs(r.precomputeMs), r.precomputeMs, 1000, true)]),
    check("batch of 256 ≤ 2 ms", fmtUs(r.batch256.p50) + " (p50)", r.batch256.p50, 2e6, true),
    check(".wasm ≤ 64 KB", `${r.wasmBytes} B`, r.wasmBytes, 65536, true),
    check("matcher state: a few dozen bytes (read: ≤ 64 B)", `${r.memory.matcherRecordBytes} B`, r.memory.matcherRecordBytes, 64, true),
  ];
  if (compileCmd) out.push(check("specc compile ≤ 300 ms (whole command)", fmtMs(compileCmd.medianMs), compileCmd.medianMs, 300, true));
  for (const x of r.xgrammar ?? []) {
    if (x.fill.n === 0) continue;
    const want = r.grammar ? 10 : 100;
    // Two readings of "per token": the mask read in place (maskView: what a decoder needs; XGrammar
    // has no cache of whole masks, so it always writes one), and the mask copied into the caller's
    // buffer (fillMask), whose 16 KB write alone costs ~0.15 µs here (store bandwidth).
    out.push(check(`≥ ${want}× faster per token than XGrammar (${x.variant} grammar, p50, zero-copy maskView)`, fmtX(x.ratioViewP50), x.ratioViewP50, want, false));
    out.push(check(`≥ ${want}× faster per token than XGrammar (${x.variant} grammar, p50, fillMask with the 16 KB copy)`, fmtX(x.ratioP50), x.ratioP50, want, false));
  }
  return out;
}

// ---- Rendering -------------------------------------------------------------------------------------------

export function markdownTable(head: string[], rows: string[][], align?: ("l" | "r")[]): string {
  const a = align ?? head.map((_, i) => (i === 0 ? "l" : "r"));
  return [
    `| ${head.join(" | ")} |`,
    `|${a.map((x) => (x === "r" ? "---:" : "---")).join("|")}|`,
    ...rows.map((r) => `| ${r.join(" | ")} |`),
  ].join("\n");
}

/** The table `specc bench` prints for one case. */
export function renderCase(r: CaseResult, compileCmd: CompileCommandResult | null): string {
  const rows: string[][] = [];
  const t = (s: Stats) => `p50 ${fmtUs(s.p50)} · p99 ${fmtUs(s.p99)}`;
  const targets = caseTargets(r, compileCmd);
  const verdictOf = (prefix: string) => {
    const c = targets.find((x) => x.target.startsWith(prefix));
    return c ? `${c.target.replace(/ \(.*\)$/, "")}: ${c.verdict}` : "";
  };
  rows.push(["transcript", `${r.trace}: ${r.tokens.llm} LLM tokens (+${r.tokens.prompt} prompt, ${r.tokens.env} env tokens fed as text)`, ""]);
  rows.push(["automaton", r.pushdown
    ? `pushdown: ${r.byteStates} byte states; the transcript reached ${r.cold.n} configurations → ${r.distinctMasks} distinct masks`
    : `${r.byteStates} byte states → ${r.distinctMasks} distinct masks`, ""]);
  rows.push(["warm fillMask (16 KB copy included)", t(r.warmFill), `${verdictOf("warm mask p50")}; ${verdictOf("warm mask p99")}`]);
  rows.push(["warm maskView (zero copy)", t(r.warmView), ""]);
  rows.push([`per token, ${r.perToken.reps} calls timed together: fillMask / maskView`, `${t(r.perToken.fill)} / ${t(r.perToken.view)}`, ""]);
  rows.push([`the ${Math.round(r.vocabSize / 8 / 1024)} KB copy alone (Int32Array.set, fillMask's floor)`, t(r.perToken.copyOnly), ""]);
  rows.push([r.pushdown ? "cold: first mask of a configuration" : "cold: first visit of a state", `${t(r.cold)} · max ${fmtUs(r.cold.max)}`, ""]);
  rows.push(["full precompute", r.pushdown ? "n/a (pushdown: masks per configuration, computed on first use)" : fmtMs(r.precomputeMs), verdictOf("full precompute")]);
  rows.push(["commit", t(r.commit), ""]);
  rows.push(["fillMask + commit, amortized", fmtUs(r.stepAmortizedNs), ""]);
  rows.push(["batch of 256 (Spec.fillMasks, 4 MB out)", t(r.batch256), verdictOf("batch of 256")]);
  rows.push(["batch of 256 (raw fill_masks)", t(r.batch256Raw), ""]);
  rows.push(["compile (in process)", fmtMs(r.compile.inProcessMs), ""]);
  if (compileCmd) rows.push(["compile (whole command)", `${fmtMs(compileCmd.medianMs)} median of ${compileCmd.runs}`, verdictOf("specc compile")]);
  rows.push(["compile + load vocabulary + precompute", fmtMs(r.compile.readyMs), ""]);
  rows.push([".wasm size", `${r.wasmBytes} B`, verdictOf(".wasm")]);
  rows.push(["per matcher", `${r.memory.matcherRecordBytes} B record in wasm (${r.memory.matcherWasmBytesAmortized.toFixed(0)} B amortized)${r.memory.matcherJsBytes !== null ? ` + ${r.memory.matcherJsBytes.toFixed(0)} B JS wrapper` : ""}`, verdictOf("matcher state")]);
  rows.push(["per compiled spec", `instance ${(r.memory.instanceBytesLoaded / 2 ** 20).toFixed(1)} MiB loaded, ${(r.memory.instanceBytesPrecomputed / 2 ** 20).toFixed(1)} MiB precomputed (mask cache ${(r.memory.maskCacheBytes / 1024).toFixed(0)} KB)`, ""]);
  for (const b of r.benny ?? []) rows.push([`benny: ${b.name}`, `${Math.round(b.ops).toLocaleString("en-US")} ops/s ±${b.margin.toFixed(1)}% (${fmtUs(b.nsPerOp)}/op)`, ""]);
  for (const x of r.xgrammar ?? []) {
    const name = `XGrammar ${x.version ?? ""} (${x.variant} EBNF)`;
    rows.push([`${name}: compile`, `${fmtMs(x.compileMs)} (TokenizerInfo ${fmtMs(x.tokenizerInfoMs)})`, ""]);
    if (x.fill.n) {
      rows.push([`${name}: mask per token`, `${t(x.fill)}, ${x.reps} calls timed together (public async API, one call: ${t(x.fillPublicApi)})`, ""]);
      rows.push([`${name}: specc's maskView is faster by`, `${fmtX(x.ratioViewP50)} at p50, ${fmtX(x.ratioViewP99)} at p99`, verdictOf(`≥ ${r.grammar ? 10 : 100}× faster per token than XGrammar (${x.variant} grammar, p50, zero`)]);
      rows.push([`${name}: specc's fillMask is faster by`, `${fmtX(x.ratioP50)} at p50, ${fmtX(x.ratioP99)} at p99`, verdictOf(`≥ ${r.grammar ? 10 : 100}× faster per token than XGrammar (${x.variant} grammar, p50, fillMask`)]);
    }
    rows.push([`${name}: accepted every token`, x.rejected.length ? `NO: rejected ${x.rejected.map((q) => `${q.by} token ${JSON.stringify(q.text)} after ${JSON.stringify(q.context.slice(-30))}`).join("; ")}` : `yes${x.endsWithEos ? ", and EOS at the end" : ", but NOT EOS at the end"}`, ""]);
    rows.push([`${name}: bitmask = specc's`, `${x.masks.compared - x.masks.differing}/${x.masks.compared} steps (before the first env text: ${x.masks.stepsBeforeFirstEnv - x.masks.differingBeforeFirstEnv}/${x.masks.stepsBeforeFirstEnv})`, ""]);
  }
  return markdownTable(["", "measured", "DESIGN §5"], rows, ["l", "l", "l"]);
}

// ---- A whole run (npm run bench, the smoke test) ------------------------------------------------------

export interface SuiteVocab {
  /** Short name used in keys and file names, e.g. "llama3_1". */
  name: string;
  /** Human label, e.g. "Llama 3.1 (128k)". */
  label: string;
  path: string;
  /** What the tokenizer.json really is, when the label simplifies. */
  note?: string;
}

export interface SuiteOptions {
  vocabs: SuiteVocab[];
  specs: string[];
  case: CaseOptions;
  /** Runs of the whole `specc compile` command per spec (0: skip). */
  compileCommandRuns: number;
  xgrammar: { variants: XGrammarVariant[]; iterations: number } | null;
  llamaCpp: { model: string; iterations: number; specs: string[] } | null;
  benny: BennyOptions | null;
  onProgress?: (s: string) => void;
}

export interface SuiteResult {
  machine: MachineInfo;
  /** os.loadavg() when the run started (machine.loadavg is at its end). */
  loadavgStart: number[];
  settings: { iterations: number; batchSamples: number; xgrammarIterations: number | null; xgrammarVariants: XGrammarVariant[]; benny: { maxTime: number; minSamples: number } | null };
  vocabs: { name: string; label: string; note?: string; size: number; family: string; loadMs: number; xgrammarTokenizerInfoMs: number | null }[];
  cases: CaseResult[];
  compileCommand: CompileCommandResult[];
  llamaCpp: LlamaCppResult[] | { error: string } | null;
  wallSeconds: number;
}

export async function runSuite(o: SuiteOptions): Promise<SuiteResult> {
  const start = now();
  const loadavgStart = loadavg().map((x) => Math.round(x * 100) / 100);
  const progress = o.onProgress ?? (() => {});
  const total = o.vocabs.length * o.specs.length;
  let done = 0;
  const cases: CaseResult[] = [];
  const vocabs: SuiteResult["vocabs"] = [];
  for (const sv of o.vocabs) {
    progress(`[${done}/${total}] ${sv.label}: loading the vocabulary and tokenizer`);
    const v = await loadVocab(sv.path, sv.name);
    const xv = o.xgrammar ? await prepareXGrammarVocab(v) : null;
    vocabs.push({ name: sv.name, label: sv.label, ...(sv.note ? { note: sv.note } : {}), size: v.vocab.size, family: v.vocab.family, loadMs: v.loadMs, xgrammarTokenizerInfoMs: xv?.infoMs ?? null });
    const prepared: PreparedCase[] = [];
    const results: CaseResult[] = [];
    try {
      for (const specPath of o.specs) {
        progress(`[${done}/${total}] ${sv.label} × ${basename(specPath)}: specc`);
        const c = await prepareCase(specPath, v);
        prepared.push(c);
        const r = await benchSpecc(c, o.case);
        if (xv && o.xgrammar) {
          r.xgrammar = [];
          // A standalone grammar also runs XGrammar on its own text (the same grammar, DESIGN §5's ≥ 10×).
          const variants: XGrammarVariant[] = [...(isGrammarFile(specPath) ? ["original" as const] : []), ...o.xgrammar.variants];
          for (const variant of variants) {
            progress(`[${done}/${total}] ${sv.label} × ${basename(specPath)}: XGrammar (${variant} EBNF: compiling for ${v.vocab.size} tokens, then replaying)`);
            r.xgrammar.push(await benchXGrammar(xv, c, variant, o.xgrammar.iterations, r.perToken));
          }
        }
        results.push(r);
        done++;
      }
      if (o.benny) {
        progress(`[${done}/${total}] ${sv.label}: benny microbenchmarks (${prepared.length * 3} cases)`);
        const byKey = await bennySuite(`specc ${sv.label}`, prepared, { ...o.benny, ...(o.benny.save ? { save: { folder: o.benny.save.folder, file: `${o.benny.save.file}-${sv.name}` } } : {}) });
        for (let i = 0; i < results.length; i++) results[i]!.benny = byKey.get(`${sv.name}/${prepared[i]!.specName}`);
      }
    } finally {
      if (xv) disposeXGrammarVocab(xv);
    }
    cases.push(...results);
  }
  const compileCommand: CompileCommandResult[] = [];
  if (o.compileCommandRuns > 0) {
    for (const s of o.specs) {
      progress(`compile command: ${basename(s)}`);
      const r = benchCompileCommand(s, o.compileCommandRuns);
      if (r) compileCommand.push(r);
    }
  }
  let llamaCpp: SuiteResult["llamaCpp"] = null;
  if (o.llamaCpp) {
    if (!existsSync(o.llamaCpp.model)) llamaCpp = { error: `${o.llamaCpp.model}: no such file` };
    else {
      try {
        llamaCpp = await benchLlamaCpp(o.llamaCpp.specs, o.llamaCpp.model, o.llamaCpp.iterations, progress);
      } catch (e) {
        llamaCpp = { error: (e as Error).message };
      }
    }
  }
  return {
    machine: machineInfo(),
    loadavgStart,
    settings: {
      iterations: o.case.iterations,
      batchSamples: o.case.batchSamples,
      xgrammarIterations: o.xgrammar?.iterations ?? null,
      xgrammarVariants: o.xgrammar?.variants ?? [],
      benny: o.benny ? { maxTime: o.benny.maxTime, minSamples: o.benny.minSamples } : null,
    },
    vocabs,
    cases,
    compileCommand,
    llamaCpp,
    wallSeconds: since(start) / 1e9,
  };
}

/** Headline targets over a whole run: the worst case for the 128k vocabulary, and over all. */
export function suiteTargets(r: SuiteResult, headlineVocab = "llama3_1"): { target: string; headline: TargetCheck | null; all: TargetCheck }[] {
  const byTarget = new Map<string, { headline: TargetCheck | null; all: TargetCheck | null }>();
  for (const c of r.cases) {
    const cmd = r.compileCommand.find((x) => x.spec === c.spec) ?? null;
    for (const t of caseTargets(c, cmd)) {
      const e = byTarget.get(t.target) ?? { headline: null, all: null };
      const worse = (a: TargetCheck | null) => (a === null || t.factor > a.factor ? { ...t, measured: `${t.measured} (${c.spec}${c.vocab === headlineVocab ? "" : `, ${c.vocab}`})` } : a);
      e.all = worse(e.all);
      if (c.vocab === headlineVocab) e.headline = worse(e.headline);
      byTarget.set(t.target, e);
    }
  }
  return [...byTarget].map(([target, e]) => ({ target, headline: e.headline, all: e.all! }));
}

/** bench/results/RESULTS.md. */
export function renderResultsMarkdown(r: SuiteResult): string {
  const m = r.machine;
  const L: string[] = [];
  const t2 = (s: Stats) => `${fmtUs(s.p50)} / ${fmtUs(s.p99)}`;
  const label = (name: string) => r.vocabs.find((v) => v.name === name)?.label ?? name;
  L.push("# specc benchmark results", "");
  L.push(`Generated by \`npm run bench\` (bench/run.ts, bindings/bench.ts) on ${m.date.slice(0, 10)} in ${(r.wallSeconds / 60).toFixed(1)} min.`, "");
  L.push(`- machine: ${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB memory, ${m.os}; load average ${r.loadavgStart[0]} at the start, ${m.loadavg[0]} at the end (1 min; the machine may be shared with other work, which shows up as noise, mostly in p99s)`);
  L.push(`- Node ${m.node}; ${Object.entries(m.packages).map(([k, v]) => `${k} ${v ?? "(not installed)"}`).join(", ")}`);
  L.push(`- settings: ${r.settings.iterations} timed replays per case for specc, ${r.settings.xgrammarIterations ?? 0} for XGrammar (${r.settings.xgrammarVariants.join(" + ") || "not run"}), ${r.settings.batchSamples} batch samples${r.settings.benny ? `, benny maxTime ${r.settings.benny.maxTime} s per case` : ""}`);
  L.push(`- vocabularies: ${r.vocabs.map((v) => `${v.label} = ${v.size} tokens (${v.family}${v.note ? `; ${v.note}` : ""}; tokenizer.json → bytes ${fmtMs(v.loadMs)}${v.xgrammarTokenizerInfoMs !== null ? `, XGrammar TokenizerInfo ${fmtMs(v.xgrammarTokenizerInfoMs)}` : ""})`).join("; ")}`);
  L.push("");
  L.push("Latencies are `process.hrtime.bigint()` around one call, per LLM token of a seed transcript tokenized with the vocabulary's real tokenizer (p50 / p99; the timer's own cost, ~" + fmtUs(r.cases[0]?.timerOverheadNs ?? 0) + ", is included, not subtracted). The per-token comparison with XGrammar times back-to-back calls at each token together and divides (specc " + (r.cases[0]?.perToken.reps ?? SPECC_REPS) + " calls, XGrammar " + XGRAMMAR_REPS + "), because specc's calls are shorter than the timer itself. benny figures are ops/s (benchmark.js), which have no percentiles.", "");

  L.push("## DESIGN §5 targets", "");
  L.push("The latency targets are stated for Llama 3.1's 128k vocabulary: the headline column is the worst of the benchmarked specs on it; the last column is the worst over every vocabulary.", "");
  L.push(markdownTable(["target", "Llama 3.1: worst measured", "verdict", "all vocabularies: worst measured", "verdict"],
    suiteTargets(r).map((x) => [x.target, x.headline?.measured ?? "—", x.headline?.verdict ?? "—", x.all.measured, x.all.verdict]), ["l", "r", "l", "r", "l"]));
  L.push("");

  const xgVariants = r.settings.xgrammarVariants;
  L.push("## Per-token mask: specc vs XGrammar (same process, same tokens)", "");
  L.push("specc *view*: `maskView()`, the cached mask read in place (zero copy; what a decoder needs to apply it). specc *fill*: `fillMask` into the caller's `Int32Array` (the 16 KB copy included). *The copy alone*: `Int32Array.set` of a cached mask into the same buffer with no runtime call — fillMask's floor, set by one core's memory bandwidth; 100× against a 4 µs XGrammar call would need it under 40 ns. XGrammar: the web build's `GetNextTokenBitmask` binding call (FillNextTokenBitmask into a fresh vector, no copy out to JS — the public `await getNextTokenBitmask()` adds a copy and a promise; its p50 is in the JSON). XGrammar computes every mask from its per-position token caches and has no cache of whole masks, so it has no zero-copy call. Ratio = XGrammar / specc, at p50 / p99.", "");
  const head = ["spec", "vocabulary", "LLM tokens", "specc view p50 / p99", "specc fill p50 / p99", "the copy alone p50"];
  for (const v of xgVariants) head.push(`XGrammar (${v}) p50 / p99`, `ratio to view (${v})`, `ratio to fill (${v})`);
  head.push("XGrammar accepted every token");
  L.push(markdownTable(head, r.cases.map((c) => {
    const row = [c.spec, label(c.vocab), String(c.tokens.llm), t2(c.perToken.view), t2(c.perToken.fill), fmtUs(c.perToken.copyOnly.p50)];
    for (const v of xgVariants) {
      const x = c.xgrammar?.find((y) => y.variant === v);
      const ok = x !== undefined && x.fill.n > 0;
      row.push(ok ? t2(x.fill) : "—", ok ? `${fmtX(x.ratioViewP50)} / ${fmtX(x.ratioViewP99)}` : "—", ok ? `${fmtX(x.ratioP50)} / ${fmtX(x.ratioP99)}` : "—");
    }
    const acc = (c.xgrammar ?? []).map((x) => (x.rejected.length ? `NO (${x.variant})` : "yes")).join(", ");
    row.push(acc || "—");
    return row;
  })));
  L.push("");

  if (xgVariants.length) {
    L.push("XGrammar's input: `emitGrammar(byteDfa, \"ebnf\")` verbatim (*as-emitted*, what `specc compile --emit ebnf` writes); for a standalone grammar also the grammar's own text (*original*). @mlc-ai/web-xgrammar 0.1.27 miscompiles positive character classes holding non-ASCII code points (its GrammarFSMBuilderImpl::CharacterClass casts each range bound to one byte) and reads every hex digit after `\\x`, so the emitter writes `\\u00HH` escapes, every class holding all non-ASCII characters (free text) as the equivalent negated class, and \"any character\" as `[^]`, all of which XGrammar builds correctly. Minimal reproduction of the XGrammar bug: with any vocabulary, `root ::= [\\u0800-\\u087f]` allows the token \"A\" and not \"ࠀ\"; `root ::= [a-zé]` does not allow \"é\"; `root ::= [\\x80-\\xff]` allows nothing (bench/repro-peers.ts).", "");
    L.push("Grammars: react-calculator.agent (an arithmetic Action Input) and tool-json.agent (a JSON-object Action Input) carry grammar content, compiled into the agent's DFA with a bounded nesting depth; json.gbnf and arithmetic.gbnf are standalone grammars, compiled to pushdown automata (exact at any depth) and replayed on 10-deep documents (bench/traces/). For those two XGrammar also runs the grammar's own text (*original*). DESIGN §5 holds grammars to p50 ≤ 50 µs and ≥ 10× (agent specs: ≥ 100×). A pushdown grammar has no full precompute: its masks belong to configurations (state + stack), computed on first use; its cold figure is the first mask of each configuration the transcript reaches.", "");
  }

  L.push("## Compile time", "");
  if (r.compileCommand.length) {
    L.push("Whole `specc compile SPEC -o OUT.wasm` command (a fresh node process), target ≤ 300 ms:", "");
    L.push(markdownTable(["spec", "median", "min", "max", "runs", ".wasm bytes"], r.compileCommand.map((x) => [x.spec, fmtMs(x.medianMs), fmtMs(x.minMs), fmtMs(x.maxMs), String(x.runs), String(x.wasmBytes)])));
    L.push("");
  }
  L.push("Grammar compile with a vocabulary: specc = compile in process + `Spec.load` with the vocabulary + full precompute (every mask ready); XGrammar = `compileGrammar` of the emitted EBNF (its adaptive token-mask cache).", "");
  const ch = ["spec", "vocabulary", "specc compile (in process)", "specc compile + load + precompute"];
  for (const v of xgVariants) ch.push(`XGrammar compile (${v})`);
  L.push(markdownTable(ch, r.cases.map((c) => {
    const row = [c.spec, label(c.vocab), fmtMs(c.compile.inProcessMs), fmtMs(c.compile.readyMs)];
    for (const v of xgVariants) {
      const x = c.xgrammar?.find((y) => y.variant === v);
      row.push(x ? `${fmtMs(x.compileMs)} (${fmtX(x.compileMs / c.compile.readyMs)})` : "—");
    }
    return row;
  })));
  L.push("");

  L.push("## specc: cold states, precompute, commit, batch", "");
  L.push(markdownTable(["spec", "vocabulary", "byte states → masks", "cold first visit p50 / p99 / max", "full precompute", "commit p50 / p99", "fillMask+commit amortized", "batch of 256 p50 / p99", "raw fill_masks ×256 p50"],
    r.cases.map((c) => [c.spec, label(c.vocab), `${c.byteStates} → ${c.distinctMasks}`, `${t2(c.cold)} / ${fmtUs(c.cold.max)}`, (Number.isFinite(c.precomputeMs) ? fmtMs(c.precomputeMs) : "n/a (pushdown)"), t2(c.commit), fmtUs(c.stepAmortizedNs), t2(c.batch256), fmtUs(c.batch256Raw.p50)])));
  L.push("");

  L.push("## Sizes and memory", "");
  L.push(markdownTable(["spec", "vocabulary", ".wasm", "matcher (wasm record / amortized / JS wrapper)", "instance loaded", "instance precomputed", "mask cache", "Spec.load (trie + copy)"],
    r.cases.map((c) => [c.spec, label(c.vocab), `${c.wasmBytes} B`, `${c.memory.matcherRecordBytes} B / ${c.memory.matcherWasmBytesAmortized.toFixed(0)} B / ${c.memory.matcherJsBytes === null ? "—" : c.memory.matcherJsBytes.toFixed(0) + " B"}`, `${(c.memory.instanceBytesLoaded / 2 ** 20).toFixed(1)} MiB`, `${(c.memory.instanceBytesPrecomputed / 2 ** 20).toFixed(1)} MiB`, `${(c.memory.maskCacheBytes / 1024).toFixed(0)} KB`, fmtMs(c.loadMs)])));
  L.push("");
  L.push("The matcher record is the runtime's per-sequence state (state, done flag, token counter, budget, and an 8-token rollback ring); \"amortized\" is the growth of the module's memory divided by the matchers created (the record array doubles); the JS wrapper is the `Matcher` object (measured with --expose-gc).", "");

  if (r.settings.benny && r.cases.some((c) => c.benny?.length)) {
    L.push("## benny (ops/s)", "");
    L.push(markdownTable(["spec", "vocabulary", ...(r.cases.find((c) => c.benny?.length)?.benny ?? []).map((b) => b.name)],
      r.cases.map((c) => [c.spec, label(c.vocab), ...(c.benny ?? []).map((b) => `${Math.round(b.ops).toLocaleString("en-US")} ±${b.margin.toFixed(1)}% (${fmtUs(b.nsPerOp)})`)])));
    L.push("");
  }

  L.push("## llama.cpp grammar engine (node-llama-cpp)", "");
  if (r.llamaCpp === null) L.push("Not run.");
  else if ("error" in r.llamaCpp) L.push(`Could not run: ${r.llamaCpp.error}`);
  else {
    L.push("The GBNF from `emitGrammar(byteDfa, \"gbnf\")`, on the only model here (stories260K.gguf, whose own vocabulary has 512 tokens — not comparable with the 32k–262k vocabularies above). Sampling step = evaluate the transcript's previous token + sample the next with probabilities requested (which makes node-llama-cpp apply the grammar to every candidate, not only to the greedy pick); the grammar state is a clone of one that follows the transcript. The mask row asks the grammar state `canBeNextToken` for each of the 512 ids (one N-API call each): an upper bound on the grammar's mask cost.", "");
    L.push(markdownTable(["spec", "tokens (LLM)", "sampling step without grammar p50 / p99", "with grammar p50 / p99", "grammar share of a step (Δ p50)", "llama.cpp allowed set, 512 × canBeNextToken p50 / p99", "specc fillMask p50 / p99 (same 512 tokens)", "accepted every token", "allowed set = specc's mask"],
      r.llamaCpp.map((x) => [x.spec, `${x.tokens} (${x.llmTokens})`, t2(x.sampleWithout), t2(x.sampleWith), fmtUs(x.grammarDeltaP50Ns), t2(x.maskViaCanBeNext), t2(x.speccFill), x.rejected.length ? `NO: ${x.rejected.map((q) => JSON.stringify(q.text)).join(", ")}` : "yes", `${x.maskCompared - x.maskDiffering}/${x.maskCompared}`])));
    L.push("");
    L.push("Per-token timing of llama.cpp's grammar is only meaningful as the difference of two noisy distributions here: the model forward pass and node-llama-cpp's async worker hop dominate each step, so the Δ p50 is a rough figure (it can even come out negative); the canBeNextToken figure isolates the grammar but pays one N-API call per token id.", "");
  }

  L.push("## Correctness: what the comparison found", "");
  L.push(...correctnessNotes(r));
  L.push("");
  return L.join("\n");
}

/** Bullet points on every discrepancy between the engines in a run. */
export function correctnessNotes(r: SuiteResult): string[] {
  const L: string[] = [];
  const label = (name: string) => r.vocabs.find((v) => v.name === name)?.label ?? name;
  const rej = r.cases.flatMap((c) => (c.xgrammar ?? []).filter((x) => x.rejected.length).map((x) => `${c.spec} × ${label(c.vocab)} (${x.variant}): ${x.rejected.map((q) => `${q.by} token ${q.token} ${JSON.stringify(q.text)} after ${JSON.stringify(q.context.slice(-40))}`).join("; ")}`));
  L.push(rej.length ? `- XGrammar REJECTED tokens of conformant transcripts: ${rej.join(" · ")}` : "- XGrammar accepted every token (prompt, env and LLM) of every replayed transcript, with both grammars" + (r.cases.every((c) => (c.xgrammar ?? []).every((x) => x.endsWithEos)) ? ", and EOS at the end of each." : "; EOS at the end was NOT accepted in: " + r.cases.flatMap((c) => (c.xgrammar ?? []).filter((x) => !x.endsWithEos).map((x) => `${c.spec} × ${label(c.vocab)} (${x.variant})`)).join(", ")));
  const dec = r.cases.flatMap((c) => (c.xgrammar ?? []).slice(0, 1).map((x) => ({ c, x })));
  const seen = new Set<string>();
  for (const { c, x } of dec) {
    if (seen.has(c.vocab)) continue;
    seen.add(c.vocab);
    L.push(`- ${label(c.vocab)}: XGrammar's TokenizerInfo decodes ${x.decodedVocab.checked - x.decodedVocab.mismatches}/${x.decodedVocab.checked} tokens (those whose bytes are valid UTF-8) to exactly specc's bytes${x.decodedVocab.mismatches ? `; differing: ${x.decodedVocab.examples.map((e) => `${e.id} ${JSON.stringify(e.piece)} → specc ${JSON.stringify(e.specc)}, XGrammar ${JSON.stringify(e.xgrammar)}`).join("; ")}` : ""}.`);
  }
  for (const variant of r.settings.xgrammarVariants) {
    const cs = r.cases.filter((c) => c.xgrammar?.some((x) => x.variant === variant));
    if (!cs.length) continue;
    const tot = cs.reduce((a, c) => {
      const x = c.xgrammar!.find((y) => y.variant === variant)!.masks;
      return { n: a.n + x.compared, d: a.d + x.differing, nb: a.nb + x.stepsBeforeFirstEnv, db: a.db + x.differingBeforeFirstEnv, dbo: a.dbo + x.differingBeforeFirstEnvBeyondUtf8, s: a.s + x.bitsOnlySpecc, x: a.x + x.bitsOnlyXGrammar, ill: a.ill + x.bitsIllFormedUtf8 };
    }, { n: 0, d: 0, nb: 0, db: 0, dbo: 0, s: 0, x: 0, ill: 0 });
    L.push(`- Bitmasks, ${variant} EBNF: XGrammar's mask differs from specc's at ${tot.d} of ${tot.n} steps; before the first env text at ${tot.db} of ${tot.nb} steps, ${tot.dbo} of them in tokens other than ill-formed-UTF-8 fragments. Differing bits: ${tot.s} allowed only by specc, ${tot.x} only by XGrammar; ${tot.ill} of all differing bits are ill-formed-UTF-8 tokens.`);
    const ex = cs.flatMap((c) => c.xgrammar!.find((y) => y.variant === variant)!.masks.examples.map((e) => ({ c, e })));
    const order = (e: MaskDiffExample) => (e.afterFirstEnv ? 2 : e.illFormedUtf8 === e.onlySpecc + e.onlyXGrammar ? 1 : 0);
    ex.sort((a, b) => order(a.e) - order(b.e));
    // Of the other differences, the largest first (then the earliest).
    const big = ex.filter((x) => order(x.e) === 0).reduce<(typeof ex)[number] | null>((m, x) => (!m || x.e.onlySpecc + x.e.onlyXGrammar > m.e.onlySpecc + m.e.onlyXGrammar ? x : m), null);
    if (big) ex.splice(ex.indexOf(big), 1), ex.unshift(big);
    const quota = [3, 1, 1];
    for (const { c, e } of ex) {
      const k = order(e);
      if (quota[k]! <= 0) continue;
      quota[k]!--;
      L.push(`  - e.g. ${c.spec} × ${label(c.vocab)}, step ${e.step}${e.afterFirstEnv ? " (after env text)" : ""}, after ${JSON.stringify(e.context.slice(-36))} (next ${JSON.stringify(e.nextToken)}): ${e.onlyXGrammar} tokens only XGrammar allows, ${e.onlySpecc} only specc allows (${e.illFormedUtf8} ill-formed UTF-8), e.g. ${e.sample.map((q) => `${JSON.stringify(q.text)} (${q.allowedBy})`).join(", ")}`);
    }
  }
  if (r.llamaCpp && !("error" in r.llamaCpp)) {
    const refused = r.llamaCpp.filter((x) => x.emittedGrammarError);
    if (refused.length) L.push(`- llama.cpp REFUSED the GBNF as emitted for ${refused.map((x) => x.spec).join(", ")}: ${refused[0]!.emittedGrammarError} — emit-grammar writes \`\\^\` for '^' inside a character class, an escape llama.cpp's GBNF parser does not know (minimal reproduction: \`root ::= [a\\^]\` is refused, \`root ::= [a\\x5e]\` is accepted; see bench/repro-peers.ts). The benchmark retried with \`\\^\` (and \`\\-\`) written as \`\\x5e\` (\`\\x2d\`).`);
    for (const x of r.llamaCpp) {
      if (x.rejected.length) L.push(`- llama.cpp REJECTED ${x.spec}'s transcript at token ${x.rejected[0]!.index} ${JSON.stringify(x.rejected[0]!.text)}.`);
      if (x.maskDiffering) {
        const shown = [...x.maskDiffExamples.filter((e) => e.kind === "other").slice(0, 2), ...x.maskDiffExamples.filter((e) => e.kind !== "other")];
        L.push(`- llama.cpp × ${x.spec}: its allowed set differs from specc's mask at ${x.maskDiffering}/${x.maskCompared} steps; before the first env text, ${x.maskDifferingBeyondKnown} of ${x.maskStepsBeforeFirstEnv} steps differ beyond the explained tokens (ill-formed UTF-8 or NUL bytes that only specc allows; control tokens <unk>/<s> that only llama.cpp lets through). E.g. ${shown.map((e) => `step ${e.step}${e.kind === "env" ? " (after env text)" : ""} after ${JSON.stringify(e.context.slice(-30))}: only llama.cpp ${JSON.stringify(e.onlyLlamaCpp.slice(0, 4))}, only specc ${JSON.stringify(e.onlySpecc.slice(0, 4))}`).join("; ")}`);
      }
    }
    if (r.llamaCpp.every((x) => !x.rejected.length)) L.push("- llama.cpp's grammar engine accepted every token of every replayed transcript.");
  }
  if (r.cases.some((c) => c.xgrammar?.length) || (r.llamaCpp && !("error" in r.llamaCpp))) {
    L.push("", "What the kinds of differences are:");
    L.push("- *Before the first env text, other tokens*: these are tokens that complete an env-input marker and carry more text (`::` after `Observation`, `]` + text after `[Observation`): specc forbids them (DESIGN §1.1: the token that completes an env-input marker ends the LLM's turn), a grammar over one string cannot express a token boundary, so the peers allow them.");
    L.push("- *Ill-formed UTF-8*: specc's masks allow, in free text, tokens that are not well-formed UTF-8 from a character boundary (lone continuation bytes, 0xC0/0xC1/0xF5–0xFF; and NUL, which llama.cpp's grammar cannot match): the byte automaton's free text is \"any bytes except a complete marker\" (DESIGN §1.1). A grammar over code points cannot say that, so the emitted grammar is specc's language restricted to well-formed UTF-8, not exactly its language as emit-grammar's header says.");
    L.push("- *After the first env text*: the grammar's `env` rule (any characters) can still be absorbing the output, since neither peer has `feedEnv`'s boundary; from the first env-input marker on, the peers allow (almost) every token, while specc enforces the spec after each environment answer.");
    L.push("- *Control tokens*: llama.cpp's grammar lets `<unk>`/`<s>` (empty pieces) through; specc never allows a special token (XGrammar was given them as special).");
  }
  return L;
}

// ---- specc bench (the CLI command) ---------------------------------------------------------------------

export interface RunBenchOptions {
  /** The spec file (.agent). */
  spec: string;
  /** A Hugging Face tokenizer.json. */
  vocab: string;
  /** A transcript (DESIGN §4); default: the spec's seed transcript, or one sampled under the masks. */
  trace?: string;
  /** Peers to run side by side: "xgrammar". */
  against?: string[];
  /** Print the result as JSON instead of the table. */
  json?: boolean;
  /** Timed replays of the transcript (default 200; XGrammar: a tenth, at least 2). */
  iterations?: number;
  io: BenchIo;
  /** How to compile the spec (the CLI passes its own, so diagnostics quote the source). */
  compile?: (path: string) => Compiled;
}

export const BENCH_PEERS = ["xgrammar"] as const;

/**
 * `specc bench SPEC --vocab tokenizer.json [--against xgrammar] [--json]`: every suite for one spec
 * and vocabulary, printed as a table (or JSON). Returns the exit code: 0, 2 for a bad option, 3 for
 * an input file that cannot be read. Spec errors are thrown (SpecError) for the CLI to format.
 */
export async function runBench(o: RunBenchOptions): Promise<number> {
  const { io } = o;
  const against = o.against ?? [];
  for (const a of against) {
    if (!(BENCH_PEERS as readonly string[]).includes(a)) {
      io.err(`error: --against must be ${BENCH_PEERS.join(" or ")}, not '${a}'`);
      return 2;
    }
  }
  const iterations = o.iterations ?? 200;
  if (!Number.isInteger(iterations) || iterations < 1) {
    io.err(`error: --iterations must be a positive integer, not '${o.iterations}'`);
    return 2;
  }
  for (const [what, p] of [["spec", o.spec], ["tokenizer.json", o.vocab], ["trace", o.trace]] as const) {
    if (p !== undefined && !existsSync(p)) {
      io.err(`error: ${p}: no such file (${what})`);
      return 3;
    }
  }
  const dirName = basename(dirname(resolve(o.vocab)));
  const vocabName = dirName === "models" ? basename(dirname(dirname(resolve(o.vocab)))) : dirName;
  io.err(`specc bench: loading ${o.vocab}…`);
  let v: LoadedVocab;
  try {
    v = await loadVocab(o.vocab, vocabName);
  } catch (e) {
    io.err(`error: ${o.vocab}: ${(e as Error).message}`);
    return 3;
  }
  io.err(`specc bench: ${v.vocab.size} tokens; compiling ${o.spec} and replaying its transcript…`);
  const c = await prepareCase(o.spec, v, o.trace, o.compile);
  const r = await benchSpecc(c, { iterations, batchSamples: Math.max(200, iterations), memoryMatchers: 100_000, compileRuns: 5 });
  io.err("specc bench: benny microbenchmarks…");
  r.benny = (await bennySuite(`specc bench ${c.specName}`, [c], { maxTime: 0.5, minSamples: 5 })).get(`${v.name}/${c.specName}`);
  if (against.includes("xgrammar")) {
    const xv = await prepareXGrammarVocab(v);
    try {
      r.xgrammar = [];
      const isGrammar = /\.(gbnf|ebnf)$/.test(o.spec);
      for (const variant of (isGrammar ? ["original", "as-emitted"] : ["as-emitted"]) as XGrammarVariant[]) {
        io.err(`specc bench: XGrammar (${variant} EBNF): compiling the grammar for ${v.vocab.size} tokens (this takes seconds to minutes)…`);
        r.xgrammar.push(await benchXGrammar(xv, c, variant, Math.max(2, Math.round(iterations / 10)), r.perToken));
      }
    } finally {
      disposeXGrammarVocab(xv);
    }
  }
  io.err("specc bench: timing the whole `specc compile` command…");
  const cmd = benchCompileCommand(o.spec, 3);
  if (o.json) {
    io.out(JSON.stringify({ machine: machineInfo(), result: r, compileCommand: cmd, targets: caseTargets(r, cmd) }, null, 2));
  } else {
    const m = machineInfo();
    io.out(`specc bench ${c.specName} — ${v.vocab.size}-token vocabulary (${o.vocab}); ${m.cpu}, ${m.cores} cores, Node ${m.node}`);
    io.out("");
    io.out(renderCase(r, cmd));
    const bad = (r.xgrammar ?? []).filter((x) => x.rejected.length);
    if (bad.length) io.out(`\nXGrammar rejected a token of this conformant transcript: see the rows above.`);
  }
  return 0;
}
