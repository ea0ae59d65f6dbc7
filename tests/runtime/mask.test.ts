/**
 * Token masks, commit, batch, jump-forward, rollback and budgets (ABI 2), checked differentially:
 * for every reachable byte state of several example specs, the module's mask must equal a
 * brute-force walk of every token's bytes through the compiler's ByteDfa (`runBytes`): a text token
 * is allowed iff its bytes run, EOS iff the state accepts, other special tokens never.
 */
import { ensureRuntime } from "../helpers/runtime.js";
import { seededRandom } from "../../compiler/random.js";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { compileSource, compileToWasm } from "../../compiler/compile.js";
import { runBytes } from "../../compiler/automata/bytes.js";
import type { ByteDfa, Compiled } from "../../compiler/ir.js";
import {
  applyMask,
  buildTokenTrie,
  MAX_ROLLBACK,
  NonconformingTextError,
  Spec,
  STATE_ACCEPTING,
  STATE_YIELD,
  Vocabulary,
  type Matcher,
} from "../../bindings/index.js";
import { loadTokenizerJson, TOKENIZER_NAMES, type TokenizerName } from "../helpers/tokenizers.js";
import { maskDiff } from "../helpers/differential.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const enc = new TextEncoder();
const dec = new TextDecoder();

const EXAMPLES = ["react", "react-brackets", "react-tools", "chat-bot", "reflexion", "react-zh"] as const;

beforeAll(ensureRuntime, 60_000);

const compiledCache = new Map<string, { c: Compiled; wasm: Uint8Array }>();
function compiled(name: string): { c: Compiled; wasm: Uint8Array } {
  let hit = compiledCache.get(name);
  if (!hit) {
    const c = compileSource(readFileSync(join(root, "examples", `${name}.agent`), "utf8"), `${name}.agent`);
    hit = { c, wasm: compileToWasm(c) };
    compiledCache.set(name, hit);
  }
  return hit;
}

// ---- Helpers -----------------------------------------------------------------------------------------

const rng = seededRandom;

/**
 * A synthetic vocabulary for a spec: every single byte, every substring of every marker (so also
 * every prefix and suffix, and partial UTF-8 characters of non-ASCII markers), markers with
 * whitespace around them, random concatenations of those pieces and random bytes, duplicates,
 * an empty token, specials and two EOS ids; ids shuffled.
 */
function syntheticVocab(markers: string[], seed = 1): Vocabulary {
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const toks: (Uint8Array | null)[] = [];
  for (let b = 0; b < 256; b++) toks.push(Uint8Array.of(b));
  const pieces: Uint8Array[] = [];
  for (const m of markers) {
    const mb = enc.encode(m);
    for (let i = 0; i < mb.length; i++) for (let j = i + 1; j <= mb.length; j++) pieces.push(mb.slice(i, j));
    for (const w of [`\n${m}`, ` ${m}`, `${m} `, `${m}\n`, `${m} x`, `\n\n${m} `, `.${m}`]) pieces.push(enc.encode(w));
  }
  for (const w of ["\n", " ", "  ", "\t", "a", "Search", "Lookup", " Search", "Search\n", "ü", "思考", "问题", "x y", "Search[", "]", " x y", "ction: x", " done"]) {
    pieces.push(enc.encode(w));
  }
  toks.push(...pieces);
  for (let k = 0; k < 600; k++) {
    const parts: Uint8Array[] = [];
    const n = 1 + Math.floor(r() * 4);
    for (let i = 0; i < n; i++) parts.push(r() < 0.15 ? Uint8Array.of(Math.floor(r() * 256)) : pick(pieces));
    const len = parts.reduce((a, p) => a + p.length, 0);
    const t = new Uint8Array(len);
    let o = 0;
    for (const p of parts) {
      t.set(p, o);
      o += p.length;
    }
    toks.push(t);
  }
  for (let k = 0; k < 40; k++) toks.push(pick(toks)!.slice());
  toks.push(new Uint8Array(0));
  for (let k = 0; k < 5; k++) toks.push(null);
  for (let i = toks.length - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [toks[i], toks[j]] = [toks[j]!, toks[i]!];
  }
  const specials = toks.flatMap((t, i) => (t === null ? [i] : []));
  const textId = toks.findIndex((t) => t !== null && t.length === 3);
  return Vocabulary.fromTokenBytes(toks, { eos: [specials[0]!, textId], special: [specials[1]!] });
}

