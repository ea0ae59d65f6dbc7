/**
 * @fileoverview Vocabulary: token bytes from real tokenizer.json files (Llama 3, Qwen3, Gemma 3, and
 * the `llama2` package, which has Mistral 7B's ids — see tests/helpers/tokenizers.ts), special and
 * EOS tokens, the flat layout, agreement with each package's own decoder on (almost) every token,
 * round trips through its own encoder, and clear errors.
 *
 * Each tokenizer.json is parsed once per file (helpers cache it) and each Vocabulary is built once,
 * in `beforeAll`. Set SPECC_VOCAB_TIMING=1 to print the load times.
 */

import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Vocabulary, VocabularyError, type VocabularyFamily } from "../../bindings/vocab.js";
import {
  loadPackageTokenizer,
  loadTokenizerJson,
  tokenizerJsonPath,
  type PackageTokenizer,
  type TokenizerName,
} from "../helpers/tokenizers.js";

const utf8 = (s: string): number[] => [...new TextEncoder().encode(s)];
const bytesOf = (v: Vocabulary, id: number): number[] | null => {
  const b = v.tokenBytes(id);
  return b === null ? null : [...b];
};

/** Texts an agent might produce; NFC (Qwen3 normalizes to NFC), no special-token names. */
const SAMPLES = [
  "Hello world",
  "Thought: I need to look up the weather in Paris.\nAction: search[weather Paris]\n",
  "[Question] What is 2+2?\n[Answer] 4",
  "  leading spaces,\tand a tab;  two  spaces\n\n\nthree newlines",
  "日本語のテキストと中文, Ελληνικά, émigré, naïve — “quotes”",
  "emoji 🤖🎉 and a rare one 𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
  '{"name": "get_weather", "arguments": {"city": "Zürich"}}',
];

interface Expect {
  size: number;
  family: VocabularyFamily;
  eos: number[];
  addsPrefixSpace: boolean;
  /** [id, decoded bytes (string = its UTF-8, array = raw bytes, null = special)] */
  tokens: [number, string | number[] | null][];
}

const EXPECTED: Record<TokenizerName, Expect> = {
  llama3_1: {
    size: 128256,
    family: "byte-bpe",
    eos: [128001, 128009], // <|end_of_text|>, <|eot_id|>
    addsPrefixSpace: false,
    tokens: [
      [279, " the"], // "Ġthe"
      [198, "\n"], // "Ċ"
      [222, [0x80]], // "Ģ": a lone UTF-8 continuation byte
      [85269, "Thought"],
      [128000, null], // <|begin_of_text|>
      [128008, null], // <|reserved_special_token_4|> (Llama 3.1: <|eom_id|>)
      [128255, null],
    ],
  },
  qwen3: {
    size: 151669,
    family: "byte-bpe",
    eos: [151643, 151645], // <|endoftext|>, <|im_end|>
    addsPrefixSpace: false,
    tokens: [
      [279, " the"],
      [222, [0x80]],
      [151644, null], // <|im_start|>
      [151657, "<tool_call>"], // non-special added token: text
      [151659, null], // <|fim_prefix|>: non-special, but a <|…|> control placeholder
      [151667, "<think>"],
      [151668, "</think>"],
    ],
  },
  gemma3: {
    size: 262145, // model vocab 0..262143 plus the added <image_soft_token> at 262144
    family: "sentencepiece",
    eos: [1, 106], // <eos>, <end_of_turn>
    addsPrefixSpace: false,
    tokens: [
      [0, null], // <pad>
      [2, null], // <bos>
      [3, null], // <unk>
      [6, null], // <unused0> (non-special added token, a placeholder)
      [105, null], // <start_of_turn>
      [107, "\n"],
      [138, "  "], // "▁▁", a non-special added token
      [212, "</s>"], // an HTML tag in Gemma 3, not EOS
      [248, [0x0a]], // <0x0A>
      [366, [0x80]], // <0x80>
      [37484, " Thought"], // "▁Thought"
      [236743, " "], // "▁"
      [262144, null], // <image_soft_token>
    ],
  },
  llama2: {
    size: 32000,
    family: "sentencepiece",
    eos: [2], // </s>
    addsPrefixSpace: true,
    tokens: [
      [0, null], // <unk>
      [1, null], // <s>
      [2, null], // </s>
      [13, [0x0a]], // <0x0A>
      [131, [0x80]], // <0x80>
      [272, " the"], // "▁the" (Mistral's id; Meta's Llama 2 has 278)
      [26142, " Thought"], // "▁Thought"
      [28705, " "], // "▁"
    ],
  },
};

