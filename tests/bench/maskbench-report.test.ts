/**
 * The MaskBench report (bench/maskbench/report.ts) checks failing instances' labels with ajv:
 * an error is "disputed" only when ajv sides with the engine on every instance that went against
 * its label. Real cases from the whole-set run: an instance labelled invalid whose only fault is a
 * property that additionalProperties (true by default) allows. And a validation error is "property
 * order only" when every valid instance the engine rejected is accepted with its keys in the
 * schema's order (data.ts schemaOrder, replayed by engines.ts). The report also states the
 * machine's speed (harness/common.ts machineSpeed) and the worker's young generation (run.ts
 * `--young-mb`), which specc's compile time is sensitive to.
 */
import { describe, expect, it } from "vitest";
import { loadVocab, machineSpeed } from "../../bench/harness/common.js";
import { schemaOrder, type MaskBenchCase } from "../../bench/maskbench/data.js";
import { runSpecc, tokenizeCase, type EngineResult } from "../../bench/maskbench/engines.js";
import { renderReport, summarize } from "../../bench/maskbench/report.js";
import { speccSchemaCompiler } from "../../bench/maskbench/specc-compiler.js";
import { tokenizerJsonPath } from "../helpers/tokenizers.js";

const schema = { type: "object", properties: { id: { type: "integer" }, name: { type: "string" } } };
const mk = (name: string, tests: MaskBenchCase["tests"]): MaskBenchCase => ({ name, description: "", schema, tests });
const cases = [
  // Github_easy---o24544's shape: the extra property is allowed, the label says invalid.
  mk("disputed", [{ description: "", valid: true, data: { id: 1, name: "a" } }, { description: "", valid: false, data: { id: 1, name: "a", extra: "x" } }]),
  // A real invalidation: "1" is not an integer.
  mk("confirmed", [{ description: "", valid: false, data: { id: "1" } }]),
  // A valid instance rejected, and ajv agrees it is valid: a real validation error.
  mk("rejected", [{ description: "", valid: true, data: { name: "b", id: 2 } }]),
];
const result = (verdict: EngineResult["verdict"], instances: { valid: boolean; accepted: boolean }[]): EngineResult =>
  ({ verdict, ttfmUs: 1000, tbm: { 100: 1 }, instances: instances.map((i) => ({ ...i, rejectedAt: i.accepted ? -1 : 0, tokens: 5 })) });
const lines = [
  { name: "disputed", engine: "specc", result: result("invalidation_error", [{ valid: true, accepted: true }, { valid: false, accepted: true }]) },
  { name: "confirmed", engine: "specc", result: result("invalidation_error", [{ valid: false, accepted: true }]) },
  { name: "rejected", engine: "specc", result: result("validation_error", [{ valid: true, accepted: false }]) },
];

describe("MaskBench report: labels checked with ajv", () => {
  it("counts an error as disputed only where ajv sides with the engine", () => {
    const s = summarize(lines, new Map(cases.map((c) => [c.name, c]))).get("specc")!;
    expect(s.verdicts.invalidation_error).toBe(2);
    expect(s.verdicts.validation_error).toBe(1);
    expect(s.disputed).toEqual({ validation: [], invalidation: ["disputed"] });
    const md = renderReport(new Map([["specc", s]]), "test");
    expect(md).toContain("| of those errors, ajv sides with the engine (label disputed): validation / invalidation | 0 / 1 |");
    // Without the data, nothing is claimed.
    expect(summarize(lines).get("specc")!.disputed).toBeUndefined();
  });

  it("states the machine's speed, so that runs on different machines are not compared as equals", () => {
    const s = summarize(lines).get("specc")!;
    expect(renderReport(new Map([["specc", s]]), "test", { loopMs: 34.17, pageTouchUs: 12.3456 }))
      .toContain("a fixed integer loop 34.2 ms, the first write to a fresh memory page 12.35 µs");
    expect(renderReport(new Map([["specc", s]]), "test")).not.toContain("Machine speed");
    expect(renderReport(new Map([["specc", s]]), "test", { loopMs: 34.17, pageTouchUs: 12.3456, stalls: { perMs: 1.794, medianUs: 36.8, share: 0.0702 } }))
      .toContain("12.35 µs, a busy thread interrupted 1.79 times a ms for 37 µs (median), 7.0% of its time");
    const m = machineSpeed();
    for (const v of [m.loopMs, m.pageTouchUs]) expect(Number.isFinite(v) && v > 0).toBe(true);
    expect(m.stalls!.share).toBeGreaterThanOrEqual(0);
    expect(m.stalls!.share).toBeLessThan(1);
  });

  it("states the worker's young generation (run.ts --young-mb), per engine, with counts when runs mixed settings", () => {
    const md = (ls: typeof lines) => renderReport(summarize(ls), "test");
    const row = "| worker's young generation (`--young-mb`; V8's default is 3 semi-spaces of 16 MB) |";
    expect(md(lines)).toContain(`${row} V8's default |`);
    expect(md(lines.map((l) => ({ ...l, youngMb: 192 })))).toContain(`${row} 192 MB |`);
    expect(md(lines.map((l, i) => (i === 0 ? { ...l, youngMb: 192 } : l)))).toContain(`${row} 192 MB (1 schemas), V8's default (2 schemas) |`);
  });
});

