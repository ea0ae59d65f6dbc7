/**
 * The fuzzer's slice in the suite (bench/fuzz: `npm run fuzz` runs the same targets for as long as
 * it is given): every kept crash fixture (tests/fixtures/fuzz) now ends in a result or a clean
 * refusal, a fixed-seed run of each front end and loader finds no defect, and the hostile-file
 * cases the issue lists — damaged .wasm files and broken tokenizer.json files — are refused with
 * the loader's own error, never anything else.
 */
import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { Spec } from "../../bindings/spec.js";
import { Vocabulary, VocabularyError } from "../../bindings/vocab.js";
import { compileSource, compileToWasm } from "../../compiler/compile.js";
import { SpecError } from "../../compiler/diagnostics.js";
import { seal, unseal } from "../../compiler/seal.js";
import { TARGETS, fuzzLoop, tablesRange } from "../../bench/fuzz/targets.js";

const FIXTURES = "tests/fixtures/fuzz";

describe("fuzz fixtures (inputs that once crashed, minimized)", () => {
  const files = readdirSync(FIXTURES).filter((f) => f.endsWith(".bin"));
  it("there are some, each named after its target", () => {
    expect(files.length).toBeGreaterThan(0);
    for (const f of files) expect(TARGETS.some((t) => f.startsWith(`${t.name}-`)), f).toBe(true);
  });
  for (const f of files) {
    it(`${f} (${readFileSync(`${FIXTURES}/${f.replace(".bin", ".txt")}`, "utf8").trim()}) ends cleanly`, async () => {
      const t = TARGETS.find((x) => f.startsWith(`${x.name}-`))!;
      expect(["ok", "refused"]).toContain(await t.run(readFileSync(`${FIXTURES}/${f}`)));
    });
  }
});

describe("a fixed-seed slice of every fuzz target", () => {
  for (const t of TARGETS) {
    it(`${t.name}: 300 mutated inputs, no crash`, async () => {
      const r = await fuzzLoop(t, 20261124, 0, 300);
      expect(r.crashes).toEqual([]);
      expect(r.tried).toBe(300);
      expect(r.refused).toBeGreaterThan(0); // the mutations do reach the error paths
    });
  }
});

describe("hostile .wasm files", () => {
  const good = compileToWasm(compileSource(readFileSync("examples/react.agent", "utf8"), "examples/react.agent"));
  const refused = async (b: Uint8Array, why: RegExp) => {
    const e = await Spec.load(b).then(() => null, (x: unknown) => x);
    expect(e).toBeInstanceOf(SpecError);
    expect((e as SpecError).code).toBe("E0602");
    expect((e as SpecError).message).toMatch(why);
  };
  it("loads the intact file", async () => {
    expect((await Spec.load(good)).stateCount).toBeGreaterThan(5);
  });
  it("refuses truncations, flipped bits in the code, the tables and custom sections, header changes and oversized counts", async () => {
    for (let n = 0; n < good.length; n += 997) await refused(good.subarray(0, n), /no specc seal/);
    const [a, z] = tablesRange(good);
    expect(z).toBeGreaterThan(a);
    for (const at of [0, 3, 4, 7, 9, 100, a, a + 8, Math.floor((a + z) / 2), z - 1, good.length - 20, good.length - 1]) {
      for (const bit of [0, 7]) {
        const b = good.slice();
        b[at]! ^= 1 << bit;
        await refused(b, /no specc seal|does not match its seal/);
      }
    }
    const lebs = good.slice();
    lebs.set([0xff, 0xff, 0xff, 0xff, 0x0f], 9); // the first section's size: 4 GiB
    await refused(lebs, /does not match its seal/);
  });
  it("resealed damage to the header or the tables is refused by the table validation", async () => {
    const [a] = tablesRange(good);
    const cases: [number, number, RegExp][] = [
      [a, 0x00, /no valid specc tables|invalid specc tables/], // magic
      [a + 4, 0x09, /no valid specc tables|invalid specc tables/], // version
      [a + 11, 0xff, /runs past the end of memory|invalid specc tables/], // total length: 4 GiB
    ];
    for (const [at, v, why] of cases) {
      const b = unseal(good).slice();
      b[at] = v;
      await refused(seal(b), why);
    }
    // A total length a little larger only takes in the zeros after the tables: the same automaton.
    const longer = unseal(good).slice();
    longer[a + 8] = 0xff;
    const spec = await Spec.load(seal(longer));
    const intact = await Spec.load(good);
    expect(spec.stateCount).toBe(intact.stateCount);
    for (let st = 0; st < spec.stateCount; st++) expect(spec.dfa.trans.subarray(st * spec.dfa.nClasses, (st + 1) * spec.dfa.nClasses)).toEqual(intact.dfa.trans.subarray(st * intact.dfa.nClasses, (st + 1) * intact.dfa.nClasses));
    const notWasm = seal(Uint8Array.from([0x00, 0x61, 0x73, 0x6d, 0x02, 0x00, 0x00, 0x00]));
    await refused(notWasm, /not a specc \.wasm/);
  });
});

describe("hostile tokenizer.json files", () => {
  const base = () => ({
    model: { type: "BPE", vocab: { a: 0, b: 1, ab: 2 } as Record<string, unknown>, merges: ["a b"] },
    added_tokens: [{ id: 3, content: "</s>", special: true }] as unknown[],
    decoder: { type: "ByteLevel" }, pre_tokenizer: { type: "ByteLevel" },
  });
  const load = (o: unknown) => Vocabulary.fromTokenizerJson(new TextEncoder().encode(typeof o === "string" ? o : JSON.stringify(o)));
  it("loads the intact file", async () => {
    expect((await load(base())).size).toBe(4);
  });
  const broken: [string, () => unknown, RegExp][] = [
    ["no model", () => { const b = base() as Record<string, unknown>; delete b["model"]; return b; }, /model/],
    ["model of the wrong type", () => ({ ...base(), model: [] }), /model/],
    ["a token id that is a string", () => { const b = base(); b.model.vocab["a"] = "0"; return b; }, /not a token id/],
    ["a negative id", () => { const b = base(); b.model.vocab["a"] = -1; return b; }, /not a token id/],
    ["a huge id", () => { const b = base(); b.model.vocab["a"] = 2 ** 30; return b; }, /beyond the supported/],
    ["no tokens", () => ({ ...base(), model: { type: "BPE", vocab: {}, merges: [] }, added_tokens: [] }), /empty|no EOS/],
    ["no EOS", () => ({ ...base(), added_tokens: [] }), /no EOS token/],
    ["added tokens of the wrong shape", () => ({ ...base(), added_tokens: [{ id: "x" }] }), /added_tokens\[0\]/],
    ["not JSON", () => "{\"model\": {\"vocab\": {\"\\>\": 1}}", /not JSON/],
  ];
  for (const [what, make, why] of broken) {
    it(`refuses ${what} with a VocabularyError that says so`, async () => {
      const e = await load(make()).then(() => null, (x: unknown) => x);
      expect(e).toBeInstanceOf(VocabularyError);
      expect((e as Error).message).toMatch(why);
    });
  }
  it("a duplicate id is read as the tokenizer reads it (the later key), and 1M tokens load", async () => {
    const dup = base();
    dup.model.vocab["c"] = 0;
    expect((await load(dup)).size).toBe(4);
    const big = base();
    for (let i = 4; i < 1_000_004; i++) big.model.vocab[`t${i}`] = i;
    const v = await load(big);
    expect(v.size).toBe(1_000_004);
    expect(v.eos).toEqual([3]);
  });
});
