/**
 * @fileoverview A string `pattern` together with `minLength`/`maxLength`: the strings the pattern
 * matches whose length (in code points, as JSON Schema counts) is within the bounds. GBNF cannot
 * intersect two languages, so the pattern's NFA (pattern-automata.ts) runs as a DFA whose state
 * also counts the characters written (up to the larger bound, or the lower one when there is no
 * upper bound, where the count stops), and the result is written as right-linear rules, each
 * character as JSON writes it (regex.ts's `setGbnf`). */
import { complementCodePoints, type CpRange } from "../grammar/utf8.js";
import { alphabet, Budget, closure, coReachable, MAX_DFA_STATES, movesOf, patternNfa, PatternAutomatonError, writeRules } from "./pattern-automata.js";
import { setGbnf } from "./regex.js";

/** Every code point a string can hold (surrogates are not characters). */
const ALL = complementCodePoints([]);

/**
 * The GBNF of the JSON strings (quotes included) that `pattern` matches with `min` to `max` (null:
 * no upper bound) characters, its rules added through `fresh` into `rules`; null when there is none.
 * Throws PatternAutomatonError for a pattern regex.ts refuses, or past the limits of
 * pattern-automata.ts.
 */
export function boundedPattern(pattern: string, min: number, max: number | null, fresh: () => string, rules: Map<string, string>): string | null {
  const nfa = patternNfa(pattern);
  const budget = new Budget();
  // The alphabet: every code point (no surrogates), cut at each boundary of a class of the pattern.
  const atoms = alphabet(ALL, [nfa]);
  const moves = movesOf(nfa, atoms);
  const cap = max ?? min;
  const ids = new Map<string, number>();
  const qs: { set: number[]; n: number }[] = [];
  const trans: Map<number, number>[] = [];
  const add = (set: number[], n: number): number => {
    const k = `${n}|${set.join(",")}`;
    let id = ids.get(k);
    if (id === undefined) {
      if (qs.length >= MAX_DFA_STATES) throw new PatternAutomatonError(`the automaton of the pattern and the length bounds would need more than ${MAX_DFA_STATES} states`);
      id = qs.length;
      ids.set(k, id);
      qs.push({ set, n });
      trans.push(new Map());
    }
    return id;
  };
  add(closure(nfa, [0], budget), 0);
  for (let i = 0; i < qs.length; i++) {
    const { set, n } = qs[i]!;
    const next = max === null ? Math.min(n + 1, cap) : n + 1;
    if (max !== null && next > max) continue;
    for (let a = 0; a < atoms.length; a++) {
      const to: number[] = [];
      budget.spend(set.length);
      for (const s of set) for (const t of moves[s]!.get(a) ?? []) to.push(t);
      if (to.length) trans[i]!.set(a, add(closure(nfa, to, budget), next));
    }
  }
  const accepting = (i: number) => qs[i]!.n >= min && qs[i]!.set.includes(nfa.accept);
  const finals: number[] = [];
  for (let i = 0; i < qs.length; i++) if (accepting(i)) finals.push(i);
  const live = coReachable(trans, finals);
  if (!live.has(0)) return null;
  // One rule per distinct character class (a class with escapes is a dozen alternatives).
  const classRules = new Map<string, string>();
  const charClass = (ranges: CpRange[]): string => {
    const g = setGbnf(ranges);
    if (!g.startsWith("(")) return g;
    let c = classRules.get(g);
    if (c === undefined) { c = fresh(); classRules.set(g, c); rules.set(c, g.slice(2, -2)); }
    return c;
  };
  return writeRules(live, trans, atoms, accepting, charClass, fresh, rules);
}
