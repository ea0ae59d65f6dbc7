/**
 * @fileoverview The names of an object's other members (those not in `properties` or `required`),
 * split by the patternProperties they match, each part as GBNF rules.
 *
 * JSON Schema gives such a member the schemas of every pattern its name matches, or
 * additionalProperties when it matches none. An exact grammar therefore needs, for each set of
 * patterns, the names that match exactly those and are not named properties: complements and
 * intersections of regular languages, which GBNF cannot write but an automaton can. The patterns
 * (regex.ts's parse, as code point NFAs) and the trie of the named properties run as one product
 * DFA over the code points a name spells without escapes (what `keychar` allows: stricter than
 * JSON, never looser); its states are grouped by the set of patterns matched, and each group's
 * names are written as right-linear rules, one per state that can still reach the group.
 */
import { normalizeCodePoints, type CpRange } from "../grammar/utf8.js";
import { KEY_CHARS, parseRegex, rangesGbnf, type RegexNode } from "./regex.js";

/** Past these the product automaton is refused (a schema error the caller words). */
export const MAX_NFA_STATES = 20_000;
export const MAX_DFA_STATES = 4_000;
/** NFA states visited while building the DFA: bounds the time (a few hundred ms at most). */
export const MAX_WORK = 2_000_000;

export class KeyLanguageError extends Error {}

/** The names matching exactly the patterns `matched` (indices into the input), and no named key. */
export interface KeyClass {
  matched: number[];
  /** Adds its rules (named by `fresh`) to `rules`; returns the GBNF of the whole key, quotes included. */
  emit(fresh: () => string, rules: Map<string, string>): string;
}

export interface Nfa { eps: number[][]; edges: { ranges: CpRange[]; to: number }[][]; accept: number }

