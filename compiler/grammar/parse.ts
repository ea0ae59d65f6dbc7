/**
 * @fileoverview Grammar text → AST (ast.ts), every node with its span. moo tokenizes
 * (grammar/lexer.ts), nearley parses (grammar/gbnf.ne, compiled by `npm run build:grammar` to
 * gbnf.generated.ts), and this file decodes literals and classes, reports syntax errors with what
 * was expected there, and notes constructs that one of the two peer engines does not accept
 * (portability warnings, see PORTABILITY below).
 *
 * Accepted notation (the union of llama.cpp's GBNF and XGrammar's EBNF, minus their extensions
 * such as XGrammar's lookahead `(= …)` and `TagDispatch`):
 *   name ::= alternatives      names: letters, digits, '-', '_'; a rule runs until the next `name ::=`
 *   "literal"                  escapes \n \t \r \\ \" \[ \] \- \xHH \uHHHH \UHHHHHHHH (+ XGrammar's \' \? \a \b \f \v \0 \e)
 *   [a-z0-9_]  [^"\\]          classes over code points; same escapes, plus XGrammar's \^ \. \* \+ \( \) \{ \} \| \/ \$
 *   .                          any character (llama.cpp)
 *   a | b   ( … )   x*  x+  x?  x{m}  x{m,}  x{m,n}
 *   # comment to the end of the line
 * \xHH is always exactly two hex digits (llama.cpp's reading; XGrammar reads as many as follow).
 */
import type nearley from "nearley";
import compiled from "./gbnf.generated.js";
import { nearleyParser } from "../frontend/nearley-parser.js";
import { SpecError, spanAt } from "../diagnostics.js";
import type { Span } from "../ir.js";
import type { GExpr, GRule, GSeq, GrammarAst } from "./ast.js";
import { tokenize, tokenSpan, type GToken } from "./lexer.js";
import { MAX_CODE_POINT } from "./utf8.js";


export type RawItem =
  | { kind: "string" | "class" | "dot" | "name"; t: GToken }
  | { kind: "group"; open: GToken; alts: RawAlts; close: GToken }
  | { kind: "quant"; body: RawItem; q: RawQuant };
export interface RawQuant { op: string; open: GToken; close: GToken; min: GToken | null; max: GToken | null; comma: boolean }
export interface RawAlts { seqs: RawItem[][]; seps: GToken[] }
export interface RawRule { name: GToken; defn: GToken; alts: RawAlts }

/** A construct that llama.cpp or XGrammar rejects or reads differently (reported once per kind, as a warning). */
export interface Portability {
  kind: string;
  message: string;
  span: Span;
  count: number;
}

export interface ParsedGrammar {
  ast: GrammarAst;
  portability: Portability[];
}

const DESCRIBE: Record<string, string> = {
  rulename: "a rule definition (name ::= …)",
  defn: "'::='",
  name: "a rule name",
  string: "a string literal",
  charclass: "a character class",
  dot: "'.'",
  lparen: "'('",
  rparen: "')'",
  pipe: "'|'",
  star: "'*'",
  plus: "'+'",
  question: "'?'",
  lbrace: "'{'",
  rbrace: "'}'",
  int: "a number",
  comma: "','",
};

export function parseGrammarAst(file: string, text: string, maxNesting = Infinity): ParsedGrammar {
  const toks = tokenize(file, text, maxNesting);
  return new Converter(file, text, toks).convert(parseLL1(toks) ?? parseNearley(file, text, toks));
}

/** The tokens' parse by nearley (gbnf.ne): the notation's definition, and the syntax errors' source. */
export function parseNearley(file: string, text: string, toks: GToken[]): RawRule[] {
  const parser = nearleyParser(compiled, toks);
  try {
    parser.feed("");
  } catch (e) {
    const tok = (e as { token?: GToken }).token ?? toks[Math.max(0, (parser as unknown as { current: number }).current - 1)];
    throw syntaxError(file, text, parser, tok);
  }
  const results = parser.results as Cons<ConsRule>[];
  if (results.length === 0) throw syntaxError(file, text, parser, undefined, toks);
  // The grammar is unambiguous (a rule name is a distinct token), so there is exactly one parse.
  return listOf(results[0]!).map((r) => ({ name: r.name, defn: r.defn, alts: flattenAlts(r.alts) }));
}

