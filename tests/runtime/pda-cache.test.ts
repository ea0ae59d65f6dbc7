/**
 * The pushdown cache limit (docs/abi.md "Cache limit"; runtime-wasm/pushdown.ts, generations):
 * one Spec of json.gbnf under a small limit runs seeded random documents steered into deep nesting,
 * so its mask cache is cleared and its configurations compacted many times, while a fresh Spec of
 * the same module with the default limit (never reached here) takes the same tokens in lockstep.
 * Every mask must be identical on both at every step — including right after rollbacks whose
 * tokens were committed before a compaction, restores of snapshots taken in the current
 * generation, and a second matcher left idle through the whole run. Snapshots from before a
 * compaction must be refused with a message that says so. The wasm memory must stop growing after
 * warm-up and the counted bytes stay bounded. (Exact masks of the pushdown runtime against the
 * reference PdaRunner are pda-runtime.test.ts's; this file checks that eviction changes nothing.)
 */
import { ensureRuntime } from "../helpers/runtime.js";
import { readFileSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import { compileGrammarSource, compileToWasm } from "../../compiler/compile.js";
import { seededRandom } from "../../compiler/random.js";
import { Spec, Vocabulary, type Matcher } from "../../bindings/index.js";

beforeAll(ensureRuntime, 60_000);

const enc = new TextEncoder();

/** Every string of length 1..3 over a JSON-ish alphabet, a few literals, and an EOS. */
function smallVocab(): Vocabulary {
  const alphabet = enc.encode('{}[]",:0a ');
  const toks: (Uint8Array | null)[] = [];
  const all = (len: number, prefix: number[]): void => {
    if (prefix.length === len) { toks.push(Uint8Array.from(prefix)); return; }
    for (const b of alphabet) all(len, [...prefix, b]);
  };
  for (let len = 1; len <= 3; len++) all(len, []);
  for (const t of ["true", "false", "null", '": "', '{"a": [', "]}"]) toks.push(enc.encode(t));
  toks.push(null);
  return Vocabulary.fromTokenBytes(toks, { eos: [toks.length - 1] });
}

type Ex = Spec["exports"] & {
  cache_bytes(): number; cache_limit(): number; cache_evictions(): number; cache_compactions(): number; config_base(): number;
};

describe("pushdown cache limit: eviction and compaction change no mask", () => {
  it("json.gbnf under a 16 KiB limit: masks equal a fresh Spec's at every step; snapshots, rollback, memory", async () => {
    const LIMIT = 16 * 1024;
    const DOCS = 400;
    const MAX_TOKENS = 120;
    const vocab = smallVocab();
    const wasm = compileToWasm(compileGrammarSource(readFileSync("examples/grammars/json.gbnf", "utf8"), "json.gbnf"));
    const a = await Spec.load(wasm, { vocab, cacheLimit: LIMIT });
    const b = await Spec.load(wasm, { vocab });
    const exA = a.exports as Ex;
    const exB = b.exports as Ex;
    expect(a.pushdown).toBe(true);
    expect(exA.cache_limit()).toBe(LIMIT);
    expect(exB.cache_limit()).toBe(64 * 1024 * 1024);
    const W = a.maskWords;
    const V = a.vocabSize;
    const eos = vocab.eos[0]!;
    const text = Array.from({ length: V }, (_, id) => (id === eos ? "" : new TextDecoder().decode(vocab.tokenBytes(id)!)));
    const opening = [...text.keys()].filter((id) => (text[id]!.match(/[[{]/g)?.length ?? 0) > (text[id]!.match(/[\]}]/g)?.length ?? 0));
    const rand = seededRandom(14);
    const maskA = new Int32Array(W);
    const maskB = new Int32Array(W);
    const allowed = (m: Int32Array, id: number): boolean => ((m[id >>> 5]! >>> (id & 31)) & 1) === 1;
    let steps = 0;
    const same = (ma: Matcher, mb: Matcher, where: string): void => {
      ma.fillMask(maskA);
      mb.fillMask(maskB);
      steps++;
      if (!maskA.every((w, i) => w === maskB[i])) {
        const diff = [...Array(V).keys()].filter((id) => allowed(maskA, id) !== allowed(maskB, id)).slice(0, 10);
        expect.fail(`${where}: masks differ (limited vs fresh Spec) at tokens ${diff.map((id) => JSON.stringify(text[id])).join(", ")} after ${exA.cache_compactions()} compactions`);
      }
    };

    // A second pair of matchers, left inside a nested value through the whole run: its configuration
    // must survive every compaction.
    const idleA = a.matcher();
    const idleB = b.matcher();
    for (const t of ['{"a": [', "[", "{", '"', "a", '"', ":", "["]) {
      const id = text.indexOf(t);
      expect(idleA.commit(id)).toBe("continue");
      expect(idleB.commit(id)).toBe("continue");
    }
    const idleState = idleB.state;

    const mA = a.matcher();
    const mB = b.matcher();
    /** Per matcher: the compaction count at each remembered commit (newest last). */
    let commitGen: number[] = [];
    const snaps: { id: number; idB: number; gen: number }[] = [];
    let rollbacks = 0, rollbacksAcross = 0, restored = 0, refused = 0;
    const wasmBytes: number[] = [];
    const counted: number[] = [];
    for (let doc = 0; doc < DOCS; doc++) {
      mA.reset();
      mB.reset();
      commitGen = [];
      for (let t = 0; t < MAX_TOKENS; t++) {
        same(mA, mB, `document ${doc}, token ${t}`);
        let id = -1;
        if (allowed(maskA, eos) && rand() < 0.15) id = eos;
        for (let k = 0; id < 0 && k < 40; k++) {
          const c = k < 20 && rand() < 0.5 ? opening[Math.floor(rand() * opening.length)]! : Math.floor(rand() * V);
          if (c !== eos && allowed(maskA, c)) id = c;
        }
        if (id < 0) id = allowed(maskA, eos) ? eos : [...Array(V).keys()].find((c) => c !== eos && allowed(maskA, c))!;
        const r = mA.commit(id);
        expect(mB.commit(id)).toBe(r);
        expect(r).not.toBe("rejected");
        commitGen.push(exA.cache_compactions());
        if (r === "done") break;
        // Rollback, sometimes across a compaction (the ring's ids were renumbered).
        if (rand() < 0.08 && mA.rollbackLimit > 0) {
          const n = 1 + Math.floor(rand() * Math.min(3, mA.rollbackLimit));
          expect(mB.rollbackLimit).toBe(mA.rollbackLimit);
          if (commitGen[commitGen.length - n]! !== exA.cache_compactions()) rollbacksAcross++;
          mA.rollback(n);
          mB.rollback(n);
          commitGen.length -= n;
          rollbacks++;
          same(mA, mB, `document ${doc}, after rolling back ${n}`);
        }
        // Snapshots: taken now, restored later if no compaction came between, else refused.
        if (rand() < 0.03) snaps.push({ id: mA.state, idB: mB.state, gen: exA.cache_compactions() });
        if (snaps.length > 0 && rand() < 0.03) {
          const s = snaps.shift()!;
          if (s.gen === exA.cache_compactions()) {
            mA.state = s.id;
            mB.state = s.idB;
            commitGen = [];
            restored++;
            same(mA, mB, `document ${doc}, after restoring a snapshot`);
          } else {
            expect(s.id).toBeLessThan(exA.config_base());
            expect(() => (mA.state = s.id)).toThrow(/from before a cache compaction/);
            expect(exA.m_set_state(mA.handle, s.id)).toBe(-1);
            expect(a.step(s.id, 0x7b)).toBe(-1);
            expect(() => a.stateMask(s.id)).toThrow(/from before a cache compaction/);
            refused++;
          }
        }
      }
      wasmBytes.push(exA.memory.buffer.byteLength);
      counted.push(exA.cache_bytes());
    }
    if (process.env.SPECC_CACHE_STATS) console.log({ steps, compactions: exA.cache_compactions(), evictions: exA.cache_evictions(), rollbacks, rollbacksAcross, restored, refused, wasm: [...new Set(wasmBytes)], maxCounted: Math.max(...counted), configsB: b.configCount, liveA: a.configCount - exA.config_base(), bytesB: exB.cache_bytes() });
    same(idleA, idleB, "the idle matcher");
    expect(idleB.state).toBe(idleState);
    expect(idleA.commit(text.indexOf("]"))).toBe(idleB.commit(text.indexOf("]")));
    same(idleA, idleB, "the idle matcher, one token on");

    // The limited Spec evicted and compacted many times; the fresh one never did.
    expect(exA.cache_compactions()).toBeGreaterThanOrEqual(5);
    expect(exA.cache_evictions()).toBeGreaterThan(exA.cache_compactions());
    expect(exB.cache_evictions()).toBe(0);
    expect(exB.cache_compactions()).toBe(0);
    expect(b.configCount).toBeGreaterThan(4 * (a.configCount - exA.config_base()));
    // Every branch above was taken.
    expect(rollbacksAcross).toBeGreaterThan(0);
    expect(rollbacks).toBeGreaterThan(rollbacksAcross);
    expect(restored).toBeGreaterThan(0);
    expect(refused).toBeGreaterThan(0);
    expect(steps).toBeGreaterThan(10_000);
    // Memory: the wasm memory does not grow over the second half; the counted bytes stay within
    // the limit plus one call's worth (they are checked at the start of each call).
    const half = wasmBytes.slice(DOCS / 2);
    expect(new Set(half).size, `wasm memory over the second half: ${[...new Set(half)].join(", ")}`).toBe(1);
    expect(Math.max(...counted.slice(DOCS / 2))).toBeLessThan(2 * LIMIT);
    // The unlimited Spec, for contrast, kept everything.
    expect(exB.cache_bytes()).toBeGreaterThan(4 * LIMIT);
  });

  it("cacheLimit is validated; DFA modules report no cache", async () => {
    const vocab = smallVocab();
    const wasm = compileToWasm(compileGrammarSource(readFileSync("examples/grammars/json.gbnf", "utf8"), "json.gbnf"));
    await expect(Spec.load(wasm, { vocab, cacheLimit: 0 })).rejects.toThrow(/cacheLimit/);
    await expect(Spec.load(wasm, { vocab, cacheLimit: 1.5 })).rejects.toThrow(/cacheLimit/);
    const s = await Spec.load(wasm, { vocab });
    const ex = s.exports as Ex;
    expect(ex.cache_set_limit!(1 << 20)).toBe(64 << 20);
    expect(ex.cache_set_limit!(0)).toBe(1 << 20);
    expect(ex.cache_limit()).toBe(64 << 20);
    expect(ex.config_base()).toBe(0);
    const dfa = await Spec.load(compileToWasm(compileGrammarSource('root ::= "a"+', "a.gbnf")), { vocab });
    expect(dfa.pushdown).toBe(false);
    expect((dfa.exports as Ex).cache_bytes()).toBe(0);
    expect((dfa.exports as Ex).config_base()).toBe(0);
  });
});
