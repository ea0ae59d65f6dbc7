/**
 * Tool-calling specs (compiler/tools.ts, the tool contents of compiler/automata): the tools file in
 * its three forms, positioned diagnostics for bad tool files and specs, the tool chosen last typing
 * the arguments, the tool constraints, token markers read by their text, and a differential check
 * of the byte automaton against the reference interpreter on mutated tool transcripts, with `ajv`
 * (an independent JSON Schema validator) agreeing with the automaton on every tool argument.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { compileSource } from "../../compiler/compile.js";
import { SpecError } from "../../compiler/diagnostics.js";
import { seededRandom } from "../../compiler/random.js";
import { encodeText, tokenMarkers } from "../../compiler/tokens.js";
import { readTools } from "../../compiler/tools.js";
import { byteDfaEngine, runTrace, type Trace } from "../../compiler/trace.js";
import { recognize } from "../../compiler/grammar/index.js";
import { checkTrace, explainTrace } from "../helpers/interpreter.js";

const TRAVEL = "examples/tools/travel.tools.json";
const travel = JSON.parse(readFileSync(TRAVEL, "utf8")) as { function: { name: string; parameters: object } }[];

/** Compiles spec text whose files come from `files` (path → text), as if on disk. */
function compileWith(spec: string, files: Record<string, string>) {
  const readFile = (p: string) => {
    const hit = Object.entries(files).find(([k]) => p.endsWith(k));
    if (!hit) throw Object.assign(new Error("no such file"), { code: "ENOENT" });
    return new TextEncoder().encode(hit[1]);
  };
  return compileSource(spec, "/virtual/agent.agent", {}, { readFile });
}
/** The error (and its `.more`) a compile throws. */
function errorsOf(f: () => unknown): SpecError[] {
  try { f(); } catch (e) {
    if (!(e instanceof SpecError)) throw e;
    return [e, ...((e as SpecError & { more?: SpecError[] }).more ?? [])];
  }
  throw new Error("expected a SpecError");
}

const AGENT = (tools = '(:tools "tools.json")', constraints = "") => `(define a
  ${tools}
  (:states
    (Action (:text "Action:") (:tool-name))
    (Input (:text "Input:") (:tool-args))
    (Obs (:text "Obs:") (:flags :env-input))
    (Answer (:text "Answer:")))
  (:behavior (next (until (next Action Input Obs) Answer)))
  ${constraints})`;

/** The verdict on `Action: T / Input: A / Obs:` for each call (the environment answering), then an answer. */
function accepts(c: ReturnType<typeof compileWith>, ...calls: [string, string][]) {
  const segments: Trace["segments"] = calls.flatMap(([t, a]) => [{ by: "llm" as const, text: `Action: ${t}\nInput: ${a}\nObs:` }, { by: "env" as const, text: " ok\n" }]);
  segments.push({ by: "llm", text: "Answer: done" });
  const trace = { segments };
  const v = runTrace(byteDfaEngine(c.byteDfa), trace, c.ir.states.map((s) => s.marker), tokenMarkers(c.ir.states)).verdict;
  expect(checkTrace(c.ir, trace), "reference interpreter").toBe(v === "conforms");
  return v;
}

