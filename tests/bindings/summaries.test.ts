/**
 * Pushdown summaries kept across specs (bindings/summaries.ts): a disposed spec's summaries of its
 * called machines' states are installed in the next spec of the same vocabulary whose states have
 * the same automaton below them. Every mask must equal that of a spec that keeps none.
 */
import { describe, expect, it } from "vitest";
import type { ByteDfa } from "../../compiler/ir.js";
import { compileToWasm } from "../../compiler/compile.js";
import { compileJsonSchema } from "../../compiler/jsonschema/index.js";
import { Spec } from "../../bindings/spec.js";
import { MAX_KEPT, installSummaries, keepSummaries, summaryKeys, type Summary } from "../../bindings/summaries.js";
import { Vocabulary } from "../../bindings/vocab.js";
import { loadPackageTokenizer, tokenizerJsonPath } from "../helpers/tokenizers.js";

const schemas: [unknown, string[]][] = [
  [{ type: "object", properties: { a: { type: "string" }, b: { type: "number" } }, required: ["a"] },
    ['{"a": "x y \\" z", "b": -1.5e3}', '{"a":"\\u00e9t\\u00e9 caf\\u00e9"}']],
  [{ type: "object", properties: { name: { type: "string" }, tags: { type: "array", items: { type: "string" } }, n: { type: "integer" } } },
    ['{"name": "Ada", "tags": ["x", "a longer tag \\n", ""], "n": 42}', '{"tags": []}']],
  [{ type: "array", items: { type: "object", properties: { k: { type: "string" }, v: {} } } },
    ['[{"k": "one", "v": {"deep": [1, [2, {"x": null}]]}}, {"k": "two", "v": "str"}]']],
  // A long string: 64-character blocks, each a called machine of ~450 states (escapes included).
  [{ type: "object", properties: { t: { type: "string", maxLength: 300 } } },
    [`{"t": "${"Our agency used a combination of automated tools, \\n and manual analysis. ".repeat(3)}"}`]],
];

type Ex = Spec["exports"];

/**
 * A pushdown ByteDfa from byte edges: `edges[s]` maps a byte to a target, `calls[s]` lists
 * [start, ret]; `classes` (optional) gives byte → class, where the bytes of a class behave alike.
 */
function pda(n: number, edges: Record<number, Record<string, number>>, calls: Record<number, [number, number][]>,
  accepting: number[], classes?: (b: number) => number): ByteDfa {
  const classOf = classes ?? ((b: number) => b);
  const classMap = Uint8Array.from({ length: 256 }, (_, b) => classOf(b));
  const nClasses = Math.max(...classMap) + 1;
  const trans = new Int32Array(n * nClasses).fill(-1);
  for (const [s, row] of Object.entries(edges)) for (const [ch, t] of Object.entries(row)) trans[Number(s) * nClasses + classMap[ch.charCodeAt(0)]!] = t;
  return {
    nStates: n, nClasses, classMap, initial: 0, trans, flags: Uint8Array.from({ length: n }, (_, s) => (accepting.includes(s) ? 1 : 0)),
    specState: new Int32Array(n).fill(-1), envNext: new Int32Array(n).fill(-1), nextMarkers: Array.from({ length: n }, () => []),
    calls: Array.from({ length: n }, (_, s) => calls[s] ?? []),
  };
}

/** The mask at every token of `text` (until a token is refused). */
async function masksAlong(spec: Spec, ids: number[]): Promise<Int32Array[]> {
  const m = spec.matcher();
  const out: Int32Array[] = [];
  for (const id of ids) {
    const mask = m.maskView();
    out.push(mask.slice());
    if (!((mask[id >>> 5]! >>> (id & 31)) & 1) || m.commit(id) === "rejected") break;
  }
  out.push(m.maskView().slice());
  return out;
}

