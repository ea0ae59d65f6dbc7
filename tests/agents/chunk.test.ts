/**
 * Chunk mode (agents/chunk.ts): seed 000's decoding monitor — validate a chunk, cut it at the
 * first violation, correct it by valid-state prefixing, retry within a bound — on hand-made chunks,
 * with scripted completions, and end to end against a real HTTP server (tests/fixtures/openai-
 * server.ts: OpenAI-compatible /v1/completions on 127.0.0.1, served by the tiny stories260K.gguf
 * through node-llama-cpp). Transcripts are checked with the compiler's byte DFA. The model parts
 * skip with a message where the model file is absent.
 */
import { existsSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ChunkModeError, DecodingMonitor, httpCompletions, longestCommonPrefix, matchOption, outputConstrsOf, runChunked,
  type Complete, type CompletionResult,
} from "../../agents/chunk.js";
import { Spec } from "../../bindings/spec.js";
import { compileSource, compileToWasm } from "../../compiler/compile.js";
import type { Compiled } from "../../compiler/ir.js";
import { byteDfaEngine, runTrace, type Trace } from "../../compiler/trace.js";
import { startOpenAIServer, type OpenAIServer } from "../helpers/openai-server.js";

const MODEL = new URL("../../../shared/models/stories260K.gguf", import.meta.url).pathname;
const haveModel = existsSync(MODEL);
if (!haveModel) console.warn(`chunk.test.ts: the end-to-end tests are skipped — the model file ${MODEL} is absent (it ships in the workspace's shared/models)`);

/** After Thought, both "[Action]" and "[Action Input]" may come: their common prefix is "[Action". */
const TWO_ACTIONS = `(define two-actions
  (:states (Tht (:text "[Thought]")) (Act (:text "[Action]")) (Act-Inp (:text "[Action Input]"))
           (Obs (:text "[Observation]") (:flags :env-input)) (Ans (:text "[Answer]")))
  (:behavior (next Tht (or (next Act Obs) (next Act-Inp Obs)) Ans)))`;

const compiledOf = (src: string): Compiled => compileSource(src);
const file = (f: string) => compiledOf(readFileSync(f, "utf8"));
async function monitor(c: Compiled, opts: ConstructorParameters<typeof DecodingMonitor>[1] = {}): Promise<DecodingMonitor> {
  return new DecodingMonitor(await Spec.load(compileToWasm(c)), { outputConstrs: outputConstrsOf(c), ...opts });
}
function conforms(c: Compiled, t: Trace): void {
  expect(runTrace(byteDfaEngine(c.byteDfa), t, c.ir.states.map((s) => s.marker)).verdict).toBe("conforms");
}

describe("pieces", () => {
  it("longest common prefix of marker texts, by characters", () => {
    expect(longestCommonPrefix(["[Action]", "[Action Input]"])).toBe("[Action");
    expect(longestCommonPrefix(["[Thought]", "[Final Thought]"])).toBe("[");
    expect(longestCommonPrefix(["Thought:", "Final Thought:"])).toBe("");
    expect(longestCommonPrefix(["[行动]", "[行动输入]"])).toBe("[行动");
    expect(longestCommonPrefix(["[思考]", "[最终思考]"])).toBe("[");
    expect(longestCommonPrefix(["\u{1F600}a", "\u{1F601}a"])).toBe("");
    expect(longestCommonPrefix([])).toBe("");
  });

  it("content matching as the reference implementation does, plus prefixes", () => {
    const o = ["Search", "Lookup"];
    expect(matchOption("  Search \n", o)).toBe("Search");
    expect(matchOption("lookup", o)).toBe("Lookup");
    expect(matchOption("Look Up", o)).toBe("Lookup");
    expect(matchOption("Searching for the dog", o)).toBe("Search");
    expect(matchOption("I will search", o)).toBe("Search");
    expect(matchOption("I will look up the park", o)).toBe("Lookup");
    expect(matchOption("Sea", o)).toBe("Search");
    expect(matchOption("Sea", o, false)).toBeNull();
    expect(matchOption("Jump", o)).toBeNull();
    expect(matchOption("", o)).toBeNull();
  });
});

