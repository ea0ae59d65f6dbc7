/**
 * @fileoverview Choosers for the Formal-LLM planner (agents/planner.ts): who picks one of the
 * numbered feasible options at a choice point.
 *
 *   scriptedChooser([0, 3, 1])   fixed answers (0-based option indices), for tests and replays
 *   firstChooser()               always the first feasible option
 *   randomChooser(seed)          a seeded uniform pick among the feasible options
 *   llmChooser({ model, sequence })
 *                                a local model (node-llama-cpp) reads the paper's prompt and answers
 *                                with an option NUMBER; the answer is constrained decoding over the
 *                                tokens that spell one of "1" … "n" (an optional leading space, then
 *                                digits, then a newline or end of text): at each step only tokens that
 *                                keep the answer a prefix of a valid number are allowed and the most
 *                                probable one is taken (or sampled), so the model's pick is always one
 *                                of the feasible options, whatever the model
 *   logprobChooser(score)        the option whose text scores highest (e.g. a log-probability)
 *   llamaOptionScorer({ model, sequence })
 *                                the length-normalized log-probability of an option's text after the
 *                                prompt, for logprobChooser
 *   loadLlmChooser(path)         loads a GGUF model on the CPU and returns both, sharing one sequence
 *
 * node-llama-cpp stays a peer, as in bindings/adapters/llama.ts: the model and sequence are typed
 * structurally, and only loadLlmChooser imports the package (dynamically).
 */
import { vocabularyFromLlamaModel, seededRandom, type LlamaModelLike } from "../bindings/adapters/llama.js";
import { PlannerError, type ChoiceContext, type Chooser, type PlanOption } from "./planner.js";
import type { Vocabulary } from "../bindings/vocab.js";

// ───────────────────────────── simple choosers ─────────────────────────────

/**
 * Answers with `indices` in order (0-based, into the options of each choice point that asks).
 * When they run out: `then: "error"` (default) throws, `"first"` takes the first option.
 */
export function scriptedChooser(indices: readonly number[], opts: { then?: "error" | "first" } = {}): Chooser & { used: number } {
  const f = ((ctx: ChoiceContext) => {
    const i = f.used++;
    if (i >= indices.length) {
      if (opts.then === "first") return 0;
      throw new PlannerError(`scripted chooser: no answer left for choice ${i + 1} ("${ctx.question}" with ${ctx.options.length} options)`, "chooser");
    }
    return indices[i]!;
  }) as Chooser & { used: number };
  f.used = 0;
  return f;
}

export function firstChooser(): Chooser {
  return () => 0;
}

/** A seeded uniform pick among the feasible options (mulberry32). */
export function randomChooser(seed: number): Chooser {
  const rand = seededRandom(seed);
  return (ctx) => Math.floor(rand() * ctx.options.length);
}

/** Picks the option with the highest score (ties: the first); `score` is called once per option. */
export function logprobChooser(score: (ctx: ChoiceContext, option: PlanOption, index: number) => number | Promise<number>): Chooser & { log: { question: string; scores: number[]; chosen: number }[] } {
  const f = (async (ctx: ChoiceContext) => {
    const scores: number[] = [];
    for (let i = 0; i < ctx.options.length; i++) scores.push(await score(ctx, ctx.options[i]!, i));
    let best = 0;
    scores.forEach((s, i) => { if (s > scores[best]! || (Number.isNaN(scores[best]!) && !Number.isNaN(s))) best = i; });
    f.log.push({ question: ctx.question, scores, chosen: best });
    return best;
  }) as Chooser & { log: { question: string; scores: number[]; chosen: number }[] };
  f.log = [];
  return f;
}

// ───────────────────────────── node-llama-cpp ─────────────────────────────

type Probs = Map<number, number>;

/** The parts of node-llama-cpp's LlamaContextSequence the choosers use. */
export interface ChooserSequence {
  controlledEvaluate(input: (number | [number, { generateNext: { probabilities: true } }])[]): Promise<(undefined | { next: { probabilities?: Probs } })[]>;
  clearHistory(): Promise<void>;
  eraseContextTokenRanges?(ranges: { start: number; end: number }[]): Promise<void>;
  readonly contextTokens?: readonly number[];
  readonly nextTokenIndex?: number;
}

/** The parts of node-llama-cpp's LlamaModel the choosers use. */
export interface ChooserModel extends LlamaModelLike {
  tokenize(text: string): readonly number[];
}

/**
 * Evaluates token lists on one sequence, re-using the longest prefix already in its context
 * (consecutive planner prompts share their header; the options of one prompt share the prompt).
 */
class PrefixEvaluator {
  constructor(readonly seq: ChooserSequence) {}

