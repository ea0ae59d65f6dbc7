/**
 * @fileoverview The compiler's one entry: source text → every automaton of the pipeline.
 * Each stage lives in its own module; this file only wires them and carries the limits.
 *
 * Two kinds of source: an agent spec (.agent: states, markers, behavior, content constraints —
 * grammars among them) and a standalone grammar (.gbnf/.ebnf: the whole output must be a sentence).
 * Both end as one ByteDfa and one .wasm on the same runtime; a grammar's has no spec states.
 */
import { buildByteDfa, minimizeByteDfa } from "./automata/bytes.js";
import { buildPushdownByteDfa } from "./automata/pushdown-bytes.js";
import { constrainAndTrim, determinize, minimizeStateDfa } from "./automata/dfa.js";
import { buildNfa } from "./automata/nfa.js";
import { emitWasm, loadRuntimeWasm } from "./emit-wasm.js";
import { decodeSource, parseSExprs } from "./frontend/parse.js";
import { parseGrammar } from "./grammar/index.js";
import type { Cfg, CfgLimits } from "./grammar/cfg.js";
import { grammarToPda, type GrammarPda } from "./grammar/pda.js";
import { grammarToDfa, type GrammarDfa } from "./grammar/regular.js";
import { ByteFlag, type ByteDfa, type Compiled, type SpecIR } from "./ir.js";
import { lower, type LowerOptions } from "./lower.js";
import { serializeTables } from "./tables.js";

export interface Limits {
  maxNfaStates?: number;
  maxDfaStates?: number;
  maxByteStates?: number;
  /** Nesting depth of grammar recursion (grammar/regular.ts) where a grammar gives none; default 8. */
  maxDepth?: number;
  /** Subset states of one grammar's bounded-stack expansion; default 100,000. */
  maxGrammarStates?: number;
  /** Limits of the grammar front end (grammar/cfg.ts DEFAULT_LIMITS), e.g. a larger maxRepeat for generated grammars. */
  grammarLimits?: Partial<CfgLimits>;
}

/** Parses and lowers a spec. Throws SpecError (with a span) on any problem. */
export function parseSpec(text: string, file = "<input>", opts: LowerOptions = {}): SpecIR {
  return lower(parseSExprs(file, text), file, opts);
}

/** Reads a spec from raw bytes (rejecting binary input with a diagnostic). */
export function parseSpecBytes(bytes: Uint8Array, file: string, opts: LowerOptions = {}): { ir: SpecIR; text: string } {
  const text = decodeSource(file, bytes);
  return { ir: parseSpec(text, file, opts), text };
}

export function compileIR(ir: SpecIR, limits: Limits = {}): Compiled {
  const nfa = buildNfa(ir.behavior, limits.maxNfaStates);
  const stateDfa = constrainAndTrim(determinize(nfa, ir.states.length, limits.maxDfaStates), ir, limits.maxDfaStates);
  const minStateDfa = minimizeStateDfa(stateDfa);
  const opts = { maxStates: limits.maxByteStates, maxDepth: limits.maxDepth, maxGrammarStates: limits.maxGrammarStates };
  // Grammar content without a nesting bound runs on a stack (automata/pushdown-bytes.ts).
  const stack = buildPushdownByteDfa(ir, minStateDfa, opts);
  const rawByteDfa = () => (stack ? buildPushdownByteDfa(ir, stateDfa, { ...opts, minimize: false })! : buildByteDfa(ir, stateDfa, opts));
  const byteDfa = stack ?? minimizeByteDfa(buildByteDfa(ir, minStateDfa, opts));
  return { ir, nfa, stateDfa, minStateDfa, rawByteDfa, byteDfa };
}

export function compileSource(text: string, file = "<input>", limits: Limits = {}, opts: LowerOptions = {}): Compiled {
  return compileIR(parseSpec(text, file, opts), limits);
}

/** The self-contained .wasm: the AssemblyScript runtime plus the spec's tables. */
export function compileToWasm(c: Compiled): Uint8Array {
  return emitWasm(loadRuntimeWasm(), serializeTables(c.byteDfa, c.ir.states));
}

// ───────────────────────────── standalone grammars ─────────────────────────────