/**
 * The parse gbnf.ne gives, by recursive descent: the notation is LL(1) (a rule starts at its
 * `rulename` token), and nearley's Earley parse of a machine-written grammar (the JSON Schema front
 * end writes thousands of tokens) spent most of a schema's compile time making its items and
 * collecting them. Null where the tokens are not a grammar: nearley then parses them again, and
 * its table says what was expected where (syntaxError). tests/compiler/grammar.test.ts checks that
 * both give the same tree.
 */
export function parseLL1(toks: readonly GToken[]): RawRule[] | null {
  let i = 0;
  const type = (): string | undefined => toks[i]?.type;
  const alts = (): RawAlts | null => {
    const seqs: RawItem[][] = [];
    const seps: GToken[] = [];
    for (;;) {
      const seq: RawItem[] = [];
      for (let item = atom(); item; item = atom()) {
        for (let q = quant(); q; q = quant()) item = { kind: "quant", body: item, q };
        seq.push(item);
      }
      if (failed) return null;
      seqs.push(seq);
      if (type() !== "pipe") return { seqs, seps };
      seps.push(toks[i++]!);
    }
  };
  let failed = false;
  const atom = (): RawItem | null => {
    const t = toks[i];
    switch (t?.type) {
      case "string": i++; return { kind: "string", t };
      case "charclass": i++; return { kind: "class", t };
      case "dot": i++; return { kind: "dot", t };
      case "name": i++; return { kind: "name", t };
      case "lparen": {
        i++;
        const inner = alts();
        if (!inner || type() !== "rparen") return (failed = true), null;
        return { kind: "group", open: t, alts: inner, close: toks[i++]! };
      }
    }
    return null;
  };
  const quant = (): RawQuant | null => {
    const t = toks[i];
    if (t?.type === "star" || t?.type === "plus" || t?.type === "question") {
      i++;
      return { op: t.type === "star" ? "*" : t.type === "plus" ? "+" : "?", open: t, close: t, min: null, max: null, comma: false };
    }
    if (t?.type !== "lbrace") return null;
    const min = toks[i + 1];
    if (min?.type !== "int") return (failed = true), null;
    i += 2;
    let comma = false;
    let max: GToken | null = null;
    if (type() === "comma") {
      comma = true;
      i++;
      if (type() === "int") max = toks[i++]!;
    }
    if (type() !== "rbrace") return (failed = true), null;
    return { op: "{}", open: t, close: toks[i++]!, min, max, comma };
  };
  const rules: RawRule[] = [];
  while (i < toks.length) {
    const name = toks[i]!;
    const defn = toks[i + 1];
    if (name.type !== "rulename" || defn?.type !== "defn") return null;
    i += 2;
    const a = alts();
    if (!a) return null;
    rules.push({ name, defn, alts: a });
  }
  return rules;
}

// The parse tree as gbnf.ne builds it: lists are cons cells, newest first (see its note).
type Cons<T> = { item: T; prev: Cons<T> } | null;
type ConsItem =
  | { kind: "string" | "class" | "dot" | "name"; t: GToken }
  | { kind: "group"; open: GToken; alts: Cons<ConsAlt>; close: GToken }
  | { kind: "quant"; body: ConsItem; q: RawQuant };
interface ConsAlt { seq: Cons<ConsItem>; sep: GToken | null }
interface ConsRule { name: GToken; defn: GToken; alts: Cons<ConsAlt> }

function listOf<T>(c: Cons<T>): T[] {
  const out: T[] = [];
  for (let x = c; x; x = x.prev) out.push(x.item);
  return out.reverse();
}

