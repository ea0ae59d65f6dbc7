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
import { normalizeCodePoints } from "../grammar/utf8.js";
import { alphabet, Budget, closure, coReachable, MAX_DFA_STATES, movesOf, patternNfa, PatternAutomatonError, writeRules } from "./pattern-automata.js";
import { KEY_CHARS, rangesGbnf } from "./regex.js";

/** The names matching exactly the patterns `matched` (indices into the input), and no named key. */
export interface KeyClass {
  matched: number[];
  /** Adds its rules (named by `fresh`) to `rules`; returns the GBNF of the whole key, quotes included. */
  emit(fresh: () => string, rules: Map<string, string>): string;
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
 * PatternAutomatonError for a pattern regex.ts refuses, or past the limits.
 */
export function keyClasses(names: string[], patterns: string[]): KeyClass[] {
  const nfas = patterns.map(patternNfa);
  const trie = nameTrie(names);
  // The alphabet: the key characters cut at every boundary of a pattern's class or a name's character.
  const points: number[] = [];
  for (const m of trie.next) for (const c of m.keys()) points.push(c, c + 1);
  const atoms = alphabet(KEY_CHARS, nfas, points);
  const moves = nfas.map((nfa) => movesOf(nfa, atoms));
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
      if (qs.length >= MAX_DFA_STATES) throw new PatternAutomatonError(`the automaton of these patterns and property names would need more than ${MAX_DFA_STATES} states`);
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
  // Per signature: the states that can reach a state with it, written as rules when asked.
  const sigs = new Map<string, number[]>();
  for (let i = 0; i < qs.length; i++) {
    const g = signature(i);
    if (g !== null) (sigs.get(g) ?? sigs.set(g, []).get(g)!).push(i);
  }
  const out: KeyClass[] = [];
  for (const [g, finals] of [...sigs].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))) {
    const live = coReachable(trans, finals);
    if (!live.has(0)) continue;
    const final = new Set(finals);
    const emit = (fresh: () => string, rules: Map<string, string>): string =>
      writeRules(live, trans, atoms, (s) => final.has(s), (ranges) => rangesGbnf(normalizeCodePoints(ranges)), fresh, rules);
    out.push({ matched: g === "" ? [] : g.split(",").map(Number), emit });
  }
  return out;
}
