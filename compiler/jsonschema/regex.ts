/**
 * @fileoverview The regex front end: a JSON Schema `pattern` (ECMAScript regex syntax, the subset
 * schemas use) → a GBNF expression over the *JSON text* of a string value. The pattern applies to
 * the decoded string while the grammar writes its JSON spelling, so each character becomes the way
 * JSON writes it: itself, or (for `"`, `\` and control characters) its canonical escape. (Writing an
 * ordinary character as `\uXXXX` is valid JSON the grammar does not offer: stricter, never looser.)
 *
 * Supported: literals and escapes (`\n \t \r \f \v \0 \xHH \uHHHH \u{…}` and escaped
 * metacharacters), classes with ranges and negation, `. \d \w \s \D \W \S`, groups (capturing,
 * `(?:…)`, named), alternation, quantifiers `* + ? {m} {m,} {m,n}` and their lazy forms (same
 * language), `^` / `$` at the ends of top-level alternatives. JSON Schema patterns are not anchored:
 * an alternative without `^` may be preceded by any text, one without `$` followed by any.
 * Refused (an error the schema front end reports): lookarounds, backreferences, `\b` `\B`, and
 * anchors elsewhere.
 */
import { complementCodePoints, normalizeCodePoints, type CpRange } from "../grammar/utf8.js";

/** A parsed pattern: sets of code points, sequences, alternatives, repetitions (anchors resolved). */
export type RegexNode = Node;
type Node =
  | { k: "set"; ranges: CpRange[] }
  | { k: "seq"; items: Node[] }
  | { k: "alt"; alts: Node[] }
  | { k: "rep"; body: Node; min: number; max: number | null };

class RegexError extends Error {}

const DIGIT: CpRange[] = [[0x30, 0x39]];
const WORD: CpRange[] = [[0x30, 0x39], [0x41, 0x5a], [0x5f, 0x5f], [0x61, 0x7a]];
const SPACE: CpRange[] = normalizeCodePoints([[0x09, 0x0d], [0x20, 0x20], [0xa0, 0xa0], [0x1680, 0x1680], [0x2000, 0x200a],
  [0x2028, 0x2029], [0x202f, 0x202f], [0x205f, 0x205f], [0x3000, 0x3000], [0xfeff, 0xfeff]]);
const DOT: CpRange[] = complementCodePoints([[0x0a, 0x0a], [0x0d, 0x0d], [0x2028, 0x2029]]);
const MAX_REPEAT = 1000;