describe("the tools file", () => {
  const params = travel.map((t) => [t.function.name, t.function.parameters] as const);
  const forms: Record<string, unknown> = {
    "OpenAI chat": travel,
    "OpenAI flat": params.map(([name, parameters]) => ({ type: "function", name, parameters })),
    Anthropic: params.map(([name, input_schema]) => ({ name, description: "d", input_schema })),
    MCP: { tools: params.map(([name, inputSchema]) => ({ name, inputSchema })) },
  };
  const probes = [
    '{"city": "Oslo"}', '{"city": "Oslo", "days": [1, 14]}', '{"city": "Oslo", "days": [0]}', '{"city": 3}',
    '{"origin": "FRA", "destination": "JFK", "date": "2026-02-30", "passengers": {"adults": 1}}',
    '{"origin": "fra", "destination": "JFK", "date": "2026-02-03", "passengers": {"adults": 1}}',
    '{"origin": "FRA", "destination": "JFK", "date": "2028-02-29", "passengers": {"adults": 1}}',
    '{"flight_id": "LH1", "travellers": []}', '{"flight_id": "LH1", "travellers": [{"name": "A", "age": 1}]}',
  ];
  it("reads the OpenAI, Anthropic and MCP forms alike: same names, same argument languages", () => {
    const want = probes.map((p) => readTools(JSON.stringify(forms["OpenAI chat"]), "t.json").map((t) => recognize(t.args, new TextEncoder().encode(p))));
    // Feb 30 and a lower-case airport code are refused; an empty travellers list too (minItems 1)
    expect(want.map((r) => r.some(Boolean))).toEqual([true, true, false, false, false, false, true, false, true]);
    for (const [form, value] of Object.entries(forms)) {
      const tools = readTools(JSON.stringify(value, null, 1), `${form}.json`);
      expect(tools.map((t) => t.name), form).toEqual(["search_flights", "book_flight", "get_weather"]);
      expect(probes.map((p) => tools.map((t) => recognize(t.args, new TextEncoder().encode(p)))), form).toEqual(want);
    }
  });
  it("a tool without a schema takes the empty object", () => {
    const [t] = readTools('[{"name": "ping"}]', "t.json");
    expect(recognize(t!.args, new TextEncoder().encode("{}"))).toBe(true);
    expect(recognize(t!.args, new TextEncoder().encode('{"a": 1}'))).toBe(false);
  });
  it("bad tool files get a code, the tools file's line:col and the JSON pointer", () => {
    const cases: [string, string, RegExp, number][] = [
      ['{"tools": 3}', "E0214", /expected an array of tools/, 1],
      ["[]", "E0214", /empty/, 1],
      ['[{"type": "function", "function": {"description": "x"}}]', "E0214", /non-empty string "name" \(at \/0\/function\)/, 1],
      ['[\n {"name": "a"},\n {"name": "a"}\n]', "E0214", /duplicate tool name "a" \(first at \/0\/name\) \(at \/1\/name\)/, 3],
      ['[{"name": " a"}]', "E0214", /surrounding whitespace/, 1],
      ['[{"name": "a",\n  "input_schema": {"type": "object",\n    "properties": {"x": {"type": "string", "format": "color"}}}}]', "E0902", /\/0\/input_schema\/properties\/x\/format/, 3],
      ['[{"name": "a", "parameters": {"type": "object", "required": ["x"], "properties": {"x": false}}}]', "E0904", /\/0\/parameters/, 1],
      ["[{name: 1}]", "E0901", /not valid JSON/, 1],
    ];
    for (const [text, code, msg, line] of cases) {
      const [e] = errorsOf(() => readTools(text, "/virtual/tools.json"));
      expect(e!.code, text).toBe(code);
      expect(e!.message, text).toMatch(msg);
      expect(e!.span?.file, text).toBe("/virtual/tools.json");
      expect(e!.span?.line, text).toBe(line);
    }
  });
  it("reports every bad tool of a file, not only the first", () => {
    const errs = errorsOf(() => readTools('[{"name": "a", "parameters": {"type": "object", "properties": {"x": {"format": "color", "type": "string"}}}}, {}]', "t.json"));
    expect(errs.map((e) => e.code)).toEqual(["E0902", "E0214"]);
  });
});

