/**
 * @fileoverview The benchmarks' shared parts (bench/harness/index.ts is the entry point): small helpers
 * (percentiles, the hrtime timer, the repository root, package versions, machine info), a
 * transcript tokenized segment by segment with the vocabulary's real tokenizer and replayed
 * through a specc matcher (DESIGN §4), vocabularies loaded from a tokenizer.json, and the token
 * text helpers the peers' comparisons with specc share.
 *
 * Timings are process.hrtime.bigint() around one call (`now` / `since`), reported as percentiles
 * (`stats`).
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { arch, cpus, loadavg, platform, release, tmpdir, totalmem } from "node:os";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { firstMarker, type Trace } from "../../compiler/trace.js";
import { encoderFor, exactEncoder } from "../../bindings/encode.js";
import type { Compiled } from "../../compiler/ir.js";
import type { Matcher, Spec } from "../../bindings/spec.js";
import { Vocabulary } from "../../bindings/vocab.js";

// ---- Small helpers ---------------------------------------------------------------------------------

/** Percentiles of a sample, in nanoseconds (milliseconds where the field name says so). */
export interface Stats {
  n: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

export const now = (): bigint => process.hrtime.bigint();
export const since = (t0: bigint): number => Number(process.hrtime.bigint() - t0);

export function stats(samples: ArrayLike<number>): Stats {
  const s = Float64Array.from(samples).sort();
  const n = s.length;
  if (n === 0) return { n: 0, p50: NaN, p90: NaN, p99: NaN, max: NaN, mean: NaN };
  const at = (p: number) => s[Math.min(n - 1, Math.floor(p * n))]!;
  let sum = 0;
  for (const x of s) sum += x;
  return { n, p50: at(0.5), p90: at(0.9), p99: at(0.99), max: s[n - 1]!, mean: sum / n };
}

export const median = (xs: number[]): number => stats(xs).p50;

/** The repository root (this file is bench/harness/common.ts, or dist/bench/harness/common.js once built). */
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

/**
 * Two figures that tell one machine's run from another's, taken in well under a second: `loopMs`,
 * the best of three runs of a fixed integer loop (CPU speed), and `pageTouchUs`, the cost of the
 * first write to each 4 KiB page of a fresh 16 MiB WebAssembly memory (the OS mapping it in). On
 * this project's VMs the page figure has been 12 µs, against about 0.1–0.3 µs on bare metal, and
 * it is most of a first-visit mask's time when the mask lands on fresh pages (bench/results/
 * MASKBENCH-FULL.md): runs on machines whose figures differ are not comparable.
 */
export interface MachineSpeed {
  loopMs: number;
  pageTouchUs: number;
  /**
   * Interruptions of a thread that only reads the clock (gaps over 10 µs: time the hypervisor or
   * other processes took from it): how many a millisecond, their median length, and the share of
   * the time they took. Each one lands inside whatever is being timed: with 2 a ms of 35 µs, a
   * 20 µs mask has a 4% chance of being timed at over 50.
   */
  stalls?: { perMs: number; medianUs: number; share: number };
}

export function machineSpeed(): MachineSpeed {
  let loopMs = Infinity;
  let sink = 0;
  for (let r = 0; r < 3; r++) {
    const t0 = now();
    let x = 0x9e3779b9 | 0;
    for (let i = 0; i < 20_000_000; i++) x = (Math.imul(x ^ (x >>> 15), 0x85ebca6b) + i) | 0;
    sink ^= x;
    loopMs = Math.min(loopMs, since(t0) / 1e6);
  }
  const PAGE = 4096;
  const memory = new WebAssembly.Memory({ initial: 256 }); // 16 MiB, never touched yet
  const bytes = new Uint8Array(memory.buffer);
  const t0 = now();
  for (let i = 0; i < bytes.length; i += PAGE) bytes[i] = 1 + (sink & 1);
  const pageTouchUs = since(t0) / 1e3 / (bytes.length / PAGE);
  stalls(100); // (a first run counts V8's own pauses while it compiles the loop)
  return { loopMs, pageTouchUs, stalls: stalls(200) };
}

/** MachineSpeed.stalls over `ms` milliseconds of reading the clock. */
function stalls(ms: number): { perMs: number; medianUs: number; share: number } {
  // (performance.now, not hrtime.bigint: a BigInt a read would make the collector's pauses part of the count.)
  const gaps: number[] = [];
  const t0 = performance.now();
  const end = t0 + ms;
  for (let last = t0; last < end;) {
    const t = performance.now();
    if (t - last > 0.01) gaps.push((t - last) * 1e3);
    last = t;
  }
  gaps.sort((a, b) => a - b);
  const lost = gaps.reduce((a, b) => a + b, 0);
  return { perMs: gaps.length / ms, medianUs: gaps.length > 0 ? gaps[gaps.length >> 1]! : 0, share: lost / (ms * 1e3) };
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
export function replaySpecc(m: Matcher, r: Replay, onToken: (m: Matcher, tok: number) => void): void {
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
  /** `Vocabulary.fromTokenizerJson(path)`: the file read and converted, cold (the first call in the process), ms. */
  loadMs: number;
  /** The same vocabulary from its prepared file (`specc vocab`), read from disk, ms. */
  preparedMs: number;
}

export async function loadVocab(path: string, name = basename(dirname(dirname(path)))): Promise<LoadedVocab> {
  // What a decoder calls: the file read and converted (bindings/tokenizer-json-scan.ts), then the
  // prepared file `specc vocab` writes, read back. The vocabulary used from here on is the
  // prepared one (identical tokens; it carries the trie order, as a .vocab user's does).
  const t0 = now();
  const fromJson = await Vocabulary.fromTokenizerJson(path);
  const loadMs = since(t0) / 1e6;
  const prepPath = join(tmpdir(), `specc-bench-${process.pid}-${name}.vocab`);
  writeFileSync(prepPath, fromJson.toPrepared());
  const t1 = now();
  const vocab = await Vocabulary.fromTokenizerJson(prepPath);
  const preparedMs = since(t1) / 1e6;
  rmSync(prepPath, { force: true });
  const json = JSON.parse(readFileSync(path, "utf8")) as {
    model: { vocab: Record<string, number> | [string, number][] };
    added_tokens?: { id: number; content: string }[];
    decoder?: { type?: string; decoders?: { type?: string }[] } | null;
  };
  const pieces: string[] = [];
  const v = json.model.vocab;
  if (Array.isArray(v)) v.forEach((e, i) => (pieces[i] = e[0]));
  else for (const k in v) pieces[v[k]!] = k;
  for (const a of json.added_tokens ?? []) pieces[a.id] = a.content;
  const dec = json.decoder;
  const decoders = dec?.type === "Sequence" ? (dec.decoders ?? []) : dec ? [dec] : [];
  const xgrammarVocabType = decoders.some((d) => d?.type === "ByteLevel") ? "byte_level" : decoders.some((d) => d?.type === "ByteFallback") ? "byte_fallback" : "raw";
  // Special added tokens spell their text too: a transcript writes Qwen3's <|im_end|> marker token so.
  const te = new TextEncoder();
  const encode = exactEncoder(await encoderFor(path), (id) => vocab.tokenBytes(id) ?? ((c) => (c === undefined ? null : te.encode(c)))(vocab.addedContent(id)));
  return { name, path, vocab, encode, pieces, xgrammarVocabType, loadMs, preparedMs };
}

// ---- Token text (shared by the peers) -------------------------------------------------------------

const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** A token's text for reports: its characters, or its bytes as \xHH where they are not UTF-8. */
export const tokenText = (v: Vocabulary, id: number): string => {
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

// ---- Shared by the specc and XGrammar drivers -----------------------------------------------------------

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
  /** Spec.load of the compiled .wasm with the (prepared) vocabulary, then the first mask: ms. */
  firstMaskMs: number;
  /** How the spec was compiled (re-used to time the in-process compile). */
  compile: (path: string) => Compiled;
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
