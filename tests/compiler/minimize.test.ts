/**
 * compiler/automata/minimize.ts against a brute-force oracle (fast-check, seeded): on random
 * partial automata with random output keys, Hopcroft's blocks are exactly Moore's equivalence
 * classes (refined until stable) on the states reachable from the initial one, numbered in
 * breadth-first order over symbols, and the block count is the number of those classes; the
 * transitions given as per-state lists (`edges`) give the same result as `next`.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { minimize } from "../../compiler/automata/minimize.js";

interface Auto { n: number; k: number; next: number[]; keys: string[]; initial: number }

const autoArb: fc.Arbitrary<Auto> = fc.record({ n: fc.integer({ min: 1, max: 14 }), k: fc.integer({ min: 1, max: 5 }) }).chain(({ n, k }) =>
  fc.record({
    n: fc.constant(n),
    k: fc.constant(k),
    // Mostly missing transitions (-1), as in the sparse automata the compiler minimizes.
    next: fc.array(fc.oneof({ weight: 2, arbitrary: fc.constant(-1) }, { weight: 3, arbitrary: fc.nat(n - 1) }), { minLength: n * k, maxLength: n * k }),
    keys: fc.array(fc.constantFrom("A", "N", "X"), { minLength: n, maxLength: n }),
    initial: fc.nat(n - 1),
  }));

/** Moore's refinement over the states plus a sink (index n, its own class): class per state. */
function moore(a: Auto): number[] {
  const sink = a.n;
  const succ = (s: number, c: number) => (s === sink ? sink : a.next[s * a.k + c]! < 0 ? sink : a.next[s * a.k + c]!);
  let cls = [...a.keys.map((x) => x), "\u0000sink"];
  let count = new Set(cls).size;
  for (;;) {
    const sig = cls.map((c, s) => `${c}|${Array.from({ length: a.k }, (_, x) => cls[succ(s, x)]).join(",")}`);
    const ids = new Map<string, number>();
    const next = sig.map((x) => { if (!ids.has(x)) ids.set(x, ids.size); return String(ids.get(x)); });
    if (ids.size === count) return next.map(Number);
    cls = next;
    count = ids.size;
  }
}

/** Breadth-first from the initial state over symbols in order, without the missing transitions. */
function bfs(a: Auto): number[] {
  const order = [a.initial];
  const seen = new Set(order);
  for (let i = 0; i < order.length; i++) {
    for (let c = 0; c < a.k; c++) {
      const t = a.next[order[i]! * a.k + c]!;
      if (t >= 0 && !seen.has(t)) { seen.add(t); order.push(t); }
    }
  }
  return order;
}

describe("minimize (Hopcroft) against Moore's refinement", () => {
  it("gives the reachable states Moore's classes, numbered breadth-first", () => {
    fc.assert(fc.property(autoArb, (a) => {
      const { blockOf, nBlocks } = minimize({ nStates: a.n, nSyms: a.k, initial: a.initial, next: (s, c) => a.next[s * a.k + c]!, key: (s) => a.keys[s]! });
      const m = moore(a);
      const reach = bfs(a);
      // Same partition on the reachable states.
      for (const s of reach) for (const t of reach) expect(blockOf[s] === blockOf[t]).toBe(m[s] === m[t]);
      expect(nBlocks).toBe(new Set(reach.map((s) => m[s])).size);
      // Canonical numbers: blocks first met in breadth-first order get 0, 1, 2, ...
      let nextNumber = 0;
      const numbered = new Map<number, number>();
      for (const s of reach) {
        if (!numbered.has(m[s]!)) numbered.set(m[s]!, nextNumber++);
        expect(blockOf[s]).toBe(numbered.get(m[s]!));
      }
    }), { seed: 20261127, numRuns: 2000 });
  });

  it("given the transitions as lists (`edges`) instead of `next`, gives the same blocks and numbers", () => {
    fc.assert(fc.property(autoArb, (a) => {
      const byNext = minimize({ nStates: a.n, nSyms: a.k, initial: a.initial, next: (s, c) => a.next[s * a.k + c]!, key: (s) => a.keys[s]! });
      const byEdges = minimize({
        nStates: a.n, nSyms: a.k, initial: a.initial, key: (s) => a.keys[s]!,
        edges: (s, f) => { for (let c = 0; c < a.k; c++) if (a.next[s * a.k + c]! >= 0) f(c, a.next[s * a.k + c]!); },
      });
      expect(byEdges.nBlocks).toBe(byNext.nBlocks);
      expect([...byEdges.blockOf]).toEqual([...byNext.blockOf]);
    }), { seed: 20261128, numRuns: 1000 });
  });

  it("merges the states of a chain that all behave alike and keeps apart those whose keys differ", () => {
    // 0 -a-> 1 -a-> 2 -a-> 0, all "A": one block; with state 2 "N": three blocks.
    const chain = (keys: string[]) => minimize({ nStates: 3, nSyms: 1, initial: 0, next: (s) => (s + 1) % 3, key: (s) => keys[s]! });
    expect(chain(["A", "A", "A"]).nBlocks).toBe(1);
    expect([...chain(["A", "A", "N"]).blockOf]).toEqual([0, 1, 2]);
  });
});