const timings: string[] = [];

afterAll(() => {
  if (process.env["SPECC_VOCAB_TIMING"]) console.log(timings.join("\n"));
});

describe.each(Object.keys(EXPECTED) as TokenizerName[])("%s tokenizer.json", (name) => {
  const want = EXPECTED[name];
  let vocab: Vocabulary;
  let tokenizer: PackageTokenizer;

  beforeAll(async () => {
    const t0 = performance.now();
    const json = loadTokenizerJson(name);
    const t1 = performance.now();
    vocab = await Vocabulary.fromTokenizerJson(json);
    const t2 = performance.now();
    tokenizer = await loadPackageTokenizer(name);
    timings.push(
      `${name}: JSON.parse ${(t1 - t0).toFixed(0)} ms, Vocabulary ${(t2 - t1).toFixed(0)} ms, ` +
        `${vocab.size} tokens, ${vocab.flat().bytes.length} bytes`,
    );
  }, 60_000);

  it("has the real size, family, EOS ids and prefix-space convention", () => {
    expect(vocab.size).toBe(want.size);
    expect(vocab.family).toBe(want.family);
    expect(vocab.eos).toEqual(want.eos);
    expect(vocab.addsPrefixSpace).toBe(want.addsPrefixSpace);
    for (const id of want.eos) {
      expect(vocab.isEos(id)).toBe(true);
      expect(vocab.isSpecial(id)).toBe(true);
      expect(vocab.tokenBytes(id)).toBeNull();
    }
  });

  it("decodes specific tokens to their exact bytes", () => {
    for (const [id, bytes] of want.tokens) {
      const expected = bytes === null ? null : typeof bytes === "string" ? utf8(bytes) : bytes;
      expect([id, bytesOf(vocab, id)]).toEqual([id, expected]);
      expect(vocab.isSpecial(id)).toBe(bytes === null);
    }
  });

  it("makes every added token marked special:true a special token", () => {
    const json = loadTokenizerJson(name) as { added_tokens: { id: number; content: string; special: boolean }[] };
    for (const t of json.added_tokens) {
      if (t.special) expect([t.content, vocab.tokenBytes(t.id)]).toEqual([t.content, null]);
    }
  });

  it("has a consistent flat layout", () => {
    const { bytes, offsets, special } = vocab.flat();
    expect(offsets.length).toBe(vocab.size + 1);
    expect(special.length).toBe(vocab.size);
    expect(offsets[0]).toBe(0);
    expect(offsets[vocab.size]).toBe(bytes.length);
    let bad = 0;
    for (let id = 0; id < vocab.size; id++) {
      const len = offsets[id + 1]! - offsets[id]!;
      if (len < 0 || (special[id] === 1) !== vocab.isSpecial(id) || (special[id] === 1 && len !== 0)) bad++;
      if (special[id] === 0 && len === 0) bad++; // every text token has at least one byte
    }
    expect(bad).toBe(0);
  });

  if (want.family === "byte-bpe") {
    it("has a single-byte token for each of the 256 bytes", () => {
      const seen = new Set<number>();
      for (let id = 0; id < vocab.size; id++) {
        const b = vocab.tokenBytes(id);
        if (b !== null && b.length === 1) seen.add(b[0]!);
      }
      expect(seen.size).toBe(256);
    });
  }

  it("agrees with the package's own decoder on every token whose bytes are valid UTF-8", () => {
    // Tokens that are part of a UTF-8 sequence (lone bytes, byte-fallback <0xAB>) decode to U+FFFD
    // there, so they are skipped; the specific tests above cover some of them.
    const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
    const mismatches: string[] = [];
    let checked = 0;
    for (let id = 0; id < vocab.size; id++) {
      const b = vocab.tokenBytes(id);
      if (b === null) continue;
      let ours: string;
      try {
        ours = decoder.decode(b);
      } catch {
        continue;
      }
      checked++;
      const theirs = tokenizer.decode([id]);
      // The decoder of a prefix-space tokenizer strips the first token's leading space.
      if (theirs !== ours && !(vocab.addsPrefixSpace && " " + theirs === ours)) {
        mismatches.push(`${id}: ${JSON.stringify(ours)} vs ${JSON.stringify(theirs)}`);
      }
    }
    expect(mismatches.slice(0, 10)).toEqual([]);
    expect(checked).toBeGreaterThan(vocab.size * 0.95);
  }, 30_000);

  it.each(SAMPLES.map((s) => [s]))("round-trips %j through the package's own encoder", (text) => {
    const ids = tokenizer.encode(text);
    expect(ids.filter((id) => vocab.isSpecial(id))).toEqual([]);
    const got: number[] = [];
    for (const id of ids) got.push(...vocab.tokenBytes(id)!);
    // A tokenizer that prepends "▁" to the input (Llama 2 / Mistral) encodes "Hello" as "▁Hello":
    // its tokens spell " " + text, and only the HF decoder strips that space.
    const expected = utf8(vocab.addsPrefixSpace ? " " + text : text);
    expect(Buffer.from(got).toString("utf8")).toBe(Buffer.from(expected).toString("utf8"));
    expect(got).toEqual(expected);
  });
});