/** Cons lists to arrays. Recursion only follows groups, whose nesting the lexer bounds (maxNesting). */
function flattenAlts(c: Cons<ConsAlt>): RawAlts {
  const alts = listOf(c);
  return { seqs: alts.map((a) => listOf(a.seq).map(flattenItem)), seps: alts.slice(1).map((a) => a.sep!) };
}

function flattenItem(i: ConsItem): RawItem {
  if (i.kind === "group") return { kind: "group", open: i.open, alts: flattenAlts(i.alts), close: i.close };
  if (i.kind === "quant") return { kind: "quant", body: flattenItem(i.body), q: i.q };
  return i;
}

function expectedAt(parser: nearley.Parser): string[] {
  const table = (parser as unknown as { table: { scannable: { rule: { symbols: unknown[] }; dot: number }[] }[] }).table;
  const column = table[parser.current];
  const types = new Set<string>();
  for (const st of column?.scannable ?? []) {
    const sym = st.rule.symbols[st.dot] as { type?: string } | undefined;
    if (sym?.type) types.add(sym.type);
  }
  const order = Object.keys(DESCRIBE);
  return [...types].sort((a, b) => order.indexOf(a) - order.indexOf(b));
}

function describeExpected(types: string[]): string {
  const atoms = ["string", "charclass", "dot", "name", "lparen"];
  const quants = ["star", "plus", "question", "lbrace"];
  const parts: string[] = [];
  const has = (t: string) => types.includes(t);
  const rest = types.filter((t) => !(atoms.every(has) && atoms.includes(t)) && !(quants.every(has) && quants.includes(t)));
  if (atoms.every(has)) parts.push("an element (a string, a character class, a rule name or '(')");
  if (quants.every(has)) parts.push("a repetition (* + ? {m,n})");
  parts.push(...rest.map((t) => DESCRIBE[t] ?? t));
  if (parts.length === 0) return "nothing more";
  return parts.length === 1 ? parts[0]! : `${parts.slice(0, -1).join(", ")} or ${parts[parts.length - 1]}`;
}

function syntaxError(file: string, text: string, parser: nearley.Parser, tok: GToken | undefined, toks: GToken[] = []): SpecError {
  const expected = expectedAt(parser);
  const wanted = describeExpected(expected);
  if (!tok) {
    // Input ended inside parentheses: point at the '(' that is still open.
    const open: GToken[] = [];
    for (const t of toks) if (t.type === "lparen") open.push(t); else if (t.type === "rparen") open.pop();
    const unclosed = expected.includes("rparen") ? open[open.length - 1] : undefined;
    if (unclosed) {
      return new SpecError("E0701", `this '(' is never closed: the input ends where ${wanted} was expected`, tokenSpan(file, unclosed),
        "close the group with ')'");
    }
    return new SpecError("E0701", `unexpected end of input: expected ${wanted}`, spanAt(file, text, text.length, text.length),
      expected.includes("rbrace") ? "a repetition {m,n} is not closed" : undefined);
  }
  const what = tok.type === "name" ? `rule name ${tok.text}` : tok.type === "rulename" ? `definition of ${tok.text}` : DESCRIBE[tok.type] ?? JSON.stringify(tok.text);
  let hint: string | undefined;
  if (tok.type === "name" && expected.length === 1 && expected[0] === "rulename") hint = `a grammar is a list of rules: ${tok.text} ::= …`;
  else if (tok.type === "rparen") hint = "this ')' has no matching '('";
  else if (["star", "plus", "question", "lbrace"].includes(tok.type)) hint = "a repetition applies to the element just before it";
  else if (tok.type === "int" || tok.type === "comma") hint = "a repetition is {m}, {m,} or {m,n} with whole numbers";
  return new SpecError("E0701", `unexpected ${what}: expected ${wanted}`, tokenSpan(file, tok), hint);
}

const HEX = /^[0-9a-fA-F]$/;

