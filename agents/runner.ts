/**
 * @fileoverview Running a compiled agent spec end to end: an LLM backend writes the LLM states,
 * host handlers answer the `:env-input` states, and the result is the transcript (DESIGN §4) plus
 * every visited state's content as data.
 *
 * ```ts
 * const spec = await Spec.load("react.wasm", { vocab });
 * const run = await runAgent({
 *   spec, backend: llamaBackend(model, context, vocab),     // context: { sequences: 2 } for PASS's choice
 *   context: "Answer the question. Use Thought/Action/Action Input/Observation.\n",   // model only
 *   prompt: "Question: Where is the dog?\n",                                           // the run's own text
 *   tools: { Observation: (ctx) => search(ctx.last("Action-Input") ?? "") },
 *   budget: 32, maxTokens: 400,
 * });
 * run.transcript;   // {segments: [{by: "prompt"|"llm"|"env", text}]}
 * run.steps;        // [{state: "Thought", content: "…"}, {state: "Action", content: "Search"}, …]
 * ```
 *
 * Token mode is `generateConstrained` of ./llama.ts (masked sampling, jump-forward over forced
 * markers without a forward pass); this module only wraps it: it feeds the prompt's marker part to
 * the matcher, turns each yield into a call of the env state's handler, and parses the steps.
 * Chunk mode for models behind an HTTP API is ./chunk.ts; it shares the handlers defined here.
 *
 * Env-state handlers, registered by the env-input state's name:
 * - a function `(ctx) => text` — a tool (ReAct's Observation), or an evaluator (Reflexion's
 *   Evaluation: see `evaluator()`, which hands it the proposed answer);
 * - `{ parallel: true, actions, summarizer }` — PASS (seed 000 §3): the Act/Act-Inp pairs written
 *   since the last plan run concurrently through `actions` (Promise.all), `summarizer` turns their
 *   results into a summary, and when the backend can score text (`logprobs`) the env text is the
 *   summary or the numbered raw results, whichever has the higher length-normalized
 *   log-probability (`chooseByLogProb`).
 * A handler's text reaches the model and the transcript as `envText(text)`: trimmed, one space
 * after the marker, a newline before the next one.
 */
import { firstMarker, type Segment, type Trace, byteDfaEngine, runTrace, type Verdict } from "../compiler/trace.js";
import { generateConstrained, type ConstrainedResult, type SequenceLike } from "../bindings/adapters/llama.js";
import type { Spec } from "../bindings/spec.js";
import type { Vocabulary } from "../bindings/vocab.js";
import type { Decision, ToolCall } from "./rules.js";

// ---- Steps -----------------------------------------------------------------------------------------

/** One visited spec state and its content (trimmed). */
export interface Step {
  state: string;
  content: string;
}

interface StateLike {
  readonly name: string;
  readonly marker: string;
  readonly env: boolean;
}

/** The leftmost occurrence of any marker in `text` from `from`, the longest one on a tie. */
export function nextMarker(text: string, from: number, states: readonly StateLike[]): { at: number; state: StateLike } | null {
  let best: { at: number; state: StateLike } | null = null;
  for (const s of states) {
    const at = text.indexOf(s.marker, from);
    if (at < 0) continue;
    if (!best || at < best.at || (at === best.at && s.marker.length > best.state.marker.length)) best = { at, state: s };
  }
  return best;
}

/**
 * The steps of a transcript: prompt and LLM text split at markers (leftmost-longest, as the
 * automaton reads them; prompt text before the first marker is context and skipped), env text is
 * the content of the env state it answers. Contents are trimmed.
 */
export function transcriptSteps(segments: readonly Segment[], states: readonly StateLike[]): Step[] {
  const steps: Step[] = [];
  const append = (t: string) => {
    if (steps.length) steps[steps.length - 1]!.content += t;
  };
  for (const seg of segments) {
    if (seg.by === "env") {
      append(seg.text);
      continue;
    }
    let i = 0;
    for (;;) {
      const hit = nextMarker(seg.text, i, states);
      if (!hit) {
        append(seg.text.slice(i));
        break;
      }
      append(seg.text.slice(i, hit.at));
      steps.push({ state: hit.state.name, content: "" });
      i = hit.at + hit.state.marker.length;
    }
  }
  for (const s of steps) s.content = s.content.trim();
  return steps;
}

