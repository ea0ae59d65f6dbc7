/**
 * @fileoverview The `specc` command line. Thin: each command parses its flags (node:util
 * parseArgs, no dependency needed), calls the compiler or the bindings, and reports. All
 * failures become a diagnostic and an exit code — never a stack trace:
 *   0 success · 1 the trace does not conform · 2 usage error · 3 error in the input (spec, trace,
 *   .wasm) · 70 internal error (a bug in specc: please report it)
 * Output files are written to a temporary file and renamed, so a failure leaves nothing behind.
 */
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { PDA_MAX_STACK } from "./grammar/pda.js";
import { compileGrammarSource, compileIR, compileToWasm, isGrammarFile, parseSpecBytes, type CompiledGrammar, type Limits } from "./compile.js";
import { decodeSource } from "./frontend/parse.js";
import { SpecError, formatDiagnostic } from "./diagnostics.js";
import { formatWarning } from "./grammar/index.js";
import type { Compiled } from "./ir.js";
import { MAX_GRAMMAR_DEPTH } from "./lower.js";
import { byteDfaEngine, parseTrace, runTrace, type Engine } from "./trace.js";

export const EXIT = { ok: 0, nonconforming: 1, usage: 2, input: 3, internal: 70 } as const;

class UsageError extends Error {}

const USAGE = `specc — compile agent specs into automata and a WebAssembly runtime for constrained decoding

SPEC is an agent spec (.agent) or a grammar (.gbnf/.ebnf: the whole output must be a sentence of
its rule root, or of --start RULE). A grammar compiles to a pushdown automaton, exact at any
nesting depth; with --max-depth N, to a plain DFA exact up to N nested recursive calls
(parentheses in arithmetic, arrays/objects in JSON). Grammars inside agent states use the DFA
(their :max-depth, else --max-depth, else 8).

usage:
  specc compile SPEC -o OUT.wasm         compile a spec into a self-contained .wasm
                [--emit ebnf|gbnf]       … or write its exact language as an XGrammar/llama.cpp grammar
                [--vocab tokenizer.json] bake a vocabulary and every state's mask into the .wasm
                                         (custom sections specc.vocab, specc.masks)
                [--max-depth N]          compile grammars to a DFA with this nesting bound (every command
                                         that compiles takes it, and --max-grammar-states N, default 100000)
  specc render  SPEC -o OUT.svg|OUT.dot  draw the agent's state diagram (a grammar: its rule graph)
                                         [--level states|bytes]
  specc check   SPEC|OUT.wasm --trace T.json [--json]
                                         is this transcript conformant? (exit 0 yes, 1 no)
  specc check   SPEC|OUT.wasm --examples PROMPT.txt [--from TEXT] [--json]
                                         validate the few-shot examples of a prompt against the spec
  specc check   RULES.rules [--known-predicates]
                                         parse and check AgentSpec rules (with --known-predicates: only
                                         the predicates specc ships may be used)
  specc replay  SPEC|OUT.wasm --vocab tokenizer.json --trace T.json [--json]
                                         replay a transcript token by token: did the mask allow each token?
  specc sample  SPEC|OUT.wasm --vocab tokenizer.json [--n N] [--seed S] [--max-state-tokens K] [--out DIR] [--json]
                                         conformant transcripts from seeded random logits under the masks
  specc bench   SPEC --vocab tokenizer.json [--against xgrammar] [--trace T.json] [--iterations N] [--json]
                                         mask latency, compile time, sizes and memory on a real vocabulary,
                                         side by side with XGrammar (same process, same tokens)
  specc plan    GRAMMAR.gbnf --task TEXT [--chooser first|random|script|llm] [--json]
                                         Formal-LLM planning: expand the grammar choice by choice,
                                         each tool at most once, backtracking on dead ends
  specc demo    [--out DIR]              compile, render and run the bundled ReAct example

exit codes: 0 ok, 1 trace does not conform, 2 usage error, 3 error in an input file, 70 internal error`;

