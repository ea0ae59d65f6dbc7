/**
 * runAgent (agents/runner.ts) end to end in token mode with the real tiny model
 * (../shared/models/stories260K.gguf under node-llama-cpp on CPU): ReAct with a closed tool set,
 * PASS with parallel actions and the summary-or-raw choice by log-probability, Reflexion with an
 * evaluator. Every transcript must conform (checked with the compiler's byte DFA, independently of
 * the .wasm that constrained it), and every handler must have seen the contents the model wrote.
 * The model only knows children's stories, so the token budget (the reference implementation's
 * forced state change) and the specs' bounds are what move the runs along. Skips with a message
 * where the model file is absent.
 */
import { existsSync, readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  chooseByLogProb, collectActions, evaluator, lengthNormalizedScore, llamaBackend, runAgent, transcriptSteps,
  type AgentResult, type TokenBackend,
} from "../../agents/runner.js";
import { vocabularyFromLlamaModel } from "../../bindings/adapters/llama.js";
import { Spec } from "../../bindings/spec.js";
import type { Vocabulary } from "../../bindings/vocab.js";
import { compileSource, compileToWasm } from "../../compiler/compile.js";
import type { Compiled } from "../../compiler/ir.js";
import { byteDfaEngine, runTrace } from "../../compiler/trace.js";

const MODEL = new URL("../../../shared/models/stories260K.gguf", import.meta.url).pathname;
const haveModel = existsSync(MODEL);
if (!haveModel) console.warn(`agent.test.ts: model tests skipped — the model file ${MODEL} is absent (it ships in the workspace's shared/models)`);

/** An example spec with extra run-length constraints (specc's `:constraints`) appended. */
function withConstraints(file: string, constraints: string): string {
  const src = readFileSync(file, "utf8");
  const end = src.lastIndexOf(")");
  return `${src.slice(0, end)}\n  (:constraints ${constraints})${src.slice(end)}`;
}

function conforms(c: Compiled, run: AgentResult): void {
  if (process.env.SPECC_DEBUG) console.log(JSON.stringify(run.transcript.segments, null, 1));
  expect(run.stop).toBe("done");
  expect(run.verdict).toBe("conforms");
  expect(runTrace(byteDfaEngine(c.byteDfa), run.transcript, c.ir.states.map((s) => s.marker)).verdict).toBe("conforms");
  expect(run.steps).toEqual(transcriptSteps(run.transcript.segments, c.ir.states));
}

describe("length-normalized choice between summary and raw results (seed 000 §3)", () => {
  it("scores Σ log p / ((5 + |y|)^α / 6^α)", () => {
    expect(lengthNormalizedScore([-1, -1, -1])).toBeCloseTo(-3 / (8 / 6));
    expect(lengthNormalizedScore([-1, -1, -1], 0)).toBeCloseTo(-3);
    expect(lengthNormalizedScore([-2], 0.6)).toBeCloseTo(-2 / Math.pow(6 / 6, 0.6));
    expect(lengthNormalizedScore([])).toBe(0);
  });

  it("prefers the longer text when its per-token likelihood makes up for its length", () => {
    const summary = [-1, -1, -1]; // Σ -3, 3 tokens: -3 / (8/6) = -2.25
    const raw = Array(10).fill(-0.5); // Σ -5, 10 tokens: -5 / (15/6) = -2
    const c = chooseByLogProb([summary, raw]);
    expect(c.index).toBe(1);
    expect(c.scores[0]).toBeCloseTo(-2.25);
    expect(c.scores[1]).toBeCloseTo(-2);
    // Without normalization (α = 0) the raw sum decides: the summary wins.
    expect(chooseByLogProb([summary, raw], 0).index).toBe(0);
    // A tie goes to the first candidate (the summary).
    expect(chooseByLogProb([[-1], [-1]]).index).toBe(0);
  });

  it("collects the Act / Act-Inp pairs written since the last plan", () => {
    const states = [
      { name: "Ques", marker: "[Question]", env: false }, { name: "Plan", marker: "[Thought]", env: false },
      { name: "Act", marker: "[Action]", env: false }, { name: "Act-Inp", marker: "[Action Input]", env: false },
      { name: "Sum", marker: "[Summary]", env: true },
    ];
    const steps = transcriptSteps([
      { by: "prompt", text: "Context. [Question] q\n" },
      { by: "llm", text: "[Thought] p1\n[Action] Search\n[Action Input] a\n[Summary]" },
      { by: "env", text: " s1\n" },
      { by: "llm", text: "[Thought] p2\n[Action] Search\n[Action Input] b\n[Action] Lookup\n[Action Input] c\n" },
    ], states);
    expect(steps[0]).toEqual({ state: "Ques", content: "q" });
    expect(steps[4]).toEqual({ state: "Sum", content: "s1" });
    expect(collectActions(steps, states, {})).toEqual([
      { index: 0, action: "Search", input: "b" },
      { index: 1, action: "Lookup", input: "c" },
    ]);
  });
});

