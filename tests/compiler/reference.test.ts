/**
 * Tests of the reference interpreter (tests/helpers/interpreter.ts), the oracle every engine is
 * checked against, and the data-driven trace suite (tests/fixtures/traces/index.json) run through it.
 */
import { readFileSync, readdirSync, existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import type { Behavior, SpecIR } from "../../compiler/ir.js";
import {
  behaviorAccepts,
  checkTrace,
  explainTrace,
  splitMarkers,
  type Segment,
  type Trace,
} from "../helpers/interpreter.js";
import { EXAMPLE_SPECS, makeSpec } from "../helpers/make-spec.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const read = (rel: string): string => readFileSync(join(ROOT, rel), "utf8");

const P = (text: string): Segment => ({ by: "prompt", text });
const L = (text: string): Segment => ({ by: "llm", text });
const E = (text: string): Segment => ({ by: "env", text });
const trace = (...segments: Segment[]): Trace => ({ segments });

const REACT = EXAMPLE_SPECS["examples/react.agent"]!;
const TOOLS = EXAMPLE_SPECS["examples/react-tools.agent"]!;
const CHAT = EXAMPLE_SPECS["examples/chat-bot.agent"]!;

/** Names of the pieces of a split, markers as <Name>. */
function pieces(ir: SpecIR, text: string): string[] {
  return splitMarkers(ir, text).map((p) => (p.kind === "marker" ? `<${ir.states[p.state]!.name}>` : p.text));
}

/** A spec over one-letter states A, B, C, D with markers "A:", "B:", … */
function letters(behavior: string, constraints?: string[]): SpecIR {
  return makeSpec(
    [["A", "A:"], ["B", "B:"], ["C", "C:"], ["D", "D:"]],
    behavior,
    constraints ? { constraints } : {},
  );
}
/** Does the spec accept the state sequence written as letters, e.g. "ABAB"? */
function acceptsWord(ir: SpecIR, word: string): boolean {
  return behaviorAccepts(ir.behavior, [...word].map((ch) => ir.states.findIndex((s) => s.name === ch)));
}

describe("marker splitting (leftmost-longest)", () => {
  it("splits text into markers and free text", () => {
    expect(pieces(REACT, "Thought: a\nAction: Search\nAction Input: x\n")).toEqual([
      "<Thought>", " a\n", "<Action>", " Search\n", "<Action-Input>", " x\n",
    ]);
  });
  it("takes 'Final Thought:' as Final-Thought, not 'Final ' + Thought", () => {
    expect(pieces(REACT, "Final Thought: done")).toEqual(["<Final-Thought>", " done"]);
    expect(pieces(REACT, "xFinal Thought:")).toEqual(["x", "<Final-Thought>"]);
  });
  it("takes the longest marker at the leftmost index when one marker is a prefix of another", () => {
    const ir = makeSpec([["Act", "Act"], ["ActIn", "Act In"], ["X", "X"]], "(next Act ActIn X)");
    expect(pieces(ir, "Act In")).toEqual(["<ActIn>"]);
    expect(pieces(ir, "Act Inx")).toEqual(["<ActIn>", "x"]);
    expect(pieces(ir, "Act I")).toEqual(["<Act>", " I"]);
  });
  it("prefers the leftmost occurrence over a longer later one", () => {
    const ir = makeSpec([["A", "ab"], ["B", "bcd"]], "(next A B)");
    expect(pieces(ir, "abcd")).toEqual(["<A>", "cd"]);
    expect(pieces(ir, "xbcd")).toEqual(["x", "<B>"]);
  });
  it("matches non-ASCII markers", () => {
    const zh = EXAMPLE_SPECS["examples/react-zh.agent"]!;
    expect(pieces(zh, "[最终思考] 好。\n[答案] 是")).toEqual(["<Final-Tht>", " 好。\n", "<Ans>", " 是"]);
  });
  it("does not take a partial marker", () => {
    expect(pieces(REACT, "Thought")).toEqual(["Thought"]);
  });
});

describe("behavior formulas", () => {
  it("state", () => {
    const ir = letters("A");
    expect(acceptsWord(ir, "A")).toBe(true);
    expect(acceptsWord(ir, "")).toBe(false);
    expect(acceptsWord(ir, "AA")).toBe(false);
    expect(acceptsWord(ir, "B")).toBe(false);
  });
  it("next", () => {
    const ir = letters("(next A B C)");
    expect(acceptsWord(ir, "ABC")).toBe(true);
    for (const w of ["AB", "ACB", "ABCC", "", "BC"]) expect(acceptsWord(ir, w)).toBe(false);
  });
  it("or", () => {
    const ir = letters("(next (or A (next B C)) D)");
    expect(acceptsWord(ir, "AD")).toBe(true);
    expect(acceptsWord(ir, "BCD")).toBe(true);
    expect(acceptsWord(ir, "BD")).toBe(false);
    expect(acceptsWord(ir, "ABCD")).toBe(false);
  });
  it("until = a* b", () => {
    const ir = letters("(until (next A B) C)");
    for (const w of ["C", "ABC", "ABABABABC"]) expect(acceptsWord(ir, w)).toBe(true);
    for (const w of ["", "AB", "AC", "ABAC", "CC", "ABCAB"]) expect(acceptsWord(ir, w)).toBe(false);
  });
  it("until_N = a{0,N} b", () => {
    const ir = letters("(until_3 A B)");
    for (const w of ["B", "AB", "AAB", "AAAB"]) expect(acceptsWord(ir, w)).toBe(true);
    expect(acceptsWord(ir, "AAAAB")).toBe(false);
  });
  it("until_M_N = a{M,N} b", () => {
    const ir = letters("(until_1_3 A B)");
    expect(acceptsWord(ir, "B")).toBe(false);
    for (const w of ["AB", "AAB", "AAAB"]) expect(acceptsWord(ir, w)).toBe(true);
    expect(acceptsWord(ir, "AAAAB")).toBe(false);
    const exact = letters("(until_2_2 (next A C) B)");
    expect(acceptsWord(exact, "ACACB")).toBe(true);
    expect(acceptsWord(exact, "ACB")).toBe(false);
  });
  it("always = a+", () => {
    const ir = letters("(always (next A B))");
    for (const w of ["AB", "ABAB", "ABABAB"]) expect(acceptsWord(ir, w)).toBe(true);
    for (const w of ["", "A", "ABA", "BA"]) expect(acceptsWord(ir, w)).toBe(false);
  });
  it("nested loops (PASS)", () => {
    const ir = letters("(until (next A (until (next B C) D)) A)");
    for (const w of ["A", "ADA", "ABCDA", "ABCBCDADA"]) expect(acceptsWord(ir, w)).toBe(true);
    for (const w of ["AB", "ABCA", "ABDA"]) expect(acceptsWord(ir, w)).toBe(false);
  });

  // The oracle's formula semantics against JavaScript's own regular expressions, on random formulas.
  const toRegex = (f: Behavior): string => {
    switch (f.op) {
      case "state":
        return "ABCD"[f.state]!;
      case "next":
        return f.args.map((a) => `(?:${toRegex(a)})`).join("");
      case "or":
        return `(?:${f.args.map(toRegex).join("|")})`;
      case "until":
        return `(?:${toRegex(f.body)}){${f.min},${f.max ?? ""}}(?:${toRegex(f.then)})`;
      case "always":
        return `(?:${toRegex(f.body)})+`;
    }
  };
  const formula = fc.letrec<{ f: string }>((tie) => ({
    f: fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      fc.constantFrom("A", "B", "C", "D"),
      fc.array(tie("f"), { minLength: 1, maxLength: 3 }).map((xs) => `(next ${xs.join(" ")})`),
      fc.array(tie("f"), { minLength: 1, maxLength: 3 }).map((xs) => `(or ${xs.join(" ")})`),
      fc.tuple(tie("f"), tie("f")).map(([a, b]) => `(until ${a} ${b})`),
      fc.tuple(fc.nat(2), fc.nat(2), tie("f"), tie("f")).map(([m, d, a, b]) => `(until_${m}_${m + d} ${a} ${b})`),
      fc.tuple(fc.nat(3), tie("f"), tie("f")).map(([n, a, b]) => `(until_${n} ${a} ${b})`),
      tie("f").map((a) => `(always ${a})`),
    ),
  })).f;
  it("agrees with JS RegExp on random formulas and words", () => {
    fc.assert(
      fc.property(formula, fc.array(fc.stringMatching(/^[A-D]{0,8}$/), { minLength: 1, maxLength: 12 }), (src, words) => {
        const ir = letters(src);
        const re = new RegExp(`^(?:${toRegex(ir.behavior)})$`);
        for (const w of words) expect(acceptsWord(ir, w)).toBe(re.test(w));
      }),
      { numRuns: 300 },
    );
  });
});

