/**
 * Parser fuzzing: random token soups and mutations of the shipped examples must always end in
 * either a compiled spec or a SpecError that carries a position inside the input — never another
 * exception, a hang or a crash. Seeded (fast-check), so a failure replays.
 */
import { readdirSync, readFileSync } from "node:fs";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compileSource } from "../../compiler/compile.js";
import { SpecError } from "../../compiler/diagnostics.js";
import { decodeSource } from "../../compiler/frontend/parse.js";

const examples = readdirSync("examples").filter((f) => f.endsWith(".agent")).map((f) => readFileSync(`examples/${f}`, "utf8"));

function outcome(text: string): "ok" | "diagnostic" {
  try {
    compileSource(decodeSource("fuzz.agent", new TextEncoder().encode(text)), "fuzz.agent", { maxByteStates: 5000, maxDfaStates: 2000, maxNfaStates: 2000 });
    return "ok";
  } catch (e) {
    if (!(e instanceof SpecError)) throw e;
    expect(e.code).toMatch(/^E\d{4}$/);
    if (e.span) {
      expect(e.span.file).toBe("fuzz.agent");
      expect(e.span.line).toBeGreaterThanOrEqual(1);
      expect(e.span.line).toBeLessThanOrEqual(text.split("\n").length);
      expect(e.span.col).toBeGreaterThanOrEqual(1);
    }
    return "diagnostic";
  }
}

const token = fc.constantFrom("(", ")", "(", ")", "define", ":states", ":behavior", ":text", ":flags", ":env-input",
  ":output-constrs", ":constraints", "next", "or", "until", "until_2", "until_1_3", "always", "at-most", "eventually",
  "A", "B", "C", "\"A:\"", "\"B:\"", "\"\"", "\"unterminated", "2", "#c\n", ";c\n", "\n", " ", "\u00a0", "é", "\\", "\"");

describe("parser fuzz", () => {
  it("random token soups always end in a result or a positioned diagnostic", () => {
    fc.assert(fc.property(fc.array(token, { maxLength: 60 }), (toks) => { outcome(toks.join(" ")); }), { numRuns: 1500, seed: 42 });
  });

  it("mutated examples always end in a result or a positioned diagnostic", () => {
    const mutation = fc.record({
      ex: fc.nat(examples.length - 1),
      edits: fc.array(fc.record({ at: fc.nat(), kind: fc.constantFrom("del", "ins", "dup"), ch: fc.constantFrom("(", ")", "\"", ":", " ", "x", "\n", "#", ";") }), { minLength: 1, maxLength: 4 }),
    });
    let diagnostics = 0;
    fc.assert(fc.property(mutation, ({ ex, edits }) => {
      let t = examples[ex]!;
      for (const e of edits) {
        const i = e.at % (t.length + 1);
        t = e.kind === "del" ? t.slice(0, i) + t.slice(i + 1) : e.kind === "ins" ? t.slice(0, i) + e.ch + t.slice(i) : t.slice(0, i) + t.slice(i, i + 8) + t.slice(i);
      }
      if (outcome(t) === "diagnostic") diagnostics++;
    }), { numRuns: 1500, seed: 7 });
    expect(diagnostics).toBeGreaterThan(100); // the mutations do reach the error paths
  });

  it("arbitrary bytes get a diagnostic, not an exception", () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
      try {
        compileSource(decodeSource("fuzz.agent", bytes), "fuzz.agent");
      } catch (e) {
        expect(e).toBeInstanceOf(SpecError);
      }
    }), { numRuns: 1000, seed: 3 });
  });
});
