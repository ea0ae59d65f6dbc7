/**
 * @fileoverview The moo lexer of GBNF/EBNF grammars (llama.cpp's GBNF and XGrammar's EBNF share
 * this notation), plus the token-level work that gives precise diagnostics before nearley runs:
 * unterminated literals, characters that are not part of the notation (with a hint for the usual
 * slips: `=`, `:`, `;`, `'`), and rule definitions that do not start a line.
 *
 * A name directly followed by `::=` becomes a `rulename` token (XGrammar's lexer does the same):
 * a rule then simply runs until the next `rulename`, so rules may span lines freely and the
 * nearley grammar (gbnf.ne) needs no newline tokens at all.
 *
 * Inside `{…}` a second lexer state reads integers: outside it, digits are name characters
 * (llama.cpp accepts names such as `3d-point`).
 */
import moo from "moo";
import { SpecError, SpecLimitError, spanAt } from "../diagnostics.js";
import type { Span } from "../ir.js";

export interface GToken {
  type: string;
  text: string;
  offset: number;
  line: number;
  col: number;
  /** A line break separates this token from the previous significant one (or it is the first). */
  lineStart: boolean;
}

const lexer = moo.states({
  main: {
    ws: /[ \t\f\v]+/,
    nl: { match: /\r\n|\r|\n/, lineBreaks: true },
    comment: /#[^\r\n]*/,
    defn: "::=",
    string: /"(?:\\[^\r\n]|[^"\\\r\n])*"/,
    badstring: /"(?:\\[^\r\n]|[^"\\\r\n])*\\?/,
    charclass: /\[(?:\\[^\r\n]|[^\]\\\r\n])*\]/,
    badclass: /\[(?:\\[^\r\n]|[^\]\\\r\n])*\\?/,
    lparen: "(",
    rparen: ")",
    pipe: "|",
    star: "*",
    plus: "+",
    question: "?",
    dot: ".",
    lbrace: { match: "{", push: "rep" },
    name: /[A-Za-z0-9_-]+/,
    error: moo.error,
  },
  rep: {
    rws: /[ \t]+/,
    int: /[0-9]+/,
    comma: ",",
    rbrace: { match: "}", pop: 1 },
    reperror: moo.error,
  },
});

export function tokenSpan(file: string, t: GToken): Span {
  return { file, line: t.line, col: t.col, offset: t.offset, end: t.offset + t.text.length };
}

const HINTS: Record<string, string> = {
  "=": "GBNF defines a rule with ::= (as in root ::= \"yes\" | \"no\")",
  ":": "GBNF defines a rule with ::= (as in root ::= \"yes\" | \"no\")",
  ";": "a rule ends where the next `name ::=` begins; no ';' is needed",
  "'": "string literals are written in double quotes (\"…\"): llama.cpp and XGrammar accept only those",
  "/": "comments start with #",
  "<": "rule names are written bare (value, not <value>)",
  "}": "a '}' closes a repetition such as {2,5}, opened with '{' after an element",
  ",": "',' appears only inside a repetition such as {2,5}",
};

/**
 * Tokenizes `text`, dropping whitespace and comments. Throws SpecError on lexical errors, and
 * SpecLimitError when parentheses and stacked repetition operators nest deeper than `maxNesting`.
 */
export function tokenize(file: string, text: string, maxNesting = Infinity): GToken[] {
  lexer.reset(text);
  const out: GToken[] = [];
  let lineStart = true;
  for (const t of lexer as Iterable<moo.Token>) {
    const tok: GToken = { type: t.type!, text: t.text, offset: t.offset, line: t.line, col: t.col, lineStart };
    switch (tok.type) {
      case "ws":
      case "rws":
      case "comment":
        continue;
      case "nl":
        lineStart = true;
        continue;
      case "badstring":
        throw new SpecError("E0702", "unterminated string literal", tokenSpan(file, { ...tok, text: '"' }),
          'close the string with \'"\' on the same line (write \\" for a quote inside it, \\n for a line break)');
      case "badclass":
        throw new SpecError("E0702", "unterminated character class", tokenSpan(file, { ...tok, text: "[" }),
          "close the class with ']' on the same line (write \\] for a ']' inside it)");
      case "error": {
        const ch = String.fromCodePoint(tok.text.codePointAt(0) ?? 0);
        throw new SpecError("E0701", `unexpected character ${JSON.stringify(ch)}`, spanAt(file, text, tok.offset, tok.offset + ch.length),
          HINTS[ch]);
      }
      case "reperror": {
        const ch = String.fromCodePoint(tok.text.codePointAt(0) ?? 0);
        throw new SpecError("E0701", `unexpected ${ch === "\n" || ch === "\r" ? "line break" : JSON.stringify(ch)} in a repetition`,
          spanAt(file, text, tok.offset, tok.offset + 1), "a repetition is {m}, {m,} or {m,n} with whole numbers m ≤ n");
      }
    }
    lineStart = false;
    out.push(tok);
  }
  let depth = 0;
  let stacked = 0;
  for (const t of out) {
    if (t.type === "lparen") depth++;
    else if (t.type === "rparen") depth = Math.max(0, depth - 1);
    stacked = ["star", "plus", "question", "rbrace"].includes(t.type) ? stacked + 1 : ["lbrace", "int", "comma"].includes(t.type) ? stacked : 0;
    if (depth + stacked > maxNesting) throw new SpecLimitError("maxNesting", depth + stacked, maxNesting, tokenSpan(file, t));
  }
  // A name followed by ::= defines a rule; both engines require it to begin a line.
  for (let i = 0; i + 1 < out.length; i++) {
    const t = out[i]!;
    if (t.type === "name" && out[i + 1]!.type === "defn") {
      t.type = "rulename";
      if (!t.lineStart) {
        throw new SpecError("E0701", `the definition of ${t.text} must start on a new line`, tokenSpan(file, t),
          "put each `name ::= …` at the beginning of its own line");
      }
    }
  }
  return out;
}
