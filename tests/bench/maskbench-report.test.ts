/**
 * The MaskBench report (bench/maskbench/report.ts) checks failing instances' labels with ajv:
 * an error is "disputed" only when ajv sides with the engine on every instance that went against
 * its label. Real cases from the whole-set run: an instance labelled invalid whose only fault is a
 * property that additionalProperties (true by default) allows.
 */
import { describe, expect, it } from "vitest";
import type { MaskBenchCase } from "../../bench/maskbench/data.js";
import type { EngineResult } from "../../bench/maskbench/engines.js";
import { renderReport, summarize } from "../../bench/maskbench/report.js";

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
});
