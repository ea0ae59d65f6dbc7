/**
 * compiler/grammar/regular.ts `mergeClasses` against a brute-force oracle (fast-check, seeded): on
 * random tables where equal columns are common, every state reads every byte as before, and two
 * classes become one exactly when their columns are equal. Columns whose hashes collide (found by
 * search for this hash) stay apart and the table stays exact.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { mergeClasses, type GrammarDfa } from "../../compiler/grammar/regular.js";

const tableArb: fc.Arbitrary<GrammarDfa> = fc.record({ n: fc.integer({ min: 1, max: 10 }), k: fc.integer({ min: 1, max: 8 }) }).chain(({ n, k }) =>
  fc.record({
    // Few distinct values per cell, so that equal columns happen.
    trans: fc.array(fc.integer({ min: -1, max: Math.min(n - 1, 2) }), { minLength: n * k, maxLength: n * k }),
    classMap: fc.array(fc.nat(k - 1), { minLength: 256, maxLength: 256 }),
  }).map(({ trans, classMap }) => ({
    nStates: n, nClasses: k, initial: 0, trans: Int32Array.from(trans), classMap: Uint8Array.from(classMap), accepting: new Uint8Array(n),
  })));

const column = (d: GrammarDfa, c: number): string => Array.from({ length: d.nStates }, (_, s) => d.trans[s * d.nClasses + c]).join(",");

function expectExact(d: GrammarDfa, m: GrammarDfa): void {
  for (let s = 0; s < d.nStates; s++) {
    for (let b = 0; b < 256; b++) expect(m.trans[s * m.nClasses + m.classMap[b]!]).toBe(d.trans[s * d.nClasses + d.classMap[b]!]);
  }
}

describe("mergeClasses", () => {
  it("keeps every transition and merges two classes exactly when their columns are equal", () => {
    fc.assert(fc.property(tableArb, (d) => {
      const m = mergeClasses(d);
      expectExact(d, m);
      // Classes some byte reads: merged iff equal columns.
      const used = [...new Set(d.classMap)];
      for (const a of used) {
        for (const b of used) {
          const ba = d.classMap.indexOf(a), bb = d.classMap.indexOf(b);
          expect(m.classMap[ba] === m.classMap[bb]).toBe(column(d, a) === column(d, b));
        }
      }
      expect(m.nClasses).toBe(new Set(Array.from({ length: d.nClasses }, (_, c) => column(d, c))).size);
    }), { seed: 20261128, numRuns: 300 });
  });

  it("keeps apart two unequal columns whose hashes collide", () => {
    // Columns (1518, 2685) and (2448, -1) have the same hash (found by a search over 2-row columns).
    const d: GrammarDfa = {
      nStates: 2, nClasses: 2, initial: 0, trans: Int32Array.from([1518, 2448, 2685, -1]),
      classMap: Uint8Array.from({ length: 256 }, (_, b) => (b < 128 ? 0 : 1)), accepting: new Uint8Array(2),
    };
    const m = mergeClasses(d);
    expect(m.nClasses).toBe(2);
    expectExact(d, m);
  });
});