describe("constraints", () => {
  const ir = letters("(until A B)", ["(at-most 2 A)", "(at-least 1 A)", "(eventually B)"]);
  const run = (word: string) =>
    checkTrace(ir, trace(L([...word].map((ch) => `${ch}: x\n`).join(""))));
  it("at-most / at-least / eventually", () => {
    expect(run("AB")).toBe(true);
    expect(run("AAB")).toBe(true);
    expect(run("AAAB")).toBe(false);
    expect(run("B")).toBe(false);
  });
  it("eventually on a behavior that does not force the state", () => {
    const ev = letters("(next (until A (or B C)) D)", ["(eventually B)"]);
    expect(checkTrace(ev, trace(L("A: 1\nB: 2\nD: 3")))).toBe(true);
    expect(checkTrace(ev, trace(L("A: 1\nC: 2\nD: 3")))).toBe(false);
  });
});

describe("trace rules", () => {
  const obs = (t: string) => [L(`Thought: t\nAction: Search\nAction Input: q\nObservation:`), E(t)];
  const end = L("\nFinal Thought: f\nAnswer: a");

  it("accepts a minimal ReACT run", () => {
    expect(explainTrace(REACT, trace(...obs(" r"), end))).toEqual({
      conforms: true,
      reason: null,
      states: ["Thought", "Action", "Action-Input", "Observation", "Final-Thought", "Answer"],
    });
  });
  it("skips prompt context before the first marker, but not llm text", () => {
    expect(checkTrace(REACT, trace(P("Question: q?\n"), ...obs(" r"), end))).toBe(true);
    expect(checkTrace(REACT, trace(L("Question: q?\n"), ...obs(" r"), end))).toBe(false);
  });
  it("treats prompt text after the first marker like llm text", () => {
    expect(checkTrace(REACT, trace(P("ctx\nThought:"), L(" t\nAction: Search\nAction Input: q\nObservation:"), E(" r"), P("Final Thought:"), L(" f\nAnswer: a")))).toBe(true);
    // prompt text after env text is checked like llm text
    expect(checkTrace(REACT, trace(...obs(" r"), P("context again\n"), end))).toBe(false);
  });
  it("matches markers across consecutive llm and prompt segments", () => {
    expect(checkTrace(REACT, trace(L("Tho"), P("ught: t\nAct"), L("ion: a\nAction Input: q\nObservation:"), E(" r"), L("\nFinal Th"), L("ought: f\nAnswer: a")))).toBe(true);
  });
  it("never matches across an env segment", () => {
    // "Final Th" + env + "ought:" is not a marker
    expect(checkTrace(REACT, trace(L("Thought: t\nAction: a\nAction Input: q\nObservation:"), E(" Final Th"), L("ought: f\nAnswer: a")))).toBe(false);
  });
  it("allows whitespace, and nothing else, before a marker at the start and after env text", () => {
    expect(checkTrace(REACT, trace(L(" \t\r\n"), ...obs(" r"), L(" \n\t"), end))).toBe(true);
    expect(checkTrace(REACT, trace(L("\u00a0"), ...obs(" r"), end))).toBe(false); // NBSP is not whitespace here
    expect(checkTrace(REACT, trace(...obs(" r"), L("ok "), end))).toBe(false);
  });
  it("requires an env marker to end its llm text", () => {
    expect(checkTrace(REACT, trace(L("Thought: t\nAction: a\nAction Input: q\nObservation: "), E("r"), end))).toBe(false);
    expect(checkTrace(REACT, trace(L("Thought: t\nAction: a\nAction Input: q\nObservation:\nFinal Thought: f\nAnswer: a")))).toBe(false);
  });
  it("requires each env segment to follow an env marker", () => {
    expect(checkTrace(REACT, trace(E("r"), ...obs(" r"), end))).toBe(false);
    expect(checkTrace(REACT, trace(...obs(" r"), E(" more"), end))).toBe(false);
    expect(checkTrace(REACT, trace(L("Thought: t\nAction: a\nAction Input: q\n"), E("r"), end))).toBe(false);
  });
  it("accepts a trace that ends at a yield iff the sequence is accepted (documented choice)", () => {
    expect(checkTrace(CHAT, trace(L("Chat Bot: hi\nUser:")))).toBe(true);
    expect(checkTrace(REACT, trace(L("Thought: t\nAction: a\nAction Input: q\nObservation:")))).toBe(false);
  });
  it("never scans or checks env content", () => {
    const withEnvMarkers = [L("Thought: t\nAction: Search\nAction Input: q\nObservation:"), E(" Answer: Thought: Action: nonsense"), end];
    expect(checkTrace(REACT, trace(...withEnvMarkers))).toBe(true);
    const envConstrained = makeSpec([["Q", "Q:"], ["R", "R:", true, ["yes"]]], "(next Q R)");
    expect(checkTrace(envConstrained, trace(L("Q: x\nR:"), E(" no")))).toBe(true);
  });
  it("checks oneOf content, trimmed of whitespace, compared exactly", () => {
    const run = (action: string) =>
      checkTrace(TOOLS, trace(L(`Thought: t\nAction:${action}\nAction Input: q\nObservation:`), E(" r"), end));
    expect(run(" Search")).toBe(true);
    expect(run("\t Lookup \r\n ")).toBe(true);
    expect(run("Search")).toBe(true);
    expect(run(" Searching")).toBe(false);
    expect(run(" search")).toBe(false);
    expect(run(" Search Lookup")).toBe(false);
    expect(run("")).toBe(false);
  });
  it("checks the content of the last state too", () => {
    const ir = makeSpec([["Q", "Q:"], ["A", "A:", false, ["yes", "no"]]], "(next Q A)");
    expect(checkTrace(ir, trace(L("Q: ok?\nA: yes\n")))).toBe(true);
    expect(checkTrace(ir, trace(L("Q: ok?\nA: maybe")))).toBe(false);
    expect(checkTrace(ir, trace(L("Q: ok?\nA:")))).toBe(false);
  });
  it("rejects an empty trace and a trace without markers", () => {
    expect(checkTrace(REACT, trace())).toBe(false);
    expect(checkTrace(REACT, trace(P("only context")))).toBe(false);
  });
  it("bounds loops with until_N", () => {
    const loops = (n: number) => Array.from({ length: n }, () => obs(" r")).flat();
    expect(checkTrace(TOOLS, trace(...loops(3), end))).toBe(true);
    expect(checkTrace(TOOLS, trace(...loops(4), end))).toBe(false);
    expect(checkTrace(REACT, trace(...loops(4), end))).toBe(true);
  });
  it("rejects malformed traces loudly", () => {
    expect(() => checkTrace(REACT, { segments: [{ by: "tool" as "env", text: "x" }] })).toThrow(TypeError);
  });
});

