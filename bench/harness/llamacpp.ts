/**
 * @fileoverview The llama.cpp peer of the benchmarks (bench/harness/index.ts), through node-llama-cpp
 * (`benchLlamaCpp`): the GBNF of the same spec on the small GGUF model's own 512-token vocabulary;
 * sampling per token with and without the grammar on the same sequence, and llama.cpp's allowed
 * set compared with specc's mask at every step. `gbnfParseErrorInChild` asks, in a child process,
 * whether llama.cpp takes a GBNF as written.
 *
 * node-llama-cpp is a devDependency: it is imported lazily, never when this module loads.
 */
import { spawnSync, type SpawnSyncReturns } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { pathToFileURL } from "node:url";
import { compileSource, compileToWasm } from "../../compiler/compile.js";
import { emitGrammar } from "../../compiler/emit-grammar.js";
import { parseTrace } from "../../compiler/trace.js";
import { exactEncoder } from "../../bindings/encode.js";
import { Spec } from "../../bindings/spec.js";
import { now, replaySpecc, repoRoot, since, stats, tokenizeTrace, tokenText, wellFormedUtf8Start, type Stats } from "./common.js";
import { DEFAULT_TRACES } from "./specc.js";

const require = createRequire(import.meta.url);

// ---- llama.cpp (node-llama-cpp) -----------------------------------------------------------------------

export interface LlamaCppResult {
  spec: string;
  trace: string;
  model: string;
  vocabSize: number;
  tokens: number;
  llmTokens: number;
  grammarChars: number;
  /** Why llama.cpp refused the GBNF exactly as emitted (then \^ and \- were rewritten as \x5e / \x2d), or null. */
  emittedGrammarError: string | null;
  createGrammarMs: number;
  /** Tokens of the conformant transcript llama.cpp's grammar did not allow (must be empty). */
  rejected: { index: number; token: number; text: string }[];
  /** evaluate + sample one token (probabilities requested, so the grammar is applied to every candidate). */
  sampleWithout: Stats;
  sampleWith: Stats;
  /** p50 with − p50 without: the grammar's share of a sampling step. */
  grammarDeltaP50Ns: number;
  /** The allowed-token set from the grammar state: canBeNextToken for every id (one N-API call each). */
  maskViaCanBeNext: Stats;
  /** specc's warm fillMask on the same 512-token vocabulary and sequence. */
  speccFill: Stats;
  /** Steps where llama.cpp's allowed set and specc's mask differ. */
  maskDiffering: number;
  /**
   * Steps before the first env text whose differences go beyond the explained ones (ill-formed
   * UTF-8 / NUL that only specc allows, control tokens that only llama.cpp lets through). After env
   * text the grammar's env rule can absorb everything, so llama.cpp allows everything there.
   */
  maskDifferingBeyondKnown: number;
  maskStepsBeforeFirstEnv: number;
  maskCompared: number;
  maskDiffExamples: { step: number; kind: "known" | "other" | "env"; context: string; onlySpecc: string[]; onlyLlamaCpp: string[] }[];
}

/**
 * llama.cpp's grammar engine through node-llama-cpp, on the model's own vocabulary (stories260K:
 * 512 tokens). Each step evaluates the transcript's previous token and samples the next with
 * probabilities requested (so the grammar is applied to the whole candidate list, not only to the
 * greedy choice); the grammar state is a clone of one that follows the transcript, and the
 * transcript's token is fed next whatever was sampled. The same sequence is run without grammar.
 */
