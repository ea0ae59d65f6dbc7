/**
 * @fileoverview Benchmarks (DESIGN §5), shared by `npm run bench` (bench/run.ts), `specc bench`
 * and the CI smoke test (tests/bench/bench-smoke.test.ts).
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
 *
 * This module runs the suites (`runSuite`, `runBench`) and re-exports the parts, which live beside
 * it: common.ts (helpers, transcript replay, vocabularies), specc.ts (the specc suites,
 * benny, whole-command compile), xgrammar.ts and llamacpp.ts (the peers), report.ts (DESIGN §5
 * targets, tables, RESULTS.md).
 */
import { existsSync } from "node:fs";
import { loadavg } from "node:os";
import { basename, dirname, resolve } from "node:path";
import { isGrammarFile } from "../../compiler/compile.js";
import type { Compiled } from "../../compiler/ir.js";
import { loadVocab, machineInfo, now, since, type LoadedVocab } from "./common.js";
import { benchLlamaCpp } from "./llamacpp.js";
import { caseTargets, renderCase, type SuiteResult } from "./report.js";
import { benchCompileCommand, benchSpecc, bennySuite, prepareCase, type BennyOptions, type CaseOptions, type CaseResult, type CompileCommandResult, type PreparedCase } from "./specc.js";
import { benchXGrammar, disposeXGrammarVocab, prepareXGrammarVocab, type XGrammarVariant } from "./xgrammar.js";

export {
  loadVocab,
  machineInfo,
  packageVersion,
  repoRoot,
  stats,
  tokenizeTrace,
  wellFormedUtf8Start,
  type LoadedVocab,
  type MachineInfo,
  type Replay,
  type ReplaySegment,
  type Stats,
} from "./common.js";
export * from "./specc.js";
export * from "./xgrammar.js";
export * from "./llamacpp.js";
export * from "./report.js";

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
    vocabs.push({ name: sv.name, label: sv.label, ...(sv.note ? { note: sv.note } : {}), size: v.vocab.size, family: v.vocab.family, loadMs: v.loadMs, preparedMs: v.preparedMs, xgrammarTokenizerInfoMs: xv?.infoMs ?? null });
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
        progress(`[${done}/${total}] ${sv.label}: benny microbenchmarks (${prepared.length * 4} cases)`);
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

// ---- specc bench (the CLI command) ---------------------------------------------------------------------

export interface BenchIo {
  out(s: string): void;
  err(s: string): void;
}

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
