/**
 * The grammar compilation's small sorts (compiler/grammar/small-sort.ts) against the built-in sort,
 * on both sides of the length where they hand over to it, with duplicates and negative numbers;
 * sortByFirst keeps equal keys in their order, as the built-in (stable) sort does.
 */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { sortByFirst, sortNumbers } from "../../compiler/grammar/small-sort.js";

describe("small sorts", () => {
  it("sortNumbers orders as Array.prototype.sort does, in place", () => {
    fc.assert(fc.property(fc.array(fc.integer({ min: -50, max: 50 }), { maxLength: 60 }), (xs) => {
      const a = xs.slice();
      const out = sortNumbers(a);
      expect(out).toBe(a);
      expect(out).toEqual(xs.slice().sort((x, y) => x - y));
    }), { numRuns: 500 });
  });

  it("sortByFirst orders by the first number and keeps ties in their order", () => {
    fc.assert(fc.property(fc.array(fc.integer({ min: 0, max: 6 }), { maxLength: 60 }), (keys) => {
      const a = keys.map((k, i) => [k, i] as const);
      const out = sortByFirst(a.slice());
      expect(out).toEqual(a.slice().sort((x, y) => x[0] - y[0]));
      for (let i = 1; i < out.length; i++) if (out[i]![0] === out[i - 1]![0]) expect(out[i]![1]).toBeGreaterThan(out[i - 1]![1]);
    }), { numRuns: 500 });
  });
});
