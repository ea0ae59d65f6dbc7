/**
 * Few-shot examples of a prompt validated against a spec (agents/examples-check.ts). The
 * prompts of seed 001 Figures 6–8 are copied verbatim (markdown line-break artifacts included) into
 * tests/fixtures/prompts/; Fig 1's output, which has blank lines inside the example, is there too.
 */
import { readFileSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import { checkExamples, exampleTrace, formatExamplesReport } from "../../agents/examples-check.js";
import { Spec } from "../../bindings/spec.js";
import { compileSource, compileToWasm } from "../../compiler/compile.js";
import type { Compiled } from "../../compiler/ir.js";

const prompt = (name: string) => readFileSync(`tests/fixtures/prompts/${name}`, "utf8");
const FIG6 = "001-fig6-fever-react.txt";
const FIG7 = "001-fig7-hotpotqa-react.txt";
const FIG8 = "001-fig8-gsm8k-react.txt";

describe("checkExamples", () => {
  let react: Compiled;
  let reactWasm: Spec;
  beforeAll(async () => {
    react = compileSource(readFileSync("examples/react.agent", "utf8"), "examples/react.agent");
    reactWasm = await Spec.load(compileToWasm(react));
  });

  it.each([FIG6, FIG7, FIG8])("the examples of seed 001's %s conform to examples/react.agent", (f) => {
    const text = prompt(f);
    for (const spec of [react, reactWasm]) {
      const all = checkExamples(spec, text);
      // The format template of the instructions lists the states in order: it is checked and passes.
      expect(all.map((r) => r.verdict)).toEqual(["conforms", "conforms"]);
      const only = checkExamples(spec, text, { from: "Here are some examples." });
      expect(only).toHaveLength(1);
      expect(only[0]!.verdict).toBe("conforms");
      expect(only[0]!.firstViolation).toBeNull();
      expect(only[0]!.text).toMatch(/^(Claim|Question): /);
      expect(only[0]!.line).toBe(text.slice(0, only[0]!.start).split("\n").length);
    }
  });

  it("Fig 6: 'Claim:' is context, and the observation running into 'Final Thought:' on one line is env text", () => {
    const [ex] = checkExamples(react, prompt(FIG6), { from: "Here are some examples." });
    const segs = ex!.trace.segments;
    expect(segs[0]!.by).toBe("prompt");
    expect(segs[0]!.text.startsWith("Claim: Nikolaj Coster-Waldau")).toBe(true);
    const envs = segs.filter((s) => s.by === "env").map((s) => s.text);
    expect(envs).toHaveLength(2);
    expect(envs[1]!.endsWith("originally intended as a pilot. ")).toBe(true);
    expect(segs[segs.length - 1]!.text.startsWith("Final Thought: Because he appeared")).toBe(true);
  });

  it("an example with blank lines inside (seed 001 Fig 1) is one example", () => {
    const r = checkExamples(react, prompt("001-fig1-fever-output.txt"));
    expect(r).toHaveLength(1);
    expect(r[0]!.verdict).toBe("conforms");
    expect(r[0]!.text.trimEnd().endsWith("Answer: NOT ENOUGH INFORMATION")).toBe(true);
  });

  it("a broken example (Action Input missing) is reported with its position, the state and the expected marker", () => {
    const good = prompt(FIG8);
    const broken = good.replace("Action Input: 24 + 48\n", "");
    const r = checkExamples(react, broken, { from: "Here are some examples." });
    expect(r).toHaveLength(1);
    expect(r[0]!.verdict).toBe("violation");
    const v = r[0]!.firstViolation!;
    expect(v.state).toBe("Action");
    expect(v.expected).toEqual(["Action Input:"]);
    expect(v.found).toBe("Observation:");
    // "Observation: 72" is the line after "Action: Calculator" (the second one).
    const lines = broken.split("\n");
    expect(lines[v.line - 1]).toBe("Observation: 72");
    expect(v.col).toBe(1);
    expect(broken.slice(v.at, v.at + 12)).toBe("Observation:");
    const text = formatExamplesReport(r, { file: "gsm8k.txt" });
    expect(text).toContain(`gsm8k.txt:${v.line}:1: example 1: violation: "Observation:" is not allowed here`);
    expect(text).toContain(`state: Action; valid next markers: "Action Input:"`);
    expect(text).toContain("  | Observation: 72\n  | ^");
    expect(text).toContain("gsm8k.txt: 1 example, 0 conform, 1 does not");
  });

  it("several examples: each gets its own verdict; an incomplete one stops where the run may continue", () => {
    const ex1 = "Question: 2+2?\nThought: add\nAction: Calculator\nAction Input: 2+2\nObservation: 4\nFinal Thought: it is 4\nAnswer: 4";
    const ex2 = "Question: 3+3?\nThought: add\nAction: Calculator\nAction Input: 3+3\nObservation: 6";
    const ex3 = "Question: 1+1?\nThought: easy\nFinal Thought: 2\nAnswer: 2";
    const text = `Solve these.\n\n${ex1}\n\n${ex2}\n\n${ex3}\n\nQuestion:\n`;
    const r = checkExamples(react, text);
    expect(r.map((x) => x.verdict)).toEqual(["conforms", "incomplete", "violation"]);
    expect(r[1]!.firstViolation).toMatchObject({ reason: "incomplete", state: "Observation", expected: ["Thought:", "Final Thought:"] });
    expect(r[2]!.firstViolation).toMatchObject({ state: "Thought", expected: ["Action:"], found: "Final Thought:" });
    expect(r[2]!.firstViolation!.line).toBe(text.slice(0, text.indexOf("Final Thought: 2")).split("\n").length);
    const report = formatExamplesReport(r, { file: "p.txt" });
    expect(report).toContain("example 2: incomplete — it stops in Observation");
    expect(report).toContain("p.txt: 3 examples, 1 conform, 2 do not");
  });

  it("a custom separator, and the query slot of a bracket-style prompt", () => {
    const spec = compileSource(readFileSync("examples/react-brackets.agent", "utf8"));
    const ex = "[Question] q\n[Thought] t\n[Action] Search\n[Action Input] x\n[Observation] y\n[Final Thought] f\n[Answer] a";
    const r = checkExamples(spec, `Examples:\n###\n${ex}\n###\n${ex}\n###\n[Question]\n`, { separator: "###" });
    expect(r.map((x) => x.verdict)).toEqual(["conforms", "conforms"]);
    expect(formatExamplesReport([], { file: "x" })).toMatch(/no examples found/);
  });

  it("exampleTrace splits prompt / llm / env at env markers", () => {
    const states = react.ir.states;
    const { trace, starts } = exampleTrace("Q\nThought: a\nAction: b\nAction Input: c\nObservation: d Final Thought: e\nAnswer: f", states);
    expect(trace.segments.map((s) => s.by)).toEqual(["prompt", "env", "llm"]);
    expect(trace.segments[1]!.text).toBe(" d ");
    expect(starts[2]).toBe(trace.segments[0]!.text.length + 3);
  });
});