class Converter {
  private readonly errors: SpecError[] = [];
  private readonly port = new Map<string, Portability>();
  /** Classes decoded so far without an error or a note, by their text (the AST's ranges are never changed after parsing). */
  private readonly classes = new Map<string, { negated: boolean; ranges: [number, number][] }>();
  /** Portability notes so far (a class that gave one is decoded again where it is written again, to count it there too). */
  private notes = 0;

  constructor(private readonly file: string, private readonly text: string, private readonly toks: GToken[]) {}

  convert(raw: RawRule[]): ParsedGrammar {
    const rules = raw.map((r) => this.rule(r));
    this.lineBreaks();
    if (this.errors.length > 0) {
      const [first, ...more] = this.errors;
      (first as SpecError & { more?: SpecError[] }).more = more;
      throw first;
    }
    return { ast: { file: this.file, rules }, portability: [...this.port.values()] };
  }

  private warn(kind: string, message: string, span: Span): void {
    this.notes++;
    const p = this.port.get(kind);
    if (p) p.count++;
    else this.port.set(kind, { kind, message, span, count: 1 });
  }

  private span(a: number, b: number): Span {
    return spanAt(this.file, this.text, a, b);
  }

  private tokSpan(t: GToken): Span {
    return tokenSpan(this.file, t);
  }

  private rule(r: RawRule): GRule {
    const name = r.name.text;
    const nameSpan = this.tokSpan(r.name);
    if (name.includes("_")) this.warn("name-underscore", `rule name ${name} contains '_', which llama.cpp does not accept in names (use '-')`, nameSpan);
    if (/^[0-9-]/.test(name)) this.warn("name-start", `rule name ${name} starts with '${name[0]}', which XGrammar does not accept (start names with a letter)`, nameSpan);
    const alts = this.alts(r.alts, r.defn);
    const end = alts.reduce((m, a) => Math.max(m, a.span.end), r.defn.offset + 3);
    return { name, nameSpan, alts, span: this.span(r.name.offset, end) };
  }

  private alts(a: RawAlts, before: GToken): GSeq[] {
    return a.seqs.map((items, k) => {
      const prev = k === 0 ? before : a.seps[k - 1]!;
      const conv = items.map((it) => this.item(it));
      if (conv.length === 0) {
        const at = prev.offset + prev.text.length;
        const span = this.span(at, at);
        this.warn("empty-alternative", "an empty alternative: XGrammar rejects it (write \"\" for the empty string)", this.tokSpan(prev));
        return { items: conv, span };
      }
      return { items: conv, span: this.span(conv[0]!.span.offset, conv[conv.length - 1]!.span.end) };
    });
  }

