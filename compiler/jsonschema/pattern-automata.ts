/**
 * @fileoverview Code point automata of JSON Schema patterns, for what GBNF cannot write: the names
 * of other members split by the patternProperties they match (keys.ts) and a pattern within length
 * bounds (bounded-pattern.ts). A pattern (regex.ts's parse) becomes an NFA; the callers run it as a
 * DFA of their own (a product with a name trie, or with a character count) over an alphabet of
 * code point ranges that every class of the pattern either contains or misses, then keep the states
 * that can still reach an accepting one and write them as right-linear GBNF rules. Every step is
 * bounded (states, and NFA states visited), so a hostile pattern is refused quickly.
 */
import { complementCodePoints, type CpRange } from "../grammar/utf8.js";
import { parseRegex, type RegexNode } from "./regex.js";
import { sortNumbers } from "../grammar/small-sort.js";

/** Past these an automaton is refused (a schema error the caller words). */
export const MAX_NFA_STATES = 20_000;
export const MAX_DFA_STATES = 4_000;
/** NFA states visited while building the DFA: bounds the time (a few hundred ms at most). */
export const MAX_WORK = 2_000_000;

export class PatternAutomatonError extends Error {}

export interface Nfa { eps: number[][]; edges: { ranges: CpRange[]; to: number }[][]; accept: number }

function buildNfa(root: RegexNode): Nfa {
  const eps: number[][] = [];
  const edges: { ranges: CpRange[]; to: number }[][] = [];
  const state = (): number => {
    if (eps.length >= MAX_NFA_STATES) throw new PatternAutomatonError(`the pattern's automaton would need more than ${MAX_NFA_STATES} states`);
    eps.push([]);
    edges.push([]);
    return eps.length - 1;
  };
  /** Wires `n` from state `s`; returns its end state. */
  const build = (n: RegexNode, s: number): number => {
    switch (n.k) {
      case "set": {
        const t = state();
        edges[s]!.push({ ranges: n.ranges, to: t });
        return t;
      }
      case "seq": return n.items.reduce((at, item) => build(item, at), s);
      case "alt": {
        const t = state();
        for (const a of n.alts) {
          const a0 = state();
          eps[s]!.push(a0);
          eps[build(a, a0)]!.push(t);
        }
        return t;
      }
      case "rep": {
        let at = s;
        for (let i = 0; i < n.min; i++) at = build(n.body, at);
        const t = state();
        eps[at]!.push(t);
        if (n.max === null) {
          const loop = state();
          eps[at]!.push(loop);
          eps[build(n.body, loop)]!.push(loop, t);
        } else {
          for (let i = n.min; i < n.max; i++) {
            at = build(n.body, at);
            eps[at]!.push(t);
          }
        }
        return t;
      }
    }
  };
  const start = state();
  const accept = build(root, start);
  if (start !== 0) throw new Error("unreachable");
  return { eps, edges, accept };
}

/** Counts work against MAX_WORK. */
export class Budget {
  private used = 0;
  spend(n: number): void {
    this.used += n;
    if (this.used > MAX_WORK) throw new PatternAutomatonError(`the automaton of these patterns and property names would take more than ${MAX_WORK} steps to build`);
  }
}

export function closure(nfa: Nfa, set: Iterable<number>, budget: Budget): number[] {
  const seen = new Set<number>();
  const stack = [...set];
  while (stack.length) {
    const s = stack.pop()!;
    if (seen.has(s)) continue;
    budget.spend(1);
    seen.add(s);
    for (const t of nfa.eps[s]!) stack.push(t);
  }
  return sortNumbers([...seen]);
}

/** A pattern's NFA; PatternAutomatonError for a pattern regex.ts refuses, or past MAX_NFA_STATES. */
export function patternNfa(pattern: string): Nfa {
  const r = parseRegex(pattern);
  if ("error" in r) throw new PatternAutomatonError(r.error);
  return buildNfa(r.node);
}

/** The NFA of a parse (regex.ts); PatternAutomatonError past MAX_NFA_STATES. */
export function regexNfa(node: RegexNode): Nfa {
  return buildNfa(node);
}

/**
 * The alphabet: the code points of `within` cut at every boundary of a class of `nfas` and at
 * `points` (each a range's first code point and the one after its last), as sorted ranges.
 */
export function alphabet(within: readonly CpRange[], nfas: Nfa[], points: Iterable<number> = []): CpRange[] {
  const cuts = new Set<number>();
  for (const [a, b] of within) { cuts.add(a); cuts.add(b + 1); }
  for (const nfa of nfas) for (const es of nfa.edges) for (const e of es) for (const [a, b] of e.ranges) { cuts.add(a); cuts.add(b + 1); }
  for (const p of points) cuts.add(p);
  const sorted = [...cuts].sort((a, b) => a - b);
  const atoms: CpRange[] = [];
  for (let i = 0; i + 1 < sorted.length; i++) {
    const lo = sorted[i]!, hi = sorted[i + 1]! - 1;
    if (within.some(([a, b]) => a <= lo && hi <= b)) atoms.push([lo, hi]);
  }
  return atoms;
}

