/**
 * @fileoverview The intermediate representation every stage after the front end works on.
 *
 * source ─frontend/─▶ AST ─lower.ts─▶ SpecIR ─nfa.ts─▶ Nfa ─dfa.ts─▶ StateDfa ─minimize.ts─▶ StateDfa
 *        ─bytes.ts─▶ ByteDfa (markers + free text + content + env states) ─minimize─▶ ByteDfa
 *        ─tables.ts─▶ bytes ─emit-wasm.ts─▶ .wasm
 *
 * Everything here is plain data (no classes) so that stages stay independent and every automaton
 * can be compared with every other one by the test suite. Spec states are numbered 0..n-1 in the
 * order they are declared; that number is the alphabet of the state-level automata.
 */

import type { Span } from "./diagnostics.js";
import type { Cfg } from "./grammar/cfg.js";

export type { Span };

/** What the content of a state (the text after its marker, up to the next marker) may be. */
export type ContentIR =
  | { kind: "any" }
  /** One of the strings, with whitespace allowed around it (seeds' `:output-constrs`). */
  | { kind: "oneOf"; options: string[]; span: Span }
  /**
   * A sentence of a context-free grammar, with whitespace allowed around it (`:grammar` /
   * `:grammar-text`). Compiled by bounded-stack expansion (grammar/regular.ts): exact up to
   * `maxDepth` nested recursive calls (the spec's `:max-depth`, else the compile option).
   */
  | { kind: "grammar"; cfg: Cfg; source: GrammarSource; maxDepth?: number; span: Span }
  /** `(:empty)`: only whitespace (e.g. between `</tool_call>` and the next marker). */
  | { kind: "empty" }
  /** `(:tool-name)`: one of the tool names of `(:tools ...)`, whitespace around it. Choosing it is a tool call. */
  | { kind: "toolName"; span: Span }
  /** `(:tool-args)`: JSON arguments valid for the tool chosen last (by a toolName or toolCall state). */
  | { kind: "toolArgs"; maxDepth?: number; span: Span }
  /** `(:tool-call)`: `{"name": N, "arguments": A}` with A valid for tool N (the Hermes/Qwen form). */
  | { kind: "toolCall"; maxDepth?: number; span: Span };

/** One tool of `(:tools "file")`: its name and the grammars of its arguments and of a whole call. */
export interface ToolIR {
  name: string;
  /** The `parameters` / `input_schema` / `inputSchema` JSON Schema (the parsed value). */
  schema: unknown;
  /** Grammar of the arguments object (root rule `root`). */
  args: Cfg;
  /** Grammar of `{"name": "<name>", "arguments": <args>}`. */
  call: Cfg;
  span: Span;
}

/** Where a state's grammar came from: a file (path as resolved from the spec's folder) or inline text. */
export interface GrammarSource {
  /** The grammar file, or the spec file for `:grammar-text`. */
  file: string;
  inline: boolean;
  /** The start rule ("root" unless given). */
  start: string;
}

export interface StateIR {
  id: number;
  name: string;
  /** The prompt text that marks the state in the output (UTF-8 encoded when matched). */
  marker: string;
  /** `:env-input`: the environment, not the LLM, supplies the content. */
  env: boolean;
  content: ContentIR;
  span: Span;
  /** Where the marker string is written (diagnostics about markers point here). */
  markerSpan?: Span;
  /**
   * `(:token "<tool_call>")`: the marker is one vocabulary token, not text. The byte automaton reads
   * it as this single byte, one that never occurs in UTF-8 text (compiler/tokens.ts); `marker` is
   * the token's text.
   */
  tokenByte?: number;
}

/** The behavior formula, read as a regular expression over spec states. */
export type Behavior =
  | { op: "state"; state: number; span: Span }
  | { op: "next"; args: Behavior[]; span: Span }
  | { op: "or"; args: Behavior[]; span: Span }
  /** `body` repeated between min and max times (max null = unbounded), then `then`. */
  | { op: "until"; body: Behavior; then: Behavior; min: number; max: number | null; span: Span }
  /** `body` one or more times. */
  | { op: "always"; body: Behavior; span: Span };

/** Temporal constraints intersected with the behavior (specc's addition to the seeds). */
export type ConstraintIR =
  | { kind: "atMost"; state: number; n: number; span: Span }
  | { kind: "atLeast"; state: number; n: number; span: Span }
  | { kind: "eventually"; state: number; span: Span }
  /** Tool `tool` (an index into `SpecIR.tools`) is called at most `n` times. */
  | { kind: "toolAtMost"; tool: number; n: number; span: Span }
  /** Tool `then` may be called only after tool `first` has been. */
  | { kind: "toolBefore"; first: number; then: number; span: Span };

export interface SpecIR {
  name: string;
  file: string;
  states: StateIR[];
  behavior: Behavior;
  constraints: ConstraintIR[];
  /** `(:tools "file")`: the tools list (absent or empty without one). */
  tools?: ToolIR[];
}

/** ε-NFA over spec-state ids. `sym === -1` is an ε edge. */
export interface Nfa {
  nStates: number;
  initial: number;
  accepting: number[];
  edges: { from: number; sym: number; to: number }[];
}

/**
 * DFA over spec-state ids (the agent's state diagram, as the papers draw it).
 * `delta[q * nSyms + s]` is the next DFA state or -1. Only live states are kept: every state is
 * reachable from `initial` and can reach an accepting state.
 */
export interface StateDfa {
  nStates: number;
  nSyms: number;
  initial: number;
  accepting: boolean[];
  delta: Int32Array;
}

/** Per-state flags of the byte-level automaton (the same bits are written to the tables). */
export const enum ByteFlag {
  Accepting = 1,
  /** The LLM has just emitted an env-input marker: it must stop; the host feeds env text. */
  Yield = 2,
  /** Right after env text: only whitespace, then a valid marker. */
  AfterEnv = 4,
}

/**
 * Byte-level DFA: markers, free text, content constraints and env states in one automaton.
 * Bytes are grouped into equivalence classes (`classMap`); `trans[s * nClasses + c]` is the next
 * state or -1 (the byte is not allowed). Every state is live (can reach acceptance).
 */
export interface ByteDfa {
  nStates: number;
  nClasses: number;
  classMap: Uint8Array;
  initial: number;
  trans: Int32Array;
  flags: Uint8Array;
  /** The spec state whose marker was committed last, or -1 before the first marker. */
  specState: Int32Array;
  /** For Yield states: the state after `feedEnv`; otherwise -1. */
  envNext: Int32Array;
  /** Spec states whose marker may be committed next (sorted), for each state. */
  nextMarkers: number[][];
  /**
   * Pushdown grammars only (grammar/pda.ts): per state, call edges [start, ret]. With calls, the
   * Accepting flag means "this machine may end" (pop the stack, or accept when it is empty).
   */
  calls?: (readonly [number, number])[][];
}

/** Everything `specc compile` produces before serialization. */
export interface Compiled {
  ir: SpecIR;
  nfa: Nfa;
  stateDfa: StateDfa;
  minStateDfa: StateDfa;
  /** Byte automaton built from the unminimized state DFA, before byte-level minimization (built on demand). */
  rawByteDfa(): ByteDfa;
  byteDfa: ByteDfa;
}
