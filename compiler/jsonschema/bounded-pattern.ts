/**
 * @fileoverview A string `pattern` together with `minLength`/`maxLength`: the strings the pattern
 * matches whose length (in code points, as JSON Schema counts) is within the bounds. GBNF cannot
 * intersect two languages, so the pattern's NFA (keys.ts) runs as a DFA whose state also counts the
 * characters written (up to the larger bound, or the lower one when there is no upper bound, where
 * the count stops), and the result is written as right-linear rules, each character as JSON writes
 * it (regex.ts's `setGbnf`).
 */
import { complementCodePoints, type CpRange } from "../grammar/utf8.js";
import { Budget, buildNfa, closure, KeyLanguageError, MAX_DFA_STATES } from "./keys.js";
import { parseRegex, setGbnf } from "./regex.js";

/** Every code point a string can hold (surrogates are not characters). */
const ALL = complementCodePoints([]);

/**
 * The GBNF of the JSON strings (quotes included) that `pattern` matches with `min` to `max` (null:
 * no upper bound) characters, its rules added through `fresh` into `rules`; null when there is none.
 * Throws KeyLanguageError for a pattern regex.ts refuses, or past the limits of keys.ts.
 */
export function boundedPattern(pattern: string, min: number, max: number | null, fresh: () => string, rules: Map<string, string>): string | null {
  const r = parseRegex(pattern);
  if ("error" in r) throw new KeyLanguageError(r.error);
  const nfa = buildNfa(r.node);
  const budget = new Budget();
  // The alphabet: every code point (no surrogates), cut at each boundary of a class of the pattern.
  const cuts = new Set<number>();
  for (const [a, b] of ALL) { cuts.add(a); cuts.add(b + 1); }
  for (const es of nfa.edges) for (const e of es) for (const [a, b] of e.ranges) { cuts.add(a); cuts.add(b + 1); }
  const points = [...cuts].sort((a, b) => a - b);
  const atoms: CpRange[] = [];
  for (let i = 0; i + 1 < points.length; i++) {
    const lo = points[i]!, hi = points[i + 1]! - 1;
    if (ALL.some(([a, b]) => a <= lo && hi <= b)) atoms.push([lo, hi]);
  }
  const moves = nfa.edges.map((es) => {
    const m = new Map<number, number[]>();
    for (const e of es) for (const [a, b] of e.ranges) for (let i = 0; i < atoms.length; i++) if (atoms[i]![0] >= a && atoms[i]![1] <= b) (m.get(i) ?? m.set(i, []).get(i)!).push(e.to);
    return m;
  });
  const cap = max ?? min;
  const ids = new Map<string, number>();
  const qs: { set: number[]; n: number }[] = [];
  const trans: Map<number, number>[] = [];
  const add = (set: number[], n: number): number => {
    const k = `${n}|${set.join(",")}`;
    let id = ids.get(k);
    if (id === undefined) {
      if (qs.length >= MAX_DFA_STATES) throw new KeyLanguageError(`the automaton of the pattern and the length bounds would need more than ${MAX_DFA_STATES} states`);
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
  const back: number[][] = qs.map(() => []);
  for (let i = 0; i < qs.length; i++) for (const t of trans[i]!.values()) back[t]!.push(i);
  const live = new Set<number>();
  const stack: number[] = [];
  for (let i = 0; i < qs.length; i++) if (accepting(i)) { live.add(i); stack.push(i); }
  while (stack.length) for (const p of back[stack.pop()!]!) if (!live.has(p)) { live.add(p); stack.push(p); }
  if (!live.has(0)) return null;
  const name = new Map<number, string>();
  for (const s of live) name.set(s, fresh());
  // One rule per distinct character class (a class with escapes is a dozen alternatives).
  const classRules = new Map<string, string>();
  const charClass = (ranges: CpRange[]): string => {
    const g = setGbnf(ranges);
    if (!g.startsWith("(")) return g;
    let c = classRules.get(g);
    if (c === undefined) { c = fresh(); classRules.set(g, c); rules.set(c, g.slice(2, -2)); }
    return c;
  };
  for (const s of live) {
    const byTarget = new Map<number, CpRange[]>();
    for (const [a, t] of trans[s]!) if (live.has(t)) (byTarget.get(t) ?? byTarget.set(t, []).get(t)!).push(atoms[a]!);
    const alts: string[] = [];
    if (accepting(s)) alts.push('"\\""');
    for (const [t, ranges] of byTarget) alts.push(`${charClass(ranges)} ${name.get(t)!}`);
    rules.set(name.get(s)!, alts.join(" | "));
  }
  return `"\\"" ${name.get(0)!}`;
}