// ---- Handlers --------------------------------------------------------------------------------------

/** What a handler sees. */
export interface AgentContext {
  /** The env-input state being answered. */
  readonly state: string;
  /** The states visited before it (its own step is not included), contents trimmed. */
  readonly steps: readonly Step[];
  /** The content of the latest visit of `state`, if any. */
  last(state: string): string | undefined;
  /** The run's text so far from its first marker (prompt part, LLM text, env text). */
  readonly text: string;
}

/**
 * Env text a handler wants used exactly as it is (a chat template's tool-response turn), instead
 * of being shaped by `envText`.
 */
export interface RawEnv { raw: string }

/** A tool or evaluator: returns the env state's content. */
export type ToolHandler = (ctx: AgentContext) => string | RawEnv | Promise<string | RawEnv>;

/** One action collected for a parallel step. */
export interface ActionCall {
  index: number;
  /** The action state's content (e.g. "Search"). */
  action: string;
  /** The input state's content (e.g. "Yanka Dyagileva"). */
  input: string;
}

export interface ActionResult extends ActionCall {
  result: string;
}

/**
 * PASS's summarize step (seed 000 §3): the actions written since the last plan run in parallel,
 * their results are summarized, and the summary or the raw results become the env text.
 */
export interface ParallelHandler {
  parallel: true;
  /** Runs one action; all of a batch are started at once (Promise.all). */
  actions: (call: ActionCall, ctx: AgentContext) => string | Promise<string>;
  /** Turns the results into the summary; without it the raw results are used. */
  summarizer?: (results: ActionResult[], ctx: AgentContext) => string | Promise<string>;
  /** The action state (default "Act", PASS's name in seed 000 Fig 5). */
  action?: string;
  /** The action-input state (default "Act-Inp"). */
  input?: string;
  /** Actions are collected after the latest visit of this state (default "Plan"), or after the last env text. */
  plan?: string;
  /** The raw results as text (default: a numbered list, as in the paper's "No Summarizer" ablation). */
  formatRaw?: (results: ActionResult[]) => string;
  /**
   * Summary or raw results: "logprob" (default) picks by length-normalized log-probability when the
   * backend can score text and the summary otherwise; "summary" / "raw" always pick that one.
   */
  choose?: "logprob" | "summary" | "raw";
  /** α of the length penalty `((5 + |y|) / 6)^α` (default 1). */
  alpha?: number;
}

export type EnvHandler = ToolHandler | ParallelHandler;
/** Handlers by env-input state name. */
export type Tools = Record<string, EnvHandler>;

/**
 * An evaluator for Reflexion's Evaluation state: `fn` gets the proposed answer — the content of
 * `answerState` (default: the LLM state visited right before the evaluation) — and returns the
 * evaluation text, e.g. "correct" or "incorrect: …".
 */
export function evaluator(fn: (answer: string, ctx: AgentContext) => string | Promise<string>, answerState?: string): ToolHandler {
  return (ctx) => {
    const answer = answerState !== undefined ? ctx.last(answerState) : ctx.steps[ctx.steps.length - 1]?.content;
    return fn(answer ?? "", ctx);
  };
}

/**
 * GNMT's length-normalized score (Wu et al. 2016, as used by seed 000 §3):
 * Σ log p(y_i) / ((5 + |y|)^α / (5 + 1)^α).
 */
export function lengthNormalizedScore(logprobs: readonly number[], alpha = 1): number {
  const sum = logprobs.reduce((a, b) => a + b, 0);
  return sum / (Math.pow(5 + logprobs.length, alpha) / Math.pow(6, alpha));
}