describe("Vocabulary.fromTokenizerJson on a path", () => {
  it("reads a tokenizer.json file", async () => {
    const v = await Vocabulary.fromTokenizerJson(tokenizerJsonPath("llama2"), { eos: [2, 0] });
    expect(v.size).toBe(32000);
    expect(v.eos).toEqual([0, 2]);
    expect(bytesOf(v, 13)).toEqual([10]);
  });
});

describe("small tokenizer.json objects", () => {
  const byteLevel = {
    model: { type: "BPE", vocab: { a: 0, "Ġb": 1, "Ċ": 2, "Ģ": 3 } },
    decoder: { type: "ByteLevel" },
    added_tokens: [
      { id: 4, content: "<|endoftext|>", special: true },
      { id: 6, content: "<tool_call>", special: false },
      { id: 7, content: "<|fim_pad|>", special: false },
      { id: 8, content: "</s>", special: false },
    ],
  };

  it("decodes a byte-level vocabulary, treats gaps as special, finds EOS by name", () => {
    const v = Vocabulary.fromTokenizerJsonObject(byteLevel);
    expect(v.family).toBe("byte-bpe");
    expect(v.size).toBe(9);
    expect([0, 1, 2, 3, 4, 5, 6, 7, 8].map((id) => bytesOf(v, id))).toEqual([
      utf8("a"),
      utf8(" b"),
      [10],
      [0x80],
      null, // EOS
      null, // gap
      utf8("<tool_call>"),
      null, // <|…|> placeholder
      utf8("</s>"), // not marked special: text
    ]);
    expect(v.eos).toEqual([4]);
  });

  it("decodes a SentencePiece vocabulary with byte fallback", () => {
    const v = Vocabulary.fromTokenizerJsonObject({
      normalizer: { type: "Sequence", normalizers: [{ type: "Prepend", prepend: "▁" }] },
      model: { type: "BPE", byte_fallback: true, unk_token: "<unk>", vocab: { "<unk>": 0, "<s>": 1, "</s>": 2, "<0xE6>": 3, "▁hi": 4, "é": 5 } },
      decoder: { type: "Sequence", decoders: [{ type: "Replace", pattern: { String: "▁" }, content: " " }, { type: "ByteFallback" }] },
      added_tokens: [{ id: 1, content: "<s>", special: true }, { id: 2, content: "</s>", special: true }],
    });
    expect(v.family).toBe("sentencepiece");
    expect(v.addsPrefixSpace).toBe(true);
    expect([0, 1, 2, 3, 4, 5].map((id) => bytesOf(v, id))).toEqual([null, null, null, [0xe6], utf8(" hi"), utf8("é")]);
    expect(v.eos).toEqual([2]);
  });

  it("decodes a Unigram vocabulary with a Metaspace decoder", () => {
    const v = Vocabulary.fromTokenizerJsonObject({
      model: { type: "Unigram", vocab: [["<pad>", 0], ["</s>", 0], ["▁x", -1], ["y▁", -2]] },
      pre_tokenizer: { type: "Metaspace", replacement: "▁", prepend_scheme: "always" },
      decoder: { type: "Metaspace", replacement: "▁", prepend_scheme: "always" },
      added_tokens: [{ id: 0, content: "<pad>", special: true }, { id: 1, content: "</s>", special: true }],
    });
    expect(v.family).toBe("sentencepiece");
    expect([0, 1, 2, 3].map((id) => bytesOf(v, id))).toEqual([null, null, utf8(" x"), utf8("y ")]);
    expect(v.eos).toEqual([1]);
  });

  it("uses opts.eos instead of names, and makes those ids special", () => {
    const v = Vocabulary.fromTokenizerJsonObject(byteLevel, { eos: [0] });
    expect(v.eos).toEqual([0]);
    expect(v.tokenBytes(0)).toBeNull();
    expect(v.isEos(4)).toBe(false);
    expect(v.isSpecial(4)).toBe(true); // still special, just not EOS
  });

  it("asks for opts.eos when no EOS token is found", () => {
    const noEos = { ...byteLevel, added_tokens: [] };
    expect(() => Vocabulary.fromTokenizerJsonObject(noEos)).toThrow(/no EOS token found.*opts\.eos/);
    expect(Vocabulary.fromTokenizerJsonObject(noEos, { eos: [] }).eos).toEqual([]);
  });

  it("rejects EOS ids outside the vocabulary", () => {
    expect(() => Vocabulary.fromTokenizerJsonObject(byteLevel, { eos: [9] })).toThrow(/EOS id 9 .*size 9/);
  });
});