/** The brute-force mask of `state`. */
function bruteMask(dfa: ByteDfa, vocab: Vocabulary, state: number, words: number): Int32Array {
  const out = new Int32Array(words);
  const accepting = (dfa.flags[state]! & STATE_ACCEPTING) !== 0;
  for (let id = 0; id < vocab.size; id++) {
    const b = vocab.tokenBytes(id);
    const ok = b === null ? vocab.isEos(id) && accepting : runBytes(dfa, state, b) >= 0;
    if (ok) out[id >> 5]! |= 1 << (id & 31);
  }
  return out;
}

/** States reachable from the initial state by bytes and env edges. */
function reachable(dfa: ByteDfa): number[] {
  const seen = new Uint8Array(dfa.nStates);
  const stack = [dfa.initial];
  seen[dfa.initial] = 1;
  while (stack.length) {
    const s = stack.pop()!;
    const succ = [dfa.envNext[s]!];
    for (let c = 0; c < dfa.nClasses; c++) succ.push(dfa.trans[s * dfa.nClasses + c]!);
    for (const t of succ) {
      if (t >= 0 && !seen[t]) {
        seen[t] = 1;
        stack.push(t);
      }
    }
  }
  return [...seen.keys()].filter((s) => seen[s]);
}

const bit = (mask: Int32Array, id: number): boolean => ((mask[id >> 5]! >>> (id & 31)) & 1) === 1;

/** The id of the text token with exactly these bytes (the first one). */
function tokenId(vocab: Vocabulary, text: string): number {
  const want = enc.encode(text);
  for (let id = 0; id < vocab.size; id++) {
    const b = vocab.tokenBytes(id);
    if (b && b.length === want.length && b.every((x, i) => x === want[i])) return id;
  }
  throw new Error(`no token ${JSON.stringify(text)}`);
}

/** The id of the first single-byte token `b` (the synthetic vocabularies have all 256). */
const byteTokenCache = new WeakMap<Vocabulary, Int32Array>();
function byteToken(vocab: Vocabulary, b: number): number {
  let t = byteTokenCache.get(vocab);
  if (!t) {
    t = new Int32Array(256).fill(-1);
    for (let id = 0; id < vocab.size; id++) {
      const x = vocab.tokenBytes(id);
      if (x && x.length === 1 && t[x[0]!] === -1) t[x[0]!] = id;
    }
    byteTokenCache.set(vocab, t);
  }
  return t[b]!;
}

// ---- Differential: synthetic vocabularies --------------------------------------------------------

describe("masks equal a brute-force walk (synthetic vocabulary)", () => {
  for (const name of EXAMPLES) {
    it(`${name}.agent: every reachable state, lazily and after precompute`, async () => {
      const { c, wasm } = compiled(name);
      const vocab = syntheticVocab(c.ir.states.map((s) => s.marker), name.length);
      const spec = await Spec.load(wasm, { vocab });
      expect(spec.maskWords).toBe(Math.ceil(vocab.size / 32));
      const dfa = c.byteDfa;
      const states = reachable(dfa);
      expect(states.length).toBe(dfa.nStates); // minimized and trimmed: everything is reachable
      const m = spec.matcher();
      const buf = new Int32Array(spec.maskWords);
      const lazy: Int32Array[] = [];
      for (const s of states) {
        m.state = s;
        m.fillMask(buf);
        const want = bruteMask(dfa, vocab, s, spec.maskWords);
        expect(maskDiff(buf, want, vocab), `state ${s}`).toEqual([]);
        expect(m.maskView()).toEqual(buf);
        lazy.push(buf.slice());
      }
      const distinct = spec.precompute();
      expect(distinct).toBe(new Set(lazy.map((x) => x.join(","))).size + (lazy.some((x) => x.every((w) => w === 0)) ? 0 : 1));
      states.forEach((s, i) => expect(spec.stateMask(s)).toEqual(lazy[i]));
    });
  }

  it("special tokens are never allowed, EOS exactly in accepting states", async () => {
    const { c, wasm } = compiled("react");
    const vocab = syntheticVocab(c.ir.states.map((s) => s.marker), 7);
    const spec = await Spec.load(wasm, { vocab, precompute: true });
    const specials = [...Array(vocab.size).keys()].filter((id) => vocab.isSpecial(id) && !vocab.isEos(id));
    expect(specials.length).toBeGreaterThanOrEqual(4);
    expect(vocab.eos.length).toBe(2);
    for (let s = 0; s < c.byteDfa.nStates; s++) {
      const mask = spec.stateMask(s);
      for (const id of specials) expect(bit(mask, id)).toBe(false);
      for (const id of vocab.eos) expect(bit(mask, id)).toBe((c.byteDfa.flags[s]! & STATE_ACCEPTING) !== 0);
    }
  });

  it("masks cover padded logits (vocabSize) without allowing the padding", async () => {
    const { c, wasm } = compiled("chat-bot");
    const vocab = syntheticVocab(c.ir.states.map((s) => s.marker), 3);
    const spec = await Spec.load(wasm, { vocab, vocabSize: vocab.size + 100 });
    expect(spec.vocabSize).toBe(vocab.size + 100);
    expect(spec.maskWords).toBe(Math.ceil((vocab.size + 100) / 32));
    const m = spec.matcher();
    m.feedText("Chat Bot: hello");
    const mask = m.maskView();
    for (let id = vocab.size; id < vocab.size + 100; id++) expect(bit(mask, id)).toBe(false);
    expect(() => m.commit(vocab.size + 5)).not.toThrow();
    expect(m.commit(vocab.size + 5)).toBe("rejected");
    await expect(Spec.load(wasm, { vocab, vocabSize: vocab.size - 1 })).rejects.toThrow(/smaller than the vocabulary/);
  });
});