interface Io { out: (s: string) => void; err: (s: string) => void }

export async function main(argv: string[], io: Io = { out: (s) => process.stdout.write(s + "\n"), err: (s) => process.stderr.write(s + "\n") }): Promise<number> {
  const [cmd, ...rest] = argv;
  const sources = new Map<string, string>();
  try {
    switch (cmd) {
      case "compile": return await cmdCompile(rest, io, sources);
      case "render": return await cmdRender(rest, io, sources);
      case "check": return await cmdCheck(rest, io, sources);
      case "demo": return await cmdDemo(rest, io);
      case "replay": return await cmdReplay(rest, io, sources);
      case "sample": return await cmdSample(rest, io, sources);
      case "plan": return await (await import("../bindings/planner.js")).runPlanCommand(rest, io);
      case "bench": return await cmdBench(rest, io, sources);
      case undefined: case "-h": case "--help": case "help":
        io.out(USAGE);
        return cmd === undefined ? EXIT.usage : EXIT.ok;
      default:
        throw new UsageError(`unknown command '${cmd}'`);
    }
  } catch (e) {
    if (e instanceof UsageError || (e as { code?: string }).code?.startsWith?.("ERR_PARSE_ARGS")) {
      io.err(`error: ${(e as Error).message}\n\n${USAGE}`);
      return EXIT.usage;
    }
    if (e instanceof SpecError) {
      const src = e.span ? sources.get(e.span.file) : undefined;
      io.err(formatDiagnostic(e, src));
      for (const m of (e as SpecError & { more?: SpecError[] }).more ?? []) io.err(formatDiagnostic(m, m.span ? sources.get(m.span.file) : undefined));
      return EXIT.input;
    }
    if (e instanceof InputError) {
      io.err(`error: ${e.message}`);
      return EXIT.input;
    }
    io.err(`internal error: ${(e as Error)?.stack ?? String(e)}\nThis is a bug in specc; please report it with the input that caused it.`);
    return EXIT.internal;
  }
}

class InputError extends Error {}

function readInput(path: string): Uint8Array {
  if (!existsSync(path)) throw new InputError(`${path}: no such file`);
  try { return readFileSync(path); } catch (e) { throw new InputError(`${path}: ${(e as Error).message}`); }
}

export interface CompileFileOptions {
  limits?: Limits;
  /** Receives each warning (of grammars), formatted. */
  warn?: (text: string) => void;
  /** Start rule of a standalone grammar (default root). */
  start?: string;
}

/**
 * Reads and compiles a spec file — an agent spec, or a standalone grammar (.gbnf/.ebnf) — and
 * remembers its text (and its grammar files') so diagnostics can quote them.
 */
export function compileFile(path: string, sources: Map<string, string>, opts: CompileFileOptions = {}): Compiled | CompiledGrammar {
  const bytes = readInput(path);
  try {
    let c: Compiled | CompiledGrammar;
    if (isGrammarFile(path)) {
      const text = decodeSource(path, bytes);
      sources.set(path, text);
      c = compileGrammarSource(text, path, opts.limits, opts.start);
    } else {
      const { ir, text } = parseSpecBytes(bytes, path, { sources });
      sources.set(path, text);
      c = compileIR(ir, opts.limits);
    }
    if (opts.warn) for (const w of grammarWarnings(c)) opts.warn(formatWarning(w, w.span ? sources.get(w.span.file) : undefined));
    return c;
  } catch (e) {
    if (e instanceof SpecError && e.span && !sources.has(path)) {
      try { sources.set(path, new TextDecoder().decode(bytes)); } catch { /* binary: no source line */ }
    }
    throw e;
  }
}

/** The warnings of a compiled grammar, or of the grammars in a spec's states. */
function grammarWarnings(c: Compiled | CompiledGrammar): SpecError[] {
  if ("grammar" in c) return c.grammar.cfg.warnings;
  return c.ir.states.flatMap((s) => (s.content.kind === "grammar" ? s.content.cfg.warnings : []));
}