/** The index of the candidate with the highest length-normalized score (the first one on a tie). */
export function chooseByLogProb(candidates: readonly (readonly number[])[], alpha = 1): { index: number; scores: number[] } {
  const scores = candidates.map((lp) => lengthNormalizedScore(lp, alpha));
  let index = 0;
  for (let i = 1; i < scores.length; i++) if (scores[i]! > scores[index]!) index = i;
  return { index, scores };
}

/** Per-token log-probabilities of `continuation` after `context`. */
export type LogprobScorer = (context: string, continuation: string) => Promise<number[]>;

/** What a parallel step did. */
export interface ParallelRecord {
  state: string;
  calls: ActionCall[];
  results: ActionResult[];
  summary?: string;
  raw: string;
  chosen: "summary" | "raw";
  /** Length-normalized scores [summary, raw] when the choice was made by log-probability. */
  scores?: [number, number];
}

/** Default env-text shape: a space after the marker, a newline before the next one. */
export function envText(text: string): string {
  const t = text.trim();
  return t ? ` ${t}\n` : "\n";
}

function isParallel(h: EnvHandler): h is ParallelHandler {
  return typeof h === "object" && h !== null && (h as ParallelHandler).parallel === true;
}

/** Checks the handlers against the spec: one per env-input state, parallel ones name real states. */
export function checkTools(states: readonly StateLike[], tools: Tools): void {
  const names = new Set(states.map((s) => s.name));
  const env = states.filter((s) => s.env).map((s) => s.name);
  const missing = env.filter((n) => !(n in tools));
  if (missing.length) {
    throw new Error(`no handler for the env-input state${missing.length > 1 ? "s" : ""} ${missing.join(", ")} (tools: { ${missing.map((n) => `"${n}": (ctx) => "…"`).join(", ")} })`);
  }
  for (const [name, h] of Object.entries(tools)) {
    if (!names.has(name)) throw new Error(`tools.${name}: the spec has no state ${name} (env-input states: ${env.join(", ") || "none"})`);
    if (!env.includes(name)) throw new Error(`tools.${name}: ${name} is not an :env-input state (the LLM writes its content)`);
    if (typeof h !== "function" && !isParallel(h)) throw new Error(`tools.${name}: expected a function or { parallel: true, actions, summarizer }`);
    if (isParallel(h)) {
      for (const [k, d] of [["action", "Act"], ["input", "Act-Inp"]] as const) {
        const st = h[k] ?? d;
        if (!names.has(st)) throw new Error(`tools.${name} (parallel): the spec has no state ${st}; name the ${k} state: { ${k}: "…" }`);
      }
    }
  }
}

function makeContext(state: string, steps: Step[], text: string): AgentContext {
  return {
    state,
    steps,
    text,
    last: (s) => {
      for (let i = steps.length - 1; i >= 0; i--) if (steps[i]!.state === s) return steps[i]!.content;
      return undefined;
    },
  };
}

/** The actions written since the last plan (or the last env text): pairs of action and input steps. */
export function collectActions(steps: readonly Step[], states: readonly StateLike[], h: Pick<ParallelHandler, "action" | "input" | "plan">): ActionCall[] {
  const action = h.action ?? "Act";
  const input = h.input ?? "Act-Inp";
  const plan = h.plan ?? "Plan";
  const env = new Set(states.filter((s) => s.env).map((s) => s.name));
  let from = 0;
  for (let i = steps.length - 1; i >= 0; i--) {
    if (steps[i]!.state === plan || env.has(steps[i]!.state)) { from = i + 1; break; }
  }
  const calls: ActionCall[] = [];
  for (const s of steps.slice(from)) {
    if (s.state === action) calls.push({ index: calls.length, action: s.content, input: "" });
    else if (s.state === input) {
      const last = calls[calls.length - 1];
      if (last && last.input === "") last.input = s.content;
      else calls.push({ index: calls.length, action: "", input: s.content });
    }
  }
  return calls;
}

/**
 * Answers one yield: runs the state's handler and returns the env text (shaped by `envText`).
 * `promptSoFar` is the model's whole context at the yield (for the log-prob choice).
 */