// ---- Differential: real vocabularies -----------------------------------------------------------

describe("masks equal a brute-force walk (real tokenizers)", () => {
  const vocabs = new Map<TokenizerName, Vocabulary>();
  const real = (name: TokenizerName): Vocabulary => {
    let v = vocabs.get(name);
    if (!v) {
      v = Vocabulary.fromTokenizerJsonObject(loadTokenizerJson(name));
      vocabs.set(name, v);
    }
    return v;
  };

  /** Every state for react.agent × Llama 3.1; a seeded sample (plus yield, after-env, accepting and the initial state) elsewhere. */
  const sampleStates = (dfa: ByteDfa, n: number, seed: number): number[] => {
    const r = rng(seed);
    const out = new Set<number>([dfa.initial]);
    const kinds = [STATE_YIELD, STATE_ACCEPTING, 4];
    for (const k of kinds) {
      const s = [...Array(dfa.nStates).keys()].find((x) => dfa.flags[x]! & k);
      if (s !== undefined) out.add(s);
    }
    while (out.size < Math.min(n, dfa.nStates)) out.add(Math.floor(r() * dfa.nStates));
    return [...out];
  };

  for (const tok of TOKENIZER_NAMES) {
    it(`${tok}: ${tok === "llama3_1" ? "react.agent (every state) and a sample of" : "a sample of the states of"} each example`, async () => {
      const vocab = real(tok);
      for (const name of EXAMPLES) {
        const { c, wasm } = compiled(name);
        const spec = await Spec.load(wasm, { vocab });
        const states = tok === "llama3_1" && name === "react" ? reachable(c.byteDfa) : sampleStates(c.byteDfa, 6, name.length * 31 + tok.length);
        for (const s of states) {
          const want = bruteMask(c.byteDfa, vocab, s, spec.maskWords);
          expect(maskDiff(spec.stateMask(s), want, vocab), `${tok} ${name} state ${s}`).toEqual([]);
        }
      }
    });
  }

  it("llama3_1 react.agent: the distinct masks are few", async () => {
    const { c, wasm } = compiled("react");
    const spec = await Spec.load(wasm, { vocab: real("llama3_1"), precompute: true });
    expect(spec.distinctMasks).toBeLessThan(c.byteDfa.nStates / 4);
  });

  it("a real transcript commits token by token and every token is in the mask before it", async () => {
    const { wasm } = compiled("react");
    const vocab = real("llama3_1");
    const { loadPackageTokenizer } = await import("../helpers/tokenizers.js");
    const { encode } = await loadPackageTokenizer("llama3_1");
    const spec = await Spec.load(wasm, { vocab });
    const m = spec.matcher();
    const trace = JSON.parse(readFileSync(join(root, "tests/fixtures/traces/001-fig7-react-hotpotqa-colorado.json"), "utf8")) as {
      segments: { by: string; text: string }[];
    };
    const mask = new Int32Array(spec.maskWords);
    let tokens = 0;
    let last = "";
    for (const seg of trace.segments) {
      if (seg.by === "prompt") continue; // no marker in this prompt: context only
      if (seg.by === "env") {
        m.feedEnv(seg.text);
        continue;
      }
      for (const id of encode(seg.text)) {
        m.fillMask(mask);
        expect(bit(mask, id), `token ${id} ${JSON.stringify(dec.decode(vocab.tokenBytes(id)!))}`).toBe(true);
        last = m.commit(id);
        expect(last).not.toBe("rejected");
        tokens++;
      }
    }
    expect(tokens).toBeGreaterThan(100);
    expect(m.isAccepting).toBe(true);
    m.fillMask(mask);
    for (const id of vocab.eos) expect(bit(mask, id)).toBe(true);
    expect(m.commit(vocab.eos[0]!)).toBe("done");
    expect(m.isDone).toBe(true);
  });
});