const isCompiledGrammar = (c: Compiled | CompiledGrammar): c is CompiledGrammar => "grammar" in c;

/** Options every command that compiles takes. */
const COMPILE_OPTIONS = { "max-depth": { type: "string" }, "max-grammar-states": { type: "string" }, start: { type: "string" } } as const;

function compileOptions(values: { "max-depth"?: string; "max-grammar-states"?: string; start?: string }, io: Io): CompileFileOptions {
  const limits: Limits = {};
  if (values["max-grammar-states"] !== undefined) {
    const n = Number(values["max-grammar-states"]);
    if (!Number.isInteger(n) || n < 1) throw new UsageError(`--max-grammar-states must be a positive integer, not '${values["max-grammar-states"]}'`);
    limits.maxGrammarStates = n;
  }
  if (values["max-depth"] !== undefined) {
    const d = Number(values["max-depth"]);
    if (!Number.isInteger(d) || d < 0 || d > MAX_GRAMMAR_DEPTH) throw new UsageError(`--max-depth must be an integer from 0 to ${MAX_GRAMMAR_DEPTH}, not '${values["max-depth"]}'`);
    limits.maxDepth = d;
  }
  return { limits, start: values.start, warn: (t) => io.err(t) };
}

/** Writes `data` to `path` atomically: a temp file in the same folder, then a rename. */
export function writeAtomic(path: string, data: Uint8Array | string): void {
  const tmp = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
  try {
    writeFileSync(tmp, data);
    renameSync(tmp, path);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw new InputError(`cannot write ${path}: ${(e as Error).message}`);
  }
}

function oneFile(positionals: string[], what: string): string {
  if (positionals.length !== 1) throw new UsageError(positionals.length ? `expected one ${what}, got ${positionals.length}` : `missing ${what}`);
  return positionals[0]!;
}

async function cmdCompile(args: string[], io: Io, sources: Map<string, string>): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: {
    out: { type: "string", short: "o" }, emit: { type: "string", default: "wasm" }, vocab: { type: "string" }, ...COMPILE_OPTIONS } });
  const file = oneFile(positionals, "spec file");
  const emit = values.emit!;
  if (!["wasm", "ebnf", "gbnf"].includes(emit)) throw new UsageError(`--emit must be wasm, ebnf or gbnf, not '${emit}'`);
  const out = values.out ?? file.replace(/\.[^./]*$/, "") + "." + emit;
  const c = compileFile(file, sources, compileOptions(values, io));
  if (emit !== "wasm") {
    const { emitGrammar } = await import("./emit-grammar.js");
    const text = emitGrammar(c.byteDfa, emit as "ebnf" | "gbnf", c.ir.name);
    writeAtomic(out, text);
    io.out(`${out}: ${emit.toUpperCase()} grammar, ${c.byteDfa.nStates + 1} rules (the language of ${c.ir.name}; see docs on env text and ill-formed UTF-8)`);
    return EXIT.ok;
  }
  let wasm = compileToWasm(c);
  if (values.vocab) {
    const { Vocabulary } = await import("../bindings/vocab.js");
    const { serializeVocabulary, VOCAB_SECTION } = await import("../bindings/baked-vocab.js");
    const { appendCustomSection } = await import("./emit-wasm.js");
    let vocab;
    try { vocab = await Vocabulary.fromTokenizerJson(values.vocab); } catch (e) { throw new InputError(`${values.vocab}: ${(e as Error).message}`); }
    wasm = appendCustomSection(wasm, VOCAB_SECTION, serializeVocabulary(vocab.flat(), vocab.eos));
    // …and every state's mask, computed once here, so loading needs no trie walk. (Not for a
    // pushdown grammar: its masks belong to configurations, which only exist as a run reaches them.)
    if (!c.byteDfa.calls) {
      const { Spec } = await import("../bindings/spec.js");
      const { serializeMasks, MASKS_SECTION } = await import("../bindings/baked-vocab.js");
      const spec = await Spec.load(wasm, { precompute: true });
      const words = spec.maskWords;
      const stateMask = Uint32Array.from({ length: spec.stateCount }, (_, st) => spec.exports.mask_id(st));
      const masks = new Int32Array(spec.distinctMasks * words);
      for (let k = 0; k < spec.distinctMasks; k++) masks.set(spec.maskAt(k), k * words);
      wasm = appendCustomSection(wasm, MASKS_SECTION, serializeMasks({ words, stateMask, masks }));
    }
  }
  writeAtomic(out, wasm);
  if (isCompiledGrammar(c)) {
    const g = c.grammar;
    const head = `${out}: ${wasm.length} bytes · grammar ${c.ir.name} (start ${g.cfg.rules[g.cfg.start]!.name}) · `;
    if (g.mode === "pushdown" && g.calledRules.length > 0) {
      const calls = c.byteDfa.calls!.reduce((n, l) => n + l.length, 0);
      io.out(head + `pushdown automaton ${c.byteDfa.nStates} states × ${c.byteDfa.nClasses} classes, ${calls} call edges into ${g.calledRules.join(", ")} · ` +
        `exact at any nesting depth (stack ≤ ${PDA_MAX_STACK} frames)`);
    } else {
      io.out(head + `byte DFA ${c.byteDfa.nStates} states × ${c.byteDfa.nClasses} classes · ` +
        (g.depthLimited ? `exact up to nesting depth ${g.maxDepth} (deeper nesting is not offered; leave out --max-depth for a pushdown automaton)` : "exact (nothing nests)"));
    }
  } else {
    io.out(`${out}: ${wasm.length} bytes · ${c.ir.states.length} spec states · state DFA ${c.minStateDfa.nStates} · byte DFA ${c.byteDfa.nStates} states × ${c.byteDfa.nClasses} classes`);
  }
  return EXIT.ok;
}

