/**
 * @fileoverview The context-free grammar IR: what a GBNF/EBNF grammar (DESIGN.md §1.2) lowers to,
 * and what the later pushdown-automaton compilation, the Earley reference recognizer
 * (earley.ts) and the printer (print.ts) consume.
 *
 * Neighbours: parse.ts (text → AST), lower.ts (AST → this IR), analyze.ts (reachability,
 * productivity, nullability), left-recursion.ts (rewrite), earley.ts, print.ts, index.ts.
 *
 * Terminals are sets of BYTES, not code points. Why: the decoder's tokens are byte strings that
 * routinely end in the middle of a UTF-8 character (byte-level BPE, SentencePiece byte fallback),
 * so both the future PDA and the oracle it is tested against must step one byte at a time. A
 * character class over code points is therefore compiled at lowering time into alternatives of
 * UTF-8 byte-range sequences (utf8.ts), exactly the way regex-automata compiles Unicode classes;
 * the grammar only ever accepts valid UTF-8 (no surrogates, nothing above U+10FFFF), as llama.cpp
 * and XGrammar do. A terminal is a set of byte ranges (not one range) so that an ASCII class such
 * as `[a-zA-Z0-9_]` stays one symbol instead of four alternatives.
 *
 * Shape: a rule is an array of alternatives; an alternative is a sequence of symbols (the empty
 * sequence is ε); a symbol is a byte set or a reference to a rule by index. There is no `*`, `+`,
 * `?`, `{m,n}` or grouping here: lowering desugars them into fresh helper rules, named
 * `<rule>-<n>` (llama.cpp and XGrammar call theirs `<rule>_<n>`, but llama.cpp's notation has no
 * '_' in names; with '-' print.ts can write any Cfg back as text both engines load).
 */
import type { Span, SpecError } from "../diagnostics.js";

/** An inclusive byte range [lo, hi], 0 ≤ lo ≤ hi ≤ 255. */
export type ByteRange = readonly [number, number];

/** One input byte out of a set: ranges are sorted, disjoint, non-adjacent and non-empty. */
export interface ByteSym {
  readonly kind: "bytes";
  readonly ranges: readonly ByteRange[];
}

/** A reference to `cfg.rules[rule]`. */
export interface RuleSym {
  readonly kind: "rule";
  readonly rule: number;
}

export type Sym = ByteSym | RuleSym;

/** Where a rule came from; helpers point back at the construct that made them. */
export type RuleOrigin =
  | "user"            // written by the author as `name ::= …`
  | "group"           // ( … )
  | "repeat"          // *, +, ?, {m}, {m,}, {m,n}
  | "class"           // a character class (or `.`) that needs several UTF-8 byte sequences
  | "left-recursion"; // the tail rule A' introduced by left-recursion removal

export interface CfgRule {
  /** Unique, valid GBNF name (`[A-Za-z0-9_-]+`). */
  readonly name: string;
  /** Alternatives; each is a sequence of symbols; `[]` is ε. A rule with no alternative matches nothing. */
  alts: Sym[][];
  readonly origin: RuleOrigin;
  /** The user rule this rule belongs to (itself for user rules): diagnostics name it. */
  readonly owner: number;
  /** The definition (user rules: the rule's name) or the construct a helper was made for. */
  readonly span: Span | null;
}

export interface Cfg {
  readonly rules: CfgRule[];
  /** Index of the start rule (`root` unless overridden). */
  readonly start: number;
  /** Warning-level diagnostics (unreachable rules): the grammar is usable, the author should know. */
  readonly warnings: SpecError[];
}

/** Explicit limits on the stages that can blow up; each failure is a SpecLimitError naming the option. */
export interface CfgLimits {
  /** Largest m or n accepted in `{m}`, `{m,}`, `{m,n}` (llama.cpp's own cap is 2000). */
  maxRepeat: number;
  /** Most rules the lowered grammar may have (user rules + helpers). */
  maxRules: number;
  /** Most symbols in all alternatives together (after repetition expansion, UTF-8 compilation and left-recursion removal). */
  maxSymbols: number;
  /**
   * Deepest nesting of parentheses and stacked repetition operators. The front end and the later
   * stages recurse on it and the JS stack runs out near 950 levels; 256 keeps a wide margin.
   */
  maxNesting: number;
}

export const DEFAULT_LIMITS: CfgLimits = {
  maxRepeat: 2000,
  maxRules: 20_000,
  maxSymbols: 500_000,
  maxNesting: 256,
};

export function byteSym(ranges: readonly ByteRange[]): ByteSym {
  return { kind: "bytes", ranges: normalizeRanges(ranges) };
}

/**
 * The symbol of one byte value: one shared object per value (symbols are read-only once made; a
 * generated grammar's literals are tens of thousands of bytes, each of which was an object and two
 * arrays that lived as long as the grammar). Not frozen: a frozen object's shape made the hot
 * readers of symbols polymorphic.
 */
export function byteLit(b: number): ByteSym {
  return BYTE_LITS[b] ?? { kind: "bytes", ranges: [[b, b]] };
}
const BYTE_LITS: readonly ByteSym[] = Array.from({ length: 256 }, (_, b) => ({ kind: "bytes", ranges: [[b, b]] }));

export function ruleSym(rule: number): RuleSym {
  return { kind: "rule", rule };
}

/** Sorts and merges overlapping or adjacent ranges. */
export function normalizeRanges(ranges: readonly ByteRange[]): ByteRange[] {
  const sorted = [...ranges].filter(([lo, hi]) => lo <= hi).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const out: [number, number][] = [];
  for (const [lo, hi] of sorted) {
    const last = out[out.length - 1];
    if (last && lo <= last[1] + 1) last[1] = Math.max(last[1], hi);
    else out.push([lo, hi]);
  }
  return out;
}

export function byteIn(sym: ByteSym, b: number): boolean {
  for (const [lo, hi] of sym.ranges) if (b >= lo && b <= hi) return true;
  return false;
}

export function symEquals(a: Sym, b: Sym): boolean {
  if (a.kind === "rule" || b.kind === "rule") return a.kind === b.kind && (a as RuleSym).rule === (b as RuleSym).rule;
  return a.ranges.length === b.ranges.length && a.ranges.every(([lo, hi], i) => lo === b.ranges[i]![0] && hi === b.ranges[i]![1]);
}

export function countSymbols(rules: readonly CfgRule[]): number {
  let n = 0;
  for (const r of rules) for (const a of r.alts) n += a.length + 1;
  return n;
}