describe.skipIf(!haveModel)("runAgent with a real model (node-llama-cpp, CPU, token mode)", () => {
  let llama: { dispose(): Promise<void> };
  let model: import("node-llama-cpp").LlamaModel;
  let ctx: import("node-llama-cpp").LlamaContext;
  let vocab: Vocabulary;
  let backend: TokenBackend & { dispose(): void };
  const load = async (source: string) => {
    const compiled = compileSource(source);
    return { compiled, spec: await Spec.load(compileToWasm(compiled), { vocab }) };
  };

  beforeAll(async () => {
    const { getLlama, LlamaLogLevel } = await import("node-llama-cpp");
    const l = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
    llama = l;
    model = await l.loadModel({ modelPath: MODEL });
    // One thread: on this small, shared machine more threads only spin (see tests/fixtures/openai-server.ts);
    // two sequences: one per run, one for scoring continuations.
    ctx = await model.createContext({ threads: 1, contextSize: 1024, sequences: 2 });
    vocab = vocabularyFromLlamaModel(model);
    backend = llamaBackend(model, ctx, vocab);
  });
  afterAll(async () => { backend?.dispose(); await ctx?.dispose(); await model?.dispose(); await llama?.dispose(); });

  it("ReAct with a closed tool set (examples/react-tools.agent): the tool sees the action and its input", async () => {
    const { compiled, spec } = await load(readFileSync("examples/react-tools.agent", "utf8"));
    const KNOWLEDGE: Record<string, string> = {
      Search: "Lily is a little girl who loves to play in the park with her dog.",
      Lookup: "(Result 1 / 1) The park has a big tree and a pond.",
    };
    let total = 0;
    for (const seed of [0, 1, 2]) {
      const calls: { action?: string; input?: string; before: number }[] = [];
      const run = await runAgent({
        spec, backend,
        // Model-only context, with a few-shot example full of markers: it is not part of the transcript.
        context: "Example:\nThought: I look.\nAction: Search\nAction Input: cat\nObservation: A cat.\nFinal Thought: ok\nAnswer: cat\n\nOnce upon a time, Lily wanted to find her dog.\n",
        prompt: "Question: Where is the dog?\n",
        budget: 12, maxTokens: 400, temperature: seed === 0 ? 0 : 0.8, seed,
        tools: {
          observation: (c) => {
            expect(c.state).toBe("observation");
            calls.push({ action: c.last("action"), input: c.last("action-input"), before: c.steps.length });
            return KNOWLEDGE[c.last("action")!]!;
          },
        },
      });
      conforms(compiled, run);
      expect(run.transcript.segments[0]).toEqual({ by: "prompt", text: "Question: Where is the dog?\n" });
      const obs = run.steps.flatMap((s, i) => (s.state === "observation" ? [i] : []));
      expect(obs.length).toBe(calls.length);
      expect(calls.length).toBeLessThanOrEqual(3); // until_3
      total += calls.length;
      obs.forEach((i, k) => {
        // The handler saw exactly the steps before its own, and the contents the model wrote.
        expect(calls[k]!.before).toBe(i);
        expect(run.steps[i - 2]).toEqual({ state: "action", content: calls[k]!.action });
        expect(run.steps[i - 1]).toEqual({ state: "action-input", content: calls[k]!.input });
        expect(["Search", "Lookup"]).toContain(calls[k]!.action);
        expect(run.steps[i]!.content).toBe(KNOWLEDGE[calls[k]!.action!]);
      });
      expect(run.steps[run.steps.length - 1]!.state).toBe("answer");
    }
    expect(total).toBeGreaterThan(0); // the model may leave the loop at once, but not in every run
  });

  it("PASS (examples/pass.agent): the actions since the plan run concurrently; summary or raw results by log-probability", async () => {
    // Exactly two actions and one summary, so that a batch of two is certain with a model that
    // knows nothing of agents.
    const { compiled, spec } = await load(withConstraints("examples/pass.agent", "(at-least 2 Act) (at-most 2 Act) (at-most 1 Sum)"));
    let started = 0;
    let running = 0;
    let maxRunning = 0;
    let release!: () => void;
    const allStarted = new Promise<void>((r) => (release = r));
    const seen: { action: string; input: string }[] = [];
    const run = await runAgent({
      spec, backend,
      context: "Lily and Tom played in the park. Lily lost her ball and her dog.\n",
      prompt: "[Question] Where are the ball and the dog?\n",
      budget: 10, maxTokens: 300,
      tools: {
        Sum: {
          parallel: true,
          // Each action waits until both have started: run one after the other, they would time out.
          actions: async (call) => {
            seen.push({ action: call.action, input: call.input });
            started++;
            running++;
            maxRunning = Math.max(maxRunning, running);
            if (started === 2) release();
            await Promise.race([allStarted, new Promise((_, rej) => setTimeout(() => rej(new Error("the actions did not run concurrently")), 3000))]);
            running--;
            return `${call.action} ${call.input}: the dog is under the tree.`;
          },
          summarizer: (results) => `The dog is under the tree (${results.length} results).`,
        },
      },
    });
    conforms(compiled, run);
    expect(maxRunning).toBe(2);
    expect(run.parallel).toHaveLength(1);
    const rec = run.parallel[0]!;
    // The actions are the Act / Act-Inp contents the model wrote, in order.
    const acts = run.steps.filter((s) => s.state === "Act").map((s) => s.content);
    const inps = run.steps.filter((s) => s.state === "Act-Inp").map((s) => s.content);
    expect(seen).toEqual(acts.map((a, i) => ({ action: a, input: inps[i] })));
    expect(rec.calls.map((c) => [c.action, c.input])).toEqual(acts.map((a, i) => [a, inps[i]]));
    expect(rec.summary).toBe("The dog is under the tree (2 results).");
    expect(rec.raw).toMatch(/^1\. [\s\S]*\n2\. /);
    // The backend scores text, so the choice was made by length-normalized log-probability.
    expect(rec.scores).toBeDefined();
    expect(rec.chosen).toBe(rec.scores![0] >= rec.scores![1] ? "summary" : "raw");
    expect(run.steps.find((s) => s.state === "Sum")!.content).toBe(rec.chosen === "summary" ? rec.summary : rec.raw);
    expect(run.steps[0]).toEqual({ state: "Ques", content: expect.stringContaining("Where are the ball and the dog?") });
  });

  it("the scorer gives the model's log-probabilities: a likely continuation beats an unlikely one", async () => {
    const ctxText = "Once upon a time, there was a little girl named";
    const likely = await backend.logprobs!(ctxText, " Lily.");
    const unlikely = await backend.logprobs!(ctxText, " xylophone quartz.");
    expect(likely.every((x) => x <= 0 && Number.isFinite(x))).toBe(true);
    expect(chooseByLogProb([unlikely, likely]).index).toBe(1);
  });

  it("Reflexion (examples/reflexion.agent): the Evaluation state calls the evaluator with the proposed answer", async () => {
    const { compiled, spec } = await load(withConstraints("examples/reflexion.agent", "(at-least 1 Evaluator) (at-most 1 Evaluator) (at-most 2 Action)"));
    const answers: string[] = [];
    const run = await runAgent({
      spec, backend,
      context: "Lily wanted to know the name of her dog.\n",
      prompt: "Question: What is the name of the dog?\n",
      budget: 10, maxTokens: 400,
      tools: {
        Observation: (c) => `The dog ${c.last("Action-Input") ?? ""} is called Max.`,
        Evaluator: evaluator((answer) => {
          answers.push(answer);
          return answer.includes("Max") ? "correct" : "incorrect: the dog is called Max";
        }),
      },
    });
    conforms(compiled, run);
    const i = run.steps.findIndex((s) => s.state === "Evaluator");
    expect(answers).toEqual([run.steps[i - 1]!.content]);
    expect(run.steps[i - 1]!.state).toBe("Answer");
    expect(run.steps[i]!.content).toMatch(/^(correct|incorrect: the dog is called Max)$/);
    expect(run.steps[i + 1]!.state).toBe("Reflection");
    expect(run.steps[run.steps.length - 1]!.state).toBe("Finish");
  });

  it("AgentSpec rules guard every tool call: a blocked call never runs and the run still conforms", async () => {
    const { compiled, spec } = await load(readFileSync("examples/react-tools.agent", "utf8"));
    const { parseRules } = await import("../../compiler/rules/index.js");
    const { RuleEnforcer, toolCall } = await import("../../agents/rules.js");
    const rules = parseRules("rule @no_lookup\ntrigger Wiki.Lookup\ncheck\n  true\nenforce\n  stop\nend\n", "guard.rules");
    const enforcer = new RuleEnforcer(rules, { predicates: {} });
    const ran: string[] = [];
    const decisions: string[] = [];
    for (const seed of [1, 2, 3]) {
      const run = await runAgent({
        spec, backend, prompt: "Question: Where is the dog?\n", budget: 10, maxTokens: 300, temperature: 0.8, seed,
        tools: { observation: (c) => { ran.push(c.last("action")!.trim()); return "The dog is in the park."; } },
        guard: {
          enforcer,
          toCall: (_state, steps) => {
            const action = [...steps].reverse().find((st) => st.state === "action")?.content.trim() ?? "";
            const input = [...steps].reverse().find((st) => st.state === "action-input")?.content.trim() ?? "";
            return toolCall(`Wiki.${action}`, { query: input });
          },
        },
      });
      conforms(compiled, run);
      decisions.push(...run.decisions.map((d) => `${d.original.tool}:${d.action}`));
      for (const d of run.decisions.filter((x) => x.action === "block")) expect(d.blockedBy?.ruleId).toBe("no_lookup");
      const envs = run.transcript.segments.filter((x) => x.by === "env").map((x) => x.text);
      expect(envs.length).toBe(run.decisions.length);
    }
    expect(ran.every((a) => a === "Search")).toBe(true); // Lookup never executed
    expect(decisions.every((d) => d === "Search:allow" || d === "Lookup:block")).toBe(true);
    expect(decisions).toContain("Lookup:block");
    expect(decisions).toContain("Search:allow");
  });

  it("a missing handler is a clear error before anything runs", async () => {
    const { spec } = await load(readFileSync("examples/react-tools.agent", "utf8"));
    await expect(runAgent({ spec, backend, tools: {} })).rejects.toThrow(/no handler for the env-input state observation/);
    await expect(runAgent({ spec, backend, tools: { observation: () => "", action: () => "" } })).rejects.toThrow(/action is not an :env-input state/);
  });
});
