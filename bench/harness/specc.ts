/**
 * @fileoverview The specc suites of the benchmarks (bench/harness/index.ts). One *case* is a spec × a
 * vocabulary × a transcript (`prepareCase`); `benchSpecc` replays it: prompt text from its first
 * marker is fed with `feedText`, env text with `feedEnv`, and every LLM token goes through
 * `fillMask` (timed) and `commit`, plus cold masks, precompute, batches of 256, memory per matcher
 * and compile time. `bennySuite` runs the microbenchmarks through benny (ops/s);
 * `benchCompileCommand` times the whole `specc compile` command.
 *
 * The per-token comparison with XGrammar times R back-to-back calls at each token and divides by R
 * (`perToken`, R = SPECC_REPS for specc, XGRAMMAR_REPS for XGrammar), because specc's calls are
 * shorter than the timer itself. benny is a devDependency: it is imported lazily.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { compileGrammarSource, compileSource, compileToWasm, isGrammarFile } from "../../compiler/compile.js";
import type { Compiled } from "../../compiler/ir.js";
import { parseTrace, type Trace } from "../../compiler/trace.js";
import { sampleTraces } from "../../bindings/replay.js";
import { Spec, type Matcher } from "../../bindings/spec.js";
import { SPECC_REPS, XGRAMMAR_REPS, median, now, repoRoot, replaySpecc, since, stats, tokenizeTrace, type LoadedVocab, type PerToken, type PreparedCase, type Replay, type Stats } from "./common.js";

export { SPECC_REPS, XGRAMMAR_REPS, type PerToken, type PreparedCase };
import type { XGrammarResult } from "./xgrammar.js";

// ---- specc suites -----------------------------------------------------------------------------------

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
  // Time to first mask: a fresh load as a decoder starting up does it, through its first mask.
  const t1 = now();
  const first = await Spec.load(wasm, { vocab: v.vocab });
  first.matcher().fillMask(new Int32Array(first.maskWords));
  const firstMaskMs = since(t1) / 1e6;
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
  return { specPath, specName: basename(specPath), vocab: v, tracePath: tp, compiled, wasm, spec, replay, loadMs, firstMaskMs, compile };
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
  /** Spec.load → first mask with a prepared vocabulary (time to first mask), ms. */
  firstMaskMs: number;
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
    firstMaskMs: c.firstMaskMs,
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

/** Bytes of one matcher record in the runtime's linear memory (runtime-wasm/records.ts, REC). */
export const MATCHER_RECORD_BYTES = readRecordBytes();

function readRecordBytes(): number {
  try {
    const src = readFileSync(join(repoRoot(), "runtime-wasm", "records.ts"), "utf8");
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
let viewSink = 0;

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
    let v = 0;
    adds.push(b.add(`${key} maskView (warm, zero copy)`, () => {
      viewSink ^= ms[v]!.maskView()[0]!; // a module-level sink: the read cannot be dropped
      v = v + 1 === ms.length ? 0 : v + 1;
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
