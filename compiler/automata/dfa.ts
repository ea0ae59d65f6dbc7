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
function counter(c: Exclude<ConstraintIR, { kind: "toolAtMost" | "toolBefore" }>): { cap: number; step: (v: number, sym: number) => number; ok: (v: number) => boolean } {
  if (c.kind === "atMost") return { cap: c.n, step: (v, s) => (s === c.state ? (v + 1 > c.n ? -1 : v + 1) : v), ok: () => true };
  const n = c.kind === "eventually" ? 1 : c.n;
  return { cap: n, step: (v, s) => (s === c.state ? Math.min(n, v + 1) : v), ok: (v) => v >= n };
}

/**
 * Intersects `dfa` with the constraints and keeps only live states. Paths that a constraint cuts
 * off are simply removed (that is what a constraint is for); it is an error when that leaves no
 * conforming run at all (E0402) or makes a declared state impossible (E0403). A dead end in the
 * behavior itself — a reachable state that cannot reach acceptance before any constraint applies —
 * is reported as E0401 with the sequence of states that leads there.
 */
export function constrainAndTrim(dfa: StateDfa, ir: SpecIR, maxStates = DEFAULT_MAX_DFA_STATES): StateDfa {
  const nSyms = dfa.nSyms;
  {
    const { reach, coreach } = liveness(dfa.nStates, nSyms, dfa.initial, (s, a) => dfa.delta[s * nSyms + a]!, (s) => dfa.accepting[s]!);
    for (let s = 0; s < dfa.nStates; s++) {
      if (reach[s] && !coreach[s]) {
        throw new SpecError("E0401", `dead end: the behavior reaches DFA state ${s}, from which it can never complete`, ir.behavior.span);
      }
    }
  }
  // Tool constraints are about tool calls, not states: the byte automaton enforces them (bytes.ts).
  const cs = ir.constraints.flatMap((c) => (c.kind === "toolAtMost" || c.kind === "toolBefore" ? [] : [counter(c)]));
  const ids = new Map<string, number>();
  const tuples: number[][] = [];
  const delta: number[] = [];
  const add = (t: number[]) => {
    const k = t.join(",");
    let id = ids.get(k);
    if (id === undefined) {
      if (tuples.length >= maxStates) throw new SpecLimitError("maxDfaStates", tuples.length + 1, maxStates);
      id = tuples.length;
      ids.set(k, id);
      tuples.push(t);
    }
    return id;
  };
  add([dfa.initial, ...cs.map(() => 0)]);
  for (let i = 0; i < tuples.length; i++) {
    const [q, ...vs] = tuples[i]!;
    for (let a = 0; a < nSyms; a++) {
      const q2 = dfa.delta[q! * nSyms + a]!;
      const v2 = vs.map((v, j) => cs[j]!.step(v, a));
      delta[i * nSyms + a] = q2 < 0 || v2.some((v) => v < 0) ? -1 : add([q2, ...v2]);
    }
  }
  const n = tuples.length;
  const accepting = tuples.map(([q, ...vs]) => dfa.accepting[q!]! && vs.every((v, j) => cs[j]!.ok(v)));
  const { reach, coreach } = liveness(n, nSyms, 0, (s, a) => delta[s * nSyms + a]!, (s) => accepting[s]!);
  const blame = ir.constraints[0];
  if (!coreach[0]) {
    throw new SpecError("E0402", "empty language: no sequence of states satisfies the behavior" + (blame ? " and the constraints" : ""),
      blame?.span ?? ir.behavior.span, blame ? "the constraints contradict the behavior; relax or remove one" : undefined);
  }
  // Keep live states only, renumbered in discovery order.
  const newId = new Int32Array(n).fill(-1);
  let live = 0;
  for (let s = 0; s < n; s++) if (reach[s] && coreach[s]) newId[s] = live++;
  const out = new Int32Array(live * nSyms).fill(-1);
  const used = new Set<number>();
  for (let s = 0; s < n; s++) {
    if (newId[s]! < 0) continue;
    for (let a = 0; a < nSyms; a++) {
      const t = delta[s * nSyms + a]!;
      if (t >= 0 && newId[t]! >= 0) { out[newId[s]! * nSyms + a] = newId[t]!; used.add(a); }
    }
  }
  for (const st of ir.states) {
    if (!used.has(st.id)) {
      throw new SpecError("E0403", `state ${st.name} can never occur in a conforming run`, blame?.span ?? st.span,
        blame ? "the constraints rule out every path through it; relax them or remove the state" : undefined);
    }
  }
  return { nStates: live, nSyms, initial: 0, accepting: accepting.filter((_, s) => newId[s]! >= 0), delta: out };
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