async function cmdRender(args: string[], io: Io, sources: Map<string, string>): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: {
    out: { type: "string", short: "o" }, level: { type: "string", default: "states" }, ...COMPILE_OPTIONS } });
  const file = oneFile(positionals, "spec file");
  if (values.level !== "states" && values.level !== "bytes") throw new UsageError(`--level must be states or bytes, not '${values.level}'`);
  const out = values.out ?? file.replace(/\.[^./]*$/, "") + ".svg";
  const c = compileFile(file, sources, compileOptions(values, io));
  const { stateDot, byteDot, ruleDot, renderSvg } = await import("./render.js");
  let dot: string;
  try {
    dot = values.level === "bytes" ? byteDot(c.ir, c.byteDfa) : isCompiledGrammar(c) ? ruleDot(c.grammar.cfg, c.ir.name) : stateDot(c.ir, c.minStateDfa);
  } catch (e) {
    throw new InputError(`${file}: ${(e as Error).message}`);
  }
  const data = out.endsWith(".dot") ? dot : await renderSvg(dot);
  writeAtomic(out, data);
  io.out(`${out}: ${values.level === "bytes" ? `byte automaton, ${c.byteDfa.nStates} states` : isCompiledGrammar(c) ? `rule graph of grammar ${c.ir.name}` : `state diagram of ${c.ir.name}`}`);
  return EXIT.ok;
}

async function loadEngine(file: string, sources: Map<string, string>, opts: CompileFileOptions): Promise<{ engine: Engine; markers: string[]; names: string[] }> {
  if (file.endsWith(".wasm")) {
    const { Spec } = await import("../bindings/spec.js");
    let spec;
    try { spec = await Spec.load(readInput(file)); } catch (e) {
      if (e instanceof InputError) throw e;
      throw new InputError(`${file}: ${(e as Error).message}`);
    }
    const { wasmEngine } = await import("../bindings/spec.js");
    return { engine: wasmEngine(spec), markers: spec.states.map((s) => s.marker), names: spec.states.map((s) => s.name) };
  }
  const c = compileFile(file, sources, opts);
  return { engine: byteDfaEngine(c.byteDfa), markers: c.ir.states.map((s) => s.marker), names: c.ir.states.map((s) => s.name) };
}


