/**
 * Properties on random specs (fast-check, seeded):
 *  - the NFA, the DFA, the trimmed+constrained DFA and the minimized DFA accept the same state
 *    sequences as the reference interpreter's direct reading of the formula and constraints;
 *  - minimization never grows an automaton and is idempotent;
 *  - on random transcripts built from overlapping markers (prefixes, suffixes, markers inside
 *    markers), the unminimized and minimized byte automata agree with the reference interpreter.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { minimizeByteDfa } from "../../compiler/automata/bytes.js";
import { minimizeStateDfa, stateDfaAccepts } from "../../compiler/automata/dfa.js";
import { compileIR } from "../../compiler/compile.js";
import { seededRandom } from "../../compiler/random.js";
import { SpecError } from "../../compiler/diagnostics.js";
import type { Behavior, ConstraintIR, Nfa, SpecIR } from "../../compiler/ir.js";
import { byteDfaEngine, runTrace, type Trace } from "../../compiler/trace.js";
import { behaviorAccepts, checkTrace, constraintHolds } from "../helpers/interpreter.js";

const span = { file: "prop", line: 1, col: 1, offset: 0, end: 0 };

function behaviorArb(nStates: number): fc.Arbitrary<Behavior> {
  const { tree } = fc.letrec<{ tree: Behavior }>((tie) => ({
    tree: fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      fc.nat(nStates - 1).map((state): Behavior => ({ op: "state", state, span })),
      fc.array(tie("tree"), { minLength: 1, maxLength: 3 }).map((args): Behavior => ({ op: "next", args, span })),
      fc.array(tie("tree"), { minLength: 1, maxLength: 3 }).map((args): Behavior => ({ op: "or", args, span })),
      fc.tuple(tie("tree"), tie("tree"), fc.nat(2), fc.option(fc.nat(3), { nil: null })).map(([body, then, min, extra]): Behavior =>
        ({ op: "until", body, then, min: extra === null ? 0 : min, max: extra === null ? null : min + extra, span })),
      tie("tree").map((body): Behavior => ({ op: "always", body, span })),
    ),
  }));
  return tree;
}

function constraintArb(nStates: number): fc.Arbitrary<ConstraintIR[]> {
  return fc.array(fc.oneof(
    fc.tuple(fc.nat(nStates - 1), fc.nat(3)).map(([state, n]): ConstraintIR => ({ kind: "atMost", state, n, span })),
    fc.tuple(fc.nat(nStates - 1), fc.nat(2)).map(([state, n]): ConstraintIR => ({ kind: "atLeast", state, n, span })),
    fc.nat(nStates - 1).map((state): ConstraintIR => ({ kind: "eventually", state, span })),
  ), { maxLength: 2 });
}

function nfaAccepts(nfa: Nfa, seq: number[]): boolean {
  const close = (set: Set<number>) => {
    const stack = [...set];
    while (stack.length) { const s = stack.pop()!; for (const e of nfa.edges) if (e.from === s && e.sym < 0 && !set.has(e.to)) { set.add(e.to); stack.push(e.to); } }
    return set;
  };
  let cur = close(new Set([nfa.initial]));
  for (const a of seq) {
    const nx = new Set<number>();
    for (const e of nfa.edges) if (e.sym === a && cur.has(e.from)) nx.add(e.to);
    cur = close(nx);
  }
  return nfa.accepting.some((s) => cur.has(s));
}

const MARKERS = ["A:", "B:", "[A]", "Final A:", "AB:", "B", "Obs:"];

function specOf(nStates: number, behavior: Behavior, constraints: ConstraintIR[], markers: string[], env: boolean[], oneOf: boolean[]): SpecIR {
  return {
    name: "prop", file: "prop", behavior, constraints,
    states: Array.from({ length: nStates }, (_, id) => ({
      id, name: `S${id}`, marker: markers[id]!, env: env[id]!, span,
      content: oneOf[id] ? { kind: "oneOf" as const, options: ["x", "x y"], span } : { kind: "any" as const },
    })),
  };
}

/** Compiles, or returns null for specs the compiler rightly refuses (e.g. empty language). */
function tryCompile(ir: SpecIR) {
  try { return compileIR(ir, { maxByteStates: 20_000 }); } catch (e) {
    if (e instanceof SpecError) return null;
    throw e;
  }
}

describe("state-level automata", () => {
  it("NFA, DFA, minimized DFA and the reference agree on random specs and sequences", () => {
    let compiled = 0;
    fc.assert(fc.property(fc.integer({ min: 1, max: 3 }).chain((n) => fc.record({
      n: fc.constant(n), behavior: behaviorArb(n), constraints: constraintArb(n),
      seqs: fc.array(fc.array(fc.nat(n - 1), { maxLength: 8 }), { minLength: 20, maxLength: 40 }),
    })), ({ n, behavior, constraints, seqs }) => {
      const used = new Set<number>();
      const walk = (b: Behavior): void => { if (b.op === "state") used.add(b.state); else if (b.op === "next" || b.op === "or") b.args.forEach(walk); else if (b.op === "until") { walk(b.body); walk(b.then); } else walk(b.body); };
      walk(behavior);
      fc.pre(used.size === n);
      const ir = specOf(n, behavior, constraints, MARKERS, [false, false, false], [false, false, false]);
      const c = tryCompile(ir);
      if (!c) return;
      compiled++;
      const m2 = minimizeStateDfa(c.minStateDfa);
      expect(m2.nStates).toBe(c.minStateDfa.nStates);
      expect(c.minStateDfa.nStates).toBeLessThanOrEqual(c.stateDfa.nStates);
      for (const seq of seqs) {
        const ref = behaviorAccepts(behavior, seq) && constraints.every((k) => constraintHolds(k, seq));
        if (constraints.length === 0) expect(nfaAccepts(c.nfa, seq)).toBe(ref);
        expect(stateDfaAccepts(c.stateDfa, seq)).toBe(ref);
        expect(stateDfaAccepts(c.minStateDfa, seq)).toBe(ref);
      }
    }), { numRuns: 300, seed: 11 });
    expect(compiled).toBeGreaterThan(100);
  });
});