// A valid instance whose keys are not in the order of `properties` (specc, like XGrammar, LLGuidance
// and the issue, fixes that order): Github_medium---o66606's shape, the inner object by a $ref.
const orderSchema = {
  type: "object", additionalProperties: false, required: ["build"],
  properties: { env: { type: "array", items: { type: "string" } }, build: { $ref: "#/definitions/Command" } },
  definitions: { Command: { type: "object", properties: { path: { type: "string" }, args: { type: "array" }, env: { type: "array" } } } },
};
const outOfOrder = { build: { args: [], path: "make", env: ["A=1"] }, env: ["CI=true"] };

describe("MaskBench: validation errors from property order alone", () => {
  it("schemaOrder puts each object's keys in its own schema's order ($ref followed, allOf merged), or gives null", () => {
    const ordered = schemaOrder(orderSchema);
    // "env" is first at the top and last in Command: each object takes its own schema's order.
    expect(ordered(outOfOrder)).toBe('{"env":["CI=true"],"build":{"path":"make","args":[],"env":["A=1"]}}');
    expect(ordered({ env: [], build: { path: "x" } })).toBeNull();
    // allOf members' properties after the schema's own; unknown names last, as they came.
    const merged = schemaOrder({ properties: { b: {} }, allOf: [{ properties: { a: {} } }] });
    expect(merged({ z: 1, a: 2, b: 3 })).toBe('{"b":3,"a":2,"z":1}');
    // Names only `required` gives, after the properties; a value under a pattern in that pattern's
    // schema's order; an integer-like key where the order puts it (JSON.stringify would put it first).
    const more = schemaOrder({
      properties: { default: {} }, required: ["t"],
      patternProperties: { "^[1-5][0-9]{2}$": { properties: { a: {}, b: {} } } },
    });
    expect(more({ x: 0, t: 1, 404: { b: 1, a: 2 }, default: 3 })).toBe('{"default":3,"t":1,"404":{"a":2,"b":1},"x":0}');
  });

  it("the replay accepts the rejected instance in the schema's order, and the report counts that error as order only", async () => {
    const vocab = await loadVocab(tokenizerJsonPath("llama3_1"));
    const c: MaskBenchCase = { name: "order", description: "", schema: orderSchema, tests: [{ description: "", valid: true, data: outOfOrder }] };
    const r = await runSpecc(c, vocab, await speccSchemaCompiler(), tokenizeCase(c, vocab));
    expect(r.verdict).toBe("validation_error");
    expect(r.instances![0]!.acceptedInSchemaOrder).toBe(true);
    const other: EngineResult = { ...r, instances: r.instances!.map((i) => ({ ...i, acceptedInSchemaOrder: false })) };
    const s = summarize([{ name: "order", engine: "specc", result: r }, { name: "other", engine: "specc", result: other }]).get("specc")!;
    expect(s.verdicts.validation_error).toBe(2);
    expect(s.orderOnly).toEqual(["order"]);
    expect(renderReport(new Map([["specc", s]]), "test")).toContain("accepted with its keys in the schema's order) | 1 |");
  }, 120_000);
});
