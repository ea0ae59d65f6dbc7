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
import { compileIR, compileToWasm, parseSpecBytes } from "./compile.js";
import { decodeSource } from "./frontend/parse.js";
import { SpecError, formatDiagnostic } from "./diagnostics.js";
import type { Compiled } from "./ir.js";
import { byteDfaEngine, parseTrace, runTrace, type Engine } from "./trace.js";

export const EXIT = { ok: 0, nonconforming: 1, usage: 2, input: 3, internal: 70 } as const;

class UsageError extends Error {}

const USAGE = `specc — compile agent specs into automata and a WebAssembly runtime for constrained decoding

usage:
  specc compile SPEC -o OUT.wasm         compile a spec into a self-contained .wasm
                [--emit ebnf|gbnf]       … or write its exact language as an XGrammar/llama.cpp grammar
                [--vocab tokenizer.json] bake a vocabulary into the .wasm (custom section specc.vocab)
  specc render  SPEC -o OUT.svg|OUT.dot  draw the agent's state diagram [--level states|bytes]
  specc check   SPEC|OUT.wasm --trace T.json [--json]
                                         is this transcript conformant? (exit 0 yes, 1 no)
  specc check   RULES.rules [--known-predicates]
                                         parse and check AgentSpec rules (with --known-predicates: only
                                         the predicates specc ships may be used)
  specc replay  SPEC|OUT.wasm --vocab tokenizer.json --trace T.json [--json]
                                         replay a transcript token by token: did the mask allow each token?
  specc sample  SPEC|OUT.wasm --vocab tokenizer.json [--n N] [--seed S] [--max-state-tokens K] [--out DIR] [--json]
                                         conformant transcripts from seeded random logits under the masks
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

/** Reads and compiles a spec file; its text is remembered so diagnostics can quote it. */
export function compileFile(path: string, sources: Map<string, string>): Compiled {
  const bytes = readInput(path);
  try {
    const { ir, text } = parseSpecBytes(bytes, path);
    sources.set(path, text);
    return compileIR(ir);
  } catch (e) {
    if (e instanceof SpecError && e.span) {
      try { sources.set(path, new TextDecoder().decode(bytes)); } catch { /* binary: no source line */ }
    }
    throw e;
  }
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
    out: { type: "string", short: "o" }, emit: { type: "string", default: "wasm" }, vocab: { type: "string" } } });
  const file = oneFile(positionals, "spec file");
  const emit = values.emit!;
  if (!["wasm", "ebnf", "gbnf"].includes(emit)) throw new UsageError(`--emit must be wasm, ebnf or gbnf, not '${emit}'`);
  const out = values.out ?? file.replace(/\.[^./]*$/, "") + "." + emit;
  const c = compileFile(file, sources);
  if (emit !== "wasm") {
    const { emitGrammar } = await import("./emit-grammar.js");
    const text = emitGrammar(c.byteDfa, emit as "ebnf" | "gbnf", c.ir.name);
    writeAtomic(out, text);
    io.out(`${out}: ${emit.toUpperCase()} grammar, ${c.byteDfa.nStates + 1} rules (the exact language of ${c.ir.name})`);
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
  }
  writeAtomic(out, wasm);
  io.out(`${out}: ${wasm.length} bytes · ${c.ir.states.length} spec states · state DFA ${c.minStateDfa.nStates} · byte DFA ${c.byteDfa.nStates} states × ${c.byteDfa.nClasses} classes`);
  return EXIT.ok;
}

async function cmdRender(args: string[], io: Io, sources: Map<string, string>): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: {
    out: { type: "string", short: "o" }, level: { type: "string", default: "states" } } });
  const file = oneFile(positionals, "spec file");
  if (values.level !== "states" && values.level !== "bytes") throw new UsageError(`--level must be states or bytes, not '${values.level}'`);
  const out = values.out ?? file.replace(/\.[^./]*$/, "") + ".svg";
  const c = compileFile(file, sources);
  const { stateDot, byteDot, renderSvg } = await import("./render.js");
  const dot = values.level === "bytes" ? byteDot(c.ir, c.byteDfa) : stateDot(c.ir, c.minStateDfa);
  const data = out.endsWith(".dot") ? dot : await renderSvg(dot);
  writeAtomic(out, data);
  io.out(`${out}: ${values.level === "bytes" ? `byte automaton, ${c.byteDfa.nStates} states` : `state diagram of ${c.ir.name}`}`);
  return EXIT.ok;
}

async function loadEngine(file: string, sources: Map<string, string>): Promise<{ engine: Engine; markers: string[]; names: string[] }> {
  if (file.endsWith(".wasm")) {
    const { Spec } = await import("../bindings/spec.js");
    let spec;
    try { spec = await Spec.load(readInput(file)); } catch (e) {
      if (e instanceof InputError) throw e;
      throw new InputError(`${file}: ${(e as Error).message}`);
    }
    return { engine: wasmEngine(spec), markers: spec.states.map((s) => s.marker), names: spec.states.map((s) => s.name) };
  }
  const c = compileFile(file, sources);
  return { engine: byteDfaEngine(c.byteDfa), markers: c.ir.states.map((s) => s.marker), names: c.ir.states.map((s) => s.name) };
}

/** An Engine over a loaded .wasm, driving one matcher through its snapshot/restore ABI. */
export function wasmEngine(spec: import("../bindings/spec.js").Spec): Engine {
  const m = spec.matcher();
  const ex = spec.exports;
  return {
    initial: () => spec.initialState,
    feed(s, bytes) {
      m.state = s;
      const r = m.feed(bytes);
      return r.ok ? m.state : -(1 + r.offset);
    },
    env: (s) => ex.state_env_next(s),
    flags: (s) => ex.state_flags(s),
    specState: (s) => ex.state_spec(s),
    nextMarkers(s) {
      const n = ex.next_count(s);
      const out: number[] = [];
      for (let i = 0; i < n; i++) out.push(ex.next_at(s, i));
      return out;
    },
  };
}

async function cmdCheck(args: string[], io: Io, sources: Map<string, string>): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: {
    trace: { type: "string", multiple: true }, json: { type: "boolean", default: false },
    "known-predicates": { type: "boolean", default: false } } });
  const file = oneFile(positionals, "spec or .wasm file");
  if (file.endsWith(".rules")) {
    const { checkRulesFile } = await import("./rules/index.js");
    const text = decodeSource(file, readInput(file));
    sources.set(file, text);
    const known = values["known-predicates"] ? Object.keys((await import("../bindings/rules-predicates.js")).defaultPredicates) : undefined;
    io.out(checkRulesFile(text, file, known).summary);
    return EXIT.ok;
  }
  if (!values.trace?.length) throw new UsageError("missing --trace FILE");
  const { engine, markers, names } = await loadEngine(file, sources);
  const name = (i: number) => (i < 0 ? "(start)" : names[i]!);
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
    if (v.verdict === "conforms") io.out(`${tf}: conforms (ends in ${name(engine.specState(v.state))})`);
    else if (v.verdict === "incomplete") {
      io.out(`${tf}: incomplete — the run stops in ${name(v.specState)}; it may continue with ${v.expected.map((i) => JSON.stringify(markers[i])).join(", ") || "nothing"}`);
    } else {
      const seg = trace.segments[v.segment]!;
      const why = v.reason === "env-not-expected" ? "environment text where none is expected (no env-input marker precedes it)" : "text not allowed here";
      io.out(`${tf}: violation in segment ${v.segment} (${seg.by}) at offset ${v.offset}: ${why}`);
      io.out(`  state: ${name(v.specState)}; valid next markers: ${v.expected.map((i) => JSON.stringify(markers[i])).join(", ") || "none"}`);
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
async function loadWithVocab(file: string, vocabPath: string | undefined, sources: Map<string, string>) {
  if (!vocabPath) throw new UsageError("missing --vocab tokenizer.json");
  const { Spec } = await import("../bindings/spec.js");
  const { Vocabulary } = await import("../bindings/vocab.js");
  let vocab;
  try { vocab = await Vocabulary.fromTokenizerJson(vocabPath); } catch (e) { throw new InputError(`${vocabPath}: ${(e as Error).message}`); }
  const wasm = file.endsWith(".wasm") ? readInput(file) : compileToWasm(compileFile(file, sources));
  try {
    return { spec: await Spec.load(wasm, { vocab }), vocab };
  } catch (e) {
    throw new InputError(`${file}: ${(e as Error).message}`);
  }
}

async function cmdReplay(args: string[], io: Io, sources: Map<string, string>): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: {
    vocab: { type: "string" }, trace: { type: "string" }, json: { type: "boolean", default: false } } });
  const file = oneFile(positionals, "spec or .wasm file");
  if (!values.trace) throw new UsageError("missing --trace FILE");
  const trace = parseTrace(new TextDecoder().decode(readInput(values.trace)), values.trace);
  const { spec, vocab } = await loadWithVocab(file, values.vocab, sources);
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
    "max-state-tokens": { type: "string", default: "32" }, out: { type: "string" }, json: { type: "boolean", default: false } } });
  const file = oneFile(positionals, "spec or .wasm file");
  const int = (v: string, name: string, min: number) => {
    const x = Number(v);
    if (!Number.isInteger(x) || x < min) throw new UsageError(`--${name} must be an integer ≥ ${min}, not '${v}'`);
    return x;
  };
  const n = int(values.n!, "n", 1), seed = int(values.seed!, "seed", 0), k = int(values["max-state-tokens"]!, "max-state-tokens", 1);
  const { spec, vocab } = await loadWithVocab(file, values.vocab, sources);
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
