/**
 * @fileoverview A fast reader of GBNF that a program wrote (the JSON Schema front end's grammars,
 * tens of thousands of tokens each): text → the same AST as parse.ts, without its token objects,
 * raw parse tree and per-node spans. parse.ts made a moo token, a copy of it, a raw item and a
 * span for every symbol; for the largest MaskBench schemas that was a quarter of the compile time
 * and most of what the garbage collector copied.
 *
 * It reads a strict subset of the notation: rules `name ::= …` (each starting a line), string
 * literals and classes with the escapes parse.ts decodes, names, groups, `|`, `*` `+` `?` and
 * `{m}` `{m,}` `{m,n}`. Anything else — a comment, `.`, a space inside braces, any text parse.ts
 * reports as an error or a note (a bad escape, a lone surrogate, a range written backwards, a rule
 * not starting its line, nesting past maxNesting) — gives null, and the caller runs parse.ts, whose
 * diagnostics stay the reference. Where it gives a tree, it is parse.ts's tree, but every node
 * inside a rule carries the span of the rule's name (tests/compiler/grammar.test.ts compares both
 * readers' trees on the MaskBench sample's grammars). Used where warnings are off (text no person
 * wrote): parseGrammar's `warnings: false`.
 */
import { spanAt } from "../diagnostics.js";
import type { Span } from "../ir.js";
import type { GExpr, GRule, GSeq, GrammarAst } from "./ast.js";
import { MAX_CODE_POINT } from "./utf8.js";

// Token kinds.
const T_NAME = 1, T_DEFN = 2, T_STRING = 3, T_CLASS = 4, T_LPAREN = 5, T_RPAREN = 6, T_PIPE = 7, T_STAR = 8, T_PLUS = 9, T_QUESTION = 10,
  T_REP = 11, T_RULENAME = 12;

/** The AST of `text`, or null where parse.ts must read it (see above). */
export function readGeneratedGrammar(file: string, text: string, maxNesting = Infinity): GrammarAst | null {
  const toks = lex(text, maxNesting);
  return toks === null ? null : new Reader(file, text, toks).rules();
}

interface Tokens { n: number; kind: Uint8Array; start: Int32Array; end: Int32Array; min: Int32Array; max: Int32Array }

