/**
 * @fileoverview State level: ε-NFA → DFA (subset construction), intersected with the spec's
 * temporal constraints (at-most / at-least / eventually, as counters), trimmed to live states, and
 * minimized. This is the agent's state diagram as the papers draw it; the byte-level automaton
 * (bytes.ts) is built on top of it.
 */
import { SpecError, SpecLimitError } from "../diagnostics.js";
import type { ConstraintIR, Nfa, SpecIR, StateDfa } from "../ir.js";
import { liveness, minimize } from "./minimize.js";

export const DEFAULT_MAX_DFA_STATES = 20_000;

/** Subset construction. The result may contain states that cannot reach acceptance. */
export function determinize(nfa: Nfa, nSyms: number, maxStates = DEFAULT_MAX_DFA_STATES): StateDfa {
  const epsOut: number[][] = Array.from({ length: nfa.nStates }, () => []);
  const symOut: { sym: number; to: number }[][] = Array.from({ length: nfa.nStates }, () => []);
  for (const e of nfa.edges) {
    if (e.sym < 0) epsOut[e.from]!.push(e.to);
    else symOut[e.from]!.push({ sym: e.sym, to: e.to });
  }
  const acc = new Set(nfa.accepting);
  const closure = (set: number[]): number[] => {
    const seen = new Set(set);
    const stack = [...set];
    while (stack.length) for (const t of epsOut[stack.pop()!]!) if (!seen.has(t)) { seen.add(t); stack.push(t); }
    return [...seen].sort((a, b) => a - b);
  };
  const ids = new Map<string, number>();
  const sets: number[][] = [];
  const delta: number[] = [];
  const add = (set: number[]) => {
    const k = set.join(",");
    let id = ids.get(k);
    if (id === undefined) {
      if (sets.length >= maxStates) throw new SpecLimitError("maxDfaStates", sets.length + 1, maxStates);
      id = sets.length;
      ids.set(k, id);
      sets.push(set);
    }
    return id;
  };
  add(closure([nfa.initial]));
  for (let i = 0; i < sets.length; i++) {
    for (let a = 0; a < nSyms; a++) {
      const moved: number[] = [];
      for (const s of sets[i]!) for (const e of symOut[s]!) if (e.sym === a) moved.push(e.to);
      delta[i * nSyms + a] = moved.length ? add(closure(moved)) : -1;
    }
  }
  return {
    nStates: sets.length, nSyms, initial: 0,
    accepting: sets.map((s) => s.some((x) => acc.has(x))),
    delta: Int32Array.from(delta),
  };
}

/** A constraint as a counter automaton: state = count so far (saturating), -1 = violated. */
function counter(c: ConstraintIR): { cap: number; step: (v: number, sym: number) => number; ok: (v: number) => boolean } {
  if (c.kind === "atMost") return { cap: c.n, step: (v, s) => (s === c.state ? (v + 1 > c.n ? -1 : v + 1) : v), ok: () => true };
  const n = c.kind === "eventually" ? 1 : c.n;
  return { cap: n, step: (v, s) => (s === c.state ? Math.min(n, v + 1) : v), ok: (v) => v >= n };
}

/**
 * Intersects `dfa` with the constraints and keeps only live states. Throws E0402 when the
 * language is empty and E0401 when some reachable state can no longer reach acceptance (a dead
 * end), naming the sequence of states that leads there.
 */
export function constrainAndTrim(dfa: StateDfa, ir: SpecIR, maxStates = DEFAULT_MAX_DFA_STATES): StateDfa {
  const cs = ir.constraints.map(counter);
  const nSyms = dfa.nSyms;
  const ids = new Map<string, number>();
  const tuples: number[][] = [];
  const delta: number[] = [];
  const parent: { from: number; sym: number }[] = [];
  const add = (t: number[], from: number, sym: number) => {
    const k = t.join(",");
    let id = ids.get(k);
    if (id === undefined) {
      if (tuples.length >= maxStates) throw new SpecLimitError("maxDfaStates", tuples.length + 1, maxStates);
      id = tuples.length;
      ids.set(k, id);
      tuples.push(t);
      parent.push({ from, sym });
    }
    return id;
  };
  add([dfa.initial, ...cs.map(() => 0)], -1, -1);
  for (let i = 0; i < tuples.length; i++) {
    const [q, ...vs] = tuples[i]!;
    for (let a = 0; a < nSyms; a++) {
      const q2 = dfa.delta[q! * nSyms + a]!;
      const v2 = vs.map((v, j) => cs[j]!.step(v, a));
      delta[i * nSyms + a] = q2 < 0 || v2.some((v) => v < 0) ? -1 : add([q2, ...v2], i, a);
    }
  }
  const accepting = tuples.map(([q, ...vs]) => dfa.accepting[q!]! && vs.every((v, j) => cs[j]!.ok(v)));
  const next = (s: number, a: number) => delta[s * nSyms + a]!;
  const { reach, coreach } = liveness(tuples.length, nSyms, 0, next, (s) => accepting[s]!);
  const path = (s: number) => {
    const names: string[] = [];
    for (let x = s; parent[x]!.from >= 0; x = parent[x]!.from) names.unshift(ir.states[parent[x]!.sym]!.name);
    return names.join(", ");
  };
  if (!coreach[0]) {
    const c = ir.constraints[0];
    throw new SpecError("E0402", "empty language: no sequence of states satisfies the behavior" + (c ? " and the constraints" : ""),
      c?.span ?? ir.behavior.span, c ? "the constraints contradict the behavior; relax or remove one" : undefined);
  }
  for (let s = 0; s < tuples.length; s++) {
    if (reach[s] && !coreach[s]) {
      const blamed = ir.constraints.find((c) => c.kind !== "atMost") ?? ir.constraints[0];
      throw new SpecError("E0401", `dead end: after the states [${path(s)}] the run can never complete`,
        blamed?.span ?? ir.behavior.span,
        "every path the behavior allows must be able to finish; make the behavior rule out this path, or relax the constraint");
    }
  }
  return { nStates: tuples.length, nSyms, initial: 0, accepting, delta: Int32Array.from(delta) };
}

/** Minimizes a (trimmed) state DFA. */
export function minimizeStateDfa(dfa: StateDfa): StateDfa {
  const { blockOf, nBlocks } = minimize({
    nStates: dfa.nStates, nSyms: dfa.nSyms, initial: dfa.initial,
    next: (s, a) => dfa.delta[s * dfa.nSyms + a]!,
    key: (s) => (dfa.accepting[s] ? "A" : "-"),
  });
  const delta = new Int32Array(nBlocks * dfa.nSyms).fill(-1);
  const accepting: boolean[] = new Array(nBlocks).fill(false);
  for (let s = 0; s < dfa.nStates; s++) {
    const b = blockOf[s]!;
    accepting[b] = dfa.accepting[s]!;
    for (let a = 0; a < dfa.nSyms; a++) {
      const t = dfa.delta[s * dfa.nSyms + a]!;
      delta[b * dfa.nSyms + a] = t < 0 ? -1 : blockOf[t]!;
    }
  }
  return { nStates: nBlocks, nSyms: dfa.nSyms, initial: blockOf[dfa.initial]!, accepting, delta };
}

/** Runs a state DFA over a sequence of spec-state ids; true iff accepted. */
export function stateDfaAccepts(dfa: StateDfa, seq: number[]): boolean {
  let q = dfa.initial;
  for (const s of seq) {
    q = dfa.delta[q * dfa.nSyms + s]!;
    if (q < 0) return false;
  }
  return dfa.accepting[q]!;
}
