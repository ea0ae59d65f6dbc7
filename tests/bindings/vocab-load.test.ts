/**
 * The fast vocabulary load (bindings/tokenizer-json-scan.ts: merges skipped, pieces kept as file
 * bytes) against the plain one (JSON.parse, then fromTokenizerJsonObject) on every real tokenizer:
 * the same tokens, bytes, specials, EOS, family; the prepared file (bindings/prepared-vocab.ts)
 * round-trips, reads older versions and refuses damaged input; the trie order
 * (bindings/token-order.ts) is the comparison sort's, and an unsorted one is refused when attached.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { Vocabulary, VocabularyError } from "../../bindings/vocab.js";
import { sortTextTokens } from "../../bindings/token-order.js";
import { Spec } from "../../bindings/spec.js";
import { resealPrepared, serializePrepared } from "../../bindings/prepared-vocab.js";
import { checkPrepared, type PreparedParts } from "../../bindings/prepared-check.js";
import fc from "fast-check";
import { compileSource, compileToWasm } from "../../compiler/compile.js";
import { TOKENIZER_NAMES, tokenizerJsonPath } from "../helpers/tokenizers.js";

function expectSame(a: Vocabulary, b: Vocabulary): void {
  expect([a.size, a.family, a.addsPrefixSpace, a.eos]).toEqual([b.size, b.family, b.addsPrefixSpace, b.eos]);
  const fa = a.flat(), fb = b.flat();
  expect(Buffer.from(fa.special).equals(Buffer.from(fb.special))).toBe(true);
  expect(Buffer.from(fa.offsets.buffer, fa.offsets.byteOffset, fa.offsets.byteLength).equals(Buffer.from(fb.offsets.buffer, fb.offsets.byteOffset, fb.offsets.byteLength))).toBe(true);
  expect(Buffer.from(fa.bytes.subarray(0, fa.offsets[a.size])).equals(Buffer.from(fb.bytes.subarray(0, fb.offsets[b.size])))).toBe(true);
}

describe("loading a vocabulary fast", () => {
  for (const name of TOKENIZER_NAMES) {
    it(`${name}: the scanned tokenizer.json, the parsed one and the prepared file agree`, async () => {
      const path = tokenizerJsonPath(name);
      const plain = Vocabulary.fromTokenizerJsonObject(JSON.parse(readFileSync(path, "utf8")));
      const fast = await Vocabulary.fromTokenizerJson(path);
      expectSame(fast, plain);
      const prepared = Vocabulary.fromPrepared(fast.toPrepared());
      expectSame(prepared, plain);
      expect(prepared.textOrder()).toEqual(fast.textOrder());
      // the added tokens travel with it: token markers such as (:token "<|im_end|>") bind the same
      const added = (JSON.parse(readFileSync(path, "utf8")) as { added_tokens?: { content: string; id: number }[] }).added_tokens ?? [];
      for (const a of added) expect(prepared.tokenId(a.content), a.content).toBe(plain.tokenId(a.content));
      expect(added.every((a) => plain.tokenId(a.content) === a.id)).toBe(true);
      // fromTokenizerJson recognizes a prepared file by its magic.
      expectSame(await Vocabulary.fromTokenizerJson(fast.toPrepared()), plain);
    });
  }

  it("falls back to the whole parse for a file laid out otherwise, and words JSON errors", async () => {
    const json = JSON.parse(readFileSync(tokenizerJsonPath("llama2"), "utf8")) as { model: Record<string, unknown> } & Record<string, unknown>;
    // merges first, model first, escapes in keys: the same vocabulary.
    const { vocab, merges, ...rest } = json.model;
    const { model, ...top } = json;
    void model;
    const reordered = JSON.stringify({ model: { merges, ...rest, vocab }, ...top }).replace(/"<unk>"/, '"\\u003cunk>"');
    expectSame(await Vocabulary.fromTokenizerJson(new TextEncoder().encode(reordered)), Vocabulary.fromTokenizerJsonObject(json));
    const truncated = new TextEncoder().encode(reordered.slice(0, -100));
    await expect(Vocabulary.fromTokenizerJson(truncated)).rejects.toThrow(/is not JSON/);
    // "model" twice: the later one counts, as in JSON.parse (the scan reads the first in place).
    const text = readFileSync(tokenizerJsonPath("llama2"), "utf8");
    const twice = new TextEncoder().encode(text.replace(/\}\s*$/, ', "model": 5 }'));
    await expect(Vocabulary.fromTokenizerJson(twice)).rejects.toThrow(/not a Hugging Face tokenizer.json/);
    const first = new TextEncoder().encode(text.replace(/^\{/, '{ "model": 5, '));
    expectSame(await Vocabulary.fromTokenizerJson(first), Vocabulary.fromTokenizerJsonObject(json));
  });

  it("still reads a version-1 file (without added tokens)", async () => {
    const v2 = (await Vocabulary.fromTokenizerJson(tokenizerJsonPath("llama2"))).toPrepared();
    const dv = new DataView(v2.buffer, v2.byteOffset);
    const size = dv.getUint32(8, true), nEos = dv.getUint32(12, true), nText = dv.getUint32(16, true), byteCount = dv.getUint32(20, true);
    const v1 = v2.slice(0, 36 + 4 * (nEos + size + 1 + nText) + size + byteCount);
    const dv1 = new DataView(v1.buffer);
    dv1.setUint16(4, 1, true);
    let h = 0x811c9dc5;
    for (let i = 36; i < v1.length; i++) h = Math.imul(h ^ v1[i]!, 0x01000193);
    dv1.setUint32(28, h >>> 0, true);
    const old = Vocabulary.fromPrepared(v1, "old.vocab");
    expectSame(old, Vocabulary.fromPrepared(v2));
    expect(old.tokenId("</s>")).toBeUndefined(); // special, and version 1 has no names for it
  });

  it("still reads a version-2 file (bytewise checksum)", async () => {
    const v4 = (await Vocabulary.fromTokenizerJson(tokenizerJsonPath("llama2"))).toPrepared();
    expect(new DataView(v4.buffer, v4.byteOffset).getUint16(4, true)).toBe(4);
    const v2 = v4.slice();
    const dv = new DataView(v2.buffer);
    dv.setUint16(4, 2, true);
    expect(() => Vocabulary.fromPrepared(v2)).toThrow(/checksum mismatch/); // the word checksum differs
    resealPrepared(v2);
    expectSame(Vocabulary.fromPrepared(v2, "old.vocab"), Vocabulary.fromPrepared(v4));
  });

  it("refuses a version-3 file (its checksum misses damage to a word's high bits) and catches that damage in version 4", async () => {
    const v4 = (await Vocabulary.fromTokenizerJson(tokenizerJsonPath("llama2"))).toPrepared();
    const v3 = v4.slice();
    new DataView(v3.buffer).setUint16(4, 3, true);
    resealPrepared(v3);
    expect(() => Vocabulary.fromPrepared(v3)).toThrow(/format version 3.*prepare it again/);
    // What `npm run fuzz` found in version 3 (tests/fixtures/fuzz/vocab-a8e6c5c62568.bin): bit 5 of
    // a word's top byte flipped, and the stored checksum's top bits changed; in version 3 one of the
    // 8 patterns of its top 3 bits matched. In version 4 none does.
    for (let pattern = 0; pattern < 8; pattern++) {
      const bad = v4.slice();
      bad[36 + 4 * 12 + 3]! ^= 0x20;
      bad[31]! ^= pattern << 5;
      expect(() => Vocabulary.fromPrepared(bad)).toThrow(/checksum mismatch/);
    }
  });

  it("leaves an unsorted trie order to the runtime, which refuses it when it builds the trie", async () => {
    const good = (await Vocabulary.fromTokenizerJson(tokenizerJsonPath("llama2"))).toPrepared();
    const dv = new DataView(good.buffer, good.byteOffset);
    const size = dv.getUint32(8, true), nEos = dv.getUint32(12, true);
    const bad = good.slice();
    const bdv = new DataView(bad.buffer);
    const at = 36 + 4 * (nEos + size + 1); // order[0], order[1]: swapped, then sealed again
    const [a, b] = [bdv.getUint32(at, true), bdv.getUint32(at + 4, true)];
    bdv.setUint32(at, b, true);
    bdv.setUint32(at + 4, a, true);
    expect(() => Vocabulary.fromPrepared(bad)).toThrow(/checksum mismatch/);
    resealPrepared(bad);
    const vocab = Vocabulary.fromPrepared(bad, "resealed.vocab"); // a permutation: the file itself is fine
    const wasm = compileToWasm(compileSource(readFileSync("examples/react.agent", "utf8"), "examples/react.agent"));
    await expect(Spec.load(wasm, { vocab })).rejects.toThrow(/cannot attach the vocabulary: the text-token ids are not sorted by their bytes/);
    await expect(Spec.load(wasm, { vocab: Vocabulary.fromPrepared(good) })).resolves.toBeInstanceOf(Spec);
  });

  it("refuses a damaged prepared file, saying what is wrong", async () => {
    const good = (await Vocabulary.fromTokenizerJson(tokenizerJsonPath("llama2"))).toPrepared();
    const flip = good.slice();
    flip[flip.length - 10]! ^= 1;
    const version = good.slice();
    version[4] = 9;
    const cases: [Uint8Array, RegExp][] = [
      [good.subarray(0, 20), /shorter than the 36-byte header/],
      [good.subarray(0, good.length - 1), /truncated or padded/],
      [flip, /checksum mismatch/],
      [version, /format version 9.*specc vocab/],
    ];
    for (const [bytes, why] of cases) {
      expect(() => Vocabulary.fromPrepared(bytes, "x.vocab")).toThrow(VocabularyError);
      expect(() => Vocabulary.fromPrepared(bytes, "x.vocab")).toThrow(why);
    }
  });

  it("checks a prepared file in WebAssembly, and those checks say no exactly where the JavaScript ones refuse", async () => {
    // The parts of a file as deserializePrepared lays them out, and a reference verdict written
    // here from the format's definition (what the JavaScript checks in prepared-vocab.ts refuse).
    const parts = (f: Uint8Array): PreparedParts => {
      const dv = new DataView(f.buffer, f.byteOffset);
      const size = dv.getUint32(8, true), nEos = dv.getUint32(12, true), nText = dv.getUint32(16, true);
      const offsets = 36 + 4 * nEos, order = offsets + 4 * (size + 1);
      return { words: 36, nWords: (f.length - 36) >>> 2, hash: 0, offsets, kinds: order + 4 * nText, size };
    };
    const reference = (f: Uint8Array, p: PreparedParts) => {
      const dv = new DataView(f.buffer, f.byteOffset);
      let text = 0;
      for (let i = 0; i < p.size; i++) {
        const kind = f[p.kinds + i]!;
        if (dv.getUint32(p.offsets + 4 * i + 4, true) < dv.getUint32(p.offsets + 4 * i, true) || kind > 1) { text = -1; break; }
        text += 1 - kind;
      }
      return { text };
    };
    for (const name of ["llama2", "gemma3"] as const) {
      const good = (await Vocabulary.fromTokenizerJson(tokenizerJsonPath(name))).toPrepared();
      const p = parts(good);
      const verdict = checkPrepared(good, p);
      expect(verdict).toEqual({ ...reference(good, p), hash: expect.any(Number) });
      expect(verdict!.text).toBe(new DataView(good.buffer).getUint32(16, true));
    }
    // A small vocabulary, damaged at random in its offsets, kinds and trie order, then sealed again
    // so that only these checks can catch it: the module's verdict is the reference's, and the
    // file loads exactly when both say yes (the order is the runtime's to refuse, when attached).
    const tokens = ["a", "b", "ab", "ba", "abc", null, "c", "ca", "bca", null].map((t) => (t === null ? null : new TextEncoder().encode(t)));
    const small = Vocabulary.fromTokenBytes(tokens, { eos: [5] }).toPrepared();
    const p = parts(small);
    fc.assert(fc.property(
      fc.array(fc.tuple(fc.integer({ min: p.offsets, max: p.kinds + p.size - 1 }), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 3 }),
      (edits) => {
        const bad = small.slice();
        for (const [at, byte] of edits) bad[at] = byte;
        resealPrepared(bad);
        const verdict = checkPrepared(bad, p)!;
        const want = reference(bad, p);
        expect({ text: verdict.text }).toEqual(want);
        const loads = (() => { try { Vocabulary.fromPrepared(bad); return true; } catch (e) { expect(e).toBeInstanceOf(VocabularyError); return false; } })();
        const bdv = new DataView(bad.buffer);
        const offsetsSpan = bdv.getUint32(p.offsets, true) === 0 && bdv.getUint32(p.offsets + 4 * p.size, true) === bdv.getUint32(20, true);
        expect(loads).toBe(want.text === bdv.getUint32(16, true) && offsetsSpan && bad[p.kinds + 5] === 1);
      },
    ), { seed: 15, numRuns: 500 });
    // The messages still come from the JavaScript checks.
    const kind2 = small.slice();
    kind2[p.kinds + 2] = 2;
    expect(() => Vocabulary.fromPrepared(resealPrepared(kind2))).toThrow(/token 2 has kind 2/);
    const twice = small.slice();
    const order = p.offsets + 4 * (p.size + 1);
    twice.copyWithin(order + 4, order, order + 4);
    const vocab = Vocabulary.fromPrepared(resealPrepared(twice));
    const wasm = compileToWasm(compileSource(readFileSync("examples/react.agent", "utf8"), "examples/react.agent"));
    await expect(Spec.load(wasm, { vocab })).rejects.toThrow(/cannot attach the vocabulary: a trie entry is not a text token spelled by its node's path, or is listed twice/);
  });

  it("reads the added tokens on first use, and words a malformed list then", async () => {
    const v = await Vocabulary.fromTokenizerJson(tokenizerJsonPath("qwen3"));
    const good = v.toPrepared();
    expect(Vocabulary.fromPrepared(good).tokenId("<|im_end|>")).toBe(v.tokenId("<|im_end|>"));
    // A file written (and sealed) with an added token whose id is past the vocabulary, and one
    // whose list is not JSON: they load, and the first lookup by name says what is wrong.
    const flat = v.flat();
    const withAdded = (added: [string, number][]) => serializePrepared({ ...flat, eos: [...v.eos], order: v.textOrder(), family: v.family, addsPrefixSpace: v.addsPrefixSpace, added });
    const pastEnd = Vocabulary.fromPrepared(withAdded([["<x>", v.size]]), "x.vocab");
    expect(() => pastEnd.tokenId("<|im_end|>")).toThrow(VocabularyError);
    expect(() => pastEnd.tokenId("<|im_end|>")).toThrow(/x\.vocab is not a valid prepared vocabulary \(specc vocab\): the added-token list is not \[\[content, id\], …\] with ids in the vocabulary/);
    const notJson = withAdded([["<x>", 1]]);
    notJson[notJson.length - 1] = 0x7b; // the closing bracket, now "{"
    expect(() => Vocabulary.fromPrepared(resealPrepared(notJson), "y.vocab").addedContent(1)).toThrow(/y\.vocab .*the added-token list is not UTF-8 JSON/);
  });

  it("sorts the trie order as the comparison sort does", async () => {
    const v = await Vocabulary.fromTokenizerJson(tokenizerJsonPath("qwen3"));
    const { bytes, offsets, special } = v.flat();
    const slow = Uint32Array.from([...Array(v.size).keys()].filter((id) => !special[id])).sort((a, b) => {
      let i = offsets[a]!, j = offsets[b]!;
      const ie = offsets[a + 1]!, je = offsets[b + 1]!;
      for (; i < ie && j < je; i++, j++) if (bytes[i] !== bytes[j]) return bytes[i]! - bytes[j]!;
      return ie - i - (je - j) || a - b;
    });
    expect(sortTextTokens(bytes, offsets, special)).toEqual(slow);
  });
});