/** A compiled standalone grammar: a `Compiled` with no spec states, plus what the grammar adds. */
export interface CompiledGrammar extends Compiled {
  grammar: {
    cfg: Cfg;
    /** "pushdown": exact, unbounded nesting (grammar/pda.ts); "bounded": a DFA up to maxDepth (grammar/regular.ts). */
    mode: "pushdown" | "bounded";
    /** The nesting bound of "bounded" mode; Infinity in "pushdown" mode. */
    maxDepth: number;
    /** Some nesting deeper than maxDepth exists and is not offered (always false in "pushdown" mode). */
    depthLimited: boolean;
    /** Rules entered through the stack ("pushdown" mode; empty when the grammar does not nest). */
    calledRules: string[];
    /** Subset states before trimming and minimization. */
    rawStates: number;
  };
}

export const GRAMMAR_EXTENSIONS = [".gbnf", ".ebnf"] as const;

export function isGrammarFile(path: string): boolean {
  return GRAMMAR_EXTENSIONS.some((e) => path.toLowerCase().endsWith(e));
}

/** A grammar DFA (or pushdown automaton) as the runtime's ByteDfa: no spec states, no env, no markers. */
export function grammarByteDfa(d: GrammarDfa | GrammarPda): ByteDfa {
  const calls = "calls" in d && d.calls.some((c) => c.length > 0) ? { calls: d.calls } : {};
  const flags = new Uint8Array(d.nStates);
  for (let s = 0; s < d.nStates; s++) if (d.accepting[s]) flags[s] = ByteFlag.Accepting;
  const none: number[] = []; // (no state of a grammar precedes a marker; lists are never written to)
  return {
    nStates: d.nStates, nClasses: d.nClasses, classMap: d.classMap, initial: d.initial, trans: d.trans,
    flags,
    specState: new Int32Array(d.nStates).fill(-1),
    envNext: new Int32Array(d.nStates).fill(-1),
    nextMarkers: new Array<number[]>(d.nStates).fill(none),
    ...calls,
  };
}

/**
 * Compiles GBNF/EBNF text (the whole generation must be a sentence, from the rule `start`;
 * `called`: rules the pushdown automaton enters by a call, see grammar/pda.ts). The
 * spec-level parts of the result are trivial: no states, a one-state state DFA. Without
 * `limits.maxDepth` the grammar compiles to a pushdown automaton (exact at any nesting depth);
 * with it, to the bounded-depth DFA of grammar/regular.ts.
 */
export function compileGrammarSource(text: string, file: string, limits: Limits = {}, start = "root", called?: readonly string[],
  warnings = true): CompiledGrammar {
  const cfg = parseGrammar(text, file, { start, limits: limits.grammarLimits, warnings });
  let byteDfa: ByteDfa;
  let info: Omit<CompiledGrammar["grammar"], "cfg">;
  if (limits.maxDepth === undefined) {
    const r = grammarToPda(cfg, { maxStates: limits.maxGrammarStates, name: file, called });
    byteDfa = grammarByteDfa(r.pda);
    info = { mode: "pushdown", maxDepth: Infinity, depthLimited: false, rawStates: r.rawStates, calledRules: r.calledRules };
  } else {
    const r = grammarToDfa(cfg, { maxDepth: limits.maxDepth, maxStates: limits.maxGrammarStates, name: file });
    byteDfa = grammarByteDfa(r.dfa);
    info = { mode: "bounded", maxDepth: limits.maxDepth, depthLimited: r.depthLimited, rawStates: r.rawStates, calledRules: [] };
  }
  const span = cfg.rules[cfg.start]?.span ?? { file, line: 1, col: 1, offset: 0, end: 0 };
  const name = file.replace(/^.*[\\/]/, "").replace(/\.[^.]*$/, "") || "grammar";
  const ir: SpecIR = { name, file, states: [], behavior: { op: "or", args: [], span }, constraints: [] };
  const stateDfa = { nStates: 1, nSyms: 0, initial: 0, accepting: [true], delta: new Int32Array(0) };
  return {
    ir, nfa: { nStates: 1, initial: 0, accepting: [0], edges: [] }, stateDfa, minStateDfa: stateDfa,
    rawByteDfa: () => byteDfa, byteDfa,
    grammar: { cfg, ...info },
  };
}