describe("DecodingMonitor: cut at the first violation, correct by valid-state prefixing", () => {
  it('"[Thought]" where "[Action]" or "[Action Input]" must come is cut, and "[Action" appended', async () => {
    const c = compiledOf(TWO_ACTIONS);
    const mon = await monitor(c);
    mon.start("Think about it.\n");
    const out = mon.validate("[Thought] I think.\n[Thought] again");
    expect(out).toMatchObject({ status: "continue", ok: false, violated: true, offset: "[Thought] I think.\n[Thought".length });
    expect(out.corrections).toEqual([{ kind: "prefix", state: "Tht", discarded: "[Thought] again", appended: "[Action", expected: ["[Action]", "[Action Input]"] }]);
    expect(mon.text).toBe("[Thought] I think.\n[Action");
    // The model goes on from the prefix.
    expect(mon.validate(" Input] x\n[Observation]").status).toBe("yield");
    mon.feedEnv(" y\n");
    expect(mon.validate("[Answer] z").ok).toBe(true);
    expect(mon.matcher.isAccepting).toBe(true);
    conforms(c, mon.transcript);
    expect(mon.transcript.segments.map((s) => s.by)).toEqual(["prompt", "llm", "env", "llm"]);
  });

  it("a violating marker begun in the previous chunk is cut back into it (the matcher returns to where it was)", async () => {
    const mon = await monitor(compiledOf(TWO_ACTIONS));
    mon.start("");
    expect(mon.validate("[Thought] hmm\n[Tho").ok).toBe(true);
    const before = mon.matcher.state;
    const out = mon.validate("ught] x");
    expect(out.corrections[0]!.discarded).toBe("[Thought] x");
    expect(mon.text).toBe("[Thought] hmm\n[Action");
    expect(mon.matcher.state).not.toBe(before);
    // The same text fed from scratch reaches the same state.
    const fresh = mon.spec.matcher();
    fresh.feedText("[Thought] hmm\n[Action");
    expect(mon.matcher.state).toBe(fresh.state);
  });

  it("text where only a marker may come (start, after env text) is cut to the whitespace before it", async () => {
    const c = file("examples/pass.agent");
    const mon = await monitor(c);
    mon.start("[Question] Who was born first?\n");
    mon.validate("[Thought] search both\n[Action] Search\n[Action Input] A\n[Summary]");
    mon.feedEnv(" A was born in 1966.\n");
    // After a summary: "[Thought]" or "[Final Thought]" — common prefix "[".
    const out = mon.validate("\n[Final Answer] A");
    expect(out.corrections[0]).toMatchObject({ kind: "prefix", discarded: "[Final Answer] A", appended: "[", expected: ["[Thought]", "[Final Thought]"] });
    expect(mon.text.endsWith(" A was born in 1966.\n\n[")).toBe(true);
    expect(mon.validate("Final Thought] A\n[Answer] A").ok).toBe(true);
    conforms(c, mon.transcript);
  });

  it("a violation cut back to the place of the previous correction gets a whole marker (a prefix did not steer the model)", async () => {
    const c = file("examples/pass.agent");
    const mon = await monitor(c);
    mon.start("[Question] q\n");
    mon.validate("[Thought] p\n[Summary]");
    mon.feedEnv(" s\n");
    expect(mon.validate(" are fun").corrections[0]!.appended).toBe("[");
    const again = mon.validate(" are fun"); // a greedy model writes the same after "["
    expect(again.corrections[0]).toMatchObject({ discarded: "[ are fun", appended: "[Final Thought]" });
    expect(mon.text).toBe("[Thought] p\n[Summary] s\n [Final Thought]");
  });

  it('where only "[Action]" may come, the prefix is the whole marker', async () => {
    const mon = await monitor(file("examples/react-brackets.agent"));
    mon.start("[Question] q\n");
    expect(mon.validate("[Thought] x\n[Thought] y").corrections[0]!.appended).toBe("[Action]");
    expect(mon.text).toBe("[Thought] x\n[Action]");
  });

  it('an empty common prefix ("Thought:" / "Final Thought:") appends a whole marker: the one closest to the end, or the first', async () => {
    const c = file("examples/react.agent");
    for (const [choose, marker] of [["progress", "Final Thought:"], ["first", "Thought:"]] as const) {
      const mon = await monitor(c, { choose });
      mon.start("Question: where is the dog?\n");
      const out = mon.validate("Lily went home.");
      expect(out.corrections[0]).toMatchObject({ discarded: "Lily went home.", appended: marker, expected: ["Thought:", "Final Thought:"] });
      expect(mon.text).toBe(marker);
    }
    const custom = await monitor(c, { choose: (cands) => cands[cands.length - 1]! });
    custom.start("");
    custom.validate("Answer: 4");
    expect(custom.text).toBe("Final Thought:");
  });

  it("a newline goes before the correction when the content does not end in whitespace", async () => {
    const mon = await monitor(file("examples/react.agent"));
    mon.start("");
    mon.validate("Thought: I will look. Observation:");
    expect(mon.text).toBe("Thought: I will look. Action:");
    const mon2 = await monitor(file("examples/react.agent"));
    mon2.start("");
    mon2.validate("Thought: I will look.Observation:");
    expect(mon2.text).toBe("Thought: I will look.\nAction:");
  });

  it("content constraints: the content is replaced by the allowed string it matches, and the rest of the chunk is validated", async () => {
    const c = file("examples/react-tools.agent");
    const mon = await monitor(c);
    mon.start("Question: where?\n");
    const out = mon.validate("Thought: go\nAction: searching the park\nAction Input: dog\nObservation:");
    expect(out.status).toBe("yield");
    expect(out.corrections).toEqual([{ kind: "content", state: "action", discarded: " searching the park\n", appended: " Search\n", expected: ["Action Input:"], from: "searching the park", to: "Search" }]);
    expect(mon.text).toBe("Thought: go\nAction: Search\nAction Input: dog\nObservation:");

    // Across chunks: "Look" then " up" — the content starts in the previous chunk.
    const m2 = await monitor(c);
    m2.start("");
    expect(m2.validate("Thought: go\nAction: Look").ok).toBe(true);
    m2.validate(" up\nAction Input: x\n");
    expect(m2.text).toBe("Thought: go\nAction: Lookup\nAction Input: x\n");

    // A correct content followed by a wrong marker is a marker violation, not a content one.
    const m3 = await monitor(c);
    m3.start("");
    const o3 = m3.validate("Thought: go\nAction: Search\nThought: hmm");
    expect(o3.corrections[0]).toMatchObject({ kind: "prefix", discarded: "Thought: hmm", appended: "Action Input:" });
    expect(m3.text).toBe("Thought: go\nAction: Search\nAction Input:");

    // A budget-forced move completes a prefix of an allowed string.
    const m4 = await monitor(c);
    m4.start("");
    m4.validate("Thought: go\nAction: Sea");
    m4.force();
    expect(m4.text).toBe("Thought: go\nAction: Search\n");
  });

  it("content that matches no allowed string fails clearly (or takes the first with contentFallback)", async () => {
    const c = file("examples/react-tools.agent");
    const mon = await monitor(c);
    mon.start("");
    let err: unknown;
    try { mon.validate("Thought: go\nAction: Jump\nAction Input: x"); } catch (e) { err = e; }
    expect(err).toBeInstanceOf(ChunkModeError);
    expect((err as ChunkModeError).reason).toBe("content");
    expect((err as Error).message).toBe('chunk mode: the content of action is "Jump", which matches none of "Search", "Lookup" (exactly, ignoring case or spaces, as a substring or as a prefix)');
    const lenient = await monitor(c, { contentFallback: "first" });
    lenient.start("");
    lenient.validate("Thought: go\nAction: Jump\nAction Input: x");
    expect(lenient.text).toBe("Thought: go\nAction: Search\nAction Input: x");
  });

  it("an invalid marker in an accepting state with nothing valid after it ends the run", async () => {
    const mon = await monitor(file("examples/react.agent"));
    mon.start("");
    const out = mon.validate("Final Thought: 4\nAnswer: 4\nThought: more");
    expect(out.status).toBe("done");
    expect(mon.text).toBe("Final Thought: 4\nAnswer: 4\n");
    expect(mon.finished).toBe(true);
  });
});