describe("clear errors for input that is not a tokenizer.json", () => {
  const dir = mkdtempSync(join(tmpdir(), "specc-vocab-"));

  it.each([
    ["{}", {}, /not a Hugging Face tokenizer\.json \(expected an object with "model\.vocab".*found an empty object/],
    ["null", null, /not a Hugging Face tokenizer\.json.*found null/],
    ["a list", [1, 2], /not a Hugging Face tokenizer\.json.*found a list/],
    ["no vocab", { model: { type: "BPE" } }, /not a Hugging Face tokenizer\.json/],
    ["WordPiece", { model: { type: "WordPiece", vocab: { a: 0 } } }, /unsupported model\.type "WordPiece"/],
    ["bad id", { model: { type: "BPE", vocab: { a: "x" } } }, /model\.vocab\["a"\] is not a token id/],
    ["unknown family", { model: { type: "BPE", vocab: { a: 0 } } }, /cannot tell the tokenizer family/],
  ] as [string, unknown, RegExp][])("%s", async (_label, input, message) => {
    expect(() => Vocabulary.fromTokenizerJsonObject(input)).toThrow(message);
    const err = await Vocabulary.fromTokenizerJson(input as object).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(VocabularyError);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(message);
  });

  it("a file that is not JSON", async () => {
    const path = join(dir, "tokenizer.json");
    writeFileSync(path, "this is not json\n");
    await expect(Vocabulary.fromTokenizerJson(path)).rejects.toThrow(
      /tokenizer\.json is not JSON \(expected a Hugging Face tokenizer\.json\)/,
    );
  });

  it("a JSON file that is not a tokenizer.json", async () => {
    const path = join(dir, "config.json");
    writeFileSync(path, JSON.stringify({ architectures: ["LlamaForCausalLM"] }));
    await expect(Vocabulary.fromTokenizerJson(path)).rejects.toThrow(
      /config\.json: not a Hugging Face tokenizer\.json .*architectures/,
    );
  });

  it("a missing file", async () => {
    await expect(Vocabulary.fromTokenizerJson(join(dir, "missing.json"))).rejects.toThrow(
      /cannot read tokenizer\.json .*missing\.json/,
    );
  });
});

describe("Vocabulary.fromTokenBytes", () => {
  const enc = (s: string): Uint8Array => new TextEncoder().encode(s);

  it("builds a vocabulary from a plain list", () => {
    const v = Vocabulary.fromTokenBytes([null, enc("ab"), enc(""), new Uint8Array([0xff]), enc("</s>"), enc("x")], {
      eos: [4],
      special: [5],
    });
    expect(v.family).toBe("bytes");
    expect(v.size).toBe(6);
    expect([0, 1, 3, 4, 5].map((id) => bytesOf(v, id))).toEqual([null, utf8("ab"), [0xff], null, null]);
    expect(v.eos).toEqual([4]);
    expect(v.isSpecial(4) && v.isSpecial(5) && v.isSpecial(0)).toBe(true);
    const { bytes, offsets, special } = v.flat();
    expect([...bytes]).toEqual([0x61, 0x62, 0xff]);
    expect([...offsets]).toEqual([0, 0, 2, 2, 3, 3, 3]);
    expect([...special]).toEqual([1, 0, 0, 0, 1, 1]);
  });

  it("rejects bad ids", () => {
    expect(() => Vocabulary.fromTokenBytes([enc("a")], { eos: [1] })).toThrow(VocabularyError);
    expect(() => Vocabulary.fromTokenBytes([enc("a")], { eos: [], special: [-1] })).toThrow(/special id -1/);
    expect(() => Vocabulary.fromTokenBytes([], { eos: [] })).toThrow(/empty/);
    const v = Vocabulary.fromTokenBytes([enc("a")], { eos: [] });
    expect(() => v.tokenBytes(1)).toThrow(RangeError);
  });
});
