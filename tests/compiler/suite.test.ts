/**
 * The data-driven conformance suite (tests/fixtures/traces/index.json): every case runs through
 * every engine — the reference interpreter (the oracle), the byte automaton built from the
 * unminimized state DFA, the minimized byte automaton, the tables reloaded from their serialized
 * form, and the compiled .wasm — and all must agree. The automaton engines must also agree on
 * where a violation is and what was expected there.
 */
import { readFileSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import { Spec, wasmEngine } from "../../bindings/spec.js";
import { compileSource, compileToWasm } from "../../compiler/compile.js";
import type { Compiled } from "../../compiler/ir.js";
import { parseTables, serializeTables } from "../../compiler/tables.js";
import { byteDfaEngine, runTrace, type Engine, type Trace, type Verdict } from "../../compiler/trace.js";
import { checkTrace } from "../helpers/interpreter.js";
import { tokenMarkers } from "../../compiler/tokens.js";

interface Case { spec: string; trace: string; conforms: boolean; note?: string }
const cases: Case[] = JSON.parse(readFileSync("tests/fixtures/traces/index.json", "utf8"));

const compiled = new Map<string, { c: Compiled; engines: Record<string, Engine> }>();

beforeAll(async () => {
  for (const spec of new Set(cases.map((c) => c.spec))) {
    const c = compileSource(readFileSync(spec, "utf8"), spec);
    const reloaded = parseTables(serializeTables(c.byteDfa, c.ir.states)).dfa;
    const wasm = await Spec.load(compileToWasm(c));
    compiled.set(spec, {
      c,
      engines: {
        unminimized: byteDfaEngine(c.rawByteDfa()),
        minimized: byteDfaEngine(c.byteDfa),
        reloaded: byteDfaEngine(reloaded),
        wasm: wasmEngine(wasm),
      },
    });
  }
});

/** The parts of a verdict that do not depend on state numbering. */
function portable(v: Verdict) {
  if (v.verdict === "conforms") return { verdict: v.verdict };
  if (v.verdict === "incomplete") return { verdict: v.verdict, specState: v.specState, expected: v.expected };
  return { verdict: v.verdict, segment: v.segment, offset: v.offset, specState: v.specState, expected: v.expected, reason: v.reason };
}

describe("conformance suite: reference = unminimized = minimized = reloaded tables = .wasm", () => {
  it("has a mix of conforming and non-conforming cases", () => {
    expect(cases.filter((c) => c.conforms).length).toBeGreaterThan(10);
    expect(cases.filter((c) => !c.conforms).length).toBeGreaterThan(10);
  });
  for (const k of cases) {
    it(`${k.conforms ? "conforms" : "rejects "} ${k.trace.replace(/.*\//, "")} under ${k.spec.replace(/.*\//, "")}`, () => {
      const { c, engines } = compiled.get(k.spec)!;
      const trace: Trace = JSON.parse(readFileSync(k.trace, "utf8"));
      expect(checkTrace(c.ir, trace), "reference interpreter").toBe(k.conforms);
      const markers = c.ir.states.map((s) => s.marker);
      const tokens = tokenMarkers(c.ir.states);
      const verdicts = Object.fromEntries(Object.entries(engines).map(([name, e]) => [name, portable(runTrace(e, trace, markers, tokens))]));
      for (const [name, v] of Object.entries(verdicts)) {
        expect(v.verdict === "conforms", `${name} engine`).toBe(k.conforms);
        expect(v, `${name} agrees with the minimized automaton`).toEqual(verdicts.minimized);
      }
    });
  }
});