  /** Next-token probabilities after each position in `want` (indices into `tokens`). */
  async run(tokens: readonly number[], want: readonly number[]): Promise<Map<number, Probs>> {
    const seq = this.seq;
    let k = 0;
    if (seq.contextTokens && seq.eraseContextTokenRanges && seq.nextTokenIndex !== undefined) {
      const have = seq.contextTokens;
      while (k < have.length && k < tokens.length && have[k] === tokens[k]) k++;
      k = Math.min(k, ...want);
      if (k < seq.nextTokenIndex) await seq.eraseContextTokenRanges([{ start: k, end: seq.nextTokenIndex }]);
    } else {
      await seq.clearHistory();
    }
    const wanted = new Set(want);
    const input = tokens.slice(k).map((t, i) => (wanted.has(i + k) ? [t, { generateNext: { probabilities: true } }] as [number, { generateNext: { probabilities: true } }] : t));
    const res = await seq.controlledEvaluate(input);
    const out = new Map<number, Probs>();
    res.forEach((r, i) => { if (r?.next.probabilities) out.set(i + k, r.next.probabilities); });
    for (const w of want) if (!out.has(w)) throw new Error(`the model returned no probabilities at position ${w}`);
    return out;
  }
}

export interface LlmChooserOptions {
  model: ChooserModel;
  sequence: ChooserSequence;
  /** The model's vocabulary with exact token bytes (default: read from the model's GGUF metadata). */
  vocab?: Vocabulary;
  /** Default: the model's own tokenizer. */
  tokenize?: (text: string) => readonly number[];
  /** The prompt (default: `ctx.prompt`, the paper's format from the planner). */
  prompt?: (ctx: ChoiceContext) => string;
  /** 0 (default): the most probable allowed token; > 0: sample with this temperature. */
  temperature?: number;
  seed?: number;
  /** Keep only the last N prompt tokens (default 1800; the tiny model's context is 2048). */
  maxPromptTokens?: number;
}

export interface LlmAnswer {
  question: string;
  options: number;
  /** What the model wrote (digits, maybe a leading space and a newline). */
  answer: string;
  chosen: number;
  /** The model's probability of each allowed first token, normalized over them: how sure it was. */
  firstTokenMass: number;
  promptTokens: number;
  ms: number;
}

/**
 * The LLM answers the planner's prompt with a number, constrained to the option numbers. Returns a
 * Chooser with a `log` of the answers.
 */
export function llmChooser(o: LlmChooserOptions): Chooser & { log: LlmAnswer[] } {
  const vocab = o.vocab ?? vocabularyFromLlamaModel(o.model);
  const tokenize = o.tokenize ?? ((t: string) => o.model.tokenize(t));
  const rand = seededRandom(o.seed ?? 1);
  const ev = new PrefixEvaluator(o.sequence);
  const maxPrompt = o.maxPromptTokens ?? 1800;
  // Token id → its text when it is only spaces, digits and newlines (every other token is never allowed).
  const small = new Map<number, string>();
  for (let id = 0; id < vocab.size; id++) {
    if (vocab.isSpecial(id)) continue;
    const b = vocab.tokenBytes(id)!;
    if (b.length === 0 || b.length > 8) continue;
    const s = String.fromCharCode(...b);
    if (/^[ \d\n]+$/.test(s)) small.set(id, s);
  }
  const f = (async (ctx: ChoiceContext) => {
    const t0 = performance.now();
    const n = ctx.options.length;
    const targets = new Set(Array.from({ length: n }, (_, i) => String(i + 1)));
    const prefixes = new Set<string>();
    for (const t of targets) for (let i = 1; i <= t.length; i++) prefixes.add(t.slice(0, i));
    const valid = (s: string): boolean => {
      const m = /^( ?)(\d*)(\n?)$/.exec(s);
      if (!m) return false;
      const digits = m[2]!;
      if (m[3]) return targets.has(digits);
      return digits === "" ? m[1] === " " : prefixes.has(digits);
    };
    const longer = (d: string) => [...targets].some((t) => t.length > d.length && t.startsWith(d));
    let toks = [...tokenize((o.prompt ?? ((c) => c.prompt))(ctx))];
    if (toks.length > maxPrompt) toks = toks.slice(toks.length - maxPrompt);
    let probs = (await ev.run(toks, [toks.length - 1])).get(toks.length - 1)!;
    let cur = "";
    let firstTokenMass = NaN;
    for (let step = 0; step < 12; step++) {
      const digits = cur.trim();
      const cands: [number, number][] = [];
      let mass = 0;
      for (const [id, p] of probs) {
        if (vocab.isEos(id)) { if (targets.has(digits)) cands.push([id, p]); continue; }
        const s = small.get(id);
        if (s !== undefined && valid(cur + s)) cands.push([id, p]);
      }
      if (cands.length === 0) throw new PlannerError(`llm chooser: the vocabulary has no token that continues the answer ${JSON.stringify(cur)} to an option number`, "chooser");
      for (const [, p] of cands) mass += p;
      if (step === 0) firstTokenMass = mass;
      let tok = cands[0]![0];
      if (!o.temperature) { let best = -1; for (const [id, p] of cands) if (p > best) { best = p; tok = id; } }
      else {
        const w = cands.map(([, p]) => Math.pow(Math.max(p, 1e-30), 1 / o.temperature!));
        let r = rand() * w.reduce((a, b) => a + b, 0);
        for (let i = 0; i < cands.length; i++) { r -= w[i]!; if (r <= 0) { tok = cands[i]![0]; break; } }
      }
      if (vocab.isEos(tok)) break;
      cur += small.get(tok)!;
      const d = cur.trim();
      if (cur.endsWith("\n") || (targets.has(d) && !longer(d))) break;
      probs = (await o.sequence.controlledEvaluate([[tok, { generateNext: { probabilities: true } }]]))[0]?.next.probabilities ?? new Map();
    }
    const d = cur.trim();
    if (!targets.has(d)) throw new PlannerError(`llm chooser: the answer ${JSON.stringify(cur)} did not finish within 12 tokens`, "chooser");
    const chosen = Number(d) - 1;
    f.log.push({ question: ctx.question, options: n, answer: cur, chosen, firstTokenMass, promptTokens: toks.length, ms: performance.now() - t0 });
    return chosen;
  }) as Chooser & { log: LlmAnswer[] };
  f.log = [];
  return f;
}