function parse(p: string): Node {
  let i = 0;
  let depth = 0;
  const fail = (m: string): never => { throw new RegexError(`pattern ${JSON.stringify(p)}: ${m} at offset ${i}`); };
  const cp = (): number => { const c = p.codePointAt(i)!; i += c > 0xffff ? 2 : 1; return c; };
  const hex = (n: number): number => {
    const h = p.slice(i, i + n);
    if (!new RegExp(`^[0-9a-fA-F]{${n}}$`).test(h)) fail("bad hex escape");
    i += n;
    return parseInt(h, 16);
  };
  /** An escape after the backslash: a set of code points. */
  const escape = (inClass: boolean): CpRange[] => {
    if (i >= p.length) fail("a pattern cannot end with a backslash");
    const c = p[i++]!;
    switch (c) {
      case "d": return DIGIT;
      case "D": return complementCodePoints(DIGIT);
      case "w": return WORD;
      case "W": return complementCodePoints(WORD);
      case "s": return SPACE;
      case "S": return complementCodePoints(SPACE);
      case "n": return [[10, 10]];
      case "t": return [[9, 9]];
      case "r": return [[13, 13]];
      case "f": return [[12, 12]];
      case "v": return [[11, 11]];
      case "0": return [[0, 0]];
      case "x": { const v = hex(2); return [[v, v]]; }
      case "u": {
        if (p[i] === "{") { const j = p.indexOf("}", i); if (j < 0) fail("unterminated \\u{…}"); const v = parseInt(p.slice(i + 1, j), 16); i = j + 1; if (!(v <= 0x10ffff)) fail("bad \\u{…}"); return [[v, v]]; }
        const v = hex(4); return [[v, v]];
      }
      case "b": if (inClass) return [[8, 8]]; return fail("word boundaries (\\b) are not supported");
      case "B": return fail("\\B is not supported");
      case "c": { const l = p.charCodeAt(i++); return [[l % 32, l % 32]]; }
      default:
        if (/[1-9]/.test(c)) fail("backreferences are not supported");
        if (c === "k") fail("named backreferences are not supported");
        if (c === "p" || c === "P") fail("Unicode property escapes are not supported");
        return [[c.codePointAt(0)!, c.codePointAt(0)!]];
    }
  };
  const cls = (): Node => {
    i++; // [
    const neg = p[i] === "^";
    if (neg) i++;
    const ranges: CpRange[] = [];
    while (i < p.length && p[i] !== "]") {
      let lo: CpRange[];
      if (p[i] === "\\") { i++; lo = escape(true); } else { const c = cp(); lo = [[c, c]]; }
      if (p[i] === "-" && p[i + 1] !== "]" && i + 1 < p.length && lo.length === 1 && lo[0]![0] === lo[0]![1]) {
        i++;
        let hi: CpRange[];
        if (p[i] === "\\") { i++; hi = escape(true); } else { const c = cp(); hi = [[c, c]]; }
        if (hi.length !== 1 || hi[0]![0] !== hi[0]![1]) fail("a range ends in a class escape");
        if (hi[0]![0] < lo[0]![0]) fail("a range out of order");
        ranges.push([lo[0]![0], hi[0]![0]]);
      } else ranges.push(...lo);
    }
    if (p[i] !== "]") fail("unterminated character class");
    i++;
    const set = normalizeCodePoints(ranges);
    return { k: "set", ranges: neg ? complementCodePoints(set) : set };
  };
  const atom = (): Node | null => {
    const c = p[i]!;
    if (c === "(") {
      i++;
      if (p[i] === "?") {
        if (p[i + 1] === ":") i += 2;
        else if (p[i + 1] === "<" && p[i + 2] !== "=" && p[i + 2] !== "!") { const j = p.indexOf(">", i); if (j < 0) fail("unterminated group name"); i = j + 1; }
        else fail("lookarounds are not supported");
      }
      depth++;
      const inner = alt();
      depth--;
      if (p[i] !== ")") fail("unbalanced parenthesis");
      i++;
      return inner;
    }
    if (c === "[") return cls();
    if (c === ".") { i++; return { k: "set", ranges: DOT }; }
    if (c === "\\") { i++; return { k: "set", ranges: escape(false) }; }
    if (c === "$" && depth === 0 && (i + 1 === p.length || p[i + 1] === "|")) return null; // the end anchor of a top-level alternative
    if (c === "^" || c === "$") fail("anchors are supported only at the start and end of the pattern");
    if (c === "*" || c === "+" || c === "?" || c === "{" && /^\{\d+(,\d*)?\}/.test(p.slice(i))) fail("a quantifier with nothing to repeat");
    if (c === ")" || c === "|") return null;
    const v = cp();
    return { k: "set", ranges: [[v, v]] };
  };
  const quantified = (): Node | null => {
    let a = atom();
    if (!a) return null;
    for (;;) {
      let min: number;
      let max: number | null;
      const c = p[i];
      if (c === "*") { min = 0; max = null; i++; }
      else if (c === "+") { min = 1; max = null; i++; }
      else if (c === "?") { min = 0; max = 1; i++; }
      else if (c === "{" && /^\{\d+(,\d*)?\}/.test(p.slice(i))) {
        const m = /^\{(\d+)(,(\d*))?\}/.exec(p.slice(i))!;
        min = Number(m[1]);
        max = m[2] === undefined ? min : m[3] === "" ? null : Number(m[3]);
        if (max !== null && max < min) fail("numbers out of order in {m,n}");
        if (Math.max(min, max ?? 0) > MAX_REPEAT) fail(`repetition bounds above ${MAX_REPEAT} are not supported`);
        i += m[0].length;
      } else return a;
      if (p[i] === "?") i++; // lazy: same language
      a = { k: "rep", body: a, min, max };
    }
  };
  const seq = (): Node => {
    const items: Node[] = [];
    for (;;) {
      if (i >= p.length || p[i] === "|" || p[i] === ")") return { k: "seq", items };
      const q = quantified();
      if (!q) return { k: "seq", items };
      items.push(q);
    }
  };
  const alt = (): Node => {
    const alts = [seq()];
    while (p[i] === "|") { i++; alts.push(seq()); }
    return alts.length === 1 ? alts[0]! : { k: "alt", alts };
  };
  // Top level: alternatives, each with its own optional anchors.
  const tops: Node[] = [];
  for (;;) {
    const anchoredStart = p[i] === "^";
    if (anchoredStart) i++;
    const body = seq();
    let anchoredEnd = false;
    if (p[i] === "$") { anchoredEnd = true; i++; }
    const items: Node[] = [];
    if (!anchoredStart) items.push({ k: "rep", body: { k: "set", ranges: ANY }, min: 0, max: null });
    items.push(body);
    if (!anchoredEnd) items.push({ k: "rep", body: { k: "set", ranges: ANY }, min: 0, max: null });
    tops.push({ k: "seq", items });
    if (i >= p.length) break;
    if (p[i] === "|") { i++; continue; }
    fail(p[i] === ")" ? "unbalanced parenthesis" : "anchors are supported only at the start and end of the pattern");
  }
  return tops.length === 1 ? tops[0]! : { k: "alt", alts: tops };
}

