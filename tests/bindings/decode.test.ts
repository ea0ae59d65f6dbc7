/**
 * A real decode loop: node-llama-cpp on CPU runs the trained tiny model of ../shared/models
 * (stories260K.gguf, a 512-token SentencePiece vocabulary), constrained by a compiled ReACT spec
 * with a closed tool set (examples/react-tools.agent: Search | Lookup, at most 3 loops) and a small
 * tool that answers observations. Every constrained generation must conform (checked by the
 * reference interpreter and by `specc check`'s runner); the same generations without the mask
 * must not. Skips with a message where the model file is absent (a clone outside this workspace).
 */
import { existsSync, readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateConstrained, vocabularyFromLlamaModel, type ConstrainedResult } from "../../bindings/adapters/llama.js";
import { Spec } from "../../bindings/spec.js";
import type { Vocabulary } from "../../bindings/vocab.js";
import { compileGrammarSource, compileSource, compileToWasm } from "../../compiler/compile.js";
import { parseGrammar, recognize, viablePrefix } from "../../compiler/grammar/index.js";
import type { Compiled } from "../../compiler/ir.js";
import { byteDfaEngine, runTrace } from "../../compiler/trace.js";
import { checkTrace } from "../helpers/interpreter.js";

const MODEL = new URL("../../../shared/models/stories260K.gguf", import.meta.url).pathname;
const haveModel = existsSync(MODEL);
if (!haveModel) console.warn(`decode.test.ts: skipped — the model file ${MODEL} is absent (it ships in the workspace's shared/models)`);

const KNOWLEDGE: Record<string, string> = {
  Search: " Lily is a little girl who loves to play in the park with her dog.\n",
  Lookup: " (Result 1 / 1) The park has a big tree and a pond.\n",
};

describe.skipIf(!haveModel)("constrained decoding with a real model (node-llama-cpp, CPU)", () => {
  let llama: { dispose(): Promise<void> };
  let model: import("node-llama-cpp").LlamaModel;
  let ctx: import("node-llama-cpp").LlamaContext;
  let vocab: Vocabulary;
  let spec: Spec;
  let compiled: Compiled;
  const runs: { constrained: ConstrainedResult; free: ConstrainedResult }[] = [];

  beforeAll(async () => {
    const { getLlama, LlamaLogLevel } = await import("node-llama-cpp");
    const l = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
    llama = l;
    model = await l.loadModel({ modelPath: MODEL });
    ctx = await model.createContext({ threads: l.cpuMathCores, contextSize: 1024, sequences: 1 });
    vocab = vocabularyFromLlamaModel(model);
    compiled = compileSource(readFileSync("examples/react-tools.agent", "utf8"), "react-tools.agent");
    spec = await Spec.load(compileToWasm(compiled), { vocab });
  });
  afterAll(async () => { await ctx?.dispose(); await model?.dispose(); await llama?.dispose(); });

  async function generate(seed: number, constrained: boolean): Promise<ConstrainedResult> {
    const seq = ctx.getSequence();
    try {
      const m = spec.matcher();
      m.budget = 12; // the reference implementation forces a state change after a token budget
      return await generateConstrained({
        sequence: seq as never,
        tokenize: (t) => [...model.tokenize(t)],
        vocab,
        matcher: constrained ? m : null,
        prompt: "Once upon a time, Lily wanted to find her dog. Question: Where is the dog?\n",
        tool: (state, text) => {
          const action = [...text.matchAll(/Action:\s*(Search|Lookup)\s*Action Input:/g)].at(-1)?.[1] ?? "Search";
          expect(state).toBe("observation");
          return KNOWLEDGE[action]!;
        },
        envMarkers: [{ name: "observation", marker: "Observation:" }],
        maxTokens: constrained ? 400 : 120,
        temperature: seed === 0 ? 0 : 0.8,
        seed,
      });
    } finally {
      seq.dispose();
    }
  }

  it("the GGUF vocabulary has the model's 512 tokens with exact bytes", () => {
    expect(vocab.size).toBe(512);
    expect([...vocab.tokenBytes(13)!]).toEqual([10]); // <0x0A>
    expect(vocab.isEos(2)).toBe(true);
    expect(vocab.isSpecial(1)).toBe(true);
  });

  it("every constrained generation conforms; the same generations without the mask do not", async () => {
    for (let seed = 0; seed < 4; seed++) runs.push({ constrained: await generate(seed, true), free: await generate(seed, false) });
    const markers = compiled.ir.states.map((s) => s.marker);
    const engine = byteDfaEngine(compiled.byteDfa);
    for (const { constrained, free } of runs) {
      if (process.env.SPECC_DEBUG) console.log(JSON.stringify(constrained, null, 1), JSON.stringify(free).slice(0, 600));
      expect(constrained.stop).toBe("done");
      expect(constrained.sampledTokens).toBeGreaterThan(10);
      expect(runTrace(engine, constrained, markers).verdict).toBe("conforms");
      expect(checkTrace(compiled.ir, constrained)).toBe(true);
      expect(checkTrace(compiled.ir, free)).toBe(false);
      expect(runTrace(engine, free, markers).verdict).not.toBe("conforms");
    }
    // The tool really ran: observations came from the environment, and the tool names are closed.
    const text = runs.map((r) => r.constrained.segments.map((s) => s.text).join("")).join("\n");
    expect(text).toMatch(/Action:\s*(Search|Lookup)\s*Action Input:/);
    expect(runs.some((r) => r.constrained.segments.some((s) => s.by === "env"))).toBe(true);
  }, 300_000); // ~30 s alone; the whole suite on 2 cores can slow the CPU decode loop several times

  it("a pushdown grammar (json.gbnf, unbounded nesting) in the same decode loop: every output is a JSON prefix, complete when it stopped on its own", async () => {
    // Start at `value` (no leading whitespace): the 260K story model would otherwise write newlines only.
    const cfg = parseGrammar(readFileSync("examples/grammars/json.gbnf", "utf8"), "json.gbnf", { start: "value" });
    const jsonSpec = await Spec.load(compileToWasm(compileGrammarSource(readFileSync("examples/grammars/json.gbnf", "utf8"), "json.gbnf", {}, "value")), { vocab });
    expect(jsonSpec.pushdown).toBe(true);
    let finished = 0;
    for (let seed = 0; seed < 3; seed++) {
      const seq = ctx.getSequence();
      try {
        const r = await generateConstrained({
          sequence: seq as never, tokenize: (t) => [...model.tokenize(t)], vocab, matcher: jsonSpec.matcher(),
          prompt: 'Lily wrote her toys as JSON: ', tool: () => "", envMarkers: [], maxTokens: 80,
          temperature: seed === 0 ? 0 : 0.9, seed,
        });
        const text = r.segments.filter((x) => x.by === "llm").map((x) => x.text).join("");
        expect(r.sampledTokens).toBeGreaterThan(0);
        expect(text).toMatch(/^[[{"\-0-9tfn]/);
        expect(viablePrefix(cfg, text), JSON.stringify(text)).toBe(true);
        if (r.stop === "done") { finished++; expect(recognize(cfg, text), JSON.stringify(text)).toBe(true); }
        if (process.env.SPECC_DEBUG) console.log(r.stop, JSON.stringify(text));
      } finally {
        seq.dispose();
      }
    }
    if (process.env.SPECC_DEBUG) console.log(`json: ${finished}/3 finished within 80 tokens`);
  });
});