export async function answerEnv(
  state: string,
  tools: Tools,
  states: readonly StateLike[],
  segments: readonly Segment[],
  promptSoFar: string,
  scorer: LogprobScorer | undefined,
  parallelLog: ParallelRecord[],
): Promise<string> {
  const h = tools[state];
  if (!h) throw new Error(`no handler for the env-input state ${state}`);
  const all = transcriptSteps(segments, states);
  const steps = all.slice(0, -1); // the last step is the env state itself (no content yet)
  const fromFirstMarker = (t: string) => {
    const at = firstMarker(t, states.map((x) => x.marker));
    return at < 0 ? "" : t.slice(at);
  };
  const text = segments.map((s, i) => (i === 0 && s.by === "prompt" ? fromFirstMarker(s.text) : s.text)).join("");
  const ctx = makeContext(state, steps, text);
  if (!isParallel(h)) {
    const r = await h(ctx);
    return typeof r === "string" ? envText(r) : r.raw;
  }

  const calls = collectActions(steps, states, h);
  const outs = await Promise.all(calls.map((c) => h.actions(c, ctx)));
  const results: ActionResult[] = calls.map((c, i) => ({ ...c, result: String(outs[i]).trim() }));
  const raw = (h.formatRaw ?? ((rs) => rs.map((r, i) => `${i + 1}. ${r.result}`).join("\n")))(results);
  const summary = h.summarizer ? String(await h.summarizer(results, ctx)) : undefined;
  const rec: ParallelRecord = { state, calls, results, raw, chosen: "raw", ...(summary !== undefined ? { summary } : {}) };
  if (summary !== undefined) {
    const mode = h.choose ?? "logprob";
    if (mode === "summary" || (mode === "logprob" && !scorer)) rec.chosen = "summary";
    else if (mode === "logprob" && scorer) {
      const [ls, lr] = await Promise.all([scorer(promptSoFar, envText(summary)), scorer(promptSoFar, envText(raw))]);
      const { index, scores } = chooseByLogProb([ls, lr], h.alpha ?? 1);
      rec.chosen = index === 0 ? "summary" : "raw";
      rec.scores = [scores[0]!, scores[1]!];
    }
  }
  parallelLog.push(rec);
  return envText(rec.chosen === "summary" ? summary! : raw);
}

// ---- Token mode ------------------------------------------------------------------------------------

/**
 * A logits source for token mode. `sequence()` gives a fresh, empty evaluation sequence per run
 * (node-llama-cpp's LlamaContextSequence fits); `logprobs` (optional) scores a continuation and
 * enables PASS's log-probability choice.
 */
export interface TokenBackend {
  vocab: Vocabulary;
  tokenize(text: string): number[];
  sequence(): SequenceLike & { dispose?(): void };
  logprobs?: LogprobScorer;
}

/** The node-llama-cpp objects `llamaBackend` uses (structural, so this module never imports it). */
export interface LlamaSequenceLike extends SequenceLike {
  clearHistory(): Promise<void>;
  dispose(): void;
}
export interface LlamaContextLike {
  getSequence(): unknown;
  readonly contextSize: number;
}
export interface LlamaTokenizerLike {
  tokenize(text: string): readonly number[];
}

/**
 * A TokenBackend over a node-llama-cpp model and context. Each run takes a sequence of the
 * context; `logprobs` takes one more (create the context with `sequences: 2` to use it) and
 * evaluates context + continuation from scratch on it.
 */