export async function benchLlamaCpp(specPaths: string[], modelPath: string, iterations: number, onProgress: (s: string) => void = () => {}): Promise<LlamaCppResult[]> {
  const nlc = await import("node-llama-cpp");
  const { vocabularyFromLlamaModel } = await import("../../bindings/adapters/llama.js");
  const logs: string[] = [];
  const llama = await nlc.getLlama({ gpu: false, build: "never", logLevel: nlc.LlamaLogLevel.error, logger: (_level, message) => void logs.push(message) });
  const model = await llama.loadModel({ modelPath });
  const results: LlamaCppResult[] = [];
  type Bindings = { AddonSampler: { acceptGrammarEvaluationStateToken(s: unknown, t: number): void; canBeNextTokenForGrammarEvaluationState(s: unknown, t: number): boolean } };
  const sampler = (llama as unknown as { _bindings: Bindings })._bindings.AddonSampler;
  const stateOf = (s: unknown) => (s as { _state: unknown })._state;
  try {
    const vocab = vocabularyFromLlamaModel(model);
    const encode = exactEncoder((t) => [...model.tokenize(t)], (id) => vocab.tokenBytes(id));
    for (const specPath of specPaths) {
      onProgress(`llama.cpp × ${basename(specPath)}`);
      const compiled = compileSource(readFileSync(specPath, "utf8"), specPath);
      const spec = await Spec.load(compileToWasm(compiled), { vocab });
      const tracePath = join(repoRoot(), DEFAULT_TRACES[basename(specPath)] ?? "");
      const trace = parseTrace(readFileSync(tracePath, "utf8"), tracePath);
      const replay = tokenizeTrace(trace, spec.states.map((s) => s.marker), encode);
      const seq: { id: number; llm: boolean }[] = [];
      for (const seg of replay.segments) for (const id of seg.tokens) seq.push({ id, llm: seg.by === "llm" });
      let gbnf = emitGrammar(compiled.byteDfa, "gbnf", compiled.ir.name);
      // Does llama.cpp take the GBNF exactly as emitted? Asked in a child process: its parser prints
      // the whole rest of the grammar to stderr on an error, which would bury the progress output.
      const emittedError = gbnfParseErrorInChild(gbnf);
      if (emittedError !== null) {
        // llama.cpp's GBNF parser refuses emit-grammar's \^ ("unknown escape"): retry with \^ (and
        // \-, to be safe) written as hex escapes of the same characters.
        gbnf = gbnf.replace(/\\\\|\\\^|\\-/g, (m) => (m === "\\^" ? "\\x5e" : m === "\\-" ? "\\x2d" : m));
      }
      let t0 = now();
      const grammar = await llama.createGrammar({ grammar: gbnf });
      const createGrammarMs = since(t0) / 1e6;
      // Correctness + the allowed set per LLM step, against specc's mask.
      const rejected: LlamaCppResult["rejected"] = [];
      const check = new nlc.LlamaGrammarEvaluationState({ model, grammar });
      const sm = spec.matcher();
      const mask = new Int32Array(spec.maskWords);
      const canTimes: number[] = [];
      const speccTimes: number[] = [];
      const diffs: LlamaCppResult["maskDiffExamples"] = [];
      let differing = 0;
      let differingBeyondKnown = 0;
      let compared = 0;
      let stepsBeforeEnv = 0;
      let afterEnv = false;
      let context = "";
      let step = 0;
      sm.reset();
      outer: for (const seg of replay.segments) {
        if (seg.by === "env") sm.feedEnv(seg.text);
        else if (seg.by === "prompt") sm.feedText(seg.text);
        for (const id of seg.tokens) {
          if (seg.by === "llm") {
            t0 = now();
            const allowed: number[] = [];
            for (let t = 0; t < vocab.size; t++) if (sampler.canBeNextTokenForGrammarEvaluationState(stateOf(check), t)) allowed.push(t);
            canTimes.push(since(t0));
            sm.fillMask(mask);
            const onlyL: string[] = [];
            const onlyS: string[] = [];
            let explained = 0;
            const set = new Set(allowed);
            for (let t = 0; t < vocab.size; t++) {
              const s = ((mask[t >> 5]! >>> (t & 31)) & 1) === 1;
              if (s === set.has(t)) continue;
              (s ? onlyS : onlyL).push(tokenText(vocab, t));
              const b = vocab.tokenBytes(t);
              // Known, explained differences: specc allows ill-formed UTF-8 and NUL bytes in free text
              // (llama.cpp's grammar decodes code points and stops at NUL); llama.cpp lets control tokens
              // with an empty piece through (specc never allows a special token).
              if ((s && b && (!wellFormedUtf8Start(b) || b.includes(0))) || (!s && vocab.isSpecial(t) && !vocab.isEos(t))) explained++;
            }
            compared++;
            if (!afterEnv) stepsBeforeEnv++;
            if (onlyL.length + onlyS.length) {
              differing++;
              const beyond = !afterEnv && explained < onlyL.length + onlyS.length;
              if (beyond) differingBeyondKnown++;
              const kind = afterEnv ? "env" : beyond ? "other" : "known";
              if (diffs.filter((d) => d.kind === kind).length < (kind === "other" ? 3 : 1)) diffs.push({ step, kind, context: context.slice(-40), onlySpecc: onlyS.slice(0, 6), onlyLlamaCpp: onlyL.slice(0, 6) });
            }
            step++;
          }
          if (!sampler.canBeNextTokenForGrammarEvaluationState(stateOf(check), id)) {
            rejected.push({ index: step, token: id, text: tokenText(vocab, id) });
            break outer;
          }
          sampler.acceptGrammarEvaluationStateToken(stateOf(check), id);
          if (seg.by === "llm") sm.commit(id);
          context += tokenText(vocab, id);
        }
        if (seg.by === "env") afterEnv = true;
      }
      // specc on the same vocabulary and sequence, warm.
      spec.precompute();
      for (let it = 0; it < 20; it++) {
        replaySpecc(sm, replay, (x) => {
          const a = now();
          x.fillMask(mask);
          if (it >= 10) speccTimes.push(since(a));
        });
      }
      // Sampling with and without the grammar on the same sequence.
      const ctx = await model.createContext({ threads: 1, contextSize: Math.max(256, Math.ceil((seq.length + 8) / 256) * 256) });
      const sequence = ctx.getSequence();
      const run = async (withGrammar: boolean): Promise<number[]> => {
        await sequence.clearHistory();
        const follow = new nlc.LlamaGrammarEvaluationState({ model, grammar });
        const times: number[] = [];
        const it = sequence.evaluateWithMetadata([seq[0]!.id as never], { probabilities: true }, { temperature: 0, ...(withGrammar ? { grammarEvaluationState: () => follow.clone() } : {}) });
        await it.next();
        sampler.acceptGrammarEvaluationStateToken(stateOf(follow), seq[0]!.id);
        for (let i = 1; i < seq.length; i++) {
          t0 = now();
          const r = await it.next(seq[i]!.id as never);
          const dt = since(t0);
          if (r.done) break;
          if (seq[i]!.llm) times.push(dt);
          sampler.acceptGrammarEvaluationStateToken(stateOf(follow), seq[i]!.id);
        }
        await it.return(undefined);
        return times;
      };
      const without: number[] = [];
      const withG: number[] = [];
      if (rejected.length === 0) {
        await run(false); // warm-up
        for (let i = 0; i < iterations; i++) {
          without.push(...(await run(false)));
          withG.push(...(await run(true)));
        }
      }
      await ctx.dispose();
      const sw = stats(without);
      const sg = stats(withG);
      results.push({
        spec: basename(specPath),
        trace: tracePath.slice(repoRoot().length + 1),
        model: basename(modelPath),
        vocabSize: vocab.size,
        tokens: seq.length,
        llmTokens: replay.llmTokens,
        grammarChars: gbnf.length,
        emittedGrammarError: emittedError,
        createGrammarMs,
        rejected,
        sampleWithout: sw,
        sampleWith: sg,
        grammarDeltaP50Ns: sg.p50 - sw.p50,
        maskViaCanBeNext: stats(canTimes),
        speccFill: stats(speccTimes),
        maskDiffering: differing,
        maskDifferingBeyondKnown: differingBeyondKnown,
        maskStepsBeforeFirstEnv: stepsBeforeEnv,
        maskCompared: compared,
        maskDiffExamples: diffs,
      });
    }
  } finally {
    await model.dispose();
    await llama.dispose();
  }
  return results;
}