/** A scripted model: returns the texts in order (finish "length" unless given). */
function scripted(chunks: (string | CompletionResult)[]): Complete & { calls: { prompt: string; stop: string[]; maxTokens: number }[] } {
  const calls: { prompt: string; stop: string[]; maxTokens: number }[] = [];
  const f = async (prompt: string, o: { stop: string[]; maxTokens: number }) => {
    calls.push({ prompt, ...o });
    const c = chunks[calls.length - 1];
    if (c === undefined) throw new Error(`scripted model: no chunk ${calls.length}`);
    return typeof c === "string" ? { text: c, finishReason: "length" } : c;
  };
  return Object.assign(f, { calls });
}

describe("runChunked with scripted completions", () => {
  it("stop sequences are the env markers; a chunk stopped at one is completed with it; the tool answers", async () => {
    const c = file("examples/react.agent");
    const model = scripted([
      { text: "Thought: add\nAction: Calculator\nAction Input: 2 + 2\n", finishReason: "stop", stopSequence: null },
      { text: "Final Thought: 4\nAnswer: 4", finishReason: "stop", stopSequence: "\n" },
    ]);
    const inputs: (string | undefined)[] = [];
    const run = await runChunked({
      spec: c, complete: model, prompt: "Question: 2 + 2?\n", context: "Solve.\n",
      tools: { Observation: (ctx) => { inputs.push(ctx.last("Action-Input")); return "4"; } },
    });
    expect(run.verdict).toBe("conforms");
    conforms(c, run.transcript);
    expect(inputs).toEqual(["2 + 2"]);
    expect(model.calls[0]).toEqual({ prompt: "Solve.\nQuestion: 2 + 2?\n", stop: ["Observation:"], maxTokens: 64 });
    expect(model.calls[1]!.prompt).toBe("Solve.\nQuestion: 2 + 2?\nThought: add\nAction: Calculator\nAction Input: 2 + 2\nObservation: 4\n");
    expect(run.steps.map((s) => s.state)).toEqual(["Thought", "Action", "Action-Input", "Observation", "Final-Thought", "Answer"]);
    expect(run.requests).toBe(2);
  });

  it("retries are bounded: a model that keeps violating fails with a clear error", async () => {
    const c = file("examples/pass.agent");
    const model = scripted(Array(10).fill("[Thought] plan\n[Final Thought] x"));
    const err = await runChunked({ spec: c, complete: model, prompt: "[Question] q\n", tools: { Sum: () => "s" }, maxRetries: 2 }).catch((e) => e);
    expect(err).toBeInstanceOf(ChunkModeError);
    expect(err.reason).toBe("retries");
    expect(err.message).toMatch(/^chunk mode: 3 chunks in a row violated the spec \(maxRetries 2\); last in state Plan, valid next markers "\[Action\]", "\[Summary\]"; last chunk/);
    expect(model.calls).toHaveLength(3);
    // Each retry was asked to continue from the correction.
    expect(model.calls[1]!.prompt.endsWith("[Thought] plan\n[")).toBe(true);
    conforms(c, { segments: [...err.transcript.segments, { by: "llm", text: "Summary]" }, { by: "env", text: " s\n" }, { by: "llm", text: "[Final Thought] x\n[Answer] y" }] });
  });

  it("a model that never leaves a state is moved on after maxChunksPerState chunks; maxChunks bounds the run", async () => {
    const c = file("examples/react-tools.agent");
    const model = scripted(Array(40).fill(" and then Lily played"));
    const run = await runChunked({
      spec: c, complete: model, tools: { observation: () => "nothing" }, choose: "first", contentFallback: "first", maxChunksPerState: 2,
    });
    expect(run.verdict).toBe("conforms");
    expect(run.steps.filter((s) => s.state === "observation")).toHaveLength(3); // until_3, choosing the loop first
    expect(run.corrections.some((k) => k.kind === "force")).toBe(true);
    const bounded = await runChunked({ spec: c, complete: scripted(Array(40).fill(" la")), tools: { observation: () => "" }, maxChunksPerState: 100, maxChunks: 5 }).catch((e) => e);
    expect(bounded).toBeInstanceOf(ChunkModeError);
    expect(bounded.reason).toBe("chunks");
    expect(bounded.message).toMatch(/gave up after 5 requests/);
  });

  it("when the server does not say which of several env markers stopped it, a short probe decides", async () => {
    const c = compiledOf(`(define two-tools
      (:states (Tht (:text "Thought:")) (Search (:text "Search:") (:flags :env-input)) (Ask (:text "Ask:") (:flags :env-input)) (Ans (:text "Answer:")))
      (:behavior (next Tht (or Search Ask) Ans)))`);
    const model = scripted([
      { text: "Thought: I will ask.\n", finishReason: "stop" },
      { text: "Ask: the user", finishReason: "length" },
      { text: "Answer: yes", finishReason: "stop" },
    ]);
    const run = await runChunked({ spec: c, complete: model, tools: { Search: () => "no", Ask: () => "yes" } });
    expect(model.calls[1]).toMatchObject({ stop: [], maxTokens: 8 });
    expect(run.steps.map((s) => [s.state, s.content])).toEqual([["Tht", "I will ask."], ["Ask", "yes"], ["Ans", "yes"]]);
    conforms(c, run.transcript);
  });
});