describe("tool specs: diagnostics", () => {
  const tools = JSON.stringify(travel);
  const cases: [string, string, RegExp][] = [
    [AGENT(""), "E0215", /takes its content from the tools list, but the spec has no \(:tools/],
    [AGENT('(:tools "missing.json")'), "E0214", /cannot read tools file .*missing\.json: no such file/],
    [AGENT(undefined, "(:constraints (at-most 1 (tool serch_flights)))"), "E0303", /unknown tool serch_flights/],
    [AGENT(undefined, "(:constraints (before (tool get_weather) (tool get_weather)))"), "E0211", /never be satisfied/],
    [AGENT(undefined, "(:constraints (before get_weather (tool book_flight)))"), "E0211", /expected \(tool NAME\)/],
    [AGENT(undefined, "(:constraints (at-most 99 (each-tool)))"), "E0304", /exceeds the limit/],
    ['(define a (:states (A (:text "A:") (:token "<x>"))) (:behavior A))', "E0203", /second marker/],
    ['(define a (:states (A (:text "A:") (:tool-args :max-depth x))) (:behavior A))', "E0210", /:max-depth takes/],
  ];
  for (const [spec, code, msg] of cases) {
    it(`${code}: ${msg.source.slice(0, 50)}`, () => {
      const errs = errorsOf(() => compileWith(spec, { "tools.json": tools }));
      const e = errs.find((x) => x.code === code);
      expect(e, errs.map((x) => `${x.code} ${x.message}`).join("\n")).toBeDefined();
      expect(e!.message).toMatch(msg);
      expect(e!.span?.line).toBeGreaterThan(0);
    });
  }
  it("tool constraints that multiply past a million states are a limit error, not a hang", () => {
    const many = JSON.stringify(Array.from({ length: 21 }, (_, i) => ({ name: `t${i}` })));
    const errs = errorsOf(() => compileWith(AGENT(undefined, "(:constraints (at-most 1 (each-tool)))"), { "tools.json": many }));
    expect(errs[0]!.code).toBe("E0501");
    expect(errs[0]!.message).toMatch(/toolConstraintStates would be 2097152/);
    expect(errs[0]!.hint).toMatch(/constrain fewer tools/);
  });
  it("at most 13 token markers", () => {
    const states = Array.from({ length: 14 }, (_, i) => `(S${i} (:token "<t${i}>"))`).join(" ");
    const errs = errorsOf(() => compileWith(`(define a (:states ${states}) (:behavior (next ${Array.from({ length: 14 }, (_, i) => `S${i}`).join(" ")})))`, {}));
    expect(errs.map((e) => e.code)).toContain("E0216");
  });
});

describe("tool specs: semantics", () => {
  const c = compileWith(AGENT(undefined, "(:constraints (before (tool search_flights) (tool book_flight)) (at-most 1 (tool get_weather)))"), { "tools.json": JSON.stringify(travel) });
  const S = '{"origin": "FRA", "destination": "JFK", "date": "2026-12-01", "passengers": {"adults": 2}}';
  const B = '{"flight_id": "LH400", "travellers": [{"name": "Ada", "age": 36}]}';
  const W = '{"city": "Oslo"}';
  it("the tool chosen in Action types Input: each tool's arguments pass for it and fail for the others", () => {
    expect(accepts(c, ["get_weather", W])).toBe("conforms");
    expect(accepts(c, ["search_flights", S])).toBe("conforms");
    expect(accepts(c, ["get_weather", S])).toBe("violation");
    expect(accepts(c, ["search_flights", W])).toBe("violation");
  });
  it("before: book_flight only after search_flights; at-most: get_weather once", () => {
    expect(accepts(c, ["book_flight", B])).toBe("violation");
    expect(accepts(c, ["search_flights", S], ["book_flight", B])).toBe("conforms");
    expect(accepts(c, ["get_weather", W], ["search_flights", S], ["get_weather", W])).toBe("violation");
  });
  it("refuses a forbidden call at its first distinguishing byte, not at the end", () => {
    const text = "Action: get_weather\nInput: {\"city\": \"Oslo\"}\nObs:";
    const trace: Trace = { segments: [{ by: "llm", text }, { by: "env", text: " ok\n" }, { by: "llm", text: "Action: get_weather" }] };
    const v = runTrace(byteDfaEngine(c.byteDfa), trace, c.ir.states.map((s) => s.marker));
    // "Action: g" is where a second get_weather becomes certain (no other tool starts with g)
    expect(v).toMatchObject({ verdict: "violation", segment: 2, offset: "Action: ".length });
  });
});

describe("token markers", () => {
  it("are matched by their text without a vocabulary, leftmost-longest among themselves", () => {
    const tokens = [{ text: "<a>", byte: 0xf8 }, { text: "<a>>", byte: 0xf9 }];
    const { bytes, at } = encodeText("x<a>><a>é", tokens);
    expect([...bytes]).toEqual([0x78, 0xf9, 0xf8, 0xc3, 0xa9]);
    expect(at).toEqual([0, 1, 5, 8, 8, 9]);
  });
});

/** Tool calls of a Qwen3 transcript: the arguments of each `<tool_call>` JSON object. */
const callsOf = (t: Trace) => [...t.segments.filter((s) => s.by !== "env").map((s) => s.text).join("")
  .matchAll(/<tool_call>([\s\S]*?)<\/tool_call>/g)].map((m) => m[1]!);

describe("differential: byte automaton = reference interpreter on mutated tool transcripts; ajv agrees on every argument", () => {
  const ajv = new Ajv2020({ strict: false, allErrors: false });
  addFormats(ajv);
  const validate = new Map(travel.map((t) => [t.function.name, ajv.compile(t.function.parameters)]));
  const index = JSON.parse(readFileSync("tests/fixtures/traces/index.json", "utf8")) as { spec: string; trace: string }[];
  for (const spec of ["examples/qwen3-tools.agent", "examples/react-typed.agent"]) {
    it(spec, () => {
      const c = compileSource(readFileSync(spec, "utf8"), spec);
      const engine = byteDfaEngine(c.byteDfa);
      const markers = c.ir.states.map((s) => s.marker);
      const tokens = tokenMarkers(c.ir.states);
      const seeds = index.filter((k) => k.spec === spec).map((k) => JSON.parse(readFileSync(k.trace, "utf8")) as Trace);
      const rand = seededRandom(7);
      const alphabet = ['"', "{", "}", "[", "]", ",", ":", " ", "\n", "1", "a", "A", "-", "<tool_call>", "</tool_call>", "<|im_end|>", "Action:", "book_flight", "get_weather"];
      let agree = 0, conforming = 0, checkedCalls = 0;
      for (let n = 0; n < 400; n++) {
        const base = seeds[n % seeds.length]!;
        const segments = base.segments.map((s) => ({ ...s }));
        const llm = segments.map((s, i) => (s.by === "llm" ? i : -1)).filter((i) => i >= 0);
        const i = llm[Math.floor(rand() * llm.length)]!;
        let text = segments[i]!.text;
        for (let k = 1 + Math.floor(rand() * 2); k > 0; k--) {
          const at = Math.floor(rand() * (text.length + 1));
          const op = rand();
          const ins = alphabet[Math.floor(rand() * alphabet.length)]!;
          text = op < 0.4 ? text.slice(0, at) + text.slice(at + 1) : op < 0.8 ? text.slice(0, at) + ins + text.slice(at) : text.slice(0, at) + ins + text.slice(at + 1);
        }
        segments[i] = { ...segments[i]!, text };
        const trace: Trace = { segments };
        const ref = explainTrace(c.ir, trace);
        const got = runTrace(engine, trace, markers, tokens).verdict === "conforms";
        expect(got, `${JSON.stringify(text)}: reference says ${ref.reason ?? "conforms"}`).toBe(ref.conforms);
        agree++;
        if (!got) continue;
        conforming++;
        if (spec.includes("qwen3")) {
          for (const call of callsOf(trace)) {
            const { name, arguments: args } = JSON.parse(call) as { name: string; arguments: unknown };
            expect(validate.get(name)!(args), call).toBe(true);
            checkedCalls++;
          }
        }
      }
      expect(agree).toBe(400);
      expect(conforming).toBeGreaterThan(10); // the mutations leave some transcripts valid
      if (spec.includes("qwen3")) expect(checkedCalls).toBeGreaterThan(10);
      expect(checkTrace(c.ir, seeds[0]!)).toBe(true);
    });
  }
});
