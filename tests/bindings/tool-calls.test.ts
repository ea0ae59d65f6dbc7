/**
 * Typed tool calls under real vocabularies: examples/qwen3-tools.agent with Qwen3's tokenizer (its
 * markers are single added/special tokens) and examples/react-typed.agent with Llama 3's. Seeded
 * samples through the masks conform to the spec (automaton and reference interpreter), every tool
 * call's arguments validate with `ajv` against that tool's schema, token markers are only ever
 * written as their token ids, and hand-written transcripts replay token by token with the real
 * tokenizer — the valid ones never hitting a forbidden token, the invalid ones refused at the token
 * that carries the offending character.
 */
import { readFileSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { Spec } from "../../bindings/spec.js";
import { Vocabulary } from "../../bindings/vocab.js";
import { sampleTraces } from "../../bindings/replay.js";
import { compileSource, compileToWasm } from "../../compiler/compile.js";
import type { Compiled } from "../../compiler/ir.js";
import { tokenMarkers } from "../../compiler/tokens.js";
import { byteDfaEngine, runTrace, type Trace } from "../../compiler/trace.js";
import { checkTrace } from "../helpers/interpreter.js";
import { loadPackageTokenizer, loadTokenizerJson, type PackageTokenizer } from "../helpers/tokenizers.js";

const travel = JSON.parse(readFileSync("examples/tools/travel.tools.json", "utf8")) as { function: { name: string; parameters: object } }[];
const ajv = new Ajv2020({ strict: false });
addFormats(ajv);
const validate = new Map(travel.map((t) => [t.function.name, ajv.compile(t.function.parameters)]));
const QWEN_IDS = { "<think>": 151667, "</think>": 151668, "<tool_call>": 151657, "</tool_call>": 151658, "<|im_end|>": 151645 };

const compile = (file: string): Compiled => compileSource(readFileSync(file, "utf8"), file);
const llmText = (t: Trace) => t.segments.filter((s) => s.by !== "env").map((s) => s.text).join("");
const isSet = (mask: Int32Array, id: number) => ((mask[id >>> 5]! >>> (id & 31)) & 1) === 1;

describe("examples/qwen3-tools.agent with Qwen3's vocabulary (151,669 tokens)", () => {
  let c: Compiled, spec: Spec, vocab: Vocabulary, tok: PackageTokenizer;
  beforeAll(async () => {
    c = compile("examples/qwen3-tools.agent");
    vocab = Vocabulary.fromTokenizerJsonObject(loadTokenizerJson("qwen3"));
    spec = await Spec.load(compileToWasm(c), { vocab });
    tok = await loadPackageTokenizer("qwen3");
  });

  it("binds each token marker to its token id", () => {
    for (const [text, id] of Object.entries(QWEN_IDS)) expect(vocab.tokenId(text), text).toBe(id);
    const m = spec.matcher();
    const mask = new Int32Array(spec.maskWords);
    m.fillMask(mask);
    expect(isSet(mask, QWEN_IDS["<think>"])).toBe(true);
    for (const id of tok.encode("<")) expect(isSet(mask, id)).toBe(false); // only whitespace, then <think>
    expect(m.commit(QWEN_IDS["<think>"])).toBe("continue");
    expect(m.specState).toBe("Think");
  });

  it("1,000 seeded samples conform, every call's arguments validate with ajv, and markers are only ever their token ids", () => {
    const engine = byteDfaEngine(c.byteDfa);
    const markers = c.ir.states.map((s) => s.marker);
    const tokens = tokenMarkers(c.ir.states);
    const ids: number[][] = [];
    const samples = sampleTraces(spec, vocab, { n: 1000, seed: 11, ids });
    let calls = 0;
    const called = new Set<string>();
    samples.forEach((t, n) => {
      expect(runTrace(engine, t, markers, tokens).verdict, `sample ${n}`).toBe("conforms");
      expect(checkTrace(c.ir, t), `sample ${n}: reference interpreter`).toBe(true);
      const text = llmText(t);
      for (const [marker, id] of Object.entries(QWEN_IDS)) {
        // each occurrence of the marker's text is the marker token, never ordinary tokens spelling it
        expect(text.split(marker).length - 1, `sample ${n}: ${marker}`).toBe(ids[n]!.filter((x) => x === id).length);
      }
      for (const m of text.matchAll(/<tool_call>([\s\S]*?)<\/tool_call>/g)) {
        const call = JSON.parse(m[1]!) as { name: string; arguments: unknown };
        const ok = validate.get(call.name)?.(call.arguments);
        expect(ok, `sample ${n}: ${m[1]}`).toBe(true);
        called.add(call.name);
        calls++;
      }
    });
    expect(calls).toBeGreaterThan(300);
    expect([...called].sort()).toEqual(["book_flight", "get_weather", "search_flights"]);
  });

  it("binding keeps the trie order without a re-sort: the derived order equals a full sort of the bound tokens", async () => {
    const { bindTokenMarkers } = await import("../../bindings/token-markers.js");
    const { sortTextTokens } = await import("../../bindings/token-order.js");
    const bound = bindTokenMarkers(vocab, tokenMarkers(c.ir.states));
    const f = bound.flat();
    expect(bound.textOrder!()).toEqual(sortTextTokens(f.bytes, f.offsets, f.special));
    expect(bound.eos).not.toContain(QWEN_IDS["<|im_end|>"]); // the marker, no longer EOS
  });

  it("a second load binds the markers to the same vocabulary object (the trie cache then hits), with the same masks", async () => {
    const { bindTokenMarkers } = await import("../../bindings/token-markers.js");
    const again = await Spec.load(compileToWasm(c), { vocab });
    expect(again.vocab).toBe(spec.vocab);
    const other = bindTokenMarkers(vocab, tokenMarkers(c.ir.states).slice(1));
    expect(other).not.toBe(spec.vocab); // another marker set binds apart
    const a = spec.matcher(), b = again.matcher();
    const ma = new Int32Array(spec.maskWords), mb = new Int32Array(again.maskWords);
    for (const id of [QWEN_IDS["<think>"], QWEN_IDS["</think>"], QWEN_IDS["<tool_call>"]]) {
      a.fillMask(ma); b.fillMask(mb);
      expect(mb).toEqual(ma);
      expect(b.commit(id)).toBe(a.commit(id));
    }
    again.dispose();
  });

  it("the marker's characters written as ordinary tokens are text, not the marker", () => {
    const m = spec.matcher();
    for (const id of [QWEN_IDS["<think>"], QWEN_IDS["</think>"]]) m.commit(id);
    const spelled = [...tok.encode("<"), ...tok.encode("tool"), ...tok.encode("_call"), ...tok.encode(">")];
    expect(spelled).not.toContain(QWEN_IDS["<tool_call>"]);
    for (const id of spelled) expect(m.commit(id)).toBe("continue"); // answer text
    expect(m.specState).toBe("Think-End");
    expect(m.commit(QWEN_IDS["<tool_call>"])).toBe("continue");
    expect(m.specState).toBe("Call");
  });

  it("ends on <|im_end|>: a yield, accepting when no call is pending", () => {
    const m = spec.matcher();
    for (const id of [QWEN_IDS["<think>"], ...tok.encode("\nhi\n"), QWEN_IDS["</think>"], ...tok.encode("Hello!")]) expect(m.commit(id)).toBe("continue");
    expect(m.commit(QWEN_IDS["<|im_end|>"])).toBe("yield");
    expect(m.isAccepting).toBe(true);
  });

  const index = JSON.parse(readFileSync("tests/fixtures/traces/index.json", "utf8")) as { spec: string; trace: string; conforms: boolean }[];
  it("hand-written transcripts replay token by token with Qwen3's tokenizer; bad ones stop at the offending token", () => {
    const cases = index.filter((k) => k.spec === "examples/qwen3-tools.agent");
    expect(cases.length).toBeGreaterThan(6);
    const engine = byteDfaEngine(c.byteDfa);
    const markers = c.ir.states.map((s) => s.marker);
    const mask = new Int32Array(spec.maskWords);
    for (const k of cases) {
      const trace = JSON.parse(readFileSync(k.trace, "utf8")) as Trace;
      const textVerdict = runTrace(engine, trace, markers, tokenMarkers(c.ir.states));
      const m = spec.matcher();
      let refused: { segment: number; from: number; to: number } | null = null;
      trace.segments.forEach((seg, i) => {
        if (refused || seg.by === "prompt") return;
        if (seg.by === "env") { m.feedEnv(seg.text); return; }
        let at = 0;
        for (const id of tok.encode(seg.text)) {
          const piece = tok.decode([id]);
          m.fillMask(mask);
          if (!isSet(mask, id)) { refused = { segment: i, from: at, to: at + piece.length }; return; }
          m.commit(id);
          at += piece.length;
        }
      });
      if (k.conforms) {
        expect(refused, k.trace).toBeNull();
        expect(m.isAccepting, k.trace).toBe(true);
      } else if (textVerdict.verdict === "violation") {
        // the refused token is the one that carries the character the text-level check refuses
        expect(refused, k.trace).not.toBeNull();
        const r = refused as unknown as { segment: number; from: number; to: number };
        expect(r.segment, k.trace).toBe(textVerdict.segment);
        expect(textVerdict.offset, k.trace).toBeGreaterThanOrEqual(r.from);
        expect(textVerdict.offset, k.trace).toBeLessThan(r.to);
      } else {
        expect(refused === null && !m.isAccepting, k.trace).toBe(true);
      }
    }
  });

  it("specc compile --vocab bakes the vocabulary bound to the markers, with masks equal to binding at load", async () => {
    const { main } = await import("../../cli/main.js");
    const { mkdtempSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const { join } = await import("node:path");
    const { tokenizerJsonPath } = await import("../helpers/tokenizers.js");
    const out = join(mkdtempSync(join(tmpdir(), "specc-q3-")), "q3.wasm");
    const code = await main(["compile", "examples/qwen3-tools.agent", "-o", out, "--vocab", tokenizerJsonPath("qwen3")], { out: () => {}, err: (s) => { throw new Error(s); } });
    expect(code).toBe(0);
    const baked = await Spec.load(out);
    expect(baked.hasVocabulary).toBe(true);
    expect(baked.distinctMasks).toBeGreaterThan(5); // masks came baked
    for (let s = 0; s < spec.stateCount; s++) expect(baked.stateMask(s), `state ${s}`).toEqual(spec.stateMask(s));
    const m = baked.matcher();
    expect(m.commit(QWEN_IDS["<think>"])).toBe("continue");
  });

  it("a vocabulary without the marker tokens is refused by name", async () => {
    const llama = Vocabulary.fromTokenizerJsonObject(loadTokenizerJson("llama3_1"));
    await expect(Spec.load(compileToWasm(c), { vocab: llama })).rejects.toThrow(/token marker "<think>" is not a token of this vocabulary/);
  });
});

describe("examples/react-typed.agent with Llama 3's vocabulary", () => {
  it("1,000 seeded samples conform and each Action Input validates (ajv) against the schema of the tool in Action", async () => {
    const c = compile("examples/react-typed.agent");
    const vocab = Vocabulary.fromTokenizerJsonObject(loadTokenizerJson("llama3_1"));
    const spec = await Spec.load(compileToWasm(c), { vocab });
    const engine = byteDfaEngine(c.byteDfa);
    const markers = c.ir.states.map((s) => s.marker);
    let calls = 0;
    sampleTraces(spec, vocab, { n: 1000, seed: 5 }).forEach((t, n) => {
      expect(runTrace(engine, t, markers).verdict, `sample ${n}`).toBe("conforms");
      const text = llmText(t);
      const seen: string[] = [];
      for (const m of text.matchAll(/Action:([\s\S]*?)Action Input:([\s\S]*?)Observation:/g)) {
        const name = m[1]!.trim();
        seen.push(name);
        expect(validate.get(name)?.(JSON.parse(m[2]!)), `sample ${n}: ${name} ${m[2]}`).toBe(true);
        calls++;
      }
      // the constraints: book_flight only after search_flights, at most twice
      const book = seen.indexOf("book_flight");
      if (book >= 0) expect(seen.indexOf("search_flights"), `sample ${n}`).toBeGreaterThanOrEqual(0);
      if (book >= 0) expect(seen.indexOf("search_flights")).toBeLessThan(book);
      expect(seen.filter((s) => s === "book_flight").length).toBeLessThanOrEqual(2);
    });
    expect(calls).toBeGreaterThan(300);
  });
});