export function llamaBackend(model: LlamaTokenizerLike, context: LlamaContextLike, vocab: Vocabulary): TokenBackend & { dispose(): void } {
  let scoring: LlamaSequenceLike | undefined;
  const tokenize = (t: string) => [...model.tokenize(t)];
  return {
    vocab,
    tokenize,
    sequence: () => context.getSequence() as LlamaSequenceLike,
    async logprobs(ctxText, continuation) {
      const cont = tokenize(continuation);
      if (!cont.length) return [];
      if (!scoring) {
        try { scoring = context.getSequence() as LlamaSequenceLike; } catch (e) {
          throw new Error(`llamaBackend: scoring text needs a context sequence of its own besides the run's; create the context with { sequences: 2 } (${(e as Error).message})`);
        }
      }
      await scoring.clearHistory();
      let ctxT = tokenize(ctxText || "\n");
      const room = context.contextSize - cont.length - 1;
      if (room < 1) throw new Error(`logprobs: the continuation (${cont.length} tokens) does not fit the context (${context.contextSize})`);
      if (ctxT.length > room) ctxT = ctxT.slice(-room);
      const gen = { generateNext: { probabilities: true as const } };
      const input: (number | [number, typeof gen])[] = [...ctxT.slice(0, -1), [ctxT[ctxT.length - 1]!, gen]];
      cont.forEach((t, i) => input.push(i < cont.length - 1 ? [t, gen] : t));
      const out = await scoring.controlledEvaluate(input);
      const base = ctxT.length - 1;
      return cont.map((t, i) => Math.log(Math.max(out[base + i]?.next.probabilities?.get(t) ?? 0, 1e-30)));
    },
    dispose() {
      scoring?.dispose();
      scoring = undefined;
    },
  };
}

export interface RunAgentOptions {
  /** The spec, loaded with the backend's vocabulary. */
  spec: Spec;
  backend: TokenBackend;
  /** Handlers by env-input state name. */
  tools: Tools;
  /**
   * The run's own text (DESIGN §4 `prompt` segment): up to its first marker it is context, from
   * its first marker on it is fed to the matcher, e.g. "[Question] Who was born first?\n".
   */
  prompt?: string;
  /** Model-only text before the prompt (instructions, few-shot examples); not in the transcript. */
  context?: string;
  /** Sampled-token limit (default 400). */
  maxTokens?: number;
  /** Tokens per spec state before the matcher forces a transition (0 = none; default 0). */
  budget?: number;
  /** 0 = greedy (default). */
  temperature?: number;
  seed?: number;
  /** Append forced text without a forward pass (default true). */
  jumpForward?: boolean;
  onText?: (text: string, kind: "sampled" | "forced" | "env") => void;
  /**
   * AgentSpec rules checked before each tool call executes (seed 003): `toCall` turns a yield into
   * the tool call it stands for (e.g. `toolCall("Wiki." + action, { query: input })`, or null for a
   * yield that calls no tool); a blocked call is not executed and the environment's text says so; a
   * replaced call (llm_self_reflect, invoke_action) runs through `run` when given, else the state's
   * handler runs.
   */
  guard?: {
    enforcer: { check(call: ToolCall, ctx?: unknown): Promise<Decision> };
    toCall: (state: string, steps: readonly Step[]) => ToolCall | null;
    run?: (call: ToolCall) => string | Promise<string>;
    blockedText?: (d: Decision) => string;
  };
}

export interface AgentResult {
  transcript: Trace;
  steps: Step[];
  /** How generation ended ("done": EOS in an accepting state). */
  stop: ConstrainedResult["stop"];
  /** The transcript checked against the spec's own automaton. */
  verdict: Verdict["verdict"];
  sampledTokens: number;
  forcedChars: number;
  /** What each parallel (PASS) step did. */
  parallel: ParallelRecord[];
  /** The rule enforcer's decision for each guarded tool call, in order. */
  decisions: Decision[];
  /** Typed tool calls (handlers made by `typedTools`), in order, with their results; also in `transcript.toolCalls`. */
  toolCalls: CallRecord[];
}

/** The typed tool calls recorded by the `typedTools` handlers (agents/tools.ts) among `tools`, in order. */
export function recordedCalls(tools: Tools): CallRecord[] {
  return Object.values(tools).flatMap((h) => {
    const calls = (h as unknown as { calls?: unknown }).calls;
    return Array.isArray(calls) ? (calls as CallRecord[]) : [];
  });
}