// ─────────────────────────────────────── the data-driven suite ───────────────────────────────────────

interface Case {
  spec: string;
  trace: string;
  conforms: boolean;
  note?: string;
}
const INDEX: Case[] = JSON.parse(read("tests/fixtures/traces/index.json"));

describe("fixtures", () => {
  it("index.json has 20+ cases, conforming and not, across the examples", () => {
    expect(INDEX.length).toBeGreaterThanOrEqual(20);
    expect(INDEX.some((c) => c.conforms)).toBe(true);
    expect(INDEX.some((c) => !c.conforms)).toBe(true);
    const specs = new Set(INDEX.map((c) => c.spec));
    for (const s of ["react", "react-brackets", "pass", "reflexion", "cot", "direct", "chat-bot", "react-tools", "react-limits"]) {
      expect(specs).toContain(`examples/${s}.agent`);
    }
  });
  it("every trace file is in the DESIGN §4 format", () => {
    const files = readdirSync(join(ROOT, "tests/fixtures/traces")).filter((f) => f !== "index.json");
    for (const f of files) {
      const t = JSON.parse(read(`tests/fixtures/traces/${f}`));
      expect(Object.keys(t)).toEqual(["segments"]);
      for (const s of t.segments) {
        expect(["prompt", "llm", "env"]).toContain(s.by);
        expect(typeof s.text).toBe("string");
      }
    }
  });
  it("every example file has a hand-built IR whose names and markers appear in the file", () => {
    const files = readdirSync(join(ROOT, "examples")).filter((f) => f.endsWith(".agent"));
    expect(files.map((f) => `examples/${f}`).sort()).toEqual(Object.keys(EXAMPLE_SPECS).sort());
    for (const [path, ir] of Object.entries(EXAMPLE_SPECS)) {
      const text = read(path);
      expect(text.startsWith("# ")).toBe(true);
      expect(text).toContain(`(define ${ir.name}`);
      for (const s of ir.states) {
        const key = s.tokenByte === undefined ? ":text" : ":token";
        expect(text).toMatch(new RegExp(`\\(${s.name.replace(/[-]/g, "\\-")}\\s+\\(${key} "${s.marker.replace(/[[\]().*+?|]/g, "\\$&")}"\\)`));
      }
      expect(text.includes(":env-input")).toBe(ir.states.some((s) => s.env));
    }
  });
});

describe("the reference interpreter on tests/fixtures/traces/index.json", () => {
  for (const c of INDEX) {
    it(`${c.spec} × ${c.trace.replace("tests/fixtures/traces/", "")} → ${c.conforms ? "conforms" : "violates"}`, () => {
      expect(existsSync(join(ROOT, c.spec))).toBe(true);
      const ir = EXAMPLE_SPECS[c.spec];
      expect(ir, `no hand-built IR for ${c.spec}`).toBeDefined();
      const verdict = explainTrace(ir!, JSON.parse(read(c.trace)) as Trace);
      expect({ conforms: verdict.conforms, reason: verdict.reason, note: c.note }).toMatchObject({ conforms: c.conforms });
    });
  }
});