export interface OptionScorerOptions {
  model: ChooserModel;
  sequence: ChooserSequence;
  tokenize?: (text: string) => readonly number[];
  /** The text the option continues (default: task, progress and question, then "we choose:"). */
  prompt?: (ctx: ChoiceContext) => string;
}

/** The default scoring prompt: the paper's prompt without the numbered list, ending where the option's text goes. */
export function scoringPrompt(ctx: ChoiceContext): string {
  const lines = [`You will help me generate a plan for the problem: "${ctx.task}" by answering a series of my questions.`, "Current Progress:"];
  ctx.progress.forEach((p, i) => lines.push(`Step ${i + 1}: ${p}`));
  lines.push(`To get ${ctx.target}, we choose:`);
  return lines.join("\n");
}

/**
 * Scores an option by the mean log-probability of its text's tokens after the prompt (the text is
 * tokenized together with the prompt, so the boundary is the tokenizer's own).
 */
export function llamaOptionScorer(o: OptionScorerOptions): (ctx: ChoiceContext, option: PlanOption) => Promise<number> {
  const tokenize = o.tokenize ?? ((t: string) => o.model.tokenize(t));
  const ev = new PrefixEvaluator(o.sequence);
  return async (ctx, option) => {
    const prompt = (o.prompt ?? scoringPrompt)(ctx);
    const base = tokenize(prompt);
    const full = [...tokenize(`${prompt} ${option.text}`)];
    let k = 0;
    while (k < base.length && k < full.length && base[k] === full[k]) k++;
    k = Math.max(1, Math.min(k, full.length - 1));
    const want = Array.from({ length: full.length - k }, (_, i) => k - 1 + i);
    const probs = await ev.run(full, want);
    let lp = 0;
    for (const w of want) lp += Math.log(Math.max(probs.get(w)!.get(full[w + 1]!) ?? 0, 1e-12));
    return lp / want.length;
  };
}

export interface LoadedLlm {
  chooser: Chooser & { log: LlmAnswer[] };
  /** A logprobChooser over llamaOptionScorer, on the same sequence. */
  scorer: Chooser & { log: { question: string; scores: number[]; chosen: number }[] };
  loadMs: number;
  dispose(): Promise<void>;
}

/** Loads a GGUF model with node-llama-cpp on the CPU (no build, no GPU; `threads` default 1) and makes both LLM choosers. */
export async function loadLlmChooser(modelPath: string, opts: Omit<LlmChooserOptions, "model" | "sequence"> & { contextSize?: number; threads?: number } = {}): Promise<LoadedLlm> {
  const t0 = performance.now();
  const { getLlama, LlamaLogLevel } = await import("node-llama-cpp");
  const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
  const model = await llama.loadModel({ modelPath });
  // One thread by default: a tiny model gains nothing from more, and loses much on a busy machine.
  const context = await model.createContext({ threads: opts.threads ?? 1, contextSize: opts.contextSize ?? 2048, sequences: 1 });
  const sequence = context.getSequence() as unknown as ChooserSequence;
  const m = model as unknown as ChooserModel;
  const chooser = llmChooser({ ...opts, model: m, sequence });
  const scorer = logprobChooser(llamaOptionScorer({ model: m, sequence }));
  return {
    chooser, scorer, loadMs: performance.now() - t0,
    dispose: async () => { await context.dispose(); await model.dispose(); await llama.dispose(); },
  };
}