export function buildNfa(root: RegexNode): Nfa {
  const eps: number[][] = [];
  const edges: { ranges: CpRange[]; to: number }[][] = [];
  const state = (): number => {
    if (eps.length >= MAX_NFA_STATES) throw new KeyLanguageError(`the pattern's automaton would need more than ${MAX_NFA_STATES} states`);
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
    if (this.used > MAX_WORK) throw new KeyLanguageError(`the automaton of these patterns and property names would take more than ${MAX_WORK} steps to build`);
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
  return [...seen].sort((a, b) => a - b);
}

interface Trie { next: Map<number, number>[]; end: boolean[] }

function nameTrie(names: string[]): Trie {
  const t: Trie = { next: [new Map()], end: [false] };
  for (const name of names) {
    let x = 0;
    for (const ch of name) {
      const c = ch.codePointAt(0)!;
      let y = t.next[x]!.get(c);
      if (y === undefined) {
        y = t.next.length;
        t.next.push(new Map());
        t.end.push(false);
        t.next[x]!.set(c, y);
      }
      x = y;
    }
    t.end[x] = true;
  }
  return t;
}

/**
 * The key classes of an object with `names` (its properties and required names) and `patterns`
 * (regex sources): one per set of patterns that some other name matches exactly. Throws
 * KeyLanguageError for a pattern regex.ts refuses, or past the limits.
 */
export function keyClasses(names: string[], patterns: string[]): KeyClass[] {
  const nfas = patterns.map((p) => {
    const r = parseRegex(p);
    if ("error" in r) throw new KeyLanguageError(r.error);
    return buildNfa(r.node);
  });
  const trie = nameTrie(names);
  // The alphabet: the key characters cut at every boundary of a pattern's class or a name's character.
  const cuts = new Set<number>();
  for (const [a, b] of KEY_CHARS) { cuts.add(a); cuts.add(b + 1); }
  for (const nfa of nfas) for (const es of nfa.edges) for (const e of es) for (const [a, b] of e.ranges) { cuts.add(a); cuts.add(b + 1); }
  for (const m of trie.next) for (const c of m.keys()) { cuts.add(c); cuts.add(c + 1); }
  const points = [...cuts].sort((a, b) => a - b);
  const atoms: [number, number][] = [];
  for (let i = 0; i + 1 < points.length; i++) {
    const lo = points[i]!, hi = points[i + 1]! - 1;
    if (KEY_CHARS.some(([a, b]) => a <= lo && hi <= b)) atoms.push([lo, hi]);
  }
  const atomOf = (lo: number): number => {
    let a = 0, b = atoms.length - 1;
    while (a < b) { const m = (a + b + 1) >> 1; if (atoms[m]![0] <= lo) a = m; else b = m - 1; }
    return a;
  };
  // Per NFA state: atom → targets. Every atom lies wholly inside or outside each class.
  const moves = nfas.map((nfa) => nfa.edges.map((es) => {
    const m = new Map<number, number[]>();
    for (const e of es) {
      for (const [a, b] of e.ranges) {
        let i = atomOf(a);
        if (i < atoms.length && atoms[i]![1] < a) i++;
        for (; i < atoms.length && atoms[i]![0] <= b; i++) (m.get(i) ?? m.set(i, []).get(i)!).push(e.to);
      }
    }
    return m;
  }));
  // The product DFA: per pattern a set of NFA states, and a trie node (-1: no name continues).
  type Q = { sets: number[][]; node: number };
  const ids = new Map<string, number>();
  const qs: Q[] = [];
  const trans: Map<number, number>[] = []; // atom → state (absent: dead)
  const keyOf = (q: Q) => `${q.node}|${q.sets.map((s) => s.join(",")).join(";")}`;
  const add = (q: Q): number => {
    const k = keyOf(q);
    let id = ids.get(k);
    if (id === undefined) {
      if (qs.length >= MAX_DFA_STATES) throw new KeyLanguageError(`the automaton of these patterns and property names would need more than ${MAX_DFA_STATES} states`);
      id = qs.length;
      ids.set(k, id);
      qs.push(q);
      trans.push(new Map());
    }
    return id;
  };
  const budget = new Budget();
  add({ sets: nfas.map((nfa) => closure(nfa, [0], budget)), node: 0 });
  for (let i = 0; i < qs.length; i++) {
    const q = qs[i]!;
    for (let a = 0; a < atoms.length; a++) {
      const sets = q.sets.map((set, p) => {
        const to: number[] = [];
        budget.spend(set.length);
        for (const s of set) for (const t of moves[p]![s]!.get(a) ?? []) to.push(t);
        return to.length ? closure(nfas[p]!, to, budget) : [];
      });
      const [lo, hi] = atoms[a]!;
      const node = q.node >= 0 && lo === hi ? (trie.next[q.node]!.get(lo) ?? -1) : -1;
      // (Where no pattern and no name goes on, the state loops: every longer key matches none.)
      trans[i]!.set(a, add({ sets, node }));
    }
  }
  const signature = (i: number): string | null => {
    const q = qs[i]!;
    if (q.node >= 0 && trie.end[q.node]) return null; // a named key: not an other member
    return q.sets.map((s, p) => (s.includes(nfas[p]!.accept) ? p : -1)).filter((p) => p >= 0).join(",");
  };
  // Per signature: the states that can reach a state with it (reverse reachability), then rules.
  const back: number[][] = qs.map(() => []);
  for (let i = 0; i < qs.length; i++) for (const t of trans[i]!.values()) back[t]!.push(i);
  const sigs = new Map<string, number[]>();
  for (let i = 0; i < qs.length; i++) {
    const g = signature(i);
    if (g !== null) (sigs.get(g) ?? sigs.set(g, []).get(g)!).push(i);
  }
  const out: KeyClass[] = [];
  for (const [g, finals] of [...sigs].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))) {
    const live = new Set<number>(finals);
    const stack = [...finals];
    while (stack.length) for (const p of back[stack.pop()!]!) if (!live.has(p)) { live.add(p); stack.push(p); }
    if (!live.has(0)) continue;
    const final = new Set(finals);
    const emit = (fresh: () => string, rules: Map<string, string>): string => {
      const name = new Map<number, string>();
      for (const s of live) name.set(s, fresh());
      for (const s of live) {
        const byTarget = new Map<number, CpRange[]>();
        for (const [a, t] of trans[s]!) if (live.has(t)) (byTarget.get(t) ?? byTarget.set(t, []).get(t)!).push(atoms[a]!);
        const alts: string[] = [];
        if (final.has(s)) alts.push('"\\""');
        for (const [t, ranges] of byTarget) alts.push(`${rangesGbnf(normalizeCodePoints(ranges))} ${name.get(t)!}`);
        rules.set(name.get(s)!, alts.join(" | "));
      }
      return `"\\"" ${name.get(0)!}`;
    };
    out.push({ matched: g === "" ? [] : g.split(",").map(Number), emit });
  }
  return out;
}