describe("pushdown summaries kept from spec to spec", () => {
  it("keys: the same machine under other state numbers and byte classes has the same key; one byte more or less, another", () => {
    // root: 'a' calls M and returns to an accepting state. M reads 'x' then may end.
    const one = pda(4, { 0: {}, 2: { x: 3 } }, { 0: [[2, 1]] }, [1, 3]);
    // The same, numbered otherwise, with coarse classes: 'x' alone, every other byte together.
    const renumbered = pda(4, { 3: {}, 0: { x: 1 } }, { 3: [[0, 2]] }, [2, 1], (b) => (b === 0x78 ? 1 : 0));
    const other = pda(4, { 0: {}, 2: { y: 3 } }, { 0: [[2, 1]] }, [1, 3]);
    const longer = pda(5, { 0: {}, 2: { x: 3 }, 3: { x: 4 } }, { 0: [[2, 1]] }, [1, 4]);
    const k = summaryKeys(one).keys;
    expect(k[2]).toBeDefined();
    expect(k[0]).toBeUndefined(); // the root machine is no called machine
    expect(summaryKeys(renumbered).keys[0]).toBe(k[2]);
    expect(summaryKeys(renumbered).keys[1]).toBe(k[3]);
    expect(summaryKeys(other).keys[2]).not.toBe(k[2]);
    expect(summaryKeys(longer).keys[2]).not.toBe(k[2]);
    // The whole shape, written out on asking: the same for the same machine, another for another.
    expect(summaryKeys(renumbered).machine(1)).toBe(summaryKeys(one).machine(2));
    expect(summaryKeys(other).machine(2)).not.toBe(summaryKeys(one).machine(2));
    expect(summaryKeys(one).machine(0)).toBeUndefined();
    // M's end no longer ends: another key.
    expect(summaryKeys(pda(4, { 0: {}, 2: { x: 3 }, 3: { x: 3 } }, { 0: [[2, 1]] }, [1])).keys[2]).not.toBe(k[2]);
    // A state with two call edges has no canonical order: its machine gets no key.
    const twoCalls = pda(6, { 0: {}, 2: {}, 4: { x: 5 } }, { 0: [[2, 1]], 2: [[4, 3], [4, 5]] }, [1, 3, 5]);
    expect(summaryKeys(twoCalls).keys[2]).toBeUndefined();
  });

  it("are installed in later specs of the vocabulary, and every mask equals a spec's that keeps none", async () => {
    const path = tokenizerJsonPath("llama3_1");
    const kept = await Vocabulary.fromTokenizerJson(path);
    const none = await Vocabulary.fromTokenizerJson(path); // its specs are never disposed: it keeps nothing
    const tok = await loadPackageTokenizer("llama3_1");
    let installed = 0;
    let steps = 0;
    for (let round = 0; round < 2; round++) {
      for (const [schema, docs] of schemas) {
        const wasm = compileToWasm(compileJsonSchema(schema));
        const a = await Spec.load(wasm, { vocab: kept });
        const b = await Spec.load(wasm, { vocab: none });
        for (let q = 0; q < a.stateCount; q++) if (a.exports.sym_get!(q, 0) !== 0) installed++;
        for (const doc of docs) {
          const ids = tok.encode(doc);
          const ma = await masksAlong(a, ids);
          expect(ma.length).toBe(ids.length + 1); // the document is accepted token by token
          expect(ma).toEqual(await masksAlong(b, ids));
          steps += ma.length;
        }
        a.dispose();
      }
    }
    expect(steps).toBeGreaterThan(200);
    expect(installed).toBeGreaterThan(5);
  });

  it("a long string's block machine (more than 256 states) has keys", async () => {
    const spec = await Spec.load(compileToWasm(compileJsonSchema(schemas[3]![0])));
    const places = summaryKeys(spec.dfa).keys.flatMap((k) => (k === undefined ? [] : [Number(k.split("#")[1])]));
    expect(Math.max(...places)).toBeGreaterThan(256);
  });

  it("a full cache takes a spec's new summaries in place of entries no spec installed since the last look", async () => {
    const vocab = await Vocabulary.fromTokenizerJson(tokenizerJsonPath("llama3_1"));
    const tok = await loadPackageTokenizer("llama3_1");
    const [schema, docs] = schemas[0]!;
    const spec = await Spec.load(compileToWasm(compileJsonSchema(schema)), { vocab });
    await masksAlong(spec, tok.encode(docs[0]!));
    const fake = (used: boolean): Summary => ({ machine: "fake", mask: new Int32Array(1), front: new Uint32Array(1), deepest: 0, pairs: 0, used });
    const cache = new Map<string, Summary>();
    for (let i = 0; i < MAX_KEPT; i++) cache.set(`fake#${i}`, fake(i % 2 === 0)); // the even ones installed
    const exports = spec.exports as Ex & { sym_get(q: number, k: number): number };
    keepSummaries(exports, () => spec.summaryKeys(), cache);
    const added = [...cache.keys()].filter((k) => !k.startsWith("fake#"));
    expect(added.length).toBeGreaterThan(1);
    expect(cache.size).toBe(MAX_KEPT);
    // The oldest entries not installed went, in order; every installed one stayed, now to be installed again.
    for (let i = 0; i < 2 * added.length; i++) expect(cache.has(`fake#${i}`)).toBe(i % 2 === 0);
    expect(cache.has(`fake#${2 * added.length + 1}`)).toBe(true);
    expect(cache.get("fake#0")!.used).toBe(false);
    // Kept again from the same spec: its summaries are in already, so nothing is taken and nothing
    // let go (the entries passed over once stay until room is needed).
    keepSummaries(exports, () => spec.summaryKeys(), cache);
    expect(cache.size).toBe(MAX_KEPT);
    expect(cache.has("fake#0")).toBe(true);
    // What was kept installs in a new spec and marks its entries installed.
    const next = await Spec.load(compileToWasm(compileJsonSchema(schema)), { vocab: await Vocabulary.fromTokenizerJson(tokenizerJsonPath("llama3_1")) });
    expect(installSummaries(next.exports, next.summaryKeys(), cache)).toBe(added.length);
    for (const k of added) expect(cache.get(k)!.used).toBe(true);
  });

  it("a string's states have the same keys in two schemas; a summary installed in the wrong state changes masks", async () => {
    const vocab = await Vocabulary.fromTokenizerJson(tokenizerJsonPath("llama3_1"));
    const tok = await loadPackageTokenizer("llama3_1");
    const [s0, s1] = [schemas[0]!, schemas[1]!].map(([schema]) => compileToWasm(compileJsonSchema(schema)));
    const first = await Spec.load(s0!, { vocab });
    const second = await Spec.load(s1!, { vocab });
    const k0 = new Set(first.summaryKeys().keys.filter((k) => k !== undefined));
    const shared = second.summaryKeys().keys.filter((k) => k !== undefined && k0.has(k));
    expect(shared.length).toBeGreaterThan(0);
    // Summaries of the first spec, moved one key along: each lands in a state it does not belong to.
    await masksAlong(first, tok.encode(schemas[0]![1][0]!));
    await masksAlong(first, tok.encode(schemas[0]![1][1]!));
    const cache = new Map<string, Summary>();
    keepSummaries(first.exports as Ex & { sym_get(q: number, k: number): number }, () => first.summaryKeys(), cache);
    expect(cache.size).toBeGreaterThan(1);
    const keys = [...cache.keys()];
    const values = [...cache.values()];
    const wrong = new Map(keys.map((k, i) => [k, values[(i + 1) % values.length]!] as const));
    const fresh = await Spec.load(s0!, { vocab: await Vocabulary.fromTokenizerJson(tokenizerJsonPath("llama3_1")) });
    const poisoned = await Spec.load(s0!, { vocab: await Vocabulary.fromTokenizerJson(tokenizerJsonPath("llama3_1")) });
    expect(installSummaries(poisoned.exports, poisoned.summaryKeys(), wrong)).toBeGreaterThan(1);
    const ids = tok.encode(schemas[0]![1][0]!);
    expect(await masksAlong(poisoned, ids)).not.toEqual(await masksAlong(fresh, ids));
    // A key whose machine's whole shape differs (a hash that collides) installs nothing.
    const spoofed = new Map(keys.map((k, i) => [k, { ...values[i]!, machine: `${values[i]!.machine},0` }] as const));
    const other = await Spec.load(s0!, { vocab: await Vocabulary.fromTokenizerJson(tokenizerJsonPath("llama3_1")) });
    expect(installSummaries(other.exports, other.summaryKeys(), spoofed)).toBe(0);
    // The same cache, right: the same masks.
    const right = await Spec.load(s0!, { vocab: await Vocabulary.fromTokenizerJson(tokenizerJsonPath("llama3_1")) });
    expect(installSummaries(right.exports, right.summaryKeys(), cache)).toBe(cache.size);
    expect(await masksAlong(right, ids)).toEqual(await masksAlong(fresh, ids));
    const again = summaryKeys(first.dfa);
    expect(again.keys).toEqual(first.summaryKeys().keys);
    for (let q = 0; q < again.keys.length; q++) expect(again.machine(q)).toBe(first.summaryKeys().machine(q));
  });
});