// ---- Commit --------------------------------------------------------------------------------------------

describe("commit", () => {
  let spec: Spec;
  let vocab: Vocabulary;
  let dfa: ByteDfa;
  beforeAll(async () => {
    const { c, wasm } = compiled("react");
    dfa = c.byteDfa;
    vocab = syntheticVocab(c.ir.states.map((s) => s.marker), 11);
    spec = await Spec.load(wasm, { vocab });
  });
  const id = (t: string): number => tokenId(vocab, t);

  it("walks a ReAct run: continue, yield, feedEnv, done", () => {
    const m = spec.matcher();
    expect(m.commit(id("Thought:"))).toBe("continue");
    expect(m.specState).toBe("Thought");
    expect(m.commit(id(" "))).toBe("continue");
    expect(m.commit(id("a"))).toBe("continue");
    expect(m.commit(id("\nAction:"))).toBe("continue");
    expect(m.commit(id(" Search"))).toBe("continue");
    expect(m.commit(id("\nAction Input:"))).toBe("continue");
    expect(m.commit(id(" x y"))).toBe("continue");
    expect(m.commit(id("\nObservation:"))).toBe("yield");
    expect(m.yielding).toBe(true);
    // Nothing but EOS (if accepting) may follow a yield: the mask has no text token.
    const mask = m.maskView();
    for (let t = 0; t < vocab.size; t++) if (vocab.tokenBytes(t)?.length) expect(bit(mask, t)).toBe(false);
    expect(m.commit(id(" "))).toBe("rejected");
    m.feedEnv(" some result with Thought: inside\n");
    expect(m.commit(id("Final Thought:"))).toBe("continue");
    expect(m.commit(id(" done"))).toBe("continue");
    expect(m.isAccepting).toBe(false);
    const eos = vocab.eos[0]!;
    expect(bit(m.maskView(), eos)).toBe(false);
    expect(m.commit(eos)).toBe("rejected"); // not accepting yet: the answer is missing
    expect(m.commit(id("\nAnswer:"))).toBe("continue");
    expect(bit(m.maskView(), eos)).toBe(true);
    expect(m.commit(id(" x y"))).toBe("continue");
    expect(m.isAccepting).toBe(true);
    expect(m.commit(eos)).toBe("done");
    expect(m.isDone).toBe(true);
    expect(m.maskView().every((w) => w === 0)).toBe(true);
    expect(() => m.commit(id("a"))).toThrow(/done/);
    expect(() => m.feedText("a")).toThrow(/done/);
    expect(() => m.feedEnv("a")).toThrow(/not yielding/);
    m.rollback(1);
    expect(m.isDone).toBe(false);
    expect(m.commit(id("a"))).toBe("continue");
  });

  it("a token that completes an env-input marker and goes on is rejected (the turn ends at the marker)", () => {
    const m = spec.matcher();
    m.feedText("Thought: a\nAction: b\nAction Input: c");
    expect(m.commit(id("\nObservation: x"[0]!))).toBe("continue");
    expect(m.commit(id("Observation: x"))).toBe("rejected");
    expect(m.commit(id("Observation:"))).toBe("yield");
  });

  it("agrees with runBytes for every token from every state", () => {
    const m = spec.matcher();
    for (let s = 0; s < dfa.nStates; s++) {
      m.state = s;
      const mask = m.maskView().slice();
      for (let t = 0; t < vocab.size; t++) {
        m.state = s;
        const r = m.commit(t);
        expect(r === "rejected", `state ${s} token ${t}`).toBe(!bit(mask, t));
        if (r === "rejected") expect(m.state).toBe(s);
        else if (r !== "done") {
          expect(m.state).toBe(runBytes(dfa, s, vocab.tokenBytes(t)!));
          expect(r).toBe((dfa.flags[m.state]! & STATE_YIELD) !== 0 ? "yield" : "continue");
        }
      }
    }
  });

  it("rejection leaves the matcher unchanged (state, counter, history)", () => {
    const m = spec.matcher();
    m.feedText("Thought: abc");
    m.commit(id(" "));
    m.commit(id("a"));
    const before = [m.state, m.tokensInState, m.rollbackLimit, m.isDone];
    expect(m.commit(id("Answer:"))).toBe("rejected");
    expect(m.commit(vocab.eos[0]!)).toBe("rejected");
    const special = [...Array(vocab.size).keys()].find((t) => vocab.isSpecial(t) && !vocab.isEos(t))!;
    expect(m.commit(special)).toBe("rejected");
    expect([m.state, m.tokensInState, m.rollbackLimit, m.isDone]).toEqual(before);
  });

  it("bad inputs throw clear errors and leave the matcher unchanged", () => {
    const m = spec.matcher();
    m.feedText("Thought: abc");
    const snap = m.state;
    for (const bad of [-1, vocab.size, vocab.size + 1000, 1.5, NaN, 2 ** 32]) {
      expect(() => m.commit(bad)).toThrow(RangeError);
      expect(() => m.commit(bad)).toThrow(/out of range/);
    }
    expect(m.state).toBe(snap);
    expect(() => m.feedEnv("x")).toThrow(/not yielding/);
    expect(m.state).toBe(snap);
    let err: unknown;
    try {
      m.feedText(" more\nAnswer: early");
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(NonconformingTextError);
    expect((err as NonconformingTextError).offset).toBe(6 + "Answer:".length - 1);
    expect((err as Error).message).toMatch(/byte 12 is not allowed.*Action:/);
    expect(m.state).toBe(snap);
    expect(() => m.rollback(5)).toThrow(/can be undone/);
    expect(() => m.rollback(-1)).toThrow(RangeError);
  });

  it("a spec without a vocabulary says so", async () => {
    const plain = await Spec.load(compiled("react").wasm);
    const m = plain.matcher();
    expect(() => m.fillMask(new Int32Array(10))).toThrow(/no vocabulary/);
    expect(() => m.commit(0)).toThrow(/no vocabulary/);
    expect(() => plain.precompute()).toThrow(/no vocabulary/);
    expect(m.feedText("Thought: fine")).toBe("continue");
  });

  it("fillMask checks the bitmask size", () => {
    const m = spec.matcher();
    expect(() => m.fillMask(new Int32Array(spec.maskWords - 1))).toThrow(/words/);
    const big = new Int32Array(spec.maskWords + 3).fill(7);
    m.fillMask(big);
    expect(big.subarray(0, spec.maskWords)).toEqual(m.maskView());
    expect([...big.subarray(spec.maskWords)]).toEqual([7, 7, 7]);
  });
});

// ---- Rollback ----------------------------------------------------------------------------------------

describe("rollback", () => {
  it("undoes committed tokens, up to MAX_ROLLBACK, and not across host text", async () => {
    const { c, wasm } = compiled("react");
    const vocab = syntheticVocab(c.ir.states.map((s) => s.marker), 5);
    const spec = await Spec.load(wasm, { vocab });
    const m = spec.matcher();
    const text = "Thought: a b c d e f g h i j k l m n o p q r\nAction: go";
    const states: number[] = [];
    for (const b of enc.encode(text)) {
      states.push(m.state);
      expect(m.commit(byteToken(vocab, b))).toBe("continue");
    }
    expect(m.rollbackLimit).toBe(MAX_ROLLBACK);
    m.rollback(3);
    expect(m.state).toBe(states[states.length - 3]);
    expect(m.rollbackLimit).toBe(MAX_ROLLBACK - 3);
    m.rollback(MAX_ROLLBACK - 3);
    expect(m.state).toBe(states[states.length - MAX_ROLLBACK]);
    expect(() => m.rollback(1)).toThrow(/0 committed token/);
    m.commit(byteToken(vocab, 0x20));
    m.feedText("x");
    expect(m.rollbackLimit).toBe(0);
  });
});

// ---- Budget ----------------------------------------------------------------------------------------

/** Brute-force budget mask: the rule of docs/abi.md, from the ByteDfa. */
function bruteBudgetMask(dfa: ByteDfa, vocab: Vocabulary, s: number, words: number): Int32Array {
  const n = dfa.nStates;
  const INF = 1e9;
  const dist = new Array<number>(n).fill(INF);
  for (let x = 0; x < n; x++) if (dfa.flags[x]! & STATE_ACCEPTING) dist[x] = 0;
  for (let changed = true; changed; ) {
    changed = false;
    for (let x = 0; x < n; x++) {
      if (dfa.flags[x]! & STATE_YIELD) continue;
      for (let c = 0; c < dfa.nClasses; c++) {
        const t = dfa.trans[x * dfa.nClasses + c]!;
        if (t < 0) continue;
        const d = dfa.specState[t] !== dfa.specState[x] ? 1 : dist[t]! + 1;
        if (d < dist[x]!) {
          dist[x] = d;
          changed = true;
        }
      }
    }
  }
  const out = new Int32Array(words);
  const accepting = (dfa.flags[s]! & STATE_ACCEPTING) !== 0;
  for (let id = 0; id < vocab.size; id++) {
    const b = vocab.tokenBytes(id);
    let ok: boolean;
    if (b === null) ok = vocab.isEos(id) && accepting;
    else if (b.length === 0) ok = false;
    else {
      ok = true;
      let released = false;
      let x = s;
      for (const byte of b) {
        const t = dfa.trans[x * dfa.nClasses + dfa.classMap[byte]!]!;
        if (t < 0) {
          ok = false;
          break;
        }
        if (!released) {
          if (dfa.specState[t] !== dfa.specState[s]) released = true;
          else if (dist[t]! + 1 !== dist[x]) {
            ok = false;
            break;
          }
        }
        x = t;
      }
    }
    if (ok) out[id >> 5]! |= 1 << (id & 31);
  }
  return out;
}

describe("token budget per spec state", () => {
  for (const name of ["react", "chat-bot", "react-zh"] as const) {
    it(`${name}.agent: the exhausted-budget mask of every state equals the brute-force rule`, async () => {
      const { c, wasm } = compiled(name);
      const vocab = syntheticVocab(c.ir.states.map((s) => s.marker), 9);
      const spec = await Spec.load(wasm, { vocab });
      const m = spec.matcher();
      m.budget = 1;
      const space = byteToken(vocab, 0x20);
      for (let s = 0; s < c.byteDfa.nStates; s++) {
        m.state = s; // counter 0: the budget is not exhausted yet
        expect(m.maskView()).toEqual(spec.stateMask(s));
        // One token in the same spec state exhausts it; find a state-keeping token, if any.
        const keep = [space, ...Array(vocab.size).keys()].find((t) => {
          m.state = s;
          const r = m.commit(t);
          return (r === "continue" || r === "yield") && m.tokensInState === 1;
        });
        if (keep === undefined) continue;
        const want = bruteBudgetMask(c.byteDfa, vocab, m.state, spec.maskWords);
        expect(maskDiff(m.maskView(), want, vocab), `state ${m.state}`).toEqual([]);
        // commit agrees with the budget mask
        const at = m.state;
        const mask = m.maskView().slice();
        for (let t = 0; t < vocab.size; t += 7) {
          m.state = s;
          m.commit(keep);
          expect(m.commit(t) !== "rejected", `state ${at} token ${t}`).toBe(bit(mask, t));
        }
      }
    });
  }

  it("forces a ReAct thought to its next marker, then resets", async () => {
    const { c, wasm } = compiled("react");
    const vocab = syntheticVocab(c.ir.states.map((s) => s.marker), 4);
    const spec = await Spec.load(wasm, { vocab });
    const m = spec.matcher();
    m.budget = 3;
    expect(m.commit(tokenId(vocab, "Thought:"))).toBe("continue");
    expect(m.tokensInState).toBe(0);
    for (const t of [" ", "a", " "]) expect(m.commit(tokenId(vocab, t))).toBe("continue");
    expect(m.tokensInState).toBe(3);
    expect(m.commit(tokenId(vocab, "a"))).toBe("rejected");
    const mask = m.maskView();
    expect(bit(mask, tokenId(vocab, "Action:"))).toBe(true);
    expect(bit(mask, tokenId(vocab, "\nAction:"))).toBe(false); // the newline is not on a shortest path
    expect(m.commit(tokenId(vocab, "A"))).toBe("continue");
    expect(m.commit(tokenId(vocab, "ction: x"))).toBe("continue");
    expect(m.specState).toBe("Action");
    expect(m.tokensInState).toBe(0);
    expect(m.commit(tokenId(vocab, "a"))).toBe("continue");
    m.budget = 0;
    expect(m.budget).toBe(0);
    expect(() => (m.budget = -1)).toThrow(RangeError);
  });
});

// ---- Batch --------------------------------------------------------------------------------------------

describe("batch", () => {
  it("fillMasks equals individual fills, and so does the raw fill_masks export", async () => {
    const { c, wasm } = compiled("reflexion");
    const vocab = syntheticVocab(c.ir.states.map((s) => s.marker), 2);
    const spec = await Spec.load(wasm, { vocab });
    const r = rng(42);
    const ms = Array.from({ length: 40 }, () => {
      const m = spec.matcher();
      m.state = Math.floor(r() * c.byteDfa.nStates);
      return m;
    });
    const w = spec.maskWords;
    const out = new Int32Array(ms.length * w);
    spec.fillMasks(ms, out);
    const one = new Int32Array(w);
    ms.forEach((m, i) => {
      m.fillMask(one);
      expect(out.subarray(i * w, (i + 1) * w)).toEqual(one);
    });
    const ex = spec.exports;
    const handles = ex.out_ptr(4 * ms.length + 4 * w * ms.length);
    new Int32Array(ex.memory.buffer, handles, ms.length).set(ms.map((m) => m.handle));
    const outPtr = handles + 4 * ms.length;
    expect(ex.fill_masks(handles, ms.length, outPtr)).toBe(0);
    expect(new Int32Array(ex.memory.buffer, outPtr, w * ms.length)).toEqual(out);
    expect(() => spec.fillMasks(ms, new Int32Array(w))).toThrow(/words/);
    const other = await Spec.load(wasm, { vocab });
    expect(() => spec.fillMasks([other.matcher()], out)).toThrow(/another spec/);
  });

  it("views survive memory growth", async () => {
    const { c, wasm } = compiled("chat-bot");
    const vocab = syntheticVocab(c.ir.states.map((s) => s.marker), 2);
    const spec = await Spec.load(wasm, { vocab });
    const m = spec.matcher();
    const before = m.maskView().slice();
    const pages = spec.exports.memory.buffer.byteLength;
    spec.exports.out_ptr(pages * 2); // grows the memory: old views are detached
    expect(spec.exports.memory.buffer.byteLength).toBeGreaterThan(pages);
    expect(m.maskView()).toEqual(before);
    const buf = new Int32Array(spec.maskWords);
    m.fillMask(buf);
    expect(buf).toEqual(before);
  });
});

// ---- Jump-forward --------------------------------------------------------------------------------

/** The forced bytes from `s` by definition: exactly one byte allowed, state neither accepting nor yielding. */
function bruteForced(dfa: ByteDfa, s: number): number[] {
  const out: number[] = [];
  for (;;) {
    if (dfa.flags[s]! & (STATE_ACCEPTING | STATE_YIELD) || out.length > dfa.nStates) return out;
    const ok = [...Array(256).keys()].filter((b) => dfa.trans[s * dfa.nClasses + dfa.classMap[b]!]! >= 0);
    if (ok.length !== 1) return out;
    out.push(ok[0]!);
    s = dfa.trans[s * dfa.nClasses + dfa.classMap[ok[0]!]!]!;
  }
}

describe("forced (jump-forward)", () => {
  for (const name of EXAMPLES) {
    it(`${name}.agent: forcedBytes of every state matches the definition`, async () => {
      const { c, wasm } = compiled(name);
      const spec = await Spec.load(wasm);
      const m = spec.matcher();
      for (let s = 0; s < c.byteDfa.nStates; s++) {
        m.state = s;
        expect([...m.forcedBytes()], `state ${s}`).toEqual(bruteForced(c.byteDfa, s));
        const text = m.forced();
        expect(enc.encode(text)).toEqual(m.forcedBytes().subarray(0, enc.encode(text).length));
      }
    });
  }

  it("react.agent: markers are forced once they are unambiguous; free text forces nothing", async () => {
    const spec = await Spec.load(compiled("react").wasm);
    const m = spec.matcher();
    expect(m.forced()).toBe(""); // whitespace or "Thought:"
    m.feedText("T");
    expect(m.forced()).toBe("hought:");
    expect(m.feedText(m.forced())).toBe("continue");
    expect(m.specState).toBe("Thought");
    m.feedText(" x\n");
    expect(m.forced()).toBe(""); // more thought, or "Action:"
    m.feedText("Action: Search[x]\nAction Input: x\nObservation:");
    expect(m.forced()).toBe(""); // yielding: the environment speaks
    m.feedEnv(" result\n");
    expect(m.forced()).toBe(""); // whitespace, "Thought:" or "Final Thought:"
    m.feedText("F");
    expect(m.forced()).toBe("inal Thought:");
    m.feedText("inal Thought: done\nAnswer: 42");
    expect(m.isAccepting).toBe(true);
    expect(m.forced()).toBe("");
  });

  it("react-tools.agent: a tool name and the Action Input marker are forced", async () => {
    const spec = await Spec.load(compiled("react-tools").wasm);
    const m = spec.matcher();
    m.feedText("Thought: x\nAction: S");
    expect(m.forced()).toBe("earch");
    m.feedText("earch\n");
    expect(m.forced()).toBe("");
    m.feedText("A");
    expect(m.forced()).toBe("ction Input:");
  });

  it("react-zh.agent: inside a character, forced() is empty and forcedBytes() completes it", async () => {
    const spec = await Spec.load(compiled("react-zh").wasm);
    const m = spec.matcher();
    const bytes = enc.encode("[问题]");
    m.feedText(bytes.subarray(0, 2)); // "[" and the first byte of 问
    expect(m.forced()).toBe("");
    expect(dec.decode(Uint8Array.from([...bytes.subarray(0, 2), ...m.forcedBytes()]))).toBe("[问题]");
    m.reset();
    m.feedText("[");
    expect(m.forced()).toBe("问题]"); // the question comes first
    m.feedText("问");
    expect(m.forced()).toBe("题]");
  });
});

// ---- Trie and applyMask --------------------------------------------------------------------------

describe("token trie", () => {
  it("is DFS-ordered with shared nodes for shared prefixes and duplicates", () => {
    const t = (s: string): Uint8Array => enc.encode(s);
    const vocab = Vocabulary.fromTokenBytes([t("ab"), t("a"), null, t("abc"), t("b"), t("ab"), new Uint8Array(0), t("x")], { eos: [7] });
    const trie = buildTokenTrie(vocab);
    // root, a, ab, abc, b
    expect(trie.nNodes).toBe(5);
    const node = (i: number) => ({ byte: trie.nodes[3 * i]! & 0xff, depth: trie.nodes[3 * i]! >>> 8, skip: trie.nodes[3 * i + 1]!, tok: trie.nodes[3 * i + 2]! });
    expect([0, 1, 2, 3, 4].map(node)).toEqual([
      { byte: 0, depth: 0, skip: 5, tok: 0 },
      { byte: 97, depth: 1, skip: 4, tok: 1 },
      { byte: 98, depth: 2, skip: 4, tok: 2 },
      { byte: 99, depth: 3, skip: 4, tok: 4 },
      { byte: 98, depth: 1, skip: 5, tok: 5 },
    ]);
    expect(trie.nodes[3 * 5 + 2]).toBe(6);
    expect([...trie.trieIds]).toEqual([6, 1, 0, 5, 3, 4]);
    expect([...trie.tokKind]).toEqual([0, 0, 1, 0, 0, 0, 0, 2]);
    expect(trie.maxDepth).toBe(3);
  });
});

describe("applyMask", () => {
  it("sets disallowed logits to -Infinity, including those beyond the mask", () => {
    const logits = Float32Array.from({ length: 70 }, (_, i) => i);
    const mask = new Int32Array(2);
    mask[0] = (1 << 3) | (1 << 31);
    mask[1] = -1;
    applyMask(logits, mask);
    for (let i = 0; i < 70; i++) {
      const allowed = i === 3 || i === 31 || (i >= 32 && i < 64);
      expect(logits[i]).toBe(allowed ? i : -Infinity);
    }
  });
});

// ---- Spec.compile ------------------------------------------------------------------------------------

describe("Spec.compile", () => {
  it("compiles source text with a vocabulary", async () => {
    const src = readFileSync(join(root, "examples", "chat-bot.agent"), "utf8");
    const vocab = syntheticVocab(["Chat Bot:", "User:"], 1);
    const spec = await Spec.compile(src, { vocab, precompute: true });
    expect(spec.states.map((s) => s.marker)).toEqual(["Chat Bot:", "User:"]);
    expect(spec.distinctMasks).toBeGreaterThan(1);
    await expect(Spec.compile("(define x", { file: "bad.agent" })).rejects.toMatchObject({ name: "SpecError" });
  });
});