const isNameChar = (c: number) => (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 95 || c === 45;

function lex(text: string, maxNesting: number): Tokens | null {
  const cap = text.length + 1;
  const kind = new Uint8Array(cap), start = new Int32Array(cap), end = new Int32Array(cap), min = new Int32Array(cap), max = new Int32Array(cap);
  const lineStart = new Uint8Array(cap);
  let n = 0, at = true, depth = 0, stacked = 0;
  const len = text.length;
  for (let i = 0; i < len; ) {
    const c = text.charCodeAt(i);
    if (c === 32 || c === 9 || c === 12 || c === 11) { i++; continue; }
    if (c === 10 || c === 13) { at = true; i++; continue; }
    let k = 0, j = i + 1;
    if (isNameChar(c)) { while (j < len && isNameChar(text.charCodeAt(j))) j++; k = T_NAME; }
    else if (c === 34 || c === 91) {
      // A literal or a class: to the first unescaped `"` or `]` on the line.
      const close = c === 34 ? 34 : 93;
      for (;;) {
        if (j >= len) return null;
        const d = text.charCodeAt(j);
        if (d === 10 || d === 13) return null;
        if (d === 92) { const e = text.charCodeAt(j + 1); if (j + 1 >= len || e === 10 || e === 13) return null; j += 2; continue; }
        j++;
        if (d === close) break;
      }
      k = c === 34 ? T_STRING : T_CLASS;
    } else if (c === 58) { if (text.charCodeAt(i + 1) !== 58 || text.charCodeAt(i + 2) !== 61) return null; j = i + 3; k = T_DEFN; }
    else if (c === 40) k = T_LPAREN;
    else if (c === 41) k = T_RPAREN;
    else if (c === 124) k = T_PIPE;
    else if (c === 42) k = T_STAR;
    else if (c === 43) k = T_PLUS;
    else if (c === 63) k = T_QUESTION;
    else if (c === 123) {
      // {m} {m,} {m,n}, digits only.
      const m0 = j;
      while (j < len && text.charCodeAt(j) >= 48 && text.charCodeAt(j) <= 57) j++;
      if (j === m0 || j - m0 > 9) return null;
      min[n] = Number(text.slice(m0, j));
      if (text.charCodeAt(j) === 44) {
        const x0 = ++j;
        while (j < len && text.charCodeAt(j) >= 48 && text.charCodeAt(j) <= 57) j++;
        if (j - x0 > 9) return null;
        max[n] = j === x0 ? -1 : Number(text.slice(x0, j));
      } else max[n] = min[n]!;
      if (text.charCodeAt(j) !== 125) return null;
      j++;
      k = T_REP;
    } else return null;
    kind[n] = k; start[n] = i; end[n] = j; lineStart[n] = at ? 1 : 0;
    at = false;
    // parse.ts's nesting limit: parentheses plus stacked repetition operators.
    if (k === T_LPAREN) depth++;
    else if (k === T_RPAREN) depth = Math.max(0, depth - 1);
    stacked = k === T_STAR || k === T_PLUS || k === T_QUESTION || k === T_REP ? stacked + 1 : 0;
    if (depth + stacked > maxNesting) return null;
    n++;
    i = j;
  }
  // A name followed by ::= defines a rule, and must begin a line.
  for (let t = 0; t + 1 < n; t++) {
    if (kind[t] === T_NAME && kind[t + 1] === T_DEFN) {
      if (!lineStart[t]) return null;
      kind[t] = T_RULENAME;
    }
  }
  return { n, kind, start, end, min, max };
}

const BOTH: Record<string, number> = { n: 10, t: 9, r: 13, "\\": 92, '"': 34 };
const BRACKET: Record<string, number> = { "[": 91, "]": 93, "-": 45 };
const XGRAMMAR_ONLY: Record<string, number> = { "'": 39, "?": 63, a: 7, b: 8, f: 12, v: 11, "0": 0, e: 27 };
const XGRAMMAR_CLASS: Record<string, number> = { "^": 94, ".": 46, "*": 42, "+": 43, "(": 40, ")": 41, "{": 123, "}": 125, "|": 124, "/": 47, $: 36 };
const HEX_DIGIT = /^[0-9a-fA-F]+$/;

class Reader {
  private t = 0;
  private span!: Span;
  /** Classes decoded so far, by their text (parse.ts shares them the same way). */
  private readonly classes = new Map<string, { negated: boolean; ranges: [number, number][] }>();
  /** Code points of the last decode, and which of them were a bare '-' (a class's range dash). */
  private cps: number[] = [];
  private dash: boolean[] = [];

  constructor(private readonly file: string, private readonly text: string, private readonly k: Tokens) {}

  rules(): GrammarAst | null {
    const { k } = this;
    const rules: GRule[] = [];
    while (this.t < k.n) {
      if (k.kind[this.t] !== T_RULENAME) return null;
      const nameTok = this.t;
      this.t += 2;
      const name = this.text.slice(k.start[nameTok]!, k.end[nameTok]!);
      this.span = spanAt(this.file, this.text, k.start[nameTok]!, k.end[nameTok]!);
      const alts = this.alts();
      if (alts === null || (this.t < k.n && k.kind[this.t] !== T_RULENAME)) return null;
      // From the name to the end of the last alternative's last token (or the ::=, for an empty rule).
      const last = this.t - 1;
      rules.push({ name, nameSpan: this.span, alts, span: spanAt(this.file, this.text, k.start[nameTok]!, k.end[last]!) });
    }
    return { file: this.file, rules };
  }

  private alts(): GSeq[] | null {
    const seqs: GSeq[] = [];
    for (;;) {
      const items: GExpr[] = [];
      for (;;) {
        let item = this.atom();
        if (item === undefined) return null;
        if (item === null) break;
        for (let q = this.k.kind[this.t]; this.t < this.k.n && (q === T_STAR || q === T_PLUS || q === T_QUESTION || q === T_REP); q = this.k.kind[this.t]) {
          const s = this.k.start[this.t]!, e = this.k.end[this.t]!;
          const min = q === T_PLUS ? 1 : q === T_REP ? this.k.min[this.t]! : 0;
          const max = q === T_QUESTION ? 1 : q === T_REP ? (this.k.max[this.t]! < 0 ? null : this.k.max[this.t]!) : null;
          item = { kind: "repeat", body: item, min, max, op: this.text.slice(s, e), span: this.span, opSpan: this.span };
          this.t++;
        }
        items.push(item);
      }
      seqs.push({ items, span: this.span });
      if (this.t >= this.k.n || this.k.kind[this.t] !== T_PIPE) return seqs;
      this.t++;
    }
  }

  /** The next atom; null: none here (the sequence ends); undefined: text parse.ts must read. */
  private atom(): GExpr | null | undefined {
    const { k } = this;
    if (this.t >= k.n) return null;
    const s = k.start[this.t]!, e = k.end[this.t]!;
    switch (k.kind[this.t]) {
      case T_NAME: this.t++; return { kind: "ref", name: this.text.slice(s, e), span: this.span };
      case T_STRING: {
        this.t++;
        if (!this.decode(s + 1, e - 1, false)) return undefined;
        return { kind: "literal", codePoints: this.cps.slice(), span: this.span };
      }
      case T_CLASS: {
        this.t++;
        const text = this.text.slice(s, e);
        let c = this.classes.get(text);
        if (!c) {
          const negated = text[1] === "^";
          if (!this.decode(s + (negated ? 2 : 1), e - 1, true)) return undefined;
          const { cps, dash } = this;
          const ranges: [number, number][] = [];
          for (let i = 0; i < cps.length; i++) {
            // A '-' between two characters makes a range; first or last it is itself.
            if (i + 2 < cps.length && dash[i + 1]) {
              if (cps[i + 2]! < cps[i]!) return undefined;
              ranges.push([cps[i]!, cps[i + 2]!]);
              i += 2;
            } else ranges.push([cps[i]!, cps[i]!]);
          }
          this.classes.set(text, (c = { negated, ranges }));
        }
        return { kind: "class", negated: c.negated, ranges: c.ranges, text, span: this.span };
      }
      case T_LPAREN: {
        this.t++;
        const alts = this.alts();
        if (alts === null || this.t >= k.n || k.kind[this.t] !== T_RPAREN) return undefined;
        this.t++;
        return { kind: "group", alts, span: this.span };
      }
      case T_RULENAME: case T_PIPE: case T_RPAREN: return null;
      default: return undefined; // a repetition with nothing before it, a stray ::=
    }
  }

  /** Decodes text[from, to) into `cps` (and `dash`); false where parse.ts reports an error. */
  private decode(from: number, to: number, inClass: boolean): boolean {
    const s = this.text;
    const cps: number[] = (this.cps = []);
    const dash: boolean[] = (this.dash = []);
    for (let i = from; i < to; ) {
      const c = s.charCodeAt(i);
      if (c !== 92) {
        if (c >= 0xd800 && c <= 0xdfff) {
          // A surrogate pair is one character; a lone surrogate is an error.
          const d = s.charCodeAt(i + 1);
          if (c > 0xdbff || i + 1 >= to || d < 0xdc00 || d > 0xdfff) return false;
          cps.push(s.codePointAt(i)!); dash.push(false);
          i += 2;
          continue;
        }
        cps.push(c); dash.push(c === 45);
        i++;
        continue;
      }
      const e = s[i + 1] ?? "";
      const hexLen = e === "x" ? 2 : e === "u" ? 4 : e === "U" ? 8 : 0;
      if (hexLen > 0) {
        if (i + 2 + hexLen > to) return false;
        const digits = s.slice(i + 2, i + 2 + hexLen);
        if (!HEX_DIGIT.test(digits)) return false;
        const cp = parseInt(digits, 16);
        if (cp > MAX_CODE_POINT || (cp >= 0xd800 && cp <= 0xdfff)) return false;
        cps.push(cp); dash.push(false);
        i += 2 + hexLen;
        continue;
      }
      const cp = BOTH[e] ?? BRACKET[e] ?? XGRAMMAR_ONLY[e] ?? (inClass ? XGRAMMAR_CLASS[e] : undefined);
      if (cp === undefined) return false;
      cps.push(cp); dash.push(false);
      i += 2;
    }
    return true;
  }
}