async function cmdCheck(args: string[], io: Io, sources: Map<string, string>): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: {
    trace: { type: "string", multiple: true }, json: { type: "boolean", default: false },
    examples: { type: "string", multiple: true }, from: { type: "string" },
    "known-predicates": { type: "boolean", default: false }, ...COMPILE_OPTIONS } });
  const file = oneFile(positionals, "spec or .wasm file");
  if (file.endsWith(".rules")) {
    const { checkRulesFile } = await import("./rules/index.js");
    const text = decodeSource(file, readInput(file));
    sources.set(file, text);
    const known = values["known-predicates"] ? Object.keys((await import("../bindings/rules-predicates.js")).defaultPredicates) : undefined;
    io.out(checkRulesFile(text, file, known).summary);
    return EXIT.ok;
  }
  if (values.examples?.length) return checkPromptExamples(file, values.examples, values.from, !!values.json, io, sources);
  if (!values.trace?.length) throw new UsageError("missing --trace FILE (or --examples PROMPT.txt)");
  const { engine, markers, names } = await loadEngine(file, sources, compileOptions(values, io));
  const name = (i: number) => (i < 0 ? "(start)" : names[i]!);
  // A grammar has no spec states (every spec has one at least): report in terms of the text.
  const grammar = names.length === 0;
  const { allowedBytesLabel } = await import("./render.js");
  const expectedText = (state: number) => allowedBytesLabel(engine, state);
  let failed = 0;
  const results: unknown[] = [];
  for (const tf of values.trace) {
    const traceText = new TextDecoder().decode(readInput(tf));
    const trace = parseTrace(traceText, tf);
    const v = runTrace(engine, trace, markers);
    if (v.verdict !== "conforms") failed++;
    if (values.json) {
      results.push({ trace: tf, ...v, ...("specState" in v ? { specState: name(v.specState), expected: v.expected.map((i) => markers[i]) } : {}) });
      continue;
    }
    if (v.verdict === "conforms") io.out(grammar ? `${tf}: conforms (a sentence of the grammar)` : `${tf}: conforms (ends in ${name(engine.specState(v.state))})`);
    else if (v.verdict === "incomplete") {
      io.out(grammar ? `${tf}: incomplete — the text is not a complete sentence yet; it may continue with ${expectedText(v.state)}`
        : `${tf}: incomplete — the run stops in ${name(v.specState)}; it may continue with ${v.expected.map((i) => JSON.stringify(markers[i])).join(", ") || "nothing"}`);
    } else if (grammar) {
      const seg = trace.segments[v.segment]!;
      io.out(`${tf}: violation in segment ${v.segment} (${seg.by}) at offset ${v.offset}: ${v.reason === "env-not-expected" ? "environment text in a grammar's output" : "text not allowed here"}`);
      io.out(`  expected: ${expectedText(v.state)}`);
      const lo = Math.max(0, v.offset - 40);
      const pre = JSON.stringify(seg.text.slice(lo, v.offset)).slice(1, -1);
      io.out(`  | ${JSON.stringify(seg.text.slice(lo, v.offset + 20)).slice(1, -1)}`);
      io.out(`  | ${" ".repeat(pre.length)}^`);
    } else {
      const seg = trace.segments[v.segment]!;
      const why = v.reason === "env-not-expected" ? "environment text where none is expected (no env-input marker precedes it)" : "text not allowed here";
      io.out(`${tf}: violation in segment ${v.segment} (${seg.by}) at offset ${v.offset}: ${why}`);
      io.out(`  state: ${name(v.specState)}; valid next markers: ${v.expected.map((i) => JSON.stringify(markers[i])).join(", ") || "none"}`);
      const allowed = expectedText(v.state);
      if (allowed.length < 40 && !allowed.startsWith("[^")) io.out(`  text allowed here: ${allowed}`); // constrained content (one-of, grammar)
      const lo = Math.max(0, v.offset - 40);
      const snippet = seg.text.slice(lo, v.offset + 20);
      const pre = JSON.stringify(seg.text.slice(lo, v.offset)).slice(1, -1);
      io.out(`  | ${JSON.stringify(snippet).slice(1, -1)}`);
      io.out(`  | ${" ".repeat(pre.length)}^`);
    }
  }
  if (values.json) io.out(JSON.stringify(results.length === 1 ? results[0] : results, null, 2));
  return failed ? EXIT.nonconforming : EXIT.ok;
}