const rng = seededRandom;

/** A transcript that should conform: an accepted state sequence rendered with plausible content. */
function sampleTrace(c: ReturnType<typeof compileIR>, ir: SpecIR, seed: number): Trace {
  const r = rng(seed);
  const d = c.minStateDfa;
  let q = d.initial;
  const seq: number[] = [];
  for (let steps = 0; steps < 12; steps++) {
    if (d.accepting[q] && (r() < 0.3 || steps > 8)) break;
    const opts = [...Array(d.nSyms).keys()].filter((a) => d.delta[q * d.nSyms + a]! >= 0);
    if (!opts.length) break;
    const a = opts[Math.floor(r() * opts.length)]!;
    seq.push(a);
    q = d.delta[q * d.nSyms + a]!;
  }
  const segs: Trace["segments"] = [];
  let text = r() < 0.5 ? " " : "";
  const fillers = [" x", " x y\n", " some text ", " é ", " [x] ", "\n"];
  for (const a of seq) {
    const st = ir.states[a]!;
    text += st.marker;
    if (st.env) {
      segs.push({ by: "llm", text });
      segs.push({ by: "env", text: r() < 0.5 ? " result A: B:" : "" });
      text = r() < 0.5 ? "\n" : "";
    } else {
      text += st.content.kind === "oneOf" ? (r() < 0.5 ? " x " : "x y\n") : fillers[Math.floor(r() * fillers.length)];
    }
  }
  if (text) segs.push({ by: "llm", text });
  return { segments: segs };
}

/** Splits a segment in two, drops a character, or duplicates a segment. */
function mutate(t: Trace, seed: number): Trace {
  const r = rng(seed);
  const segs = t.segments.map((s) => ({ ...s }));
  if (!segs.length) return t;
  const i = Math.floor(r() * segs.length);
  const s = segs[i]!;
  const k = Math.floor(r() * (s.text.length + 1));
  const op = r();
  if (op < 0.4 && s.by !== "env") segs.splice(i, 1, { by: s.by, text: s.text.slice(0, k) }, { by: s.by, text: s.text.slice(k) });
  else if (op < 0.8) s.text = s.text.slice(0, k) + s.text.slice(k + 1);
  else segs.splice(i, 0, { ...s });
  return { segments: segs };
}

describe("byte-level automata", () => {
  it("unminimized and minimized byte automata agree with the reference on random transcripts", () => {
    let conforming = 0;
    let total = 0;
    const pieceArb = (markers: string[]) => fc.oneof(
      fc.constantFrom(...markers), fc.constantFrom(...markers), fc.constantFrom(...markers),
      fc.constantFrom(" ", "\n", "x", "x y", "y", "A", "Final ", "[", "]", ":", "é"),
      fc.constantFrom(...markers).chain((m) => fc.nat(m.length).map((k) => m.slice(0, k))),
    );
    fc.assert(fc.property(fc.integer({ min: 2, max: 3 }).chain((n) => fc.record({
      n: fc.constant(n), behavior: behaviorArb(n), constraints: constraintArb(n),
      markers: fc.shuffledSubarray(MARKERS, { minLength: n, maxLength: n }),
      env: fc.array(fc.boolean(), { minLength: 3, maxLength: 3 }),
      oneOf: fc.array(fc.boolean(), { minLength: 3, maxLength: 3 }),
    })).chain((spec) => fc.record({
      spec: fc.constant(spec),
      seed: fc.nat(1_000_000),
      traces: fc.array(fc.array(fc.record({
        by: fc.constantFrom<"prompt" | "llm" | "env">("llm", "llm", "llm", "env", "prompt"),
        pieces: fc.array(pieceArb(spec.markers), { maxLength: 6 }),
      }), { maxLength: 6 }), { minLength: 10, maxLength: 20 }),
    })), ({ spec, traces, seed }) => {
      const ir = specOf(spec.n, spec.behavior, spec.constraints, spec.markers, spec.env, spec.oneOf);
      const c = tryCompile(ir);
      if (!c) return;
      const raw = byteDfaEngine(c.rawByteDfa());
      const min = byteDfaEngine(c.byteDfa);
      const remin = minimizeByteDfa(c.byteDfa);
      expect(remin.nStates).toBe(c.byteDfa.nStates);
      const sampled = Array.from({ length: 10 }, (_, i) => sampleTrace(c, ir, seed + i));
      const mutated = sampled.map((t, i) => mutate(t, seed * 7 + i));
      const all = [...traces.map((t) => ({ segments: t.map((s) => ({ by: s.by, text: s.pieces.join("") })) })), ...sampled, ...mutated];
      for (const trace of all) {
        const ref = checkTrace(ir, trace);
        const a = runTrace(raw, trace, spec.markers);
        const b = runTrace(min, trace, spec.markers);
        total++;
        if (ref) conforming++;
        expect(b.verdict === "conforms", JSON.stringify(trace)).toBe(ref);
        expect(a.verdict === "conforms").toBe(ref);
        if (a.verdict === "violation" && b.verdict === "violation") expect([a.segment, a.offset]).toEqual([b.segment, b.offset]);
      }
    }), { numRuns: 200, seed: 5 });
    expect(conforming).toBeGreaterThan(20);
    expect(total - conforming).toBeGreaterThan(20);
  });
});