  private item(it: RawItem): GExpr {
    switch (it.kind) {
      case "string": {
        const span = this.tokSpan(it.t);
        return { kind: "literal", codePoints: this.decode(it.t, 1, it.t.text.length - 1, false).map((c) => c.cp), span };
      }
      case "class": {
        const span = this.tokSpan(it.t);
        // A class written again (a JSON Schema grammar writes the string's character class many
        // times) is the same ranges: decoded once (when it gave no error and no note).
        const known = this.classes.get(it.t.text);
        if (known) return { kind: "class", negated: known.negated, ranges: known.ranges, text: it.t.text, span };
        const errorsBefore = this.errors.length, notesBefore = this.notes;
        const negated = it.t.text[1] === "^";
        const chars = this.decode(it.t, negated ? 2 : 1, it.t.text.length - 1, true);
        const ranges: [number, number][] = [];
        for (let k = 0; k < chars.length; k++) {
          const c = chars[k]!;
          // A '-' between two characters makes a range; first or last it is itself (both engines).
          const dash = chars[k + 1];
          const hi = chars[k + 2];
          if (dash && dash.raw === "-" && hi) {
            if (hi.cp < c.cp) {
              this.errors.push(new SpecError("E0703", `bad range in character class: ${fmtCp(c.cp)}-${fmtCp(hi.cp)} goes backwards`,
                this.span(c.offset, hi.end), `write ${fmtCp(hi.cp)}-${fmtCp(c.cp)}`));
            }
            ranges.push([c.cp, hi.cp]);
            k += 2;
          } else ranges.push([c.cp, c.cp]);
        }
        if (this.errors.length === errorsBefore && this.notes === notesBefore) this.classes.set(it.t.text, { negated, ranges });
        return { kind: "class", negated, ranges, text: it.t.text, span };
      }
      case "dot": {
        const span = this.tokSpan(it.t);
        this.warn("dot", "'.' (any character) is llama.cpp notation; XGrammar does not accept it (write [^\\n] or a negated class)", span);
        return { kind: "any", span };
      }
      case "name":
        return { kind: "ref", name: it.t.text, span: this.tokSpan(it.t) };
      case "group": {
        const alts = this.alts(it.alts, it.open);
        return { kind: "group", alts, span: this.span(it.open.offset, it.close.offset + 1) };
      }
      case "quant": {
        const body = this.item(it.body);
        if (it.body.kind === "quant") this.warn("double-quantifier", "two repetition operators in a row: XGrammar accepts only one (wrap the first in parentheses)", this.tokSpan(it.q.open));
        const q = it.q;
        const opSpan = this.span(q.open.offset, q.close.offset + q.close.text.length);
        const span = this.span(body.span.offset, opSpan.end);
        let min = 0;
        let max: number | null = null;
        if (q.op === "+") min = 1;
        else if (q.op === "?") max = 1;
        else if (q.op === "{}") {
          min = Number(q.min!.text);
          max = q.comma ? (q.max ? Number(q.max.text) : null) : min;
        }
        return { kind: "repeat", body, min, max, op: q.op === "{}" ? this.text.slice(opSpan.offset, opSpan.end) : q.op, span, opSpan };
      }
    }
  }

