/**
 * Issue 14's defects, each a regression test: inputs that used to hang, exhaust the heap or
 * overflow the stack now compile to the right language or end in a typed limit error naming the
 * measure. (No timing assertions: how long they take is in the closing note; vitest's per-test
 * timeout is the backstop if one of them regresses into a hang.)
 */
import { describe, expect, it } from "vitest";
import { compileGrammarSource, compileSource, compileToWasm, type CompiledGrammar } from "../../compiler/compile.js";
import { SpecError, SpecLimitError } from "../../compiler/diagnostics.js";
import { parseJsonSource, spanOfPointer } from "../../compiler/jsonschema/json-source.js";
import { Spec } from "../../bindings/spec.js";

async function accepts(c: CompiledGrammar, texts: string[]): Promise<boolean[]> {
  const spec = await Spec.load(compileToWasm(c));
  return texts.map((t) => {
    const m = spec.matcher();
    const r = m.feed(t);
    return r.ok && m.accepting;
  });
}

function limitOf(f: () => unknown): { limit: string; line: number; col: number } | "none" {
  try {
    f();
  } catch (e) {
    if (e instanceof SpecLimitError) return { limit: e.limit, line: e.span?.line ?? 0, col: e.span?.col ?? 0 };
    throw e;
  }
  return "none";
}

describe("nested bounded repetition (llama.cpp's hang test grammar)", () => {
  it("six levels of ([^x]*){0,99} compile to the language [^x]*", async () => {
    const c = compileGrammarSource("root ::= (((((([^x]*){0,99}){0,99}){0,99}){0,99}){0,99}){0,99}\n", "hang.gbnf");
    expect(c.byteDfa.nStates).toBeLessThan(20);
    expect(await accepts(c, ["", "abc", "héllo wörld", "abcx", "x"])).toEqual([true, true, true, false, false]);
  });

  it("two levels, and with --max-depth, the same", async () => {
    const c = compileGrammarSource("root ::= (([^x]*){0,99}){0,99}\n", "hang2.gbnf", { maxDepth: 3 });
    expect(await accepts(c, ["", "yyy", "yxy"])).toEqual([true, true, false]);
  });

  it("(E{0,a}){m,b} is E{0,a·b}: exact counts", async () => {
    const c = compileGrammarSource('root ::= (("a"?){0,20}){3,20} "b"\n', "opt.gbnf");
    expect(await accepts(c, ["b", "ab", "a".repeat(400) + "b", "a".repeat(401) + "b"])).toEqual([true, true, true, false]);
  });

  it("a star in a bounded repetition keeps its own language: (\"ab\"*){2,3} is (ab)*", async () => {
    const c = compileGrammarSource('root ::= (("ab"*){2,3}) "c"\n', "star.gbnf");
    expect(await accepts(c, ["c", "abc", "ababababc", "abac"])).toEqual([true, true, true, false]);
  });

  it("repetitions too large to expand are a typed limit, not a hang", () => {
    expect(limitOf(() => compileGrammarSource('root ::= (("a"?){0,99}){0,99}\n', "big.gbnf"))).toMatchObject({ limit: "maxRepeat" });
    expect(limitOf(() => compileGrammarSource('root ::= ((("a"?){0,99}){0,99}){0,99}\n', "big.gbnf"))).toMatchObject({ limit: "maxRepeat" });
  });

  it("nested bounded repetitions of a nullable body that no rewrite catches end in a limit", () => {
    // ("a" | "") is nullable but not a single element: every level's positions multiply.
    const r = limitOf(() => compileGrammarSource('root ::= ((("a" | "b"?){0,99}){0,99}){0,99}\n', "work.gbnf"));
    expect(r).not.toBe("none");
    expect(["maxClosureWork", "maxRepeat", "maxSymbols", "maxGrammarStates"]).toContain((r as { limit: string }).limit);
  });
});

