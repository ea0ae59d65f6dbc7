/**
 * @fileoverview The moo lexer of AgentSpec rule files (seed 003). Its neighbour for agent specs is
 * frontend/lexer.ts; rules get their own because the token set differs (dotted names, `@ids`,
 * JSON-like literals), but the contract is the same: whitespace and comments are dropped, and every
 * lexical mistake becomes a positioned SpecError here, before nearley (rules.ne) sees a token.
 *
 * Newlines are not significant: the paper writes one predicate per line, but a predicate is a name
 * possibly preceded by `not`/`!`/`¬`, so the token stream is unambiguous without them, and Fig. 1
 * breaks an enforcement's argument list across lines.
 *
 * Comments: `#` or `//` to the end of the line (the paper shows none; both are common in rule DSLs).
 */
import moo from "moo";
import { SpecError, spanAt } from "../diagnostics.js";
import type { Span } from "../ir.js";

export interface RuleToken {
  /** A moo rule name below, or a keyword itself (`rule`, `trigger`, `check`, `enforce`, `end`, `not`). */
  type: string;
  text: string;
  offset: number;
  line: number;
  col: number;
}

/** Reserved words of the grammar. `any`, `true`, `false` are names, interpreted by lowering. */
export const KEYWORDS = new Set(["rule", "trigger", "check", "enforce", "end", "not"]);

const lexer = moo.compile({
  ws: { match: /\s+/u, lineBreaks: true },
  comment: /(?:#|\/\/)[^\n]*/u,
  ruleid: /@[\p{L}\p{N}_.\-]*/u,
  string: /"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'/u,
  badstring: /"(?:\\.|[^"\\\n])*|'(?:\\.|[^'\\\n])*/u,
  number: /-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/u,
  // Dotted names: trigger targets (`Gmail.SendEmail`) and namespaced predicates. Empty segments
  // (`Gmail.`) are lexed into the name so that lowering can report them with the name's span.
  name: /[\p{L}_][\p{L}\p{N}_]*(?:\.[\p{L}\p{N}_]*)*/u,
  lparen: "(",
  rparen: ")",
  lbrace: "{",
  rbrace: "}",
  lbracket: "[",
  rbracket: "]",
  comma: ",",
  colon: ":",
  bang: /[!¬]/u,
  error: moo.error,
});

export function tokenSpan(file: string, t: RuleToken): Span {
  return { file, line: t.line, col: t.col, offset: t.offset, end: t.offset + t.text.length };
}

/** Tokenizes `text`, dropping whitespace and comments. Throws SpecError (E0810) on lexical errors. */
export function tokenizeRules(file: string, text: string): RuleToken[] {
  lexer.reset(text);
  const out: RuleToken[] = [];
  for (const t of lexer as Iterable<moo.Token>) {
    const tok: RuleToken = { type: t.type!, text: t.text, offset: t.offset, line: t.line, col: t.col };
    switch (tok.type) {
      case "ws":
      case "comment":
        continue;
      case "badstring":
        throw new SpecError("E0810", "unterminated string", tokenSpan(file, tok),
          `close the string with ${tok.text[0]} on the same line`);
      case "error": {
        const ch = String.fromCodePoint(tok.text.codePointAt(0) ?? 0);
        throw new SpecError("E0810", `unexpected character ${JSON.stringify(ch)}`, spanAt(file, text, tok.offset, tok.offset + ch.length),
          ch === "@" ? undefined
            : ch === "." ? "a dot joins two names (Toolkit.Tool); it cannot start or stand alone"
            : ch === ";" ? "comments start with # or //; predicates and enforcements need no separator"
            : "rules are made of names, @ids, strings, numbers and ( ) { } [ ] , : ! ¬; comments start with # or //");
      }
      case "name":
        if (KEYWORDS.has(tok.text)) tok.type = tok.text;
        break;
    }
    out.push(tok);
  }
  return out;
}

/** Decodes the body of a string token (JSON escapes, plus \' in single-quoted strings). */
export function unescapeString(file: string, tok: RuleToken): string {
  const body = tok.text.slice(1, -1);
  let out = "";
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (c !== "\\") { out += c; continue; }
    const e = body[i + 1] ?? "";
    const at = (n: number): Span => {
      const offset = tok.offset + 1 + i;
      return { file, line: tok.line, col: tok.col + 1 + i, offset, end: offset + n };
    };
    switch (e) {
      case "n": out += "\n"; break;
      case "t": out += "\t"; break;
      case "r": out += "\r"; break;
      case "b": out += "\b"; break;
      case "f": out += "\f"; break;
      case "/": out += "/"; break;
      case "\\": out += "\\"; break;
      case '"': out += '"'; break;
      case "'": out += "'"; break;
      case "u": {
        const hex = body.slice(i + 2, i + 6);
        if (!/^[0-9a-fA-F]{4}$/.test(hex)) {
          throw new SpecError("E0810", "malformed \\u escape in string", at(2 + hex.length), "write \\u followed by four hex digits, e.g. \\u00e9");
        }
        out += String.fromCharCode(parseInt(hex, 16));
        i += 4;
        break;
      }
      default:
        throw new SpecError("E0810", `unknown escape \\${e} in string`, at(2), "use \\n, \\t, \\r, \\b, \\f, \\/, \\\\, \\\", \\' or \\uXXXX");
    }
    i++;
  }
  return out;
}
