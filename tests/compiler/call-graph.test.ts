/**
 * The call graph and transition network under both grammar compilations (compiler/grammar/
 * regular.ts `callGraph`, `buildNetwork`):
 *  - `componentsOf` (analyze.ts; Tarjan's strongly connected components on a CSR graph, which the
 *    recursion cuts use) against brute force (fast-check, seeded): on random directed graphs, two
 *    vertices share a component exactly when each reaches the other, and the component count is
 *    the number of such classes;
 *  - the network's interned positions: a cut call and an uncut one of the same rule before the same
 *    rest are two positions (the grammars' languages cannot tell, so this pins it), equal ones one.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { componentsOf } from "../../compiler/grammar/analyze.js";
import { parseGrammar } from "../../compiler/grammar/index.js";
import { buildNetwork, END, K_BYTES, K_CALL } from "../../compiler/grammar/regular.js";

const graphArb = fc.integer({ min: 1, max: 12 }).chain((n) =>
  fc.record({ n: fc.constant(n), edges: fc.array(fc.tuple(fc.nat(n - 1), fc.nat(n - 1)), { maxLength: 3 * n }) }));

/** reach[v][w]: w is reachable from v by zero or more edges. */
function closure(n: number, edges: [number, number][]): boolean[][] {
  const r = Array.from({ length: n }, (_, v) => Array.from({ length: n }, (_, w) => v === w));
  for (const [a, b] of edges) r[a]![b] = true;
  for (let k = 0; k < n; k++) for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) if (r[i]![k] && r[k]![j]) r[i]![j] = true;
  return r;
}

describe("componentsOf", () => {
  it("puts two vertices in one component exactly when each reaches the other", () => {
    fc.assert(fc.property(graphArb, ({ n, edges }) => {
      const start = new Int32Array(n + 1);
      for (const [a] of edges) start[a + 1]!++;
      for (let v = 0; v < n; v++) start[v + 1]! += start[v]!;
      const to = new Int32Array(edges.length);
      const at = start.slice(0, n);
      for (const [a, b] of edges) to[at[a]!++] = b;
      const { comp, count } = componentsOf(n, start, to);
      const r = closure(n, edges);
      for (let v = 0; v < n; v++) for (let w = 0; w < n; w++) expect(comp[v] === comp[w]).toBe(r[v]![w]! && r[w]![v]!);
      expect(count).toBe(new Set(comp).size);
      expect(Math.max(...comp)).toBe(count - 1);
    }), { seed: 20261127, numRuns: 500 });
  });
});

describe("buildNetwork", () => {
  it("keeps a cut call and an uncut one of a rule before the same rest apart, and shares equal positions", () => {
    // r's own call of r is a recursion cut; root's call of r (r never reaches root) is not. Both
    // are followed by ")" and the end: the same rest.
    const cfg = parseGrammar('root ::= r ")"\nr ::= "(" r ")" | "x"\n', "t.gbnf", { start: "root" });
    const net = buildNetwork(cfg);
    const r = cfg.rules.findIndex((x) => x.name === "r");
    const positions = net.kind.map((_, p) => p);
    const calls = positions.filter((p) => net.kind[p] === K_CALL && net.arg[p] === r);
    expect(calls.map((p) => net.cut[p]).sort()).toEqual([0, 1]);
    expect(new Set(calls.map((p) => net.next[p])).size).toBe(1);
    // ")" then the end: one position for both alternatives that end so.
    const close = net.byteSets.findIndex((b) => b.ranges.length === 1 && b.ranges[0]![0] === 0x29 && b.ranges[0]![1] === 0x29);
    expect(positions.filter((p) => net.kind[p] === K_BYTES && net.arg[p] === close && net.next[p] === END)).toHaveLength(1);
  });
});
