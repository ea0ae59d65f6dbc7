/**
 * Token-level evidence on real vocabularies (issue: token-level masking):
 *  - replaying the seeds' conformant transcripts, tokenized with each real tokenizer (Llama 3,
 *    Qwen3, Gemma 3, Llama 2/Mistral), never hits a token the mask forbids, and ends accepted;
 *    a non-conformant transcript is caught at the offending token;
 *  - 1000 seeded samples per example spec are all conformant by `specc check`'s runner, while the
 *    same sampler without masks produces (almost) none — the numbers are printed.
 */
import { tokenMarkers } from "../../compiler/tokens.js";
import { readdirSync, readFileSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import { exactEncoder } from "../../bindings/encode.js";
import { replayTrace, sampleTraces } from "../../bindings/replay.js";
import { Spec } from "../../bindings/spec.js";
import { Vocabulary } from "../../bindings/vocab.js";
import { compileSource, compileToWasm } from "../../compiler/compile.js";
import { byteDfaEngine, runTrace, type Trace } from "../../compiler/trace.js";
import { loadPackageTokenizer, loadTokenizerJson, TOKENIZER_NAMES } from "../helpers/tokenizers.js";

interface Case { spec: string; trace: string; conforms: boolean }
const cases: Case[] = JSON.parse(readFileSync("tests/fixtures/traces/index.json", "utf8"));
const examples = [...new Set(cases.map((c) => c.spec))];
const load = (p: string) => compileSource(readFileSync(p, "utf8"), p);

describe.each(TOKENIZER_NAMES)("replaying the seed transcripts with the %s tokenizer", (name) => {
  let vocab: Vocabulary;
  let encode: (t: string) => number[];
  const specs = new Map<string, Spec>();
  beforeAll(async () => {
    vocab = Vocabulary.fromTokenizerJsonObject(loadTokenizerJson(name));
    const tok = await loadPackageTokenizer(name);
    // Special added tokens (Qwen3's <|im_end|>) spell their text: a transcript writes marker tokens so.
    const te = new TextEncoder();
    encode = exactEncoder((t) => tok.encode(t), (id) => vocab.tokenBytes(id) ?? ((c) => (c === undefined ? null : te.encode(c)))(vocab.addedContent(id)));
    for (const s of examples) {
      const c = load(s);
      // A spec with token markers runs only with the vocabulary that has those tokens (Qwen3's).
      if (tokenMarkers(c.ir.states).some((t) => vocab.tokenId(t.text) === undefined)) continue;
      specs.set(s, await Spec.load(compileToWasm(c), { vocab }));
    }
    if (name === "qwen3") expect(specs.has("examples/qwen3-tools.agent")).toBe(true);
  });

  it("every token of every conformant transcript is allowed, and every run ends accepted", () => {
    let tokens = 0;
    for (const k of cases.filter((c) => c.conforms && specs.has(c.spec))) {
      const trace: Trace = JSON.parse(readFileSync(k.trace, "utf8"));
      const r = replayTrace(specs.get(k.spec)!, vocab, encode, trace);
      expect(r.error, `${k.trace} under ${k.spec}`).toBeUndefined();
      expect(r.firstForbidden, `${k.trace} under ${k.spec}: ${JSON.stringify(r.steps[r.firstForbidden])}`).toBe(-1);
      expect(r.accepted, `${k.trace} under ${k.spec}`).toBe(true);
      tokens += r.steps.length;
    }
    expect(tokens).toBeGreaterThan(500);
  });

  it("a non-conformant transcript is stopped at the token that breaks it", () => {
    const trace: Trace = { segments: [{ by: "llm", text: "Thought: look it up\nAction: Search\nObservation: made up" }] };
    const r = replayTrace(specs.get("examples/react.agent")!, vocab, encode, trace);
    expect(r.firstForbidden).toBeGreaterThan(0);
    const before = r.steps.slice(0, r.firstForbidden).map((s) => s.text).join("");
    expect(before + r.steps[r.firstForbidden]!.text).toContain("Observation");
    expect(r.steps.slice(0, r.firstForbidden).every((s) => s.allowed)).toBe(true);
  });
});

describe("1000 seeded samples per example spec (Llama 3 vocabulary; Qwen3's for specs with Qwen3 token markers)", () => {
  it("are all conformant under the masks; the same sampler without masks almost never is", async () => {
    const llama = Vocabulary.fromTokenizerJsonObject(loadTokenizerJson("llama3_1"));
    let qwen: Vocabulary | undefined;
    const rows: string[] = [];
    const all = readdirSync("examples").filter((f) => f.endsWith(".agent")).map((f) => `examples/${f}`);
    for (const file of all) {
      const c = load(file);
      const tokens = tokenMarkers(c.ir.states);
      // Token markers bind to the tokens of the model the spec is written for (Llama 3 has no <think>).
      const vocab = tokens.length ? (qwen ??= Vocabulary.fromTokenizerJsonObject(loadTokenizerJson("qwen3"))) : llama;
      const spec = await Spec.load(compileToWasm(c), { vocab });
      const engine = byteDfaEngine(c.byteDfa);
      const markers = c.ir.states.map((s) => s.marker);
      const masked = sampleTraces(spec, vocab, { n: 1000, seed: 42 });
      const ok = masked.filter((t) => runTrace(engine, t, markers, tokens).verdict === "conforms").length;
      const free = sampleTraces(spec, vocab, { n: 200, seed: 42, masked: false, maxTokens: 64 });
      const freeOk = free.filter((t) => runTrace(engine, t, markers, tokens).verdict === "conforms").length;
      rows.push(`${file.padEnd(36)} masked ${ok}/1000 conform · unmasked ${freeOk}/200`);
      expect(ok, file).toBe(1000);
      expect(freeOk, file).toBeLessThanOrEqual(2);
    }
    console.log(rows.join("\n"));
  });
});

describe("a vocabulary baked into the .wasm (specc compile --vocab)", () => {
  it("is attached at load with its precomputed masks, equal to those of passing the vocabulary", async () => {
    const { main } = await import("../../cli/main.js");
    const { mkdtempSync, statSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const { join } = await import("node:path");
    const dir = mkdtempSync(join(tmpdir(), "specc-baked-"));
    const out = join(dir, "react.wasm");
    const vocabPath = (await import("../helpers/tokenizers.js")).tokenizerJsonPath("llama2");
    const code = await main(["compile", "examples/react.agent", "-o", out, "--vocab", vocabPath], { out: () => {}, err: (s) => { throw new Error(s); } });
    expect(code).toBe(0);
    expect(statSync(out).size).toBeGreaterThan(100_000); // 32k tokens' bytes are in the file
    const baked = await Spec.load(out);
    expect(baked.hasVocabulary).toBe(true);
    // the masks came baked too: they are in the cache before any state was asked for
    expect(baked.distinctMasks).toBeGreaterThan(5);
    const vocab = Vocabulary.fromTokenizerJsonObject(loadTokenizerJson("llama2"));
    const given = await Spec.load(compileToWasm(load("examples/react.agent")), { vocab });
    expect(baked.maskWords).toBe(given.maskWords);
    for (let s = 0; s < given.stateCount; s++) expect(baked.stateMask(s)).toEqual(given.stateMask(s));
  });
});

describe("jump-forward tokens", () => {
  it("forcedTokens spell forced() with tokens the mask allows one after another", async () => {
    const vocab = Vocabulary.fromTokenizerJsonObject(loadTokenizerJson("llama3_1"));
    const spec = await Spec.load(compileToWasm(load("examples/react-tools.agent")), { vocab });
    const m = spec.matcher();
    m.feedText("Thought: I will look it up.\nA");
    expect(m.forced()).toBe(""); // free text: "A" need not start a marker
    m.feedText("ction: Sea");
    expect(m.forced()).toBe("rch");
    const ids = m.forcedTokens();
    expect(ids.length).toBeGreaterThan(0);
    const mask = new Int32Array(spec.maskWords);
    let text = "";
    for (const id of ids) {
      m.fillMask(mask);
      expect((mask[id >> 5]! >>> (id & 31)) & 1).toBe(1);
      expect(m.commit(id)).toBe("continue");
      text += new TextDecoder().decode(vocab.tokenBytes(id)!);
    }
    expect(text).toBe("rch");
    expect(m.forced()).toBe("");
  });
});

describe("the transformers.js logits processor", () => {
  // transformers.js itself is not installed: its onnxruntime-node dependency downloads binaries in an
  // install script, which this offline workspace refuses. The processor is driven here exactly as
  // transformers.js drives one: `_call(input_ids, logits)` with a [batch, vocab] Float32 tensor.
  it("masks each row of a batch, commits the previous step's tokens, and sampling under it conforms", async () => {
    const { SpecLogitsProcessor } = await import("../../bindings/adapters/transformers.js");
    const { seededRandom } = await import("../../compiler/random.js");
    const vocab = Vocabulary.fromTokenizerJsonObject(loadTokenizerJson("llama2"));
    const c = load("examples/react-tools.agent");
    const spec = await Spec.load(compileToWasm(c), { vocab });
    const batch = 2;
    const p = new SpecLogitsProcessor(spec, batch);
    for (let r = 0; r < batch; r++) p.matcher(r).budget = 6;
    const ids: number[][] = [[1, 5, 9], [1, 7]];
    const rand = seededRandom(11);
    const segs: { by: "llm" | "env"; text: string }[][] = [[], []];
    const say = (r: number, by: "llm" | "env", t: string) => {
      const last = segs[r]!.at(-1);
      if (last && last.by === by && by === "llm") last.text += t; else segs[r]!.push({ by, text: t });
    };
    const ENV = " found it\n";
    const envIds = [100, 200]; // the tool's text as token ids, appended to the row as transformers.js would
    for (let step = 0; step < 400 && !(p.matcher(0).isDone && p.matcher(1).isDone); step++) {
      const logits = { data: Float32Array.from({ length: batch * vocab.size }, () => rand()), dims: [batch, vocab.size] };
      p._call(ids, logits);
      for (let r = 0; r < batch; r++) {
        if (p.matcher(r).isDone) continue;
        if (p.needsEnv(r)) { ids[r]!.push(...envIds); p.feedEnv(r, ENV, envIds); say(r, "env", ENV); continue; }
        const row = logits.data.subarray(r * vocab.size, (r + 1) * vocab.size);
        let best = 0;
        for (let i = 1; i < row.length; i++) if (row[i]! > row[best]!) best = i;
        expect(row[best]).toBeGreaterThan(-Infinity);
        ids[r]!.push(best);
        if (!vocab.isEos(best)) say(r, "llm", new TextDecoder().decode(vocab.tokenBytes(best)!));
      }
    }
    p._call(ids, { data: new Float32Array(batch * vocab.size), dims: [batch, vocab.size] }); // commits the final EOS
    expect(p.failed.size).toBe(0);
    const engine = byteDfaEngine(c.byteDfa);
    const markers = c.ir.states.map((s) => s.marker);
    for (let r = 0; r < batch; r++) {
      expect(p.matcher(r).isDone).toBe(true);
      expect(runTrace(engine, { segments: segs[r]! }, markers).verdict).toBe("conforms");
    }
  });
});