describe("httpCompletions", () => {
  it("POSTs {model, prompt, max_tokens, stop, temperature, logprobs} to /v1/completions and reads choices[0]", async () => {
    let body: Record<string, unknown> = {};
    let path = "";
    const server = createServer((req, res) => {
      path = req.url ?? "";
      let raw = "";
      req.on("data", (d) => (raw += d));
      req.on("end", () => {
        body = JSON.parse(raw);
        res.writeHead(body.prompt === "fail" ? 500 : 200, { "content-type": "application/json" });
        res.end(JSON.stringify({ choices: [{ text: " hi", finish_reason: "stop", stop_reason: "Observation:", logprobs: { token_logprobs: [-0.5] } }] }));
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const complete = httpCompletions(`${url}/v1/`, "m", { logprobs: 1 });
      const r = await complete("p", { stop: ["Observation:"], maxTokens: 7 });
      expect(path).toBe("/v1/completions");
      expect(body).toEqual({ model: "m", prompt: "p", max_tokens: 7, temperature: 0, stop: ["Observation:"], logprobs: 1 });
      expect(r).toEqual({ text: " hi", finishReason: "stop", stopSequence: "Observation:", logprobs: [-0.5] });
      await expect(complete("fail", { stop: [], maxTokens: 1 })).rejects.toThrow(/HTTP 500/);
    } finally {
      server.close();
    }
  });
});

describe.skipIf(!haveModel)("chunk mode end to end: a real model behind a real OpenAI-compatible HTTP server", () => {
  let server: OpenAIServer;
  beforeAll(async () => {
    server = await startOpenAIServer({ modelPath: MODEL, contextSize: 1024 });
  });
  afterAll(async () => { await server?.close(); });

  it("ReAct with a closed tool set: the transcript conforms after correction; the tool sees the model's contents", async () => {
    const c = file("examples/react-tools.agent");
    const seen: { action?: string; input?: string }[] = [];
    const before = server.requests.length;
    const run = await runChunked({
      spec: c,
      complete: httpCompletions(server.url, server.model),
      context: "Once upon a time, Lily wanted to find her dog.\n",
      prompt: "Question: Where is the dog?\n",
      tools: {
        observation: (ctx) => {
          seen.push({ action: ctx.last("action"), input: ctx.last("action-input") });
          return "Lily is a little girl who loves to play in the park with her dog.";
        },
      },
      chunkTokens: 12, maxChunksPerState: 1, maxRetries: 3, maxChunks: 60,
      choose: "first", contentFallback: "first", // a story model names no tools: the reference's lenient mode
    });
    if (process.env.SPECC_DEBUG) console.log(JSON.stringify(run, null, 1));
    expect(run.verdict).toBe("conforms");
    conforms(c, run.transcript);
    expect(run.corrections.length).toBeGreaterThan(0);
    expect(server.requests.length - before).toBe(run.requests);
    for (const r of server.requests.slice(before)) expect(r.stop[0] === "Observation:" || r.stop.length === 0).toBe(true);
    const obs = run.steps.flatMap((s, i) => (s.state === "observation" ? [i] : []));
    expect(obs).toHaveLength(seen.length);
    expect(seen.length).toBeGreaterThan(0);
    obs.forEach((i, k) => {
      expect(run.steps[i - 2]).toEqual({ state: "action", content: seen[k]!.action });
      expect(run.steps[i - 1]).toEqual({ state: "action-input", content: seen[k]!.input });
    });
    // The model's own words survive in the transcript: not everything is a correction.
    const llm = run.transcript.segments.filter((s) => s.by === "llm").map((s) => s.text).join("");
    const appended = run.corrections.map((k) => k.appended).join("");
    expect(llm.length).toBeGreaterThan(appended.length);
  });

  it("PASS: a custom marker choice takes the loop with two actions; the Summary comes from the parallel handler", async () => {
    const c = file("examples/pass.agent");
    // The default ("progress") would go straight to [Final Thought]; this chooser plans once, acts twice, then sums up.
    let acts = 0;
    const choose = (cands: string[]) =>
      cands.includes("Act") && acts < 2 ? (acts++, "Act")
        : cands.includes("Plan") && acts === 0 ? "Plan"
          : (["Sum", "Final-Tht"].find((x) => cands.includes(x)) ?? cands[0]!);
    let running = 0;
    let maxRunning = 0;
    const run = await runChunked({
      spec: c,
      complete: httpCompletions(server.url, server.model),
      context: "Lily and Tom played in the park.\n",
      prompt: "[Question] Where is the ball?\n",
      tools: {
        Sum: {
          parallel: true,
          actions: async (a) => {
            maxRunning = Math.max(maxRunning, ++running);
            await new Promise((r) => setTimeout(r, 20));
            running--;
            return `result for ${a.input}`;
          },
          summarizer: (rs) => `${rs.length} results: the ball is in the tree.`,
        },
      },
      chunkTokens: 12, maxChunksPerState: 1, maxRetries: 3, maxChunks: 40, choose,
    });
    if (process.env.SPECC_DEBUG) console.log(JSON.stringify(run, null, 1));
    expect(run.verdict).toBe("conforms");
    conforms(c, run.transcript);
    expect(run.parallel).toHaveLength(1);
    const p = run.parallel[0]!;
    expect(p.calls).toHaveLength(2);
    expect(maxRunning).toBe(2);
    const inps = run.steps.filter((s) => s.state === "Act-Inp").map((s) => s.content);
    expect(p.calls.map((k) => k.input)).toEqual(inps);
    // No scorer in chunk mode here: the summary is used.
    expect(p.chosen).toBe("summary");
    expect(run.steps.find((s) => s.state === "Sum")!.content).toBe("2 results: the ball is in the tree.");
  });
});