describe("deep nesting is a positioned limit, never a stack overflow", () => {
  const deepAgent = (op: "next" | "or" | "until", n: number) => {
    let b = "A";
    for (let i = 0; i < n; i++) b = `(${op} ${b} B)`;
    return `(define deep (:states (A (:text "A:")) (B (:text "B:")))\n(:behavior ${b}))`;
  };
  for (const op of ["next", "or", "until"] as const) {
    it(`(${op} (${op} …)) 1,000 and 5,000 deep`, () => {
      for (const n of [1000, 5000]) {
        const r = limitOf(() => compileSource(deepAgent(op, n), "deep.agent"));
        expect(r).toMatchObject({ limit: "maxNesting", line: 2 });
      }
    });
  }
  it("agent specs nested within the limit compile", () => {
    expect(compileSource(deepAgent("next", 200), "ok.agent").ir.states.length).toBe(2);
  });

  it("GBNF: 256 nested parentheses compile, 257 and 999 are maxNesting at the 257th '('", () => {
    const g = (n: number) => `root ::= ${"(".repeat(n)}"a"${")".repeat(n)}\n`;
    expect(compileGrammarSource(g(256), "ok.gbnf").byteDfa.nStates).toBe(2);
    expect(limitOf(() => compileGrammarSource(g(257), "deep.gbnf"))).toEqual({ limit: "maxNesting", line: 1, col: 10 + 256 });
    expect(limitOf(() => compileGrammarSource(g(999), "deep.gbnf"))).toEqual({ limit: "maxNesting", line: 1, col: 10 + 256 });
  });

  it("JSON text: values 256 containers deep parse, 257 deep (and 5,000) are maxJsonNesting at that value; a string full of brackets parses", () => {
    const deep = (n: number) => `{"const": ${"[".repeat(n)}1${"]".repeat(n)}}`;
    expect(limitOf(() => parseJsonSource(deep(255), "ok.schema.json"))).toBe("none");
    // The object is level 0 and the arrays 1..n: the 1 inside 256 arrays is a value at level 257.
    expect(limitOf(() => parseJsonSource(deep(256), "deep.schema.json"))).toEqual({ limit: "maxJsonNesting", line: 1, col: 11 + 256 });
    expect(limitOf(() => parseJsonSource(deep(4999), "deep.schema.json"))).toEqual({ limit: "maxJsonNesting", line: 1, col: 11 + 256 });
    // 257 open containers, the innermost empty: no value lies that deep, as the positioned parser counts.
    expect(limitOf(() => parseJsonSource(`${"[".repeat(257)}${"]".repeat(257)}`, "empty.json"))).toBe("none");
    const inString = `{"description": "${"[{".repeat(300)} \\\" ${"[".repeat(300)}", "type": "string"}`;
    expect(parseJsonSource(inString, "s.schema.json").value).toEqual(JSON.parse(inString));
  });

  it("JSON text: a pointer's position is read on the first ask; invalid JSON is worded with its position", () => {
    const text = '{\n  "properties": {\n    "date": {"type": "string", "format": "dat"}\n  }\n}';
    const src = parseJsonSource(text, "p.schema.json");
    expect(src.value).toEqual(JSON.parse(text));
    expect(spanOfPointer(src, "/properties/date/format")).toMatchObject({ line: 3, col: 32 });
    expect(spanOfPointer(src, "/properties/date/nothing")).toMatchObject({ line: 3, col: 5 });
    let err: SpecError | undefined;
    try { parseJsonSource('{"type": "object",\n  }', "bad.schema.json"); } catch (e) { err = e as SpecError; }
    expect(err?.code).toBe("E0901");
    expect(err?.span).toMatchObject({ line: 2, col: 3 });
    expect(err?.message).toMatch(/expected a property name/);
  });
});

describe("big grammars reach their verdict without quadratic work", () => {
  it("a left-recursive cycle of 1,000 rules is refused by leftRecursionWork", () => {
    const n = 1000;
    const src = "root ::= r0\n" + Array.from({ length: n }, (_, i) => `r${i} ::= r${(i + 1) % n} "a" | "b"\n`).join("");
    expect(limitOf(() => compileGrammarSource(src, "lr.gbnf"))).toMatchObject({ limit: "leftRecursionWork" });
  });

  it("a short left-recursive cycle is still rewritten", async () => {
    const c = compileGrammarSource('root ::= r0\nr0 ::= r1 "a" | "b"\nr1 ::= r2 "c" | "d"\nr2 ::= r0 "e" | "f"\n', "lr3.gbnf");
    // r0 = (b | da | fca)(eca)*
    expect(await accepts(c, ["b", "da", "dea", "f", "fca", "bec", "beca", "daecaeca"])).toEqual([true, true, false, false, true, false, true, true]);
  });

  it("10,000 alternatives in separate rules compile to the right language", async () => {
    const n = 10_000;
    const src = "root ::= " + Array.from({ length: n }, (_, i) => `r${i}`).join(" | ") + "\n" + Array.from({ length: n }, (_, i) => `r${i} ::= "x${i}"\n`).join("");
    const c = compileGrammarSource(src, "alts.gbnf");
    expect(await accepts(c, ["x0", "x9999", "x10000", "x01"])).toEqual([true, true, false, false]);
  });

  it("a chain of 10,000 rules compiles", async () => {
    const n = 10_000;
    const src = "root ::= r0\n" + Array.from({ length: n - 1 }, (_, i) => `r${i} ::= "a" r${i + 1}\n`).join("") + `r${n - 1} ::= "a"\n`;
    const c = compileGrammarSource(src, "chain.gbnf");
    expect(await accepts(c, ["a".repeat(n), "a".repeat(n - 1)])).toEqual([true, false]);
  });
});
