/**
 * @fileoverview Text → s-expression AST (every node carries its span). moo tokenizes
 * (frontend/lexer.ts), nearley parses (frontend/sexpr.ne, compiled at build time to
 * sexpr.generated.ts). Checks on the raw bytes (empty, binary) come first so that
 * any input gets a diagnostic, never a stack trace.
 */
import compiled from "./sexpr.generated.js";
import { nearleyParser } from "./nearley-parser.js";
import { SpecError, spanAt } from "../diagnostics.js";
import type { Span } from "../ir.js";
import { tokenize, tokenSpan, type Token } from "./lexer.js";


export type SExpr =
  | { kind: "list"; items: SExpr[]; span: Span; openSpan: Span }
  /** `raw`: a string's source text, quotes and escapes included (to map offsets inside it back to the file). */
  | { kind: "atom"; type: "string" | "keyword" | "symbol"; value: string; span: Span; raw?: string };

interface RawList { kind: "list"; items: RawNode[]; open: Token; close: Token }
interface RawAtom { kind: "atom"; type: "string" | "keyword" | "symbol"; token: Token }
type RawNode = RawList | RawAtom;

/** Decodes a file's bytes as UTF-8 text, rejecting binary input with a diagnostic. */
export function decodeSource(file: string, bytes: Uint8Array): string {
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw new SpecError("E0106", "input is not UTF-8 text", { file, line: 1, col: 1, offset: 0, end: 0 },
      "specc reads spec files as UTF-8 text; is this a binary file?");
  }
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  const nul = text.indexOf("\u0000");
  if (nul >= 0) {
    throw new SpecError("E0106", "input is not text (it contains a NUL byte)", spanAt(file, text, nul),
      "specc reads spec files as UTF-8 text; is this a binary file?");
  }
  return text;
}

export function parseSExprs(file: string, text: string): SExpr[] {
  const toks = tokenize(file, text);
  if (toks.length === 0) {
    throw new SpecError("E0105", "empty input: no definition found", spanAt(file, text, 0, 0),
      'a spec file holds one (define NAME (:states ...) (:behavior ...)); see examples/react.agent');
  }
  const parser = nearleyParser(compiled, toks);
  try {
    parser.feed("");
  } catch {
    // The balance check in tokenize() makes every token stream parseable; this is a safety net.
    throw new SpecError("E0104", "syntax error", spanAt(file, text, 0));
  }
  const results = parser.results as RawNode[][];
  if (results.length === 0) throw new SpecError("E0104", "syntax error: incomplete input", spanAt(file, text, text.length));
  const convert = (n: RawNode): SExpr => {
    if (n.kind === "atom") {
      const span = tokenSpan(file, text, n.token);
      const value = n.type === "string" ? unescape(n.token.text, span) : n.token.text;
      return n.type === "string" ? { kind: "atom", type: n.type, value, span, raw: n.token.text } : { kind: "atom", type: n.type, value, span };
    }
    const openSpan = tokenSpan(file, text, n.open);
    const span: Span = { ...openSpan, end: n.close.offset + 1 };
    return { kind: "list", items: n.items.map(convert), span, openSpan };
  };
  return results[0]!.map(convert);
}

function unescape(lit: string, span: Span): string {
  const body = lit.slice(1, -1);
  return body.replace(/\\(.)/gu, (_m, c: string) => {
    switch (c) {
      case "n": return "\n";
      case "t": return "\t";
      case "r": return "\r";
      case "\\": return "\\";
      case '"': return '"';
      default:
        throw new SpecError("E0103", `unknown escape \\${c} in string`, span, 'use \\n, \\t, \\r, \\\\ or \\"');
    }
  });
}
