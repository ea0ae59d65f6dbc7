/**
 * @fileoverview The XGrammar peer of the benchmarks (bench/harness/index.ts): `@mlc-ai/web-xgrammar`,
 * the WebAssembly build, in the same process. The grammar is `emitGrammar(byteDfa, "ebnf")` — the
 * spec's exact language — compiled for a TokenizerInfo built from the same tokenizer.json with the
 * same special/EOS tokens. Prompt and env tokens are accepted without timing (the grammar contains
 * the env text), every LLM token goes through the mask call (timed) and `acceptToken`. The first
 * pass checks that XGrammar accepts every token and compares its bitmask with specc's at every step.
 *
 * XGrammar is a devDependency: it is imported lazily (`loadXGrammar`), never when this module loads.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { emitGrammar } from "../../compiler/emit-grammar.js";
import { XGRAMMAR_REPS, now, packageVersion, since, stats, tokenText, wellFormedUtf8Start, type LoadedVocab, type PerToken, type PreparedCase, type Stats } from "./common.js";

const require = createRequire(import.meta.url);

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
