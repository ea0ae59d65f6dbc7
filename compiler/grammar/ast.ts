/**
 * @fileoverview The AST of a GBNF/EBNF grammar file: what parse.ts builds from the nearley parse
 * tree and lower.ts turns into the CFG IR (cfg.ts). It mirrors the notation one to one (no
 * desugaring yet), and every node carries the span of the text it was written as, so that every
 * later diagnostic can point at the construct the author wrote.
 */
import type { Span } from "../ir.js";
import type { CpRange } from "./utf8.js";

export type GExpr =
  /** `"…"`: the code points of the decoded literal (escapes resolved). */
  | { kind: "literal"; codePoints: number[]; span: Span }
  /** `[…]` / `[^…]`: code point ranges as written (not yet complemented or normalized), and the class's text. */
  | { kind: "class"; negated: boolean; ranges: CpRange[]; text: string; span: Span }
  /** `.`: any character (llama.cpp; XGrammar does not have it). */
  | { kind: "any"; span: Span }
  | { kind: "ref"; name: string; span: Span }
  /** `( … )`. */
  | { kind: "group"; alts: GSeq[]; span: Span }
  /** `*` `+` `?` `{m}` `{m,}` `{m,n}` applied to `body`; max null = unbounded. */
  | { kind: "repeat"; body: GExpr; min: number; max: number | null; op: string; span: Span; opSpan: Span };

/** One alternative: a (possibly empty) sequence. */
export interface GSeq {
  items: GExpr[];
  span: Span;
}

export interface GRule {
  name: string;
  nameSpan: Span;
  alts: GSeq[];
  /** From the name to the end of the last alternative. */
  span: Span;
}

export interface GrammarAst {
  file: string;
  rules: GRule[];
}
