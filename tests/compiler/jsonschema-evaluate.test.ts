/**
 * The JSON Schema value checker (compiler/jsonschema/evaluate.ts) against ajv, an oracle nobody
 * here wrote: on a fixed slice of MaskBench's schemas and their instances, every verdict it decides
 * is ajv's; and it leaves undecided what it cannot decide exactly (formats, fractional multipleOf,
 * numbers past 2^53, recursion that never reaches a value).
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import Ajv from "ajv";
import Ajv2019 from "ajv/dist/2019.js";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { describe, expect, it } from "vitest";
import { evaluate } from "../../compiler/jsonschema/evaluate.js";
import { fixedSample, loadMaskBench } from "../../bench/maskbench/data.js";

const data = join(import.meta.dirname, "..", "..", "..", "shared", "maskbench", "maskbench.jsonl.gz");

function ajvFor(schema: unknown): ((d: unknown) => boolean) | undefined {
  const s = schema as { $schema?: unknown; $async?: unknown };
  if (typeof s !== "object" || s === null || "$async" in s) return undefined;
  const draft = String(s.$schema ?? "");
  const opts = { strict: false, logger: false } as const;
  const ajv = draft.includes("2020-12") ? new Ajv2020(opts) : draft.includes("2019-09") ? new Ajv2019(opts) : new Ajv(opts);
  (addFormats as unknown as (a: unknown) => void)(ajv);
  try {
    const v = ajv.compile(s as object);
    return (d) => v(d) as boolean;
  } catch {
    return undefined; // a schema ajv cannot compile (a remote $ref, an unknown draft): no oracle
  }
}

// Skipped only where ../shared (the workspace's MaskBench copy) is absent, as the MaskBench slice is.
describe.skipIf(!existsSync(data))("evaluate agrees with ajv on MaskBench instances", () => {
  it("every decided verdict on 800 schemas' instances is ajv's", () => {
    const cases = fixedSample(loadMaskBench(data), 800);
    let decided = 0, undecided = 0;
    for (const c of cases) {
      const validate = ajvFor(c.schema);
      if (!validate) continue;
      for (const t of c.tests) {
        const r = evaluate(c.schema, t.data, c.schema);
        if (r === undefined) { undecided++; continue; }
        decided++;
        expect({ schema: c.name, data: t.data, verdict: r }).toEqual({ schema: c.name, data: t.data, verdict: validate(t.data) });
      }
    }
    // Most verdicts are decided (the slice has formats, which are not).
    expect(decided).toBeGreaterThan(10 * undecided);
  });
});

describe("evaluate", () => {
  const root = { $defs: { pos: { type: "integer", minimum: 1 } } };
  it("decides the keywords it knows, three-valued through not, anyOf and oneOf", () => {
    const cases: [unknown, unknown, boolean | undefined][] = [
      [{ not: { const: 1 } }, 1, false],
      [{ not: { const: 1 } }, 2, true],
      [{ oneOf: [{ enum: [1, 2] }, { enum: [2, 3] }] }, 2, false],
      [{ oneOf: [{ enum: [1, 2] }, { enum: [2, 3] }] }, 3, true],
      [{ if: { type: "string" }, then: { minLength: 2 }, else: { type: "integer" } }, "a", false],
      [{ if: { type: "string" }, then: { minLength: 2 }, else: { type: "integer" } }, 1.5, false],
      [{ type: "object", patternProperties: { "^x-": { type: "string" } }, additionalProperties: false }, { "x-a": "1" }, true],
      [{ type: "object", patternProperties: { "^x-": { type: "string" } }, additionalProperties: false }, { "x-a": 1 }, false],
      [{ type: "object", patternProperties: { "^x-": { type: "string" } }, additionalProperties: false }, { y: "1" }, false],
      [{ $ref: "#/$defs/pos" }, 0, false],
      [{ dependentRequired: { a: ["b"] } }, { a: 1 }, false],
      [{ type: "string", format: "date" }, "2024-01-01", undefined],
      [{ anyOf: [{ type: "string", format: "date" }, { type: "integer" }] }, 3, true],
      [{ anyOf: [{ type: "string", format: "date" }, { type: "integer" }] }, "x", undefined],
      [{ multipleOf: 0.1 }, 0.3, undefined],
      [{ maximum: 9223372036854775807 }, 9223372036854775807, undefined],
      [{ $ref: "#/$defs/loop" }, 1, undefined],
    ];
    const loopRoot = { $defs: { ...root.$defs, loop: { $ref: "#/$defs/loop" } } };
    for (const [schema, value, want] of cases) expect({ schema, value, r: evaluate(schema, value, loopRoot) }).toEqual({ schema, value, r: want });
  });
});