async function cmdDemo(args: string[], io: Io): Promise<number> {
  const { values } = parseArgs({ args, options: { out: { type: "string", default: "demo-out" } } });
  const { runDemo } = await import("../bindings/demo.js");
  return runDemo(values.out!, io);
}

/** Loads a spec (compiling it when it is not a .wasm) with the vocabulary of a tokenizer.json. */
async function loadWithVocab(file: string, vocabPath: string | undefined, sources: Map<string, string>, opts: CompileFileOptions) {
  if (!vocabPath) throw new UsageError("missing --vocab tokenizer.json");
  const { Spec } = await import("../bindings/spec.js");
  const { Vocabulary } = await import("../bindings/vocab.js");
  let vocab;
  try { vocab = await Vocabulary.fromTokenizerJson(vocabPath); } catch (e) { throw new InputError(`${vocabPath}: ${(e as Error).message}`); }
  const wasm = file.endsWith(".wasm") ? readInput(file) : compileToWasm(compileFile(file, sources, opts));
  try {
    return { spec: await Spec.load(wasm, { vocab }), vocab };
  } catch (e) {
    throw new InputError(`${file}: ${(e as Error).message}`);
  }
}

async function cmdReplay(args: string[], io: Io, sources: Map<string, string>): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: {
    vocab: { type: "string" }, trace: { type: "string" }, json: { type: "boolean", default: false }, ...COMPILE_OPTIONS } });
  const file = oneFile(positionals, "spec or .wasm file");
  if (!values.trace) throw new UsageError("missing --trace FILE");
  const trace = parseTrace(new TextDecoder().decode(readInput(values.trace)), values.trace);
  const { spec, vocab } = await loadWithVocab(file, values.vocab, sources, compileOptions(values, io));
  const { encoderFor } = await import("../bindings/encode.js");
  const encode = await encoderFor(values.vocab!);
  const { replayTrace } = await import("../bindings/replay.js");
  const r = replayTrace(spec, vocab, encode, trace);
  if (values.json) {
    io.out(JSON.stringify(r, null, 2));
  } else {
    io.out("  # | seg | token  | text                 | allowed | popcount | mask ns | status");
    r.steps.forEach((s, i) => io.out(`${String(i).padStart(3)} | ${String(s.segment).padStart(3)} | ${String(s.token).padStart(6)} | ${JSON.stringify(s.text).slice(0, 20).padEnd(20)} | ${s.allowed ? "yes" : "NO "}     | ${String(s.popcount).padStart(8)} | ${String(s.maskNs).padStart(7)} | ${s.status}`));
    const ns = r.steps.map((s) => s.maskNs).sort((a, b) => a - b);
    const pct = (q: number) => (ns.length ? ns[Math.min(ns.length - 1, Math.floor(q * ns.length))]! : 0);
    io.out(`${r.steps.length} tokens; fillMask p50 ${(pct(0.5) / 1000).toFixed(2)} µs, p99 ${(pct(0.99) / 1000).toFixed(2)} µs (including the first visit of each state)`);
    if (r.error) io.out(`error: ${r.error}`);
    else if (r.firstForbidden >= 0) io.out(`token ${r.firstForbidden} (${JSON.stringify(r.steps[r.firstForbidden]!.text)}) was forbidden by the mask`);
    else io.out(r.accepted ? "every token was allowed; the run is complete" : "every token was allowed; the run is incomplete");
  }
  return r.firstForbidden >= 0 || r.error ? EXIT.nonconforming : EXIT.ok;
}

