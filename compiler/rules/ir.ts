/**
 * @fileoverview The IR of AgentSpec rules (seed 003, Fig. 3; DESIGN.md §1.3): what
 * `parseRules` (rules/index.ts) returns and what the enforcer (agents/rules.ts) runs.
 *
 * text ─rules/lexer.ts (moo)─▶ tokens ─rules/rules.ne (nearley)─▶ raw tree ─rules/lower.ts─▶ RuleIR[]
 *
 * Plain data, like compiler/ir.ts: every node carries the Span of the text it came from, so a
 * load-time error in the enforcer (an unregistered predicate, a missing callback) can point at the
 * rule that needs it.
 */
import type { Span } from "../ir.js";

export type { Span };

/** A JSON value, as written in `invoke_action(Name, {"k": v, ...})`. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/**
 * `trigger Toolkit.Tool`. The literal name `any` (as toolkit, as tool, or alone for `any.any`) is
 * the wildcard; it is reserved, so no real toolkit or tool can be named `any`.
 */
export interface TriggerIR {
  toolkit: string;
  tool: string;
  /** Canonical text, `Toolkit.Tool` (`any` alone is written `any.any`). */
  text: string;
  span: Span;
}

/**
 * One predicate of a `check` section (Fig. 3: Pred ::= True | False | ¬Pred | CustomizedPred).
 * The predicates of a section form a conjunction (seed 003 §3.1: "expressed as conjunctions of
 * predicates"); an empty section holds.
 */
export type PredIR =
  | { kind: "const"; value: boolean; span: Span }
  | { kind: "not"; pred: PredIR; span: Span }
  /** A predicate the host registers under this name (letters, digits, `_`, `.`). */
  | { kind: "named"; name: string; span: Span };

/** Default bound of `llm_self_reflect` when none is written: revisions asked for per rule and check. */
export const DEFAULT_SELF_REFLECT_TRIALS = 3;
/** The largest bound `llm_self_reflect(N)` accepts (each trial costs an LLM call). */
export const MAX_SELF_REFLECT_TRIALS = 100;

/** One enforcement of an `enforce` section (Fig. 3: Enforce), applied in the order written. */
export type EnforceIR =
  /**
   * Ask the user to approve the call. `options` are the remedies Fig. 1 lists in parentheses
   * (`user_inspection(add_contact, remove_sensitive_info, ...)`): shown to the user, not interpreted.
   */
  | { kind: "user_inspection"; options: { name: string; span: Span }[]; span: Span }
  /** Ask the LLM for a revised call, at most `maxTrials` times (`llm_self_reflect(N)`, default 3). */
  | { kind: "llm_self_reflect"; maxTrials: number; explicitBound: boolean; span: Span }
  /** Call the host action `action` with the literal arguments `args`. */
  | { kind: "invoke_action"; action: string; args: { [key: string]: JsonValue }; argSpans: { [key: string]: Span }; span: Span }
  /** Block the call. */
  | { kind: "stop"; span: Span };

export type EnforceKind = EnforceIR["kind"];
export const ENFORCEMENTS: readonly EnforceKind[] = ["user_inspection", "llm_self_reflect", "invoke_action", "stop"];

/** `rule @id trigger T check P* enforce E+ end`. */
export interface RuleIR {
  /** The id without its `@`. Unique within a file. */
  id: string;
  trigger: TriggerIR;
  /** A conjunction; empty = always holds. */
  check: PredIR[];
  /** At least one. */
  enforce: EnforceIR[];
  /** From `rule` to `end`. */
  span: Span;
  idSpan: Span;
}