/** Any code point a JSON string may hold (surrogate code points excluded, as everywhere in specc). */
const ANY: CpRange[] = complementCodePoints([]);

/** Code points JSON writes escaped: `"`, `\` and the controls. */
const SPECIAL: CpRange[] = [[0, 0x1f], [0x22, 0x22], [0x5c, 0x5c]];

/** The code points a JSON string holds unescaped (what the grammar's `keychar` allows). */
export const KEY_CHARS: CpRange[] = complementCodePoints(SPECIAL);

const u = (c: number) => (c <= 0xffff ? "\\u" + c.toString(16).padStart(4, "0") : "\\U" + c.toString(16).padStart(8, "0"));

/** A GBNF class of code point ranges (normalized, none of them SPECIAL). */
export function rangesGbnf(ranges: CpRange[]): string {
  return `[${ranges.map(([a, b]) => (a === b ? u(a) : `${u(a)}-${u(b)}`)).join("")}]`;
}

/** GBNF for one character of `ranges` as JSON writes it (itself, or its escape). */
export function setGbnf(ranges: CpRange[]): string {
  const plain = normalizeCodePoints(intersect(ranges, complementCodePoints(SPECIAL)));
  const alts: string[] = [];
  if (plain.length) alts.push(rangesGbnf(plain));
  const escapes: string[] = [];
  for (const [a, b] of intersect(ranges, SPECIAL)) for (let c = a; c <= b; c++) escapes.push(JSON.stringify(String.fromCharCode(c)).slice(1, -1));
  if (escapes.length) alts.push(trieGbnf(escapes));
  if (alts.length === 0) throw new RegexError("a character class that matches no character");
  return alts.length === 1 ? alts[0]! : `( ${alts.join(" | ")} )`;
}

/**
 * GBNF for a set of ASCII strings (escapes), written as their trie: `"\\" ( ["\\bfnrt] | "u00"
 * ( "0" [0-7bef] | "1" [0-9a-f] ) )` rather than one literal per string, so that the automaton
 * built from it reads one item per trie node, not one per string (34 of them after the backslash).
 */