/** A tool call as the model wrote it. */
export interface TypedCall {
  name: string;
  arguments: Record<string, unknown>;
}

/** A call with what came of it. */
export interface CallRecord extends TypedCall {
  /** The state that wrote the call (the :tool-call state, or the :tool-args state of a pair). */
  state: string;
  /** The handler's result as text, or the blocked text. */
  result: string;
  /** The rule that blocked the call (it was not executed). */
  blockedBy?: string;
}


/** Runs a spec in token mode (see the file overview). */
export async function runAgent(o: RunAgentOptions): Promise<AgentResult> {
  const { spec, backend, tools } = o;
  checkTools(spec.states, tools);
  if (spec.vocabSize !== backend.vocab.size) {
    throw new Error(`runAgent: the spec was loaded with a ${spec.vocabSize}-token vocabulary, the backend has ${backend.vocab.size} (load it with { vocab: backend.vocab })`);
  }
  const markers = spec.states.map((s) => s.marker);
  const m = spec.matcher();
  if (o.budget) m.budget = o.budget;
  const prompt = o.prompt ?? "";
  const at = firstMarker(prompt, markers);
  if (at >= 0 && m.feedText(prompt.slice(at)) === "yield") {
    throw new Error("runAgent: the prompt ends with an env-input marker; put the environment's text in the prompt or leave the marker to the model");
  }
  const context = o.context ?? "";
  const segments: Segment[] = [{ by: "prompt", text: prompt }];
  const parallel: ParallelRecord[] = [];
  const decisions: Decision[] = [];
  let seen = 0;
  const sequence = backend.sequence();
  let res: ConstrainedResult;
  try {
    res = await generateConstrained({
      sequence,
      tokenize: backend.tokenize,
      vocab: backend.vocab,
      matcher: m,
      prompt: context + prompt,
      envMarkers: spec.states.filter((s) => s.env).map((s) => ({ name: s.name, marker: s.marker })),
      tool: async (state, textSoFar) => {
        const llm = textSoFar.slice(seen);
        if (llm) segments.push({ by: "llm", text: llm });
        let env: string | undefined;
        if (o.guard) {
          const call = o.guard.toCall(state, transcriptSteps(segments, spec.states).slice(0, -1));
          if (call) {
            const d = await o.guard.enforcer.check(call, { state, segments });
            decisions.push(d);
            if (d.action === "block") {
              env = envText(o.guard.blockedText?.(d) ?? `Blocked by rule @${d.blockedBy?.ruleId ?? "?"}: ${d.blockedBy?.reason ?? "not allowed"}`);
            } else if (o.guard.run) {
              env = envText(await o.guard.run(d.call));
            }
          }
        }
        env ??= await answerEnv(state, tools, spec.states, segments, context + prompt + textSoFar, backend.logprobs, parallel);
        segments.push({ by: "env", text: env });
        seen = textSoFar.length + env.length;
        return env;
      },
      ...(o.maxTokens !== undefined ? { maxTokens: o.maxTokens } : { maxTokens: 400 }),
      ...(o.temperature !== undefined ? { temperature: o.temperature } : {}),
      ...(o.seed !== undefined ? { seed: o.seed } : {}),
      ...(o.jumpForward !== undefined ? { jumpForward: o.jumpForward } : {}),
      ...(o.onText ? { onText: o.onText } : {}),
    });
  } finally {
    sequence.dispose?.();
  }
  const toolCalls = recordedCalls(tools);
  const transcript: Trace = { segments: [{ by: "prompt", text: prompt }, ...res.segments.slice(1)], ...(toolCalls.length ? { toolCalls } : {}) };
  return {
    toolCalls,
    transcript,
    steps: transcriptSteps(transcript.segments, spec.states),
    stop: res.stop,
    verdict: runTrace(byteDfaEngine(spec.dfa), transcript, markers, spec.tokens).verdict,
    sampledTokens: res.sampledTokens,
    forcedChars: res.forcedChars,
    parallel,
    decisions,
  };
}