  /** Decodes the characters of a literal or class body, text[from, to) of the token. */
  private decode(t: GToken, from: number, to: number, inClass: boolean): { cp: number; raw: string; offset: number; end: number }[] {
    const out: { cp: number; raw: string; offset: number; end: number }[] = [];
    const s = t.text;
    let k = from;
    while (k < to) {
      const offset = t.offset + k;
      if (s[k] !== "\\") {
        const cp = s.codePointAt(k)!;
        const len = cp > 0xffff ? 2 : 1;
        if (cp >= 0xd800 && cp <= 0xdfff) {
          this.errors.push(new SpecError("E0703", "a lone surrogate is not a character", this.span(offset, offset + 1)));
        }
        out.push({ cp, raw: s.slice(k, k + len), offset, end: offset + len });
        k += len;
        continue;
      }
      const c = s[k + 1] ?? "";
      const hexLen = c === "x" ? 2 : c === "u" ? 4 : c === "U" ? 8 : 0;
      if (hexLen > 0) {
        const digits = s.slice(k + 2, k + 2 + hexLen);
        const end = offset + 2 + hexLen;
        if (digits.length !== hexLen || ![...digits].every((d) => HEX.test(d)) || k + 2 + hexLen > to) {
          this.errors.push(new SpecError("E0703", `\\${c} must be followed by exactly ${hexLen} hex digits`, this.span(offset, Math.min(end, t.offset + to)),
            c === "x" ? "\\x41 is 'A'; for a code point above \\xFF write \\u00E9 or \\U0001F600" : c === "u" ? "\\u00E9 is 'é'; above \\uFFFF write \\U0001F600" : "\\U0001F600 is '😀'"));
          k += 2;
          continue;
        }
        const cp = parseInt(digits, 16);
        if (cp > MAX_CODE_POINT || (cp >= 0xd800 && cp <= 0xdfff)) {
          this.errors.push(new SpecError("E0703", `\\${c}${digits} is not a Unicode character (${cp > MAX_CODE_POINT ? "above U+10FFFF" : "a surrogate"})`, this.span(offset, end),
            "grammars match UTF-8 text; a surrogate pair is written as one \\U escape (\\U0001F600)"));
        }
        if (c === "x" && HEX.test(s[k + 4] ?? "") && k + 4 < to) {
          this.warn("hex-escape", `\\x${digits} is followed by a hex digit: llama.cpp reads two digits, XGrammar reads them all (write \\u00${digits.toUpperCase()} instead)`, this.span(offset, end + 1));
        }
        out.push({ cp, raw: s.slice(k, k + 2 + hexLen), offset, end });
        k += 2 + hexLen;
        continue;
      }
      // Which engine reads which escape (checked against llama.cpp as bundled by node-llama-cpp
      // and @mlc-ai/web-xgrammar): both read \n \t \r \\ \" everywhere and \[ \] \- in classes;
      // only llama.cpp reads \[ \] \- in strings; only XGrammar reads the C escapes, and in classes
      // the regex ones.
      const both: Record<string, number> = { n: 10, t: 9, r: 13, "\\": 92, '"': 34 };
      const bracket: Record<string, number> = { "[": 91, "]": 93, "-": 45 };
      const xgrammarOnly: Record<string, number> = { "'": 39, "?": 63, a: 7, b: 8, f: 12, v: 11, "0": 0, e: 27 };
      const xgrammarClass: Record<string, number> = { "^": 94, ".": 46, "*": 42, "+": 43, "(": 40, ")": 41, "{": 123, "}": 125, "|": 124, "/": 47, $: 36 };
      let cp = both[c] ?? bracket[c];
      if (cp !== undefined && bracket[c] !== undefined && !inClass) {
        this.warn("escape", `the escape \\${c} in a string is llama.cpp notation; XGrammar rejects it (write ${c} unescaped)`, this.span(offset, offset + 2));
      } else if (cp === undefined) {
        cp = xgrammarOnly[c] ?? (inClass ? xgrammarClass[c] : undefined);
        if (cp !== undefined) {
          this.warn("escape", `the escape \\${c} is XGrammar notation; llama.cpp rejects it (write \\u${cp.toString(16).toUpperCase().padStart(4, "0")})`, this.span(offset, offset + 2));
        }
      }
      if (cp === undefined) {
        this.errors.push(new SpecError("E0703", `unknown escape \\${c}${/[dDsSwW]/.test(c) ? " (regex shorthands are not grammar notation)" : ""}`, this.span(offset, offset + 1 + c.length),
          /[dDsSwW]/.test(c) ? "write the class out, e.g. [0-9] for \\d, [ \\t\\n] for \\s" : 'known escapes: \\n \\t \\r \\\\ \\" \\[ \\] \\xHH \\uHHHH \\UHHHHHHHH'));
        k += 1 + Math.max(1, c.length);
        continue;
      }
      out.push({ cp, raw: s.slice(k, k + 2), offset, end: offset + 2 });
      k += 2;
    }
    return out;
  }

  /**
   * llama.cpp ends a rule at a line break unless the break follows `::=` or `|` or is inside
   * parentheses; XGrammar and specc continue until the next `name ::=`. Text that relies on the
   * latter does not load in llama.cpp.
   */
  private lineBreaks(): void {
    let depth = 0;
    for (let k = 1; k < this.toks.length; k++) {
      const prev = this.toks[k - 1]!;
      const t = this.toks[k]!;
      if (prev.type === "lparen") depth++;
      if (prev.type === "rparen") depth = Math.max(0, depth - 1);
      if (t.type === "rulename") { depth = 0; continue; }
      if (t.lineStart && depth === 0 && prev.type !== "defn" && prev.type !== "pipe") {
        this.warn("line-break", "the rule continues on a new line outside parentheses: llama.cpp ends a rule at the line break (end the previous line with '|' or wrap the alternatives in ( … ))", this.tokSpan(t));
      }
    }
  }
}

function fmtCp(cp: number): string {
  return cp >= 0x21 && cp < 0x7f ? String.fromCharCode(cp) : `U+${cp.toString(16).toUpperCase().padStart(4, "0")}`;
}
