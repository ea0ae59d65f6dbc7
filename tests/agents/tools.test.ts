/**
 * Typed tool calls in the runners (agents/tools.ts): handlers get the parsed arguments of each call,
 * calls are recorded in the transcript, and AgentSpec rules guard a tool by name and argument
 * values. Scripted completions in chunk mode (ReAct form and Qwen3's template with its tool-response
 * turn), and the real decode loop in token mode with ../shared/models/stories260K.gguf (its
 * vocabulary has no tool tokens, so examples/react-typed.agent, with text markers).
 */
import { existsSync, readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { httpCompletions, runChunked, type Complete, type CompletionResult } from "../../agents/chunk.js";
import { RuleEnforcer } from "../../agents/rules.js";
import { llamaBackend, runAgent, type AgentContext, type TokenBackend } from "../../agents/runner.js";
import { callsSince, hermesResponses, typedTools } from "../../agents/tools.js";
import { vocabularyFromLlamaModel } from "../../bindings/adapters/llama.js";
import { Spec } from "../../bindings/spec.js";
import type { Vocabulary } from "../../bindings/vocab.js";
import { compileSource, compileToWasm } from "../../compiler/compile.js";
import type { Compiled } from "../../compiler/ir.js";
import { parseRules } from "../../compiler/rules/index.js";
import { tokenMarkers } from "../../compiler/tokens.js";
import { byteDfaEngine, runTrace, type Trace } from "../../compiler/trace.js";
import { startOpenAIServer, type OpenAIServer } from "../helpers/openai-server.js";

const MODEL = new URL("../../../shared/models/stories260K.gguf", import.meta.url).pathname;
const haveModel = existsSync(MODEL);
if (!haveModel) console.warn(`tools.test.ts: the real-model test is skipped — the model file ${MODEL} is absent (it ships in the workspace's shared/models)`);

const travel = JSON.parse(readFileSync("examples/tools/travel.tools.json", "utf8")) as { function: { name: string; parameters: object } }[];
const ajv = new Ajv2020({ strict: false });
addFormats(ajv);
const validate = new Map(travel.map((t) => [t.function.name, ajv.compile(t.function.parameters)]));

const file = (f: string): Compiled => compileSource(readFileSync(f, "utf8"), f);
function conforms(c: Compiled, t: Trace): void {
  expect(runTrace(byteDfaEngine(c.byteDfa), t, c.ir.states.map((s) => s.marker), tokenMarkers(c.ir.states)).verdict).toBe("conforms");
}
/** A completion API that answers from a script, recording what it was asked. */
function scripted(texts: (string | CompletionResult)[]): Complete & { calls: { prompt: string; stop: string[] }[] } {
  const calls: { prompt: string; stop: string[] }[] = [];
  let i = 0;
  const f: Complete = async (prompt, o) => {
    calls.push({ prompt, stop: o.stop });
    const t = texts[Math.min(i++, texts.length - 1)]!;
    return typeof t === "string" ? { text: t, finishReason: "stop", stopSequence: null } : t;
  };
  return Object.assign(f, { calls });
}

const SEARCH = { origin: "FRA", destination: "JFK", date: "2026-12-01", passengers: { adults: 2 } };
const BOOK2 = { flight_id: "LH400", travellers: [{ name: "Ada", age: 36 }, { name: "Tim", age: 7 }] };
const BOOK1 = { flight_id: "LH400", travellers: [{ name: "Ada", age: 36 }] };

describe("callsSince", () => {
  const ctx = (steps: { state: string; content: string }[], state: string): AgentContext =>
    ({ state, steps, text: "", last: () => undefined });
  it("reads the calls written since the env state was last answered, in both forms", () => {
    const steps = [
      { state: "Call", content: JSON.stringify({ name: "get_weather", arguments: { city: "Rome" } }) },
      { state: "Turn-End", content: "…" },
      { state: "Call", content: JSON.stringify({ name: "search_flights", arguments: SEARCH }) },
      { state: "Call", content: JSON.stringify({ name: "get_weather", arguments: { city: "Oslo" } }) },
    ];
    expect(callsSince(ctx(steps, "Turn-End"), { callState: "Call" })).toEqual([
      { state: "Call", name: "search_flights", arguments: SEARCH },
      { state: "Call", name: "get_weather", arguments: { city: "Oslo" } },
    ]);
    const react = [{ state: "Action", content: "get_weather" }, { state: "Action-Input", content: '{"city": "Oslo"}' }];
    expect(callsSince(ctx(react, "Observation"), { nameState: "Action", argsState: "Action-Input" }))
      .toEqual([{ state: "Action-Input", name: "get_weather", arguments: { city: "Oslo" } }]);
  });
  it("hermesResponses writes Qwen3's tool-response turn, raw", () => {
    expect(hermesResponses([{ state: "Call", name: "a", arguments: {}, result: "r1" }, { state: "Call", name: "b", arguments: {}, result: "r2" }]))
      .toEqual({ raw: "\n<|im_start|>user\n<tool_response>\nr1\n</tool_response>\n<tool_response>\nr2\n</tool_response><|im_end|>\n<|im_start|>assistant\n" });
  });
});

describe("runChunked with typed tools (scripted completions)", () => {
  it("ReAct: handlers get parsed arguments; a rule blocks book_flight for more than one traveller by argument value", async () => {
    const c = file("examples/react-typed.agent");
    const rules = parseRules("rule @one_traveller\ntrigger Travel.book_flight\ncheck\n  many_travellers\nenforce\n  stop\nend\n", "travel.rules");
    const enforcer = new RuleEnforcer(rules, { predicates: { many_travellers: (s) => ((s.call.args["travellers"] as unknown[]) ?? []).length > 1 } });
    const got: unknown[] = [];
    const tools = typedTools({
      nameState: "Action", argsState: "Action-Input",
      handlers: {
        search_flights: (args) => { got.push(args); return { flights: ["LH400"] }; },
        book_flight: (args) => { got.push(args); return "booked"; },
        get_weather: () => "sunny",
      },
      guard: { enforcer, toolkit: "Travel" },
    });
    const model = scripted([
      `Thought: search\nAction: search_flights\nAction Input: ${JSON.stringify(SEARCH)}\n`,
      `Thought: book both\nAction: book_flight\nAction Input: ${JSON.stringify(BOOK2)}\n`,
      `Thought: book one\nAction: book_flight\nAction Input: ${JSON.stringify(BOOK1)}\n`,
      { text: "Thought: done\nFinal Answer: booked", finishReason: "stop", stopSequence: "\n" },
    ]);
    const run = await runChunked({ spec: c, complete: model, prompt: "Question: book me a flight\n", tools: { Observation: tools } });
    if (process.env.SPECC_DEBUG) console.log(JSON.stringify(run, null, 1));
    expect(run.verdict).toBe("conforms");
    conforms(c, run.transcript);
    expect(got).toEqual([SEARCH, BOOK1]); // the two-traveller booking never ran
    expect(run.toolCalls.map((r) => [r.name, r.blockedBy ?? "ran"])).toEqual([["search_flights", "ran"], ["book_flight", "one_traveller"], ["book_flight", "ran"]]);
    expect(run.transcript.toolCalls).toEqual(run.toolCalls);
    expect(run.toolCalls[0]!.result).toBe('{"flights":["LH400"]}');
    const obs = run.transcript.segments.filter((s) => s.by === "env").map((s) => s.text);
    expect(obs[1]).toMatch(/Blocked by rule @one_traveller/);
  });

  it("Qwen3's template: calls in <tool_call>, the turn ends on <|im_end|>, the host answers with the tool-response turn", async () => {
    const c = file("examples/qwen3-tools.agent");
    const tools = typedTools({
      callState: "Call", format: hermesResponses,
      handlers: { search_flights: () => "LH400 10:00", book_flight: () => "booked", get_weather: (a) => `sunny in ${String(a["city"])}` },
    });
    const call = (name: string, args: object) => `<tool_call>\n${JSON.stringify({ name, arguments: args })}\n</tool_call>`;
    const model = scripted([
      { text: `<think>\nsearch\n</think>\n\n${call("search_flights", SEARCH)}`, finishReason: "stop", stopSequence: "<|im_end|>" },
      { text: `<think>\nbook, and the weather\n</think>\n\n${call("book_flight", BOOK1)}\n${call("get_weather", { city: "New York" })}`, finishReason: "stop", stopSequence: "<|im_end|>" },
      { text: "<think>\n\n</think>\n\nBooked, and it will be sunny.", finishReason: "stop", stopSequence: "<|im_end|>" },
    ]);
    const run = await runChunked({ spec: c, complete: model, prompt: "<|im_start|>assistant\n", tools: { "Turn-End": tools }, endStops: [] });
    expect(run.verdict).toBe("conforms");
    conforms(c, run.transcript);
    expect(run.toolCalls.map((r) => r.name)).toEqual(["search_flights", "book_flight", "get_weather"]);
    expect(model.calls[0]!.stop).toEqual(["<|im_end|>"]);
    // the second request's prompt is the first turn, <|im_end|>, and the tool-response turn verbatim
    expect(model.calls[1]!.prompt).toContain("</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\nLH400 10:00\n</tool_response><|im_end|>\n<|im_start|>assistant\n");
    expect(model.calls[2]!.prompt).toContain("<tool_response>\nbooked\n</tool_response>\n<tool_response>\nsunny in New York\n</tool_response>");
  });
});

describe.skipIf(!haveModel)("runAgent with typed tools and a real model (stories260K, node-llama-cpp on CPU, token mode)", () => {
  let llama: { dispose(): Promise<void> };
  let model: import("node-llama-cpp").LlamaModel;
  let ctx: import("node-llama-cpp").LlamaContext;
  let vocab: Vocabulary;
  let backend: TokenBackend & { dispose(): void };
  beforeAll(async () => {
    const { getLlama, LlamaLogLevel } = await import("node-llama-cpp");
    const l = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
    llama = l;
    model = await l.loadModel({ modelPath: MODEL });
    ctx = await model.createContext({ threads: 1, contextSize: 2048, sequences: 1 });
    vocab = vocabularyFromLlamaModel(model);
    backend = llamaBackend(model, ctx, vocab);
  });
  afterAll(async () => { backend?.dispose(); await ctx?.dispose(); await model?.dispose(); await llama?.dispose(); });

  it("examples/react-typed.agent: every call the model makes is schema-valid (ajv) and reaches its handler parsed", async () => {
    // At most two rounds: the story model never writes "Final Answer:" of its own accord, and the
    // budget's shortest path from Thought is always "Action:".
    const c = compileSource(readFileSync("examples/react-typed.agent", "utf8").replace("(until\n", "(until_2\n"), "examples/react-typed.agent");
    const spec = await Spec.load(compileToWasm(c), { vocab });
    let calls = 0;
    for (const seed of [0, 1, 2]) {
      const got: { name: string; args: unknown }[] = [];
      const handler = (name: string) => (args: Record<string, unknown>) => { got.push({ name, args }); return "ok"; };
      const tools = typedTools({
        nameState: "Action", argsState: "Action-Input",
        handlers: { search_flights: handler("search_flights"), book_flight: handler("book_flight"), get_weather: handler("get_weather") },
      });
      const run = await runAgent({
        spec, backend, tools: { Observation: tools },
        context: "Once upon a time, Lily wanted to fly to see her dog.\n",
        prompt: "Question: Can Lily fly to New York?\n",
        budget: 24, maxTokens: 900, temperature: seed === 0 ? 0 : 0.8, seed,
      });
      expect(run.verdict, JSON.stringify(run.transcript)).toBe("conforms");
      conforms(c, run.transcript);
      expect(run.toolCalls.map((r) => r.name)).toEqual(got.map((g) => g.name));
      for (const g of got) expect(validate.get(g.name)!(g.args), JSON.stringify(g)).toBe(true);
      calls += got.length;
    }
    expect(calls).toBeGreaterThan(0);
  }, 300_000);
});

describe.skipIf(!haveModel)("chunk mode with typed tools against a real OpenAI-compatible server on loopback (stories260K)", () => {
  let server: OpenAIServer;
  beforeAll(async () => { server = await startOpenAIServer({ modelPath: MODEL, contextSize: 2048 }); });
  afterAll(async () => { await server?.close(); });

  it("unfinished or invalid arguments are completed to the shortest valid ones; every call is schema-valid and reaches its handler", async () => {
    // Two rounds at most (a story model never ends the loop); "first": Action before Final Answer.
    const c = compileSource(readFileSync("examples/react-typed.agent", "utf8").replace("(until\n", "(until_2\n"), "examples/react-typed.agent");
    const got: { name: string; args: unknown }[] = [];
    const handler = (name: string) => (args: Record<string, unknown>) => { got.push({ name, args }); return `${name}: done`; };
    const tools = typedTools({
      nameState: "Action", argsState: "Action-Input",
      handlers: { search_flights: handler("search_flights"), book_flight: handler("book_flight"), get_weather: handler("get_weather") },
    });
    const run = await runChunked({
      spec: c, complete: httpCompletions(server.url, server.model),
      context: "Once upon a time, Lily wanted to fly.\n", prompt: "Question: Can Lily fly to New York?\n",
      tools: { Observation: tools }, chunkTokens: 12, maxChunksPerState: 1, maxRetries: 3, maxChunks: 60, choose: "first",
    });
    expect(run.verdict).toBe("conforms");
    conforms(c, run.transcript);
    expect(got.length).toBe(2);
    for (const g of got) expect(validate.get(g.name)!(g.args), JSON.stringify(g)).toBe(true);
    expect(run.toolCalls.map((r) => r.name)).toEqual(got.map((g) => g.name));
    // the monitor completed the arguments the model did not write (a story model writes no JSON)
    expect(run.corrections.some((k) => k.state === "Action-Input" && k.appended.includes("}"))).toBe(true);
  }, 300_000);
});
