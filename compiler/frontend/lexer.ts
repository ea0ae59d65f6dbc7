/**
 * @fileoverview The moo lexer of the s-expression layer, plus the two checks that give the common
 * mistakes precise diagnostics before nearley sees the tokens: unterminated strings and unbalanced
 * parentheses (seed 001 prints two figures with unbalanced parentheses; they are real test cases).
 */
import moo from "moo";
import { SpecError, SpecLimitError, spanAt } from "../diagnostics.js";
import type { Span } from "../ir.js";

export interface Token {
  type: string;
  value: string;
  text: string;
  offset: number;
  line: number;
  col: number;
}

const rules = {
  ws: { match: /\s+/, lineBreaks: true },
  comment: /;[^\n]*/,
  hash: /#[^\n]*/,
  lparen: "(",
  rparen: ")",
  string: /"(?:\\.|[^"\\\n])*"/,
  badstring: /"(?:\\.|[^"\\\n])*/,
  keyword: /:[^\s()";]+/,
  symbol: /[^\s()";]+/,
  error: moo.error,
};

const lexer = moo.compile(rules);

export function tokenSpan(file: string, text: string, t: Token): Span {
  return { file, line: t.line, col: t.col, offset: t.offset, end: t.offset + t.text.length };
}

/** Tokenizes `text`, dropping whitespace and comments. Throws SpecError on lexical errors. */
export function tokenize(file: string, text: string): Token[] {
  lexer.reset(text);
  const out: Token[] = [];
  let lineStart = true; // only whitespace seen since the last newline
  for (const t of lexer as Iterable<moo.Token>) {
    const tok: Token = { type: t.type!, value: t.value, text: t.text, offset: t.offset, line: t.line, col: t.col };
    switch (tok.type) {
      case "ws":
        if (tok.text.includes("\n")) lineStart = true;
        continue;
      case "comment":
        continue;
      case "hash":
        if (!lineStart) {
          throw new SpecError("E0103", "unexpected character '#'", tokenSpan(file, text, tok),
            "'#' starts a comment only at the start of a line; use ';' for a comment after code");
        }
        continue;
      case "badstring":
        throw new SpecError("E0102", "unterminated string", tokenSpan(file, text, tok),
          'close the string with \'"\' on the same line (write \\" for a quote inside it)');
      case "error": {
        const ch = String.fromCodePoint(tok.text.codePointAt(0) ?? 0);
        throw new SpecError("E0103", `unexpected character ${JSON.stringify(ch)}`, spanAt(file, text, tok.offset), undefined);
      }
    }
    lineStart = false;
    out.push(tok);
  }
  checkBalance(file, text, out);
  checkNesting(file, text, out);
  return out;
}

/**
 * Deepest nesting of parentheses a spec may have. Every later stage (the nearley parse, lowering,
 * the behaviour's NFA, the printers) recurses on the nesting, and the JS stack runs out near 2,000
 * levels; real specs nest a few levels. Checked here, on the flat token list, so that a deeper spec
 * is a positioned diagnostic at once and no stage ever recurses deeper than this.
 */
export const MAX_SPEC_NESTING = 256;

function checkNesting(file: string, text: string, toks: Token[]): void {
  let depth = 0;
  for (const t of toks) {
    if (t.type === "lparen" && ++depth > MAX_SPEC_NESTING) {
      const e = new SpecLimitError("maxNesting", depth, MAX_SPEC_NESTING, tokenSpan(file, text, t));
      (e as { hint?: string }).hint = `parentheses nest more than ${MAX_SPEC_NESTING} levels deep here; flatten the behaviour (e.g. (next A B C) instead of (next A (next B C)))`;
      throw e;
    } else if (t.type === "rparen") depth--;
  }
}

/** Reports the first unmatched parenthesis, with a hint pointing at the line that likely caused it. */
function checkBalance(file: string, text: string, toks: Token[]): void {
  const open: Token[] = [];
  let firstTop: { open: Token; close: Token } | undefined;
  for (const t of toks) {
    if (t.type === "lparen") open.push(t);
    else if (t.type === "rparen") {
      if (open.length === 0) {
        const where = firstTop ? ` (the form opened at ${firstTop.open.line}:${firstTop.open.col} was already closed at ${firstTop.close.line}:${firstTop.close.col})` : "";
        throw new SpecError("E0101", `unbalanced parentheses: this ')' has no matching '('${where}`,
          tokenSpan(file, text, t), suspectLine(text) ?? "remove this ')'");
      }
      const o = open.pop()!;
      if (open.length === 0) firstTop ??= { open: o, close: t };
    }
  }
  if (open.length > 0) {
    const t = open[open.length - 1]!;
    throw new SpecError("E0101", `unbalanced parentheses: this '(' is never closed (${open.length} unclosed)`,
      tokenSpan(file, text, t), suspectLine(text) ?? "add the missing ')'");
  }
}

/**
 * Finds the first line that both opens and closes parentheses, closes more than it opens, and is
 * followed by a line indented at least as deeply — the shape of "(State (:text ...)) (:flags ...))".
 */
function suspectLine(text: string): string | undefined {
  const lines = text.split("\n");
  const indent = (s: string) => s.length - s.trimStart().length;
  for (let i = 0; i < lines.length; i++) {
    const code = /^\s*#/.test(lines[i]!) ? "" : lines[i]!.replace(/"(?:\\.|[^"\\])*"/g, '""').replace(/;.*$/, "");
    const opens = (code.match(/\(/g) ?? []).length;
    const closes = (code.match(/\)/g) ?? []).length;
    if (opens === 0 || closes <= opens) continue;
    let j = i + 1;
    while (j < lines.length && lines[j]!.trim() === "") j++;
    if (j < lines.length && indent(lines[j]!) >= indent(lines[i]!)) {
      return `line ${i + 1} closes ${closes - opens} more parenthes${closes - opens > 1 ? "es" : "is"} than it opens, but the next line continues at the same depth: check that line`;
    }
  }
  return undefined;
}