/** Per NFA state: atom index → target states. Every atom lies wholly inside or outside each class. */
export function movesOf(nfa: Nfa, atoms: readonly CpRange[]): Map<number, number[]>[] {
  const atomOf = (lo: number): number => {
    let a = 0, b = atoms.length - 1;
    while (a < b) { const m = (a + b + 1) >> 1; if (atoms[m]![0] <= lo) a = m; else b = m - 1; }
    return a;
  };
  return nfa.edges.map((es) => {
    const m = new Map<number, number[]>();
    for (const e of es) {
      for (const [a, b] of e.ranges) {
        let i = atomOf(a);
        if (i < atoms.length && atoms[i]![1] < a) i++;
        for (; i < atoms.length && atoms[i]![0] <= b; i++) (m.get(i) ?? m.set(i, []).get(i)!).push(e.to);
      }
    }
    return m;
  });
}

/** The DFA states (`trans[i]`: atom → state) from which one of `finals` can be reached. */
export function coReachable(trans: readonly Map<number, number>[], finals: readonly number[]): Set<number> {
  const back: number[][] = trans.map(() => []);
  for (let i = 0; i < trans.length; i++) for (const t of trans[i]!.values()) back[t]!.push(i);
  const live = new Set<number>(finals);
  const stack = [...finals];
  while (stack.length) for (const p of back[stack.pop()!]!) if (!live.has(p)) { live.add(p); stack.push(p); }
  return live;
}

/**
 * The `live` states of a DFA as right-linear rules (named by `fresh`, added to `rules`): a state
 * ends the string (a closing quote) where `final`, and goes on with a character of `charGbnf`'s
 * class to each live target. Returns the GBNF of the whole string from state 0, opening quote
 * included.
 */
export function writeRules(live: Set<number>, trans: readonly Map<number, number>[], atoms: readonly CpRange[], final: (s: number) => boolean,
  charGbnf: (ranges: CpRange[]) => string, fresh: () => string, rules: Map<string, string>): string {
  const name = new Map<number, string>();
  for (const s of live) name.set(s, fresh());
  for (const s of live) {
    const byTarget = new Map<number, CpRange[]>();
    for (const [a, t] of trans[s]!) if (live.has(t)) (byTarget.get(t) ?? byTarget.set(t, []).get(t)!).push(atoms[a]!);
    const alts: string[] = [];
    if (final(s)) alts.push('"\\""');
    for (const [t, ranges] of byTarget) alts.push(`${charGbnf(ranges)} ${name.get(t)!}`);
    rules.set(name.get(s)!, alts.join(" | "));
  }
  return `"\\"" ${name.get(0)!}`;
}

/**
 * Whether no string matches both patterns: the two NFAs run side by side (as sets of states) until
 * both accept at once (false) or every pair of sets is seen (true). PatternAutomatonError for a
 * pattern regex.ts refuses, or past the limits.
 */
export function patternsDisjoint(a: string, b: string): boolean {
  const na = patternNfa(a), nb = patternNfa(b);
  const budget = new Budget();
  const atoms = alphabet(complementCodePoints([]), [na, nb]);
  const ma = movesOf(na, atoms), mb = movesOf(nb, atoms);
  const seen = new Set<string>();
  const queue: [number[], number[]][] = [];
  const visit = (x: number[], y: number[]) => {
    const k = `${x.join(",")}|${y.join(",")}`;
    if (seen.has(k)) return;
    if (seen.size >= MAX_DFA_STATES) throw new PatternAutomatonError(`comparing the patterns would need more than ${MAX_DFA_STATES} states`);
    seen.add(k);
    queue.push([x, y]);
  };
  visit(closure(na, [0], budget), closure(nb, [0], budget));
  while (queue.length) {
    const [x, y] = queue.pop()!;
    if (x.includes(na.accept) && y.includes(nb.accept)) return false;
    for (let i = 0; i < atoms.length; i++) {
      budget.spend(x.length + y.length);
      const tx: number[] = [], ty: number[] = [];
      for (const s of x) for (const t of ma[s]!.get(i) ?? []) tx.push(t);
      if (!tx.length) continue;
      for (const s of y) for (const t of mb[s]!.get(i) ?? []) ty.push(t);
      if (ty.length) visit(closure(na, tx, budget), closure(nb, ty, budget));
    }
  }
  return true;
}
