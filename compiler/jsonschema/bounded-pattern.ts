/**
 * @fileoverview A string `pattern` as a DFA's right-linear rules, where the regex's own GBNF would
 * not do: together with `minLength`/`maxLength` (below), or unanchored at its end (`searchPattern`).
 *
 * With length bounds: the strings the pattern
 * matches whose length (in code points, as JSON Schema counts) is within the bounds. GBNF cannot
 * intersect two languages, so the pattern's NFA (pattern-automata.ts) runs as a DFA whose state
 * also counts the characters written (up to the larger bound, or the lower one when there is no
 * upper bound, where the count stops), and the result is written as right-linear rules, each
 * character as JSON writes it (regex.ts's `setGbnf`). */
import { complementCodePoints, type CpRange } from "../grammar/utf8.js";
import { alphabet, Budget, closure, coReachable, MAX_DFA_STATES, movesOf, patternNfa, PatternAutomatonError, regexNfa, writeRules } from "./pattern-automata.js";
import { matchPrefix, parseRegex, setGbnf } from "./regex.js";

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
  return writeRules(live, trans, atoms, accepting, classRules(fresh, rules), fresh, rules);
}

/** Each character class as JSON writes it (setGbnf), one rule per distinct class with escapes (a few alternatives). */
function classRules(fresh: () => string, rules: Map<string, string>): (ranges: CpRange[]) => string {
  const known = new Map<string, string>();
  return (ranges) => {
    const g = setGbnf(ranges);
    if (!g.startsWith("(")) return g;
    let c = known.get(g);
    if (c === undefined) { c = fresh(); known.set(g, c); rules.set(c, g.slice(2, -2)); }
    return c;
  };
}

/**
 * The GBNF of the JSON strings (quotes included) that `pattern` matches where a match may end
 * anywhere (every top-level alternative unanchored at its end, as most patterns are): the DFA of
 * what a string must start with (regex.ts `matchPrefix`), in which the states that have matched
 * take any rest. Written from the regex as it is, the automaton went on following every partial
 * match after a match had ended: twelve words `A|B|…`, unanchored, went past 100,000 states, where
 * this is a few dozen. Undefined where an alternative is anchored at its end (the regex's own
 * GBNF is then as small). Throws PatternAutomatonError past the limits of pattern-automata.ts.
 */
export function searchPattern(pattern: string, fresh: () => string, rules: Map<string, string>): string | undefined {
  const r = parseRegex(pattern);
  if ("error" in r) throw new PatternAutomatonError(r.error);
  const core = matchPrefix(r.node);
  if (core === undefined) return undefined;
  const nfa = regexNfa(core);
  const budget = new Budget();
  const atoms = alphabet(ALL, [nfa]);
  const moves = movesOf(nfa, atoms);
  const ids = new Map<string, number>();
  const sets: number[][] = [];
  const trans: Map<number, number>[] = [];
  // Every set that holds the accepting state is one state, DONE: it has matched, any rest follows.
  let done = -1;
  const add = (set: number[]): number => {
    if (set.includes(nfa.accept)) {
      if (done < 0) { done = sets.length; sets.push([]); trans.push(new Map(atoms.map((_, a) => [a, sets.length - 1]))); }
      return done;
    }
    const k = set.join(",");
    let id = ids.get(k);
    if (id === undefined) {
      if (sets.length >= MAX_DFA_STATES) throw new PatternAutomatonError(`the pattern's automaton would need more than ${MAX_DFA_STATES} states`);
      id = sets.length;
      ids.set(k, id);
      sets.push(set);
      trans.push(new Map());
    }
    return id;
  };
  add(closure(nfa, [0], budget));
  for (let i = 0; i < sets.length; i++) {
    if (i === done) continue;
    const set = sets[i]!;
    for (let a = 0; a < atoms.length; a++) {
      const to: number[] = [];
      budget.spend(set.length);
      for (const s of set) for (const t of moves[s]!.get(a) ?? []) to.push(t);
      if (to.length) trans[i]!.set(a, add(closure(nfa, to, budget)));
    }
  }
  if (done < 0) return undefined; // nothing matches: the regex's GBNF says so as well
  const live = coReachable(trans, [done]);
  // Every character (the rest after a match, a `.`): `char`, in any spelling JSON allows, as the
  // regex's GBNF writes it.
  const cls = classRules(fresh, rules);
  return writeRules(live, trans, atoms, (i) => i === done, (ranges) => (ranges.length === atoms.length ? "char" : cls(ranges)), fresh, rules);
}
