/**
 * The runtime's pushdown mode (runtime-wasm/pushdown*.ts, docs/abi.md "Pushdown mode") checked against
 * the reference semantics, PdaRunner (compiler/grammar/pda.ts): along seeded token walks through
 * the wasm matcher (tokens sampled from its own masks, steered into deep nesting), every checked
 * configuration's mask must equal a brute force — every token's bytes run through PdaRunner from
 * the reference configuration tracked alongside — with the real Llama 3 and Qwen3 vocabularies on
 * the example grammars and small synthetic vocabularies on hand-written ambiguous, nullable and
 * pathological grammars (both limits of pda.ts reached). Also: `m_feed` verdicts on sampled and
 * mutated sentences, configuration ids as a faithful numbering of configurations, snapshot and
 * rollback, the stack and pair limits, and the TS binding on pushdown modules.
 */
import { ensureRuntime } from "../helpers/runtime.js";
import { readFileSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import { compileGrammarSource, compileSource, compileToWasm, type CompiledGrammar } from "../../compiler/compile.js";
import { PDA_MAX_PAIRS, PDA_MAX_STACK, PdaRunner, type PdaConfig } from "../../compiler/grammar/pda.js";
import { sampleSentence } from "../../compiler/grammar/sample.js";
import { ByteFlag } from "../../compiler/ir.js";
import { seededRandom } from "../../compiler/random.js";
import { byteDfaEngine, runTrace } from "../../compiler/trace.js";
import { jsonSchemaToGbnf } from "../../compiler/jsonschema/convert.js";
import { MAX_ROLLBACK, Spec, STATE_ACCEPTING, Vocabulary, wasmEngine } from "../../bindings/index.js";
import { MASKS_SECTION, serializeMasks, serializeVocabulary, VOCAB_SECTION } from "../../bindings/baked-vocab.js";
import { appendCustomSection } from "../../compiler/emit-wasm.js";
import { loadTokenizerJson, type TokenizerName } from "../helpers/tokenizers.js";
import { maskDiff, mutate } from "../helpers/differential.js";

const EX = "examples/grammars";
const enc = new TextEncoder();
const dec = new TextDecoder();

beforeAll(ensureRuntime, 60_000);

// ---- Helpers -----------------------------------------------------------------------------------------

interface Grammar {
  c: CompiledGrammar;
  wasm: Uint8Array;
  runner: PdaRunner;
}

const grammarCache = new Map<string, Grammar>();
/** A grammar file of examples/grammars, or inline text (name it `*.gbnf`), compiled in pushdown mode. */
function grammar(name: string, text?: string, called?: string[]): Grammar {
  let g = grammarCache.get(name);
  if (!g) {
    const c = compileGrammarSource(text ?? readFileSync(`${EX}/${name}`, "utf8"), name, {}, "root", called);
    const d = c.byteDfa;
    const runner = new PdaRunner({
      ...d,
      accepting: Uint8Array.from(d.flags, (f) => f & ByteFlag.Accepting),
      calls: d.calls ?? Array.from({ length: d.nStates }, () => []),
    });
    g = { c, wasm: compileToWasm(c), runner };
    grammarCache.set(name, g);
  }
  return g;
}

const vocabCache = new Map<string, Vocabulary>();
function real(name: TokenizerName): Vocabulary {
  let v = vocabCache.get(name);
  if (!v) {
    v = Vocabulary.fromTokenizerJsonObject(loadTokenizerJson(name));
    vocabCache.set(name, v);
  }
  return v;
}

/**
 * A small vocabulary over `alphabet`: every string of length 1..3, random strings of length 4..16,
 * duplicates, an empty token, a special token and an EOS; ids shuffled.
 */
function syntheticVocab(alphabet: string, seed: number): Vocabulary {
  const r = seededRandom(seed);
  const a = enc.encode(alphabet);
  const toks: (Uint8Array | null)[] = [];
  const all = (len: number, prefix: number[]): void => {
    if (prefix.length === len) { toks.push(Uint8Array.from(prefix)); return; }
    for (const b of a) all(len, [...prefix, b]);
  };
  for (let len = 1; len <= 3; len++) all(len, []);
  for (let k = 0; k < 300; k++) {
    const len = 4 + Math.floor(r() * 13);
    toks.push(Uint8Array.from({ length: len }, () => a[Math.floor(r() * a.length)]!));
  }
  for (let k = 0; k < 10; k++) toks.push(toks[Math.floor(r() * toks.length)]!.slice());
  toks.push(new Uint8Array(0), enc.encode("?"), null, null);
  for (let i = toks.length - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [toks[i], toks[j]] = [toks[j]!, toks[i]!];
  }
  const specials = toks.flatMap((t, i) => (t === null ? [i] : []));
  return Vocabulary.fromTokenBytes(toks, { eos: [specials[0]!], special: [specials[1]!] });
}

/** Token bytes by id (null for special ids), for fast loops. */
const bytesCache = new WeakMap<Vocabulary, (Uint8Array | null)[]>();
function tokenBytes(vocab: Vocabulary): (Uint8Array | null)[] {
  let t = bytesCache.get(vocab);
  if (!t) {
    t = Array.from({ length: vocab.size }, (_, id) => vocab.tokenBytes(id));
    bytesCache.set(vocab, t);
  }
  return t;
}

/**
 * The brute-force mask of reference configuration `cfg`: a text token iff PdaRunner runs all its
 * bytes from `cfg` (steps are memoized per configuration object, so tokens that share a prefix
 * share its steps; `step` is pure), EOS iff `cfg` accepts, other specials never.
 */
function bruteMask(runner: PdaRunner, cfg: PdaConfig, vocab: Vocabulary, words: number): Int32Array {
  const memo = new Map<PdaConfig, Map<number, PdaConfig | null>>();
  const step = (c: PdaConfig, b: number): PdaConfig | null => {
    let m = memo.get(c);
    if (!m) memo.set(c, (m = new Map()));
    let r = m.get(b);
    if (r === undefined) {
      r = runner.step(c, b);
      m.set(b, r);
    }
    return r;
  };
  const out = new Int32Array(words);
  const toks = tokenBytes(vocab);
  for (let id = 0; id < vocab.size; id++) {
    const b = toks[id]!;
    let ok: boolean;
    if (b === null) ok = vocab.isEos(id) && cfg.accept;
    else {
      let c: PdaConfig | null = cfg;
      for (let i = 0; c && i < b.length; i++) c = step(c, b[i]!);
      ok = c !== null;
    }
    if (ok) out[id >> 5]! |= 1 << (id & 31);
  }
  return out;
}

/**
 * `doc` fed greedily by the longest vocabulary text of at most 12 bytes; at every token the mask
 * equals the brute-force one and the token continues; the whole doc is accepted, or with `whole`
 * false it is a prefix and the mask after it is checked too. Returns the masks checked.
 */
function checkEveryToken(spec: Spec, g: Grammar, vocab: Vocabulary, doc: string, whole = true): number {
  const toks = tokenBytes(vocab);
  const byText = new Map<string, number>();
  toks.forEach((b, id) => { if (b && b.length <= 12 && !byText.has(dec.decode(b))) byText.set(dec.decode(b), id); });
  const m = spec.matcher();
  const buf = new Int32Array(spec.maskWords);
  let ref = g.runner.start();
  let checked = 0;
  for (let i = 0; i < doc.length;) {
    let len = Math.min(12, doc.length - i);
    while (!byText.has(doc.slice(i, i + len))) len--;
    const id = byText.get(doc.slice(i, i + len))!;
    m.fillMask(buf);
    expect(maskDiff(buf, bruteMask(g.runner, ref, vocab, spec.maskWords), vocab), `${JSON.stringify(doc.slice(0, i))}`).toEqual([]);
    checked++;
    expect(m.commit(id)).toBe("continue");
    ref = g.runner.run(toks[id]!, ref)!;
    i += len;
  }
  if (!whole) {
    // A prefix: the mask after its last token too.
    m.fillMask(buf);
    expect(maskDiff(buf, bruteMask(g.runner, ref, vocab, spec.maskWords), vocab), `${JSON.stringify(doc)}`).toEqual([]);
    return checked + 1;
  }
  expect(ref.accept).toBe(true);
  return checked;
}

const bit = (mask: Int32Array, id: number): boolean => ((mask[id >> 5]! >>> (id & 31)) & 1) === 1;
const depthOf = (c: PdaConfig): number => c.stacks.reduce((m, s) => Math.max(m, s.length), 0);

/**
 * Configuration ids must number configurations faithfully: one id per reference configuration
 * (PdaRunner.key) and back.
 */
class IdCheck {
  private readonly keyOf = new Map<number, string>();
  private readonly idOf = new Map<string, number>();
  see(id: number, c: PdaConfig, what: string): void {
    const k = PdaRunner.key(c);
    const known = this.keyOf.get(id);
    if (known !== undefined) expect(known, `${what}: configuration id ${id} names two configurations`).toBe(k);
    else this.keyOf.set(id, k);
    const other = this.idOf.get(k);
    if (other !== undefined) expect(other, `${what}: one configuration has two ids`).toBe(id);
    else this.idOf.set(k, id);
  }
  get size(): number {
    return this.keyOf.size;
  }
}

/** +1 per opening bracket, -1 per closing one. */
function balance(b: Uint8Array): number {
  let k = 0;
  for (const x of b) {
    if (x === 0x5b || x === 0x7b || x === 0x28) k++;
    else if (x === 0x5d || x === 0x7d || x === 0x29) k--;
  }
  return k;
}

interface WalkOptions {
  steps: number;
  seed: number;
  /** Compare the mask with the brute force every `checkEvery` steps (and at the deepest point). */
  checkEvery: number;
  /** Steps steered towards opening brackets (then a mix, then closing). */
  openSteps?: number;
  /** Stop once the reference configuration has more pairs (its brute force gets slow). */
  maxPairs?: number;
}

interface WalkResult {
  checked: number;
  maxDepth: number;
  configs: number;
  tokens: number;
}

/**
 * A seeded token walk: at each step the wasm mask is read, the accept flag compared, and (every
 * `checkEvery` steps) the whole mask compared with the brute force; then a token sampled from the
 * mask is committed to the matcher and run through the reference configuration.
 */
function walk(spec: Spec, g: Grammar, vocab: Vocabulary, o: WalkOptions, ids = new IdCheck()): WalkResult {
  const random = seededRandom(o.seed);
  const toks = tokenBytes(vocab);
  const m = spec.matcher();
  const buf = new Int32Array(spec.maskWords);
  let ref = g.runner.start();
  let checked = 0, maxDepth = 0, tokens = 0;
  let checkedDeepest = -1;
  const name = g.c.ir.file;
  for (let step = 0; step < o.steps && ref.states.length <= (o.maxPairs ?? Infinity); step++) {
    ids.see(m.state, ref, name);
    expect(m.isAccepting, `${name} step ${step}: accepting`).toBe(ref.accept);
    m.fillMask(buf);
    const depth = depthOf(ref);
    if (step % o.checkEvery === 0 || (depth > maxDepth && depth % 10 === 0 && depth !== checkedDeepest)) {
      const want = bruteMask(g.runner, ref, vocab, spec.maskWords);
      expect(maskDiff(buf, want, vocab), `${name} step ${step} (depth ${depth}, ${ref.states.length} pairs)`).toEqual([]);
      checked++;
      if (depth > maxDepth) checkedDeepest = depth;
    }
    maxDepth = Math.max(maxDepth, depth);
    const allowed: number[] = [];
    for (let id = 0; id < vocab.size; id++) if (bit(buf, id) && toks[id] && toks[id]!.length > 0) allowed.push(id);
    if (allowed.length === 0) break;
    const openSteps = o.openSteps ?? 0;
    const phase = step < openSteps ? 1 : step < openSteps + (o.steps - openSteps) / 3 ? 0 : -1;
    let pick = allowed[Math.floor(random() * allowed.length)]!;
    if (phase !== 0 && random() < 0.9) {
      // The candidate (of a few, preferring bracket tokens) that nests deepest (or least deep)
      // by the reference; if none changes the depth, something short with a quote, colon or
      // comma, which moves strings and members along.
      const nest = allowed.filter((id) => balance(toks[id]!) * phase > 0);
      let best = depth * phase;
      for (let k = 0; k < 16; k++) {
        const pool = nest.length && k < 12 ? nest : allowed;
        const id = pool[Math.floor(random() * pool.length)]!;
        const v = depthOf(g.runner.run(toks[id]!, ref)!) * phase;
        if (v > best) { best = v; pick = id; }
      }
      if (best === depth * phase) {
        const moves = allowed.filter((id) => toks[id]!.length <= 3 && toks[id]!.some((x) => x === 0x22 || x === 0x3a || x === 0x2c));
        if (moves.length && random() < 0.6) pick = moves[Math.floor(random() * moves.length)]!;
      }
    }
    expect(m.commit(pick)).toBe("continue");
    tokens++;
    ref = g.runner.run(toks[pick]!, ref)!;
    expect(ref, `${name}: the reference rejects ${JSON.stringify(dec.decode(toks[pick]!))}, which the mask allowed`).not.toBeNull();
  }
  if (process.env.PDA_WALK_LOG) console.log(name, { checked, maxDepth, configs: ids.size, tokens });
  return { checked, maxDepth, configs: ids.size, tokens };
}

// ---- Masks: real vocabularies ------------------------------------------------------------------------

describe("pushdown masks equal a brute-force PdaRunner walk (real vocabularies)", () => {
  it("json.gbnf on Llama 3 (128,256 tokens): seeded walks into 30+ nested brackets and back", async () => {
    const g = grammar("json.gbnf");
    expect(g.c.grammar.mode).toBe("pushdown");
    const vocab = real("llama3_1");
    const spec = await Spec.load(g.wasm, { vocab });
    expect(spec.pushdown).toBe(true);
    expect(spec.exports.pda_mode!()).toBe(1);
    const ids = new IdCheck();
    const a = walk(spec, g, vocab, { steps: 260, seed: 1, checkEvery: 13, openSteps: 150 }, ids);
    const b = walk(spec, g, vocab, { steps: 60, seed: 2, checkEvery: 7 }, ids);
    expect(a.maxDepth).toBeGreaterThanOrEqual(30);
    expect(a.checked + b.checked).toBeGreaterThanOrEqual(25);
  }, 240_000);

  it("arithmetic.gbnf on Llama 3: seeded walks into 30+ nested parentheses and back", async () => {
    const g = grammar("arithmetic.gbnf");
    const vocab = real("llama3_1");
    const spec = await Spec.load(g.wasm, { vocab });
    const ids = new IdCheck();
    const a = walk(spec, g, vocab, { steps: 200, seed: 3, checkEvery: 10, openSteps: 100 }, ids);
    const b = walk(spec, g, vocab, { steps: 80, seed: 4, checkEvery: 8 }, ids);
    expect(a.maxDepth).toBeGreaterThanOrEqual(30);
    expect(a.checked + b.checked).toBeGreaterThanOrEqual(25);
  }, 240_000);

  it("JSON with bounded whitespace and `value` entered by a call (as JSON Schema grammars are) on Llama 3", async () => {
    const text = readFileSync(`${EX}/json.gbnf`, "utf8").replace(/^ws\s*::=.*$/m, "ws ::= [ \\t\\n\\r]{0,6}");
    const g = grammar("json-called.gbnf", text, ["ws", "value"]);
    const vocab = real("llama3_1");
    const spec = await Spec.load(g.wasm, { vocab });
    expect(spec.pushdown).toBe(true);
    const a = walk(spec, g, vocab, { steps: 160, seed: 11, checkEvery: 9, openSteps: 80 });
    expect(a.maxDepth).toBeGreaterThanOrEqual(20);
    expect(a.checked).toBeGreaterThanOrEqual(15);
  }, 240_000);

  it("a JSON Schema's grammar on Llama 3 (listed and other property names, strings entered by a call, a 300-character bound in blocks): every token of two documents", async () => {
    // What the summaries' subtree memo and rejected ranges (pushdown-masks.ts) meet most: key
    // states that share the rest of an unlisted name, and string values whose machine is called.
    const schema = {
      type: "object",
      properties: {
        name: { type: "string" }, nickname: { type: "string" }, title: { type: "string", maxLength: 300 },
        tags: { type: "array", items: { type: "string" } }, age: { type: "integer" },
      },
      additionalProperties: { type: "string" },
    };
    const { gbnf, called } = jsonSchemaToGbnf(schema, "walk.schema.json");
    expect(called).toContain("string");
    const g = grammar("schema-walk.gbnf", gbnf, called);
    const vocab = real("llama3_1");
    const spec = await Spec.load(g.wasm, { vocab });
    expect(spec.pushdown).toBe(true);
    const ids = new IdCheck();
    // Documents whose keys come in several states (first member, after each listed one, unlisted;
    // properties in their listed order, then others),
    // greedily tokenized, the mask checked at every token; then a seeded walk.
    const docs = [
      '{"name": "Ann Lee", "nickname": "al", "title": "Dr. of things, and of all the things that a 64-character block ends inside", "tags": ["x", "yz"], "age": 42, "zip": "0"}',
      '{"name":"Bo", "tags":[], "age": 7, "nick": "b", "named": "c"}',
    ];
    let checked = 0;
    for (const doc of docs) checked += checkEveryToken(spec, g, vocab, doc);
    expect(checked).toBeGreaterThanOrEqual(40);
    const r = walk(spec, g, vocab, { steps: 40, seed: 21, checkEvery: 4, openSteps: 10 }, ids);
    expect(r.tokens).toBeGreaterThan(0);
  }, 240_000);

  it("strings that take plain ASCII but not all UTF-8 text (ASCII only, Latin-1 only) are walked, not skipped as text, on Llama 3", async () => {
    // Each string state keeps itself on every plain byte, as a JSON string's does; only the JSON
    // one also reads every UTF-8 character back to itself, so only its text subtrees may be skipped.
    const text = [
      'root ::= value',
      'value ::= ascii | latin | any | "[" value ("," value)* "]"',
      'ascii ::= "\\"" [ !#-\\[\\]-~]* "\\""',
      "latin ::= \"'\" [ -&(-~¡-ÿ]* \"'\"",
      'any ::= "<" [^<>\\x00-\\x1f]* ">"',
    ].join("\n");
    const g = grammar("strings.gbnf", text, ["ascii", "latin", "any"]);
    const vocab = real("llama3_1");
    const spec = await Spec.load(g.wasm, { vocab });
    expect(spec.pushdown).toBe(true);
    const checked = checkEveryToken(spec, g, vocab, `["plain words",'café noir',<naïve 日本語 text>,["x",'é',<>]]`);
    expect(checked).toBeGreaterThanOrEqual(20);
  }, 240_000);

  it("length-bounded strings (runs of states, each taking one step on every plain byte or character) on Llama 3, at every token and at their bounds", async () => {
    // A position of a bounded string has a run (pushdown-masks.ts): the steps left before the bound.
    // A subtree no taller than the run is allowed whole; one byte taller must be walked, and its
    // tokens past the bound rejected. Every body takes every plain byte (a run needs that): `a`
    // only those (its text run is 0), the others every character; `t` is shorter than most tokens,
    // `l` a block of 64 (as JSON Schema's long strings are), `m` rejects the quote for 3 positions.
    const text = [
      'root ::= value',
      'value ::= t | a | u | l | m | k | e | "[" value ("," value)* "]"',
      'char ::= [^"\\\\\\x00-\\x1f]',
      't ::= "t\\"" char{0,3} "\\""',
      'a ::= "a\\"" [ !#-\\[\\]-~]{0,9} "\\""',
      'u ::= "u\\"" char{0,12} "\\""',
      'l ::= "l\\"" block* char{0,5} "\\""',
      'block ::= char{64}',
      'm ::= "m\\"" char{3,8} "\\""',
      // Runs that end where only some text goes on (letters, or é): not a bound, so walked.
      'k ::= "k\\"" char{3} ([a-z] char*)? "\\""',
      'e ::= "e\\"" char{2} ("é" char*)? "\\""',
    ].join("\n");
    const g = grammar("bounded-strings.gbnf", text, ["block"]);
    const vocab = real("llama3_1");
    const spec = await Spec.load(g.wasm, { vocab });
    expect(spec.pushdown).toBe(true);
    const long = "Of all the things that a sixty-four character block ends in: words!"; // 64 + 3
    expect(long.length).toBe(67);
    const docs = [
      `[t"abc",a"some word",u"naïve 日本語",l"${long}",m"abcdefgh"]`,
      `[t"",a"",u"",l"",m"abc",[t"x",a"123456789",u"and the end.",l"${long.slice(0, 64)}end",m"ab d"]]`,
      `[k"abcdefghijklmnop",k"12 and more",e"abécafé noir",e"xy",k"wordsandwords"]`,
    ];
    let checked = 0;
    for (const doc of docs) checked += checkEveryToken(spec, g, vocab, doc);
    expect(checked).toBeGreaterThanOrEqual(60);
  }, 240_000);

  it("several pairs with text runs (as after a long string's 64-character block): a text subtree no higher than every pair's run is allowed whole, a higher one is walked, on Llama 3", async () => {
    // After `x` the configuration is two pairs, each the start of a called bounded string: runs of
    // 3 and 3 characters (then `A` or `B`), after `y` 3 and 5, after `z` 64 and 2 (a block, or
    // the end). pushdown-masks.ts `setTextRuns` skips a text subtree only when each pair's run
    // covers it: a four-letter token after `x` must still be refused.
    const text = [
      'root ::= "[" item ("," item)* "]"',
      'item ::= "x" (p3 | q3) | "y" (p3 | q5) | "z" (block* last)',
      'char ::= [^"\\\\\\x00-\\x1f]',
      'p3 ::= char{3} "A"',
      'q3 ::= char{3} "B"',
      'q5 ::= char{5} "B"',
      'block ::= char{64}',
      'last ::= char{0,2} "!"',
    ].join("\n");
    const g = grammar("pair-runs.gbnf", text, ["p3", "q3", "q5", "block", "last"]);
    const vocab = real("llama3_1");
    const spec = await Spec.load(g.wasm, { vocab });
    expect(spec.pushdown).toBe(true);
    const block = "Of all the things that a sixty-four character block ends in: wor";
    expect(block.length).toBe(64);
    const docs = [
      "[xabcA,xdefB,y12 A,yabcdeB,z!,zab!]",
      `[z${block}!,z${block}${block}xy!,yhey hB]`,
    ];
    let checked = 0;
    for (const doc of docs) checked += checkEveryToken(spec, g, vocab, doc);
    // Greedy tokens run over the item starts ("[x", ",x"): these masks come right before them,
    // where a token such as `xiety` (x, then four letters) reaches both pairs' runs.
    checked += checkEveryToken(spec, g, vocab, "[", false);
    checked += checkEveryToken(spec, g, vocab, "[ximoA,", false);
    expect(checked).toBeGreaterThanOrEqual(30);
    spec.dispose();
  }, 240_000);

  it("plain-closed states (an unanchored pattern's inside, any other property name) and the tokens that cross a long string's block ends, on Llama 3: every token of two documents", async () => {
    // Inside `20\d{2}-\w{3}` unanchored, every plain character goes on (some to a partial match),
    // as after `{"` where any name may come: a plain subtree is allowed whole from there, not
    // walked (pushdown-masks.ts `plainClosed`). `^[^&]*$` is not such a state (`&` is refused).
    // At a 64-character block's end of the 1,000-character string, the pop's pairs (the next block,
    // the last one) have text runs that take a crossing text token whole (`escapeWalks`); a token
    // that ends a non-ASCII character there, or one too long for the last block, is walked.
    const schema = {
      type: "object", required: ["date", "tag", "text"],
      properties: {
        date: { type: "string", pattern: "20\\d{2}-\\w{3}" },
        tag: { type: "string", pattern: "^[^&]*$" },
        text: { type: "string", maxLength: 1000 },
        short: { type: "string", maxLength: 130 },
      },
    };
    const { gbnf, called } = jsonSchemaToGbnf(schema, "closed.schema.json");
    const g = grammar("closed-schema.gbnf", gbnf, called);
    const vocab = real("llama3_1");
    const spec = await Spec.load(g.wasm, { vocab });
    const text = "The quick brown fox jumps over the lazy dog, then it runs away ié日本 words cross it";
    const docs = [
      `{"date": "on 2021-Mar, 1999", "tag": "a b-c / d", "text": "${text}", "other name": "x"}`,
      `{"date":"2020-x_z","tag":"","text":"","short":"${"a".repeat(62)}é${"b".repeat(66)}"}`,
    ];
    let checked = 0;
    for (const doc of docs) checked += checkEveryToken(spec, g, vocab, doc);
    expect(checked).toBeGreaterThanOrEqual(40);
    spec.dispose();
  }, 240_000);

  it("JSON Schema strings of at most N characters (text tokens by length, text-lengths.ts) with escapes, UTF-8 and the bound, on Llama 3, with counts made and with counts kept from another spec", async () => {
    // A position with r characters left takes its text tokens from the per-vocabulary counts, not
    // from a walk. An escape (\n) is one character but not text: the tokens behind it (\nabc) are
    // walked. A token that ends inside a character counts the started one.
    const schema = {
      type: "object", required: ["a", "b"],
      properties: { a: { type: "string", maxLength: 12 }, b: { type: "array", items: { type: "string", minLength: 2, maxLength: 5 } } },
    };
    const { gbnf, called } = jsonSchemaToGbnf(schema, "bounded.schema.json");
    const g = grammar("bounded-schema.gbnf", gbnf, called);
    const vocab = Vocabulary.fromTokenizerJsonObject(loadTokenizerJson("llama3_1")); // its own: no counts kept yet
    const docs = [
      '{"a": "naïve \\n café", "b": ["日本語", "ab\\"c", "\\u00e9\\t12", "12345"]}',
      '{"a":"x","b":[]}',
      '{"a": "twelve chars", "b": ["  ", "é\\\\é"]}',
    ];
    let checked = 0;
    const first = await Spec.load(g.wasm, { vocab });
    expect(first.exports.text_counts!()).toBe(0);
    checked += checkEveryToken(first, g, vocab, docs[0]!);
    expect(first.exports.text_counts!()).not.toBe(0); // made by the first bounded position
    first.dispose();
    // The next spec of the vocabulary gets them at load, before any mask.
    const next = await Spec.load(g.wasm, { vocab });
    expect(next.exports.text_counts!()).not.toBe(0);
    for (const doc of docs) checked += checkEveryToken(next, g, vocab, doc);
    expect(checked).toBeGreaterThanOrEqual(60);
    next.dispose();
  }, 240_000);

  it("text exits (text-exits.ts): quotes, escapes, control bytes and a broken UTF-8 character after text, in a string's inside and at each position of a bounded one", async () => {
    // A summary from a state that reads any text character walks only below the nodes where a text
    // path meets a byte that is not text, from the state the path leads to. A started character
    // broken by an ASCII byte ends there: from between characters the same byte would be text. A
    // newline after text is refused where a walk goes no further than the exit's byte.
    const schema = {
      type: "object", required: ["a", "b", "c"],
      properties: { a: { type: "string", maxLength: 6 }, b: { type: "string" }, c: { type: "array", items: { type: "string", maxLength: 3 } } },
    };
    const { gbnf, called } = jsonSchemaToGbnf(schema, "exits.schema.json");
    const g = grammar("exits-schema.gbnf", gbnf, called);
    const toks: (Uint8Array | null)[] = Array.from({ length: 256 }, (_, b) => Uint8Array.of(b));
    for (const t of ["ab\"", "abc\",", "a\"}", "\"x", "é\"", "ab\\\"", "a\\u00e9b\"", "abcdefgh\"", "a\n", "ab\t", "x\nyz", "\", \"", "é", "日本", "abc", "xyz"]) toks.push(enc.encode(t));
    toks.push(Uint8Array.of(0xc3, 0x20), Uint8Array.of(0x61, 0xc3, 0x22), Uint8Array.of(0x61, 0xe6, 0x97, 0x41), Uint8Array.of(0xc3, 0xa9, 0xe6, 0x97, 0x22), Uint8Array.of(0xe6, 0x20, 0x22), null);
    const vocab = Vocabulary.fromTokenBytes(toks, { eos: [toks.length - 1] });
    const spec = await Spec.load(g.wasm, { vocab });
    let checked = 0;
    for (const doc of ['{"a": "ab", "b": "xyz\\n é abc", "c": ["é", "abc", ""]}', '{"a":"日本abcd","b":"","c":["x\\"y"]}']) checked += checkEveryToken(spec, g, vocab, doc);
    expect(checked).toBeGreaterThanOrEqual(40);
    spec.dispose();
  }, 120_000);

  it("the root's text exits are kept from a disposed spec for the next of its vocabulary, and a list that is not the vocabulary's is made again", async () => {
    const schema = { type: "object", required: ["a"], properties: { a: { type: "string" }, b: { type: "string", maxLength: 30 } } };
    const { gbnf, called } = jsonSchemaToGbnf(schema, "kept.schema.json");
    const g = grammar("kept-exits.gbnf", gbnf, called);
    const vocab = Vocabulary.fromTokenizerJsonObject(loadTokenizerJson("llama3_1")); // its own: nothing kept yet
    const doc = '{"a": "tab\\there \\"x\\"", "b": "say \\"hi\\" é"}';
    const first = await Spec.load(g.wasm, { vocab });
    expect(first.exports.text_exits!()).toBe(0);
    let checked = checkEveryToken(first, g, vocab, doc);
    const at = first.exports.text_exits!();
    expect(at).not.toBe(0); // made by the first summary of a string's inside
    const n = new Uint32Array(first.exports.memory.buffer, at, 1)[0]!;
    expect(n).toBeGreaterThan(1000); // Llama 3's quotes, backslashes, control bytes after text
    first.dispose();
    // The next spec has it at load, and its masks are the same.
    const next = await Spec.load(g.wasm, { vocab });
    const kept = next.exports.text_exits!();
    expect(kept).not.toBe(0);
    expect(new Uint32Array(next.exports.memory.buffer, kept, 1)[0]).toBe(n);
    checked += checkEveryToken(next, g, vocab, doc);
    next.dispose();
    // A list that does not fit the trie (an entry's node moved) is dropped on first use and made again.
    const bad = await Spec.load(g.wasm, { vocab: Vocabulary.fromTokenizerJsonObject(loadTokenizerJson("llama3_1")) });
    const room = bad.exports.text_exits_install!(n);
    expect(room).not.toBe(0);
    const words = new Uint32Array(bad.exports.memory.buffer, room, 1 + 5 * n);
    words[0] = n;
    for (let k = 0; k < n; k++) words[1 + 5 * k] = k + 1; // nodes 1..n: in order, but not the exits
    expect(bad.exports.text_exits!()).toBe(0); // checked and dropped
    checked += checkEveryToken(bad, g, vocab, doc);
    expect(bad.exports.text_exits!()).not.toBe(0);
    bad.dispose();
    expect(checked).toBeGreaterThanOrEqual(30);
  }, 240_000);

  it("text exits below a node and past a run: a value's opening quote into a bounded string, and tokens longer than a 64-character block of a longer one", async () => {
    // Below a node where the pair comes into a text run as long as the node's tallest token (here
    // the quote, whose tokens go to 20 characters), the walk goes only below the node's exits, each
    // from the run's state where its path ends; a run one shorter than that is walked node by node.
    // A block of a long string ends in the next block's first state: tokens longer than what is left
    // of the block are walked from there (every length of 'a' up to 130 is a token).
    const schema = {
      type: "object", required: ["s", "t", "u"],
      properties: { s: { type: "string", maxLength: 300 }, t: { type: "string", maxLength: 19 }, u: { type: "string", maxLength: 20 } },
    };
    const { gbnf, called } = jsonSchemaToGbnf(schema, "past.schema.json");
    const g = grammar("past-schema.gbnf", gbnf, called);
    const toks: (Uint8Array | null)[] = Array.from({ length: 256 }, (_, b) => Uint8Array.of(b));
    for (const ch of "abcd") for (let k = 1; k <= 20; k++) toks.push(enc.encode(`"${ch.repeat(k)}`));
    for (let k = 2; k <= 130; k++) toks.push(enc.encode("a".repeat(k)));
    for (let k = 1; k <= 70; k++) toks.push(enc.encode(`${"a".repeat(k)}"`));
    toks.push(null);
    const vocab = Vocabulary.fromTokenBytes(toks, { eos: [toks.length - 1] });
    const spec = await Spec.load(g.wasm, { vocab });
    const doc = `{"s": "${"a".repeat(290)}", "t": "${"b".repeat(19)}", "u": "${"c".repeat(20)}"}`;
    expect(checkEveryToken(spec, g, vocab, doc)).toBeGreaterThanOrEqual(30);
    spec.dispose();
  }, 120_000);

  it("one summary, many continuations: a called string or number ended in objects, arrays and keys (escape tables), and strings sharing the end of one longer than a run (exact runs), on Llama 3", async () => {
    // A pair's mask walks its state's frontier from what popping the pair's stack node gives
    // (pushdown-masks.ts `escapeWalks`): the table of the frontier nodes' children is built once per
    // state and read under each continuation (`,` `}` after a member, `,` `]` after an item, `:`
    // after a key), only the classes the continuation reads walked. `mid` (255 characters) is
    // longer than a run is stored (RUN_MAX); its last 40 positions are `short`'s, whose runs must
    // still be exact when `mid` is met first (`runOf`).
    const schema = {
      type: "object",
      properties: {
        n: { type: "number" }, i: { type: "integer" }, s: { type: "string" },
        xs: { type: "array", items: { type: "number" } }, ss: { type: "array", items: { type: "string" } },
        grid: { type: "array", items: { type: "array", items: { type: "integer" } } },
        mid: { type: "string", maxLength: 255 }, short: { type: "string", maxLength: 40 },
      },
      additionalProperties: { type: "string" },
    };
    const { gbnf, called } = jsonSchemaToGbnf(schema, "ends.schema.json");
    expect(called).toContain("string");
    const g = grammar("ends-schema.gbnf", gbnf, called);
    const vocab = real("llama3_1");
    const spec = await Spec.load(g.wasm, { vocab });
    expect(spec.pushdown).toBe(true);
    const docs = [
      '{"n": -3.5e+2, "i": 1000, "s": "a, b", "xs": [1,2,30,4.5], "ss": ["x","", "y z"], "grid": [[1],[22,3],[]], "mid": "abc", "short": "thirty-nine characters, or so: almost!", "zz": "q"}',
      '{"n":0,"i":-7,"s":"","xs":[],"ss":[],"grid":[[0,10,200]],"mid":"","short":"","other":"\\"quoted\\""}',
    ];
    let checked = 0;
    for (const doc of docs) checked += checkEveryToken(spec, g, vocab, doc);
    expect(checked).toBeGreaterThanOrEqual(80);
    spec.dispose();
  }, 240_000);

  it("openagi.gbnf on Qwen3 (151,643 tokens), and cooking.gbnf (no call edges: DFA mode) on Qwen3", async () => {
    const vocab = real("qwen3");
    const g = grammar("openagi.gbnf");
    const spec = await Spec.load(g.wasm, { vocab });
    expect(spec.pushdown).toBe(true);
    const a = walk(spec, g, vocab, { steps: 120, seed: 5, checkEvery: 8, openSteps: 60 });
    expect(a.checked).toBeGreaterThanOrEqual(15);
    const cooking = grammar("cooking.gbnf");
    expect(cooking.c.byteDfa.calls).toBeUndefined();
    const plain = await Spec.load(cooking.wasm, { vocab });
    expect(plain.pushdown).toBe(false);
    expect(plain.exports.pda_mode!()).toBe(0);
    walk(plain, cooking, vocab, { steps: 80, seed: 6, checkEvery: 8 });
  }, 240_000);
});

// ---- Masks: hand-written grammars, synthetic vocabularies --------------------------------------------

/**
 * Small grammars: ambiguous, nullable, mutually recursive. `pal`, `amb2` and `amb3` reach the pair
 * limit (`pal` on "abab…" and `amb3` on "xxx…" with a closure of exactly 256 pairs, so a limit off
 * by one cuts a byte earlier); `amb` reaches the stack limit; in `retneed` a return state needs a
 * frame of its own (need(ret) = 1 + need(start)), so the push check, not the pair check, is what
 * stops the nesting.
 */
const SMALL: { name: string; text: string; alphabet: string; bfs?: number }[] = [
  { name: "amb.gbnf", text: 'root ::= a a\na ::= "x" a "y" | "x"?\n', alphabet: "xy" },
  { name: "amb2.gbnf", text: 'root ::= a a\na ::= "x" a "y"? | "x"?\n', alphabet: "xy" },
  { name: "parens.gbnf", text: 'root ::= p*\np ::= "(" p* ")" | "[" p* "]" | "x"\n', alphabet: "()[]x" },
  { name: "dyck.gbnf", text: 'root ::= s\ns ::= "(" s ")" s | ""\n', alphabet: "()" },
  { name: "pal.gbnf", text: 'root ::= p\np ::= "a" p "a" | "b" p "b" | "a" | "b" | ""\n', alphabet: "ab", bfs: 40 }, // every string is a prefix: many pairs, a slow brute force
  { name: "mutual.gbnf", text: 'root ::= a\na ::= b "[" a "]" a | "x"\nb ::= "y"?\n', alphabet: "xy[]" },
  { name: "closers.gbnf", text: 'root ::= x\nx ::= "<" x ">" | "<" x ">>" | "<" y | "."\ny ::= x ")" | "."\n', alphabet: "<>.)" },
  { name: "lists.gbnf", text: 'root ::= v\nv ::= "[" (v ("," v)*)? "]" | "1" | "1" "0"*\n', alphabet: "[],10" },
  { name: "amb3.gbnf", text: 'root ::= a\na ::= "x" a "y"? | "x" a "z"? | "x"?\n', alphabet: "xyz" },
  { name: "retneed.gbnf", text: 'root ::= a\na ::= "[" a "]" q | "x"\nq ::= "(" a ")"\n', alphabet: "[]()x" },
];

describe("pushdown masks equal a brute-force PdaRunner walk (hand-written grammars)", () => {
  for (const s of SMALL) {
    it(`${s.name}: every configuration reached breadth-first (up to ${s.bfs ?? 120}), then deep seeded walks`, async () => {
      const g = grammar(s.name, s.text);
      expect(g.c.byteDfa.calls, "the grammar nests").toBeDefined();
      const vocab = syntheticVocab(s.alphabet, s.name.length);
      const spec = await Spec.load(g.wasm, { vocab });
      const words = spec.maskWords;
      const toks = tokenBytes(vocab);
      const m = spec.matcher();
      const buf = new Int32Array(words);
      const ids = new IdCheck();
      // Breadth-first over configuration ids, restoring snapshots; a configuration's reference is
      // computed when it is visited (from its parent's and the token that first reached it).
      const start = m.state;
      const refOf = new Map<number, PdaConfig>([[start, g.runner.start()]]);
      const firstFrom = new Map<number, [number, Uint8Array]>();
      const queue = [start];
      for (let h = 0; h < queue.length && h < (s.bfs ?? 120); h++) {
        const id = queue[h]!;
        let ref = refOf.get(id);
        if (!ref) {
          const [parent, bytes] = firstFrom.get(id)!;
          ref = g.runner.run(bytes, refOf.get(parent)!)!;
          refOf.set(id, ref);
        }
        m.state = id;
        ids.see(id, ref, s.name);
        expect(m.isAccepting).toBe(ref.accept);
        m.fillMask(buf);
        expect(maskDiff(buf, bruteMask(g.runner, ref, vocab, words), vocab), `${s.name} configuration ${id}`).toEqual([]);
        for (let t = 0; t < vocab.size; t++) {
          if (!bit(buf, t) || !toks[t]) continue;
          m.state = id;
          expect(m.commit(t)).toBe("continue");
          if (m.state !== start && !firstFrom.has(m.state)) {
            firstFrom.set(m.state, [id, toks[t]!]);
            queue.push(m.state);
          }
        }
      }
      expect(queue.length).toBeGreaterThan(20);
      // (Configurations near the pair limit are the next test's.)
      for (let seed = 0; seed < 2; seed++) walk(spec, g, vocab, { steps: 60, seed: 10 + seed, checkEvery: 6, maxPairs: 24 }, ids);
    }, 120_000);
  }

  it("the pair limit: long ambiguous prefixes are cut exactly where PdaRunner cuts them, masks equal up to there", async () => {
    for (const [name, pattern] of [["pal.gbnf", "a"], ["pal.gbnf", "ab"], ["amb2.gbnf", "x"], ["amb3.gbnf", "x"]] as const) {
      const s = SMALL.find((x) => x.name === name)!;
      const g = grammar(name, s.text);
      const vocab = syntheticVocab(s.alphabet, 77);
      const spec = await Spec.load(g.wasm, { vocab });
      const m = spec.matcher();
      const buf = new Int32Array(spec.maskWords);
      const text = enc.encode(pattern.repeat(400));
      const cut = verdict(g.runner, text).rejectAt;
      let ref = g.runner.start();
      for (let i = 0; i < cut; i++) {
        ref = g.runner.step(ref, text[i]!)!;
        expect(m.feed(text.subarray(i, i + 1)).ok, `${name}: byte ${i}`).toBe(true);
        // Near the cut every closure is large: the per-pair union is not trusted there. (The
        // brute force is slow on such configurations, so only some are compared.)
        if (i % 24 === 0 || i >= cut - 6) {
          m.fillMask(buf);
          expect(maskDiff(buf, bruteMask(g.runner, ref, vocab, spec.maskWords), vocab), `${name} after ${i + 1} bytes (${ref.states.length} pairs)`).toEqual([]);
        }
      }
      expect(m.feed(text.subarray(cut, cut + 1)).ok, `${name}: byte ${cut}`).toBe(false);
      expect(cut, `${name}: PdaRunner cuts the prefix (${PDA_MAX_PAIRS} pairs)`).toBeGreaterThan(0);
      expect(cut).toBeLessThan(400);
    }
  }, 120_000);
});

// ---- Feeding text -------------------------------------------------------------------------------------

/** PdaRunner's verdict on `s`: the first rejected byte (-1 if none) and acceptance. */
function verdict(runner: PdaRunner, s: Uint8Array): { rejectAt: number; accept: boolean } {
  let c = runner.start();
  for (let i = 0; i < s.length; i++) {
    const n = runner.step(c, s[i]!);
    if (!n) return { rejectAt: i, accept: false };
    c = n;
  }
  return { rejectAt: -1, accept: c.accept };
}

describe("m_feed verdicts equal PdaRunner's", () => {
  const files = ["json.gbnf", "arithmetic.gbnf", "openagi.gbnf", "cooking.gbnf"];
  for (const f of [...files, ...SMALL.map((s) => s.name)]) {
    it(`${f}: sampled sentences (deep) and mutations, whole and in pieces`, async () => {
      const small = SMALL.find((s) => s.name === f);
      const g = grammar(f, small?.text);
      const spec = await Spec.load(g.wasm);
      const m = spec.matcher();
      const random = seededRandom(100 + f.length);
      const alphabet = enc.encode(small ? small.alphabet + "?" : "{}[]()\",:0123456789 +-*/.eEtruefalsn\\ab\nwok");
      let n = 0;
      for (let k = 0; k < 40; k++) {
        const sentence = sampleSentence(g.c.grammar.cfg, { random, depth: 4 + (k % 4) * 10, maxBytes: 20_000 });
        if (!sentence) continue;
        for (const s of [sentence, mutate(sentence, random, alphabet), mutate(mutate(sentence, random, alphabet), random, alphabet)]) {
          const want = verdict(g.runner, s);
          m.reset();
          const r = m.feed(s);
          expect(r.ok ? -1 : r.offset, `${f}: ${JSON.stringify(dec.decode(s.subarray(0, 200)))}`).toBe(want.rejectAt);
          if (r.ok) expect(m.isAccepting).toBe(want.accept);
          else expect(m.state, "a rejected feed leaves the matcher unchanged").toBe(spec.initialState);
          // In pieces: each piece either runs or stops at the same absolute offset.
          m.reset();
          let at = 0, bad = -1;
          while (at < s.length) {
            const len = 1 + Math.floor(random() * 9);
            const before = m.state;
            const p = m.feed(s.subarray(at, at + len));
            if (!p.ok) { bad = at + p.offset; expect(m.state).toBe(before); break; }
            at += len;
          }
          expect(bad).toBe(want.rejectAt);
          if (bad < 0) expect(m.isAccepting).toBe(want.accept);
          n++;
        }
      }
      expect(n).toBeGreaterThan(30);
    }, 60_000);
  }
});

// ---- Snapshots and rollback ------------------------------------------------------------------------------

describe("snapshots and rollback hold configuration ids", () => {
  it("m_state / m_set_state round trip and m_rollback restore the same masks (json, Llama 3)", async () => {
    const g = grammar("json.gbnf");
    const vocab = real("llama3_1");
    const spec = await Spec.load(g.wasm, { vocab });
    const m = spec.matcher();
    const other = spec.matcher();
    const random = seededRandom(21);
    const toks = tokenBytes(vocab);
    const text = enc.encode('{"a": [[1, {"b": [true, null, "x\\"y"]}], -2.5e3], "c": {}}');
    const history: { state: number; mask: Int32Array; count: number }[] = [];
    // Commit the text byte-token by byte-token (every byte is a Llama 3 token).
    const byteTok = new Map<number, number>();
    for (let id = 0; id < vocab.size; id++) if (toks[id]?.length === 1 && !byteTok.has(toks[id]![0]!)) byteTok.set(toks[id]![0]!, id);
    for (const b of text) {
      history.push({ state: m.state, mask: m.maskView().slice(), count: m.tokensInState });
      expect(m.commit(byteTok.get(b)!)).toBe("continue");
    }
    expect(m.isAccepting).toBe(true);
    const eos = vocab.eos[0]!;
    expect(m.commit(eos)).toBe("done");
    expect(m.isDone).toBe(true);
    expect(m.maskView().every((w) => w === 0)).toBe(true);
    // Undo EOS (the ring then holds the last MAX_ROLLBACK - 1 text tokens), then 3 and 4 tokens.
    m.rollback(1);
    expect(m.isDone).toBe(false);
    expect(m.tokensInState).toBe(text.length);
    expect(m.rollbackLimit).toBe(MAX_ROLLBACK - 1);
    let back = 0;
    for (const k of [3, MAX_ROLLBACK - 4]) {
      m.rollback(k);
      back += k;
      const h = history[text.length - back]!;
      expect(m.state).toBe(h.state);
      expect(m.tokensInState).toBe(h.count);
      expect(m.maskView()).toEqual(h.mask);
    }
    expect(m.rollbackLimit).toBe(0);
    // Snapshots: every recorded configuration restores its mask, on another matcher too.
    for (let i = 0; i < 40; i++) {
      const h = history[Math.floor(random() * history.length)]!;
      other.state = h.state;
      expect(other.maskView()).toEqual(h.mask);
      expect(spec.stateMask(h.state)).toEqual(h.mask);
    }
    // An id that was never handed out is refused.
    expect(() => (other.state = spec.configCount)).toThrow(/invalid matcher state/);
    expect(spec.exports.m_set_state(other.handle, spec.configCount + 5)).toBe(-1);
    expect(spec.exports.m_set_state(other.handle, -1)).toBe(-1);
    expect(spec.exports.mask_id(spec.configCount)).toBe(-1);
    expect(() => spec.stateMask(spec.configCount)).toThrow(RangeError);
  }, 60_000);

  it("rollback after every commit restores state, counter and mask (arithmetic, synthetic vocabulary)", async () => {
    const g = grammar("arithmetic.gbnf");
    const vocab = syntheticVocab("()0123456789+-*/. ", 5);
    const spec = await Spec.load(g.wasm, { vocab });
    const m = spec.matcher();
    const random = seededRandom(8);
    const toks = tokenBytes(vocab);
    const trail: { state: number; mask: Int32Array }[] = [];
    for (let step = 0; step < 300; step++) {
      const mask = m.maskView().slice();
      const allowed: number[] = [];
      for (let id = 0; id < vocab.size; id++) if (bit(mask, id) && toks[id]?.length) allowed.push(id);
      trail.push({ state: m.state, mask });
      const id = allowed.find((x) => toks[x]![0] === 0x28 && random() < 0.3) ?? allowed[Math.floor(random() * allowed.length)]!;
      expect(m.commit(id)).toBe("continue");
      const n = 1 + Math.floor(random() * Math.min(MAX_ROLLBACK, m.rollbackLimit));
      if (random() < 0.25) {
        const count = m.tokensInState;
        m.rollback(n);
        const back = trail[trail.length - n]!;
        expect(m.state).toBe(back.state);
        expect(m.tokensInState).toBe(count - n);
        expect(m.maskView()).toEqual(back.mask);
        trail.length -= n;
      }
    }
    expect(() => m.rollback(MAX_ROLLBACK + 1)).toThrow(RangeError);
  }, 60_000);
});

// ---- The limits ------------------------------------------------------------------------------------------

describe("the stack limit", () => {
  for (const [f, open] of [["arithmetic.gbnf", "("], ["json.gbnf", "["], ["amb.gbnf", "x"], ["retneed.gbnf", "["]] as const) {
    it(`${f}: 1,100-deep nesting is cut where PdaRunner cuts it, and the masks there are exact`, async () => {
      const small = SMALL.find((s) => s.name === f);
      const g = grammar(f, small?.text);
      const prefix = f === "json.gbnf" ? '{"a": ' : "";
      const s = enc.encode(prefix + open.repeat(1100));
      const want = verdict(g.runner, s);
      expect(want.rejectAt, "PdaRunner stops the nesting").toBeGreaterThan(PDA_MAX_STACK - 10);
      expect(want.rejectAt).toBeLessThanOrEqual(prefix.length + PDA_MAX_STACK + 2);
      const vocab = small ? syntheticVocab(small.alphabet, 3) : real("llama3_1");
      const spec = await Spec.load(g.wasm, { vocab });
      const m = spec.matcher();
      const r = m.feed(s);
      expect(r.ok ? -1 : r.offset).toBe(want.rejectAt);
      // Byte by byte, the masks of the last configurations before the cut (near the limit the
      // summaries do not apply) and of a few on the way.
      m.reset();
      let ref = g.runner.start();
      const buf = new Int32Array(spec.maskWords);
      for (let i = 0; i < want.rejectAt; i++) {
        expect(m.feed(s.subarray(i, i + 1)).ok).toBe(true);
        ref = g.runner.step(ref, s[i]!)!;
        if (i >= want.rejectAt - 4 || i % 300 === 0) {
          m.fillMask(buf);
          expect(maskDiff(buf, bruteMask(g.runner, ref, vocab, spec.maskWords), vocab), `${f} after ${i + 1} bytes`).toEqual([]);
        }
      }
      expect(m.feed(s.subarray(want.rejectAt, want.rejectAt + 1)).ok).toBe(false);
      // Token by token the same cut: no mask offers a token that nests deeper.
      const deepest = m.state;
      m.fillMask(buf);
      const toks = tokenBytes(vocab);
      for (let id = 0; id < vocab.size; id++) {
        if (!bit(buf, id) || !toks[id]) continue;
        m.state = deepest;
        expect(m.commit(id)).toBe("continue");
      }
    }, 120_000);
  }
});

// ---- The binding on pushdown modules ------------------------------------------------------------------

describe("the TS binding on pushdown modules", () => {
  it("states are configurations: initialState, step, stateFlags, configCount; DFA modules say pda_mode 0", async () => {
    const g = grammar("json.gbnf");
    const spec = await Spec.load(g.wasm);
    const s0 = spec.initialState;
    expect(s0).toBe(0);
    expect(spec.stateCount).toBe(g.c.byteDfa.nStates);
    let s = s0;
    let ref = g.runner.start();
    for (const b of enc.encode('{"k": [[[1]]]}')) {
      s = spec.step(s, b);
      ref = g.runner.step(ref, b)!;
      expect(s).toBeGreaterThanOrEqual(0);
      expect((spec.stateFlags(s) & STATE_ACCEPTING) !== 0).toBe(ref.accept);
    }
    expect(ref.accept).toBe(true);
    expect(spec.step(s, 0x7b)).toBe(-1);
    expect(spec.step(spec.configCount, 0x7b)).toBe(-1);
    expect(spec.configCount).toBeGreaterThan(10);
    const agent = await Spec.load(compileToWasm(compileSource(readFileSync("examples/react.agent", "utf8"), "react.agent")));
    expect(agent.pushdown).toBe(false);
    expect(agent.exports.pda_mode!()).toBe(0);
    expect(agent.exports.config_count!()).toBe(0);
    expect(agent.configCount).toBe(agent.stateCount);
  });

  it("forcedBytes follows the only allowed byte through configurations; budgets are refused", async () => {
    const g = grammar("closers.gbnf", SMALL.find((s) => s.name === "closers.gbnf")!.text);
    const spec = await Spec.load(g.wasm);
    const m = spec.matcher();
    const random = seededRandom(4);
    for (let k = 0; k < 30; k++) {
      const sentence = sampleSentence(g.c.grammar.cfg, { random, depth: 8 })!;
      for (let cut = 0; cut <= sentence.length; cut += 1 + Math.floor(random() * 3)) {
        m.reset();
        expect(m.feed(sentence.subarray(0, cut)).ok).toBe(true);
        // The definition, on the reference: while exactly one byte steps and the configuration does not accept.
        let ref = g.runner.run(sentence.subarray(0, cut))!;
        const want: number[] = [];
        for (;;) {
          if (ref.accept) break;
          const ok = [...Array(256).keys()].filter((b) => g.runner.step(ref, b) !== null);
          if (ok.length !== 1) break;
          want.push(ok[0]!);
          ref = g.runner.step(ref, ok[0]!)!;
        }
        expect([...m.forcedBytes()]).toEqual(want);
      }
    }
    expect(() => (m.budget = 5)).toThrow(/budget/);
    m.budget = 0;
    expect(spec.exports.m_set_budget(m.handle, 5)).toBe(-1);
    expect(m.budget).toBe(0);
  });

  it("wasmEngine runs traces like the TS engine (configurations on both sides)", async () => {
    const g = grammar("json.gbnf");
    const spec = await Spec.load(g.wasm);
    const verdicts: string[] = [];
    const texts = ['{"a": [1, 2, {"b": null}]}', '{"a": [1, 2, {"b": null}]', '{"a": [1, 2, {"b": nul}]}', `{"d": ${"[".repeat(200)}${"]".repeat(200)}}`];
    for (const text of texts) {
      const trace = { segments: [{ by: "llm" as const, text }] };
      const a = runTrace(wasmEngine(spec), trace, []);
      const b = runTrace(byteDfaEngine(g.c.byteDfa), trace, []);
      expect(a.verdict, text).toBe(b.verdict);
      if (a.verdict === "violation" && b.verdict === "violation") expect(a.offset).toBe(b.offset);
      verdicts.push(a.verdict);
    }
    expect(verdicts).toEqual(["conforms", "incomplete", "violation", "conforms"]);
  });

  it("a baked vocabulary is used and baked per-state masks are ignored (they cannot describe configurations)", async () => {
    const g = grammar("json.gbnf");
    const vocab = syntheticVocab('{}[]",: 0123456789truefalsn', 9);
    let wasm = appendCustomSection(g.wasm, VOCAB_SECTION, serializeVocabulary(vocab.flat(), vocab.eos));
    // What per-state baking would give: nonsense for a pushdown module (here: every state "allows" mask 0 = all ones).
    const words = Math.ceil(vocab.size / 32);
    wasm = appendCustomSection(wasm, MASKS_SECTION, serializeMasks({ words, stateMask: new Uint32Array(g.c.byteDfa.nStates), masks: new Int32Array(words).fill(-1) }));
    const spec = await Spec.load(wasm);
    expect(spec.vocabSize).toBe(vocab.size);
    expect(spec.exports.mask_install!(0, spec.exports.out_ptr(words * 4))).toBe(-1);
    const m = spec.matcher();
    const other = spec.matcher();
    const text = enc.encode('{"a": [1, {"b": []}');
    m.feed(text);
    const ref = g.runner.run(text)!;
    const buf = new Int32Array(words);
    m.fillMask(buf);
    expect(maskDiff(buf, bruteMask(g.runner, ref, vocab, words), vocab)).toEqual([]);
    // The raw batch export: the masks of [m, other, m] in order.
    const ex = spec.exports;
    const handles = ex.out_ptr(12 + 3 * words * 4);
    const out = handles + 12;
    new Int32Array(ex.memory.buffer, handles, 3).set([m.handle, other.handle, m.handle]);
    expect(ex.fill_masks(handles, 3, out)).toBe(0);
    const got = new Int32Array(ex.memory.buffer, out, 3 * words);
    expect(got.subarray(0, words)).toEqual(buf);
    expect(got.subarray(words, 2 * words)).toEqual(other.maskView());
    expect(got.subarray(2 * words)).toEqual(buf);
  });

  it("precompute summarizes every state and masks every configuration known so far", async () => {
    const g = grammar("arithmetic.gbnf");
    const vocab = real("llama3_1");
    const spec = await Spec.load(g.wasm, { vocab });
    const m = spec.matcher();
    m.feed("((1 + 2) * (3");
    const n = spec.precompute();
    expect(n).toBe(spec.distinctMasks);
    expect(n).toBeGreaterThan(2);
    const buf = new Int32Array(spec.maskWords);
    m.fillMask(buf);
    const ref = g.runner.run(enc.encode("((1 + 2) * (3"))!;
    expect(maskDiff(buf, bruteMask(g.runner, ref, vocab, spec.maskWords), vocab)).toEqual([]);
  }, 60_000);
});