async function cmdSample(args: string[], io: Io, sources: Map<string, string>): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: {
    vocab: { type: "string" }, n: { type: "string", default: "1" }, seed: { type: "string", default: "1" },
    "max-state-tokens": { type: "string", default: "32" }, out: { type: "string" }, json: { type: "boolean", default: false }, ...COMPILE_OPTIONS } });
  const file = oneFile(positionals, "spec or .wasm file");
  const int = (v: string, name: string, min: number) => {
    const x = Number(v);
    if (!Number.isInteger(x) || x < min) throw new UsageError(`--${name} must be an integer ≥ ${min}, not '${v}'`);
    return x;
  };
  const n = int(values.n!, "n", 1), seed = int(values.seed!, "seed", 0), k = int(values["max-state-tokens"]!, "max-state-tokens", 1);
  const { spec, vocab } = await loadWithVocab(file, values.vocab, sources, compileOptions(values, io));
  const { sampleTraces } = await import("../bindings/replay.js");
  const traces = sampleTraces(spec, vocab, { n, seed, maxStateTokens: k });
  if (values.out) {
    const { mkdirSync } = await import("node:fs");
    mkdirSync(values.out, { recursive: true });
    traces.forEach((t, i) => writeAtomic(join(values.out!, `sample-${String(i).padStart(4, "0")}.json`), JSON.stringify(t, null, 2) + "\n"));
    io.out(`${values.out}: ${traces.length} transcripts`);
  } else if (values.json || n > 1) {
    io.out(JSON.stringify(n === 1 ? traces[0] : traces, null, 2));
  } else {
    for (const s of traces[0]!.segments) io.out(s.by === "env" ? `[env] ${JSON.stringify(s.text)}` : s.text);
  }
  return EXIT.ok;
}

/** `specc check SPEC --examples prompt.txt`: each few-shot example's first violation (seed 001). */
async function checkPromptExamples(file: string, prompts: string[], from: string | undefined, json: boolean, io: Io, sources: Map<string, string>): Promise<number> {
  const { checkExamples, formatExamplesReport } = await import("../bindings/examples-check.js");
  let spec: Parameters<typeof checkExamples>[0];
  if (file.endsWith(".wasm")) {
    const { Spec } = await import("../bindings/spec.js");
    try { spec = await Spec.load(readInput(file)); } catch (e) {
      if (e instanceof InputError) throw e;
      throw new InputError(`${file}: ${(e as Error).message}`);
    }
  } else spec = compileFile(file, sources);
  let bad = 0;
  const all: unknown[] = [];
  for (const pf of prompts) {
    const reports = checkExamples(spec, new TextDecoder().decode(readInput(pf)), from ? { from } : {});
    bad += reports.filter((r) => r.verdict !== "conforms").length;
    if (json) all.push({ prompt: pf, examples: reports.map(({ trace: _t, ...r }) => r) });
    else io.out(formatExamplesReport(reports, { file: pf }));
  }
  if (json) io.out(JSON.stringify(all.length === 1 ? all[0] : all, null, 2));
  return bad ? EXIT.nonconforming : EXIT.ok;
}

async function cmdBench(args: string[], io: Io, sources: Map<string, string>): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: {
    vocab: { type: "string" }, against: { type: "string", multiple: true }, trace: { type: "string" },
    iterations: { type: "string" }, json: { type: "boolean", default: false }, ...COMPILE_OPTIONS } });
  const file = oneFile(positionals, "spec file");
  if (!values.vocab) throw new UsageError("missing --vocab tokenizer.json");
  const opts = compileOptions(values, io);
  const { runBench } = await import("../bindings/bench.js");
  return runBench({
    spec: file, vocab: values.vocab, trace: values.trace, json: values.json,
    against: values.against?.flatMap((a) => a.split(",")),
    iterations: values.iterations === undefined ? undefined : Number(values.iterations),
    io, compile: (p) => compileFile(p, sources, opts),
  });
}