/** null when llama.cpp (node-llama-cpp, in a child process) accepts the GBNF, else its error. */
export function gbnfParseErrorInChild(gbnf: string): string | null {
  let entry: string;
  try {
    entry = pathToFileURL(require.resolve("node-llama-cpp")).href;
  } catch {
    return "node-llama-cpp is not installed";
  }
  const script = `import { readFileSync } from "node:fs";
const { getLlama, LlamaLogLevel } = await import(process.env.SPECC_NLC);
const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.disabled });
try { await llama.createGrammar({ grammar: readFileSync(0, "utf8") }); console.log("OK"); }
catch (e) { console.log("ERR " + String(e?.message ?? e).split("\\n")[0]); }
await llama.dispose();`;
  // A script file, not `node -e`: node-llama-cpp tests its binary in a child that inherits execArgv.
  const dir = mkdtempSync(join(tmpdir(), "specc-gbnf-"));
  const file = join(dir, "check.mjs");
  writeFileSync(file, script);
  let r: SpawnSyncReturns<string>;
  try {
    r = spawnSync(process.execPath, [file], { input: gbnf, encoding: "utf8", env: { ...process.env, SPECC_NLC: entry }, timeout: 120_000 });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const out = (r.stdout ?? "").trim().split("\n").pop() ?? "";
  if (out === "OK") return null;
  const why = (r.stderr ?? "").split("\n").find((l) => /error parsing grammar/.test(l));
  return `${out.replace(/^ERR /, "") || `exit ${r.status}`}${why ? ` — ${why.slice(0, 140)}` : ""}`;
}