function trieGbnf(strings: string[]): string {
  interface Node { end: boolean; next: Map<string, Node> }
  const root: Node = { end: false, next: new Map() };
  for (const t of strings) {
    let x = root;
    for (const ch of t) { let y = x.next.get(ch); if (!y) x.next.set(ch, (y = { end: false, next: new Map() })); x = y; }
    x.end = true;
  }
  const lit = (ch: string) => `"${ch === "\\" || ch === '"' ? "\\" + ch : ch}"`;
  const cls = (chs: string[]) => `[${chs.map((ch) => (ch === "\\" || ch === "]" || ch === "^" || ch === "-" ? "\\" + ch : ch)).join("")}]`;
  const walk = (x: Node): string => {
    const leaves: string[] = [];
    const alts: string[] = [];
    for (const [ch, y] of x.next) {
      if (y.next.size === 0) leaves.push(ch);
      else alts.push(`${lit(ch)} ${walk(y)}${y.end ? "?" : ""}`);
    }
    if (leaves.length) alts.unshift(leaves.length === 1 ? lit(leaves[0]!) : cls(leaves));
    return alts.length === 1 ? alts[0]! : `( ${alts.join(" | ")} )`;
  };
  return walk(root);
}

function intersect(a: CpRange[], b: CpRange[]): CpRange[] {
  const out: CpRange[] = [];
  for (const [a0, a1] of a) for (const [b0, b1] of b) { const lo = Math.max(a0, b0); const hi = Math.min(a1, b1); if (lo <= hi) out.push([lo, hi]); }
  return out;
}

function gbnf(n: Node): string {
  switch (n.k) {
    case "set": return n.ranges === ANY ? "char" : setGbnf(n.ranges);
    case "seq": return n.items.length === 0 ? '""' : n.items.length === 1 ? gbnf(n.items[0]!) : `( ${n.items.map(gbnf).join(" ")} )`;
    case "alt": return `( ${n.alts.map(gbnf).join(" | ")} )`;
    case "rep": {
      const b = gbnf(n.body);
      if (n.min === 0 && n.max === null) return `${b}*`;
      if (n.min === 1 && n.max === null) return `${b}+`;
      if (n.min === 0 && n.max === 1) return `${b}?`;
      return `${b}{${n.min},${n.max === null ? "" : n.max}}`;
    }
  }
}

/**
 * What a string must start with to match, where every top-level alternative of the parse is
 * unanchored at its end (a match may end anywhere): the parse without the free end each was given.
 * Undefined where an alternative is anchored there (`$`).
 */
export function matchPrefix(node: RegexNode): RegexNode | undefined {
  const tops = node.k === "alt" ? node.alts : [node];
  const cores: Node[] = [];
  for (const t of tops) {
    const last = t.k === "seq" ? t.items[t.items.length - 1] : undefined;
    if (t.k !== "seq" || last?.k !== "rep" || last.body.k !== "set" || last.body.ranges !== ANY || last.min !== 0 || last.max !== null) return undefined;
    cores.push({ k: "seq", items: t.items.slice(0, -1) });
  }
  return cores.length === 1 ? cores[0]! : { k: "alt", alts: cores };
}

/** A pattern → its parse (unanchored ends already made `.*`-like over any code point), or why not. */
export function parseRegex(pattern: string): { node: RegexNode } | { error: string } {
  try {
    return { node: parse(pattern) };
  } catch (e) {
    if (e instanceof RegexError) return { error: e.message };
    throw e;
  }
}

/** A pattern → GBNF over the JSON text of the string's content (between the quotes), or why not. */
export function regexToGbnf(pattern: string): { gbnf: string } | { error: string } {
  try {
    return { gbnf: gbnf(parse(pattern)) };
  } catch (e) {
    if (e instanceof RegexError) return { error: e.message };
    throw e;
  }
}
