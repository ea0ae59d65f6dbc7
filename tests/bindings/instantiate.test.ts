/**
 * The shared runtime (bindings/instantiate.ts): every spec specc writes is instantiated through one
 * compiled runtime, with its tables written into a fresh memory. It must behave exactly like the
 * whole .wasm instantiated on its own (same tables in memory, same start-up, same masks), fall back
 * for modules of another shape, and keep specs apart (each has its own memory). A disposed spec's
 * memory is reused by the next load, zeroed where its runtime wrote, but a vocabulary left in place
 * for the next spec of that vocabulary: a spec loaded into it masks as one in a fresh memory.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { compileGrammarSource, compileSource, compileToWasm } from "../../compiler/compile.js";
import { appendCustomSection } from "../../compiler/emit-wasm.js";
import { TABLE_BASE } from "../../compiler/tables.js";
import { instantiateSpec } from "../../bindings/instantiate.js";
import { Spec } from "../../bindings/spec.js";
import { Vocabulary } from "../../bindings/vocab.js";
import { loadPackageTokenizer, tokenizerJsonPath } from "../helpers/tokenizers.js";

const examples = join(import.meta.dirname, "../../examples");
const ex = (f: string): string => readFileSync(join(examples, f), "utf8");
const react = compileToWasm(compileSource(ex("react.agent"), join(examples, "react.agent")));
const json = compileToWasm(compileSource(ex("tool-json.agent"), join(examples, "tool-json.agent")));

type Exports = Record<string, (...a: number[]) => number> & { memory: WebAssembly.Memory };

describe("shared runtime", () => {
  it("two specs share one compiled runtime, each with its own memory holding its own tables", async () => {
    const a = await instantiateSpec(react);
    const b = await instantiateSpec(json);
    expect(a.shared).toBe(true);
    expect(b.shared).toBe(true);
    expect(a.module).toBe(b.module);
    const ma = (a.instance.exports as Exports).memory, mb = (b.instance.exports as Exports).memory;
    expect(ma).not.toBe(mb);
    // The tables sit at TABLE_BASE exactly as the .wasm's own data segment would have put them.
    for (const [inst, wasm] of [[a, react], [b, json]] as const) {
      const whole = await WebAssembly.instantiate(wasm, {});
      const len = new DataView((whole.instance.exports as Exports).memory.buffer).getUint32(TABLE_BASE + 8, true);
      const mine = new Uint8Array((inst.instance.exports as Exports).memory.buffer, TABLE_BASE, len);
      expect(mine).toEqual(new Uint8Array((whole.instance.exports as Exports).memory.buffer, TABLE_BASE, len));
      // The start function read them: both report the same states, and step alike.
      const e1 = inst.instance.exports as Exports, e2 = whole.instance.exports as Exports;
      expect(e1.tables_ok!()).toBe(1);
      expect(e1.state_count!()).toBe(e2.state_count!());
      expect(e1.pda_mode!()).toBe(e2.pda_mode!());
      let s1 = e1.initial_state!(), s2 = e2.initial_state!();
      for (const byte of new TextEncoder().encode("Thought: ok\nAction: ")) {
        s1 = e1.step!(s1, byte);
        s2 = e2.step!(s2, byte);
        expect(s1).toBe(s2);
      }
    }
  });

  it("masks through the shared runtime equal those of the whole module, for a DFA and a pushdown spec", async () => {
    const vocab = await Vocabulary.fromTokenizerJson(tokenizerJsonPath("llama3_1"));
    const tok = await loadPackageTokenizer("llama3_1");
    for (const wasm of [react, json]) {
      const shared = await Spec.load(wasm, { vocab });
      // The same module with a custom section appended cannot be split: it is instantiated whole.
      const whole = await Spec.load(appendCustomSection(wasm, "test.note", Uint8Array.of(1)), { vocab });
      expect((await instantiateSpec(appendCustomSection(wasm, "test.note", Uint8Array.of(1)))).shared).toBe(false);
      const m1 = shared.matcher(), m2 = whole.matcher();
      const text = 'Thought: look it up\nAction: web_search\nAction Input: {"q": [1, [2, {"a": null}]]}\n';
      const ids = tok.encode(text);
      let steps = 0;
      for (const id of ids) {
        const a = new Int32Array(shared.maskWords), b = new Int32Array(whole.maskWords);
        m1.fillMask(a);
        m2.fillMask(b);
        expect(a).toEqual(b);
        const r1 = m1.commit(id), r2 = m2.commit(id);
        expect(r1).toBe(r2);
        if (r1 === "rejected") break;
        steps++;
      }
      expect(steps).toBeGreaterThan(10);
    }
  });

  it("a released memory is given to the next instance as a fresh one: byte for byte what a new memory holds after start-up", async () => {
    const a = await instantiateSpec(json);
    const e = a.instance.exports as Exports;
    // The runtime writes all it will: matchers fed, a configuration stepped through nesting.
    const m = e.m_new!(e.initial_state!());
    for (const byte of new TextEncoder().encode('Thought: x\nAction: web_search\nAction Input: {"q": [[{"a": 1}]]')) e.m_feed!(m, byte);
    const mem = e.memory;
    a.release!();
    const b = await instantiateSpec(react);
    expect((b.instance.exports as Exports).memory).toBe(mem);
    expect(b.slot!.kept).toBeUndefined();
    const fresh = await instantiateSpec(react);
    const want = new Uint8Array((fresh.instance.exports as Exports).memory.buffer);
    const got = new Uint8Array(mem.buffer);
    expect(got.length).toBeGreaterThanOrEqual(want.length);
    // The first byte that differs (-1: none), not a diff of megabytes.
    expect(got.findIndex((x, i) => x !== (i < want.length ? want[i] : 0))).toBe(-1);
  });

  it("a vocabulary a disposed spec wrote whole stays in its memory, where the next spec of it finds it; all else is as in a new memory", async () => {
    const vocab = await Vocabulary.fromTokenizerJson(tokenizerJsonPath("gemma3"));
    // The first two loads of a vocabulary build and check its trie; from the third on it is written whole.
    for (let k = 0; k < 3; k++) {
      const spec = await Spec.load(json, { vocab });
      spec.matcher().maskView();
      if (k < 2) spec.dispose();
      else {
        const mem = spec.exports.memory;
        const before = new Uint8Array(mem.buffer).slice();
        spec.dispose();
        const b = await instantiateSpec(react);
        expect((b.instance.exports as Exports).memory).toBe(mem);
        const kept = b.slot!.kept!;
        expect(kept).toBeDefined();
        expect(kept.start).toBe((4 << 20) - 4); // VOCAB_BASE (less a block's header): the same place whatever the tables
        const f = (await instantiateSpec(react)).instance.exports as Exports;
        f.heap_mark!(1); // as the check that the start function stayed below the vocabulary did (a probe block's header)
        const fresh = new Uint8Array(f.memory.buffer);
        const got = new Uint8Array(mem.buffer);
        const expected = (i: number): number => (i >= kept.start && i < kept.end ? before[i]! : i < fresh.length ? fresh[i]! : 0);
        expect(got.findIndex((x, i) => x !== expected(i))).toBe(-1);
      }
    }
  });

  it("the next spec of that vocabulary does not write its regions again (an id changed there stays changed), another vocabulary does", async () => {
    const vocab = await Vocabulary.fromTokenizerJson(tokenizerJsonPath("gemma3"));
    const other = await Vocabulary.fromTokenizerJson(tokenizerJsonPath("qwen3"));
    const tok = await loadPackageTokenizer("gemma3");
    const [thought] = tok.encode("Thought");
    for (let k = 0; k < 3; k++) (await Spec.load(react, { vocab })).dispose(); // from here on written whole
    const allowed = async (v: Vocabulary): Promise<boolean> => {
      const spec = await Spec.load(react, { vocab: v });
      const mask = spec.matcher().maskView();
      const on = ((mask[thought! >>> 5]! >>> (thought! & 31)) & 1) === 1;
      // In the trie's list of ids this spec leaves behind, token `thought` replaced by token 0.
      const ids = new Uint32Array(spec.exports.memory.buffer, spec.exports.vocab_region(1), v.size);
      ids[ids.indexOf(thought!)] = 0;
      spec.dispose();
      return on;
    };
    expect(await allowed(vocab)).toBe(true);
    expect(await allowed(vocab)).toBe(false); // in place: the changed id was not written again
    await allowed(other); // another vocabulary: its regions are written
    expect(await allowed(vocab)).toBe(true);
  });

  it("a disposed spec's memory goes to the next load, which masks as in a fresh memory; the disposed spec refuses every call", async () => {
    const vocab = await Vocabulary.fromTokenizerJson(tokenizerJsonPath("llama3_1"));
    const tok = await loadPackageTokenizer("llama3_1");
    const ids = tok.encode('Thought: look it up\nAction: web_search\nAction Input: {"q": [1, [2, {"a": null, "b": "xyz"}]]}\n');
    const masksAlong = (spec: Spec): Int32Array[] => {
      const m = spec.matcher();
      const out: Int32Array[] = [];
      for (const id of ids) {
        out.push(m.maskView().slice());
        if (m.commit(id) === "rejected") break;
      }
      return out;
    };
    // Each load after a dispose of the other kind (DFA ↔ pushdown), so the reused memory holds the
    // other spec's tables, vocabulary, caches and matchers.
    let last = await Spec.load(json, { vocab });
    masksAlong(last);
    for (const wasm of [react, json, react]) {
      const used = last.exports.memory;
      const old = last.matcher();
      last.dispose();
      last.dispose(); // twice: nothing more
      expect(last.disposed).toBe(true);
      expect(() => last.matcher()).toThrow(/disposed/);
      expect(() => old.maskView()).toThrow(/disposed/);
      expect(() => old.commit(ids[0]!)).toThrow(/disposed/);
      const reused = await Spec.load(wasm, { vocab });
      expect(reused.exports.memory).toBe(used);
      const fresh = await Spec.load(wasm, { vocab }); // the pool is empty again: a new memory
      expect(fresh.exports.memory).not.toBe(used);
      const a = masksAlong(reused), b = masksAlong(fresh);
      expect(a.length).toBeGreaterThan(20);
      expect(a).toEqual(b);
      last = reused;
    }
  });

  it("through vocabularies kept, replaced and pushed aside by a large spec's start-up, every load masks as in a fresh memory", async () => {
    const llama = await Vocabulary.fromTokenizerJson(tokenizerJsonPath("llama3_1"));
    const qwen = await Vocabulary.fromTokenizerJson(tokenizerJsonPath("qwen3"));
    const tokenizers = { llama: await loadPackageTokenizer("llama3_1"), qwen: await loadPackageTokenizer("qwen3") };
    // 128 two-byte openings (every ASCII byte its own class), then up to 12,000 ASCII bytes: ~12,000
    // states × 129 classes, whose dense rows (~3 MiB) take the heap past where a vocabulary is kept.
    const hex = (b: number): string => "\\x" + b.toString(16).padStart(2, "0");
    const wideGbnf = `root ::= (${Array.from({ length: 128 }, (_, b) => `"${hex(b)}${hex(b)}"`).join(" | ")}) ([\\x00-\\x7f]{0,100}){0,120}\n`;
    const wide = compileToWasm(compileGrammarSource(wideGbnf, "wide.gbnf", { grammarLimits: { maxRepeat: 12_000, maxRules: 100_000, maxSymbols: 1_000_000 } }, "root"));
    const agentText = 'Thought: look it up\nAction: web_search\nAction Input: {"q": [1, [2, {"a": null, "b": "xyz"}]]}\n';
    // The masks along the tokens (every `every`-th one), and how many tokens were committed.
    const masksAlong = (spec: Spec, ids: readonly number[], every: number): [Int32Array[], number] => {
      const m = spec.matcher();
      const out: Int32Array[] = [];
      let n = 0;
      for (const id of ids) {
        if (n % every === 0 || n === ids.length - 1) out.push(m.maskView().slice());
        if (m.commit(id) === "rejected") break;
        n++;
      }
      return [out, n];
    };
    // Through the wide spec's last states too (numbered last, their rows lie highest in memory).
    const wideText = "\u0005\u0005" + "The quick brown fox jumps over the lazy dog. ".repeat(300).slice(0, 11_990);
    const steps: [Uint8Array, "llama" | "qwen"][] = [
      [json, "llama"], [json, "llama"], [json, "llama"], [react, "llama"], [react, "llama"], [react, "qwen"],
      [json, "llama"], [json, "llama"], [wide, "llama"], [json, "llama"], [json, "llama"],
    ];
    let last: Spec | undefined;
    for (const [wasm, name] of steps) {
      const vocab = name === "llama" ? llama : qwen;
      const used = last?.exports.memory;
      last?.dispose();
      const reused = await Spec.load(wasm, { vocab });
      if (used) expect(reused.exports.memory).toBe(used);
      const fresh = await Spec.load(wasm, { vocab }); // the pool is empty: a new memory
      const ids = tokenizers[name].encode(wasm === wide ? wideText : agentText);
      const every = wasm === wide ? 97 : 1;
      const [a, n] = masksAlong(reused, ids, every), [b] = masksAlong(fresh, ids, every);
      expect(n).toBe(ids.length);
      expect(a).toEqual(b);
      if (wasm === wide) expect(reused.exports.heap_mark!(0)).toBeGreaterThan(4 << 20); // past the kept vocabulary
      fresh.dispose();
      last = reused;
    }
  });

  it("a module that is not a spec's shape is instantiated as it is, and fails as it would", async () => {
    // A bare module with no memory and no data: nothing to split.
    const bare = Uint8Array.of(0, 0x61, 0x73, 0x6d, 1, 0, 0, 0);
    const r = await instantiateSpec(bare);
    expect(r.shared).toBe(false);
    await expect(instantiateSpec(Uint8Array.of(0, 0x61, 0x73, 0x6d, 1, 0, 0, 0, 99))).rejects.toThrow(WebAssembly.CompileError);
  });
});
