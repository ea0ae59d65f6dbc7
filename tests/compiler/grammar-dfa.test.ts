/**
 * Grammars compiled to byte DFAs by bounded-stack expansion (compiler/grammar/regular.ts), checked
 * against the Earley recognizer (the oracle of compiler/grammar/earley.ts):
 *  (a) for every example grammar, seeded sentences within the nesting bound are accepted, and on
 *      sentences, random strings and mutations the DFA is SOUND (DFA-accept ⇒ Earley-accept,
 *      DFA-live prefix ⇒ Earley-viable prefix) and EXACT within the bound (equality whenever the
 *      string's bracket nesting — an upper bound of its recursion depth — is ≤ N);
 *  (b) tail recursion is a loop: 500 list items at maxDepth 2;
 *  (c) nesting N is accepted, N + 1 refused (and not offered: the opening byte is dead);
 *  (d) masks of a grammar's .wasm (no spec states) equal a brute-force walk on Llama 3's vocabulary;
 *  (e) agent specs with grammar content (examples/react-calculator.agent, examples/tool-json.agent)
 *      compile to one automaton, accept conformant transcripts, reject violations, and 200 seeded
 *      samples under the masks conform — and their grammar content is a sentence for Earley too;
 *  (f) diagnostics: missing grammar files, broken inline and file grammars, limits;
 *  and the CLI on .gbnf files (compile, check, render, replay, sample).
 * Random inputs are seeded, so a failure replays.
 */
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { Spec, Vocabulary } from "../../bindings/index.js";
import { sampleTraces } from "../../bindings/replay.js";
import { runBytes } from "../../compiler/automata/bytes.js";
import { EXIT, main } from "../../cli/main.js";
import { compileGrammarSource, compileSource, compileToWasm, type CompiledGrammar } from "../../compiler/compile.js";
import { SpecError, SpecLimitError } from "../../compiler/diagnostics.js";
import type { Cfg } from "../../compiler/grammar/cfg.js";
import { Earley } from "../../compiler/grammar/earley.js";
import { parseGrammar, recognize, sampleSentence, seededRandom } from "../../compiler/grammar/index.js";
import { callGraph, callSites, grammarToDfa, runGrammarDfa, withSurroundingWhitespace, type GrammarDfa } from "../../compiler/grammar/regular.js";
import { ByteFlag, type ByteDfa, type Compiled } from "../../compiler/ir.js";
import { parseTables, serializeTables } from "../../compiler/tables.js";
import { byteDfaEngine, runTrace, type Trace } from "../../compiler/trace.js";
import { loadTokenizerJson, tokenizerJsonPath } from "../helpers/tokenizers.js";

const EX = "examples/grammars";
const enc = new TextEncoder();
const dec = new TextDecoder();
const grammar = (f: string, start?: string): Cfg => parseGrammar(readFileSync(`${EX}/${f}`, "utf8"), `${EX}/${f}`, { start });

/**
 * An upper bound of a string's recursion depth for the example grammars: the deepest nesting of
 * brackets (outside JSON strings). Every recursion cut of these grammars sits inside a bracket pair
 * (arithmetic: expr inside "( )"; JSON: a value inside [ ] or { }; OpenAGI: T or I inside "( )").
 */
function bracketDepth(b: Uint8Array, jsonStrings: boolean): number {
  let d = 0, max = 0, inStr = false;
  for (let i = 0; i < b.length; i++) {
    const c = b[i]!;
    if (inStr) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inStr = false;
      continue;
    }
    if (jsonStrings && c === 0x22) inStr = true;
    else if (c === 0x28 || c === 0x5b || c === 0x7b) max = Math.max(max, ++d);
    else if (c === 0x29 || c === 0x5d || c === 0x7d) d--;
  }
  return max;
}

/**
 * Example grammar, the bound N used for it here, whether strings are JSON-quoted, and the prefix
 * slack: a live prefix of bracket depth ≤ N − slack can always be completed within depth N (an
 * open OpenAGI tool whose name starts like "Visual Question Answering(" needs one level more).
 */
const GRAMMARS: { file: string; depth: number; json: boolean; recursive: boolean; slack: number }[] = [
  { file: "arithmetic.gbnf", depth: 4, json: false, recursive: true, slack: 0 },
  { file: "json.gbnf", depth: 3, json: true, recursive: true, slack: 0 },
  { file: "openagi.gbnf", depth: 2, json: false, recursive: true, slack: 1 },
  { file: "cooking.gbnf", depth: 8, json: false, recursive: false, slack: 0 },
  { file: "daily-plan.gbnf", depth: 8, json: false, recursive: false, slack: 0 },
  { file: "risk-management.gbnf", depth: 8, json: false, recursive: false, slack: 0 },
];

const dfaCache = new Map<string, { cfg: Cfg; dfa: GrammarDfa; depthLimited: boolean }>();
function compiledGrammar(file: string, depth: number) {
  const key = `${file}@${depth}`;
  let hit = dfaCache.get(key);
  if (!hit) {
    const cfg = grammar(file);
    const r = grammarToDfa(cfg, { maxDepth: depth });
    hit = { cfg, dfa: r.dfa, depthLimited: r.depthLimited };
    dfaCache.set(key, hit);
  }
  return hit;
}

const accepts = (d: GrammarDfa, b: Uint8Array) => { const s = runGrammarDfa(d, b); return s >= 0 && d.accepting[s] === 1; };

/** Mutations: delete, insert, replace or duplicate a few bytes (drawn from the string and a pool). */
function mutate(b: Uint8Array, r: () => number, pool: number[]): Uint8Array {
  const out = [...b];
  const n = 1 + Math.floor(r() * 3);
  for (let k = 0; k < n; k++) {
    const i = Math.floor(r() * (out.length + 1));
    const byte = r() < 0.5 && out.length ? out[Math.floor(r() * out.length)]! : pool[Math.floor(r() * pool.length)]!;
    const op = Math.floor(r() * 4);
    if (op === 0 && out.length) out.splice(Math.min(i, out.length - 1), 1);
    else if (op === 1) out.splice(i, 0, byte);
    else if (op === 2 && out.length) out[Math.min(i, out.length - 1)] = byte;
    else out.splice(i, 0, ...out.slice(i, i + 1 + Math.floor(r() * 6)));
  }
  return Uint8Array.from(out);
}

// ───────────────────────────── (a) agreement with the Earley oracle ─────────────────────────────

describe("(a) grammar DFAs agree with the Earley recognizer", () => {
  for (const g of GRAMMARS) {
    it(`${g.file} at maxDepth ${g.depth}: sound always, exact within the bound`, () => {
      const { cfg, dfa, depthLimited } = compiledGrammar(g.file, g.depth);
      expect(depthLimited).toBe(g.recursive);
      const earley = new Earley(cfg);
      const r = seededRandom(g.file.length * 7919 + g.depth);
      const sentences: Uint8Array[] = [];
      for (let i = 0; sentences.length < 60 && i < 400; i++) {
        const s = sampleSentence(cfg, { random: r, depth: 2 + (i % 10), maxBytes: 600 });
        if (s) sentences.push(s);
      }
      expect(sentences.length).toBe(60);
      let inBound = 0;
      for (const s of sentences) {
        expect(earley.recognize(s)).toBe(true);
        if (bracketDepth(s, g.json) <= g.depth) {
          inBound++;
          expect(accepts(dfa, s), `sentence within the bound: ${dec.decode(s)}`).toBe(true);
        }
      }
      expect(inBound).toBeGreaterThan(12);
      // Random strings over the grammar's bytes, and mutations of the sentences.
      const pool = [...new Set(sentences.flatMap((s) => [...s]))];
      const inputs: Uint8Array[] = [...sentences];
      for (const s of sentences) for (let k = 0; k < 4; k++) inputs.push(mutate(s, r, pool));
      for (let k = 0; k < 100; k++) inputs.push(Uint8Array.from({ length: Math.floor(r() * 12) }, () => pool[Math.floor(r() * pool.length)]!));
      let checkedPrefixes = 0, exactPrefixes = 0, bothAccept = 0, bothReject = 0;
      for (const s of inputs) {
        // Prefixes, byte by byte: DFA-live ⇒ Earley-viable; equal within the bound.
        const m = earley.matcher();
        let st = dfa.initial;
        for (let i = 0; i <= s.length; i++) {
          const viable = m.viable();
          const live = st >= 0;
          checkedPrefixes++;
          if (live) expect(viable, `DFA keeps a dead prefix alive: ${JSON.stringify(dec.decode(s.subarray(0, i)))}`).toBe(true);
          if (bracketDepth(s.subarray(0, i), g.json) <= g.depth - g.slack) {
            exactPrefixes++;
            expect(live, `prefix within the bound: ${JSON.stringify(dec.decode(s.subarray(0, i)))}`).toBe(viable);
          }
          if (!viable || i === s.length) break;
          m.feed(s[i]!);
          if (st >= 0) st = dfa.trans[st * dfa.nClasses + dfa.classMap[s[i]!]!]!;
        }
        const e = earley.recognize(s);
        const a = accepts(dfa, s);
        if (a) expect(e, `DFA accepts a non-sentence: ${JSON.stringify(dec.decode(s))}`).toBe(true);
        if (bracketDepth(s, g.json) <= g.depth) expect(a, `within the bound: ${JSON.stringify(dec.decode(s))}`).toBe(e);
        if (a && e) bothAccept++;
        if (!a && !e) bothReject++;
      }
      expect(bothAccept).toBeGreaterThan(20);
      expect(bothReject).toBeGreaterThan(50);
      expect(exactPrefixes).toBeGreaterThan(checkedPrefixes / 5);
    });
  }

  it("every DFA state is live: it can reach acceptance (no dead ends for a decoder)", () => {
    for (const g of GRAMMARS) {
      const { dfa } = compiledGrammar(g.file, g.depth);
      const canAccept = Array.from(dfa.accepting, (a) => a === 1);
      for (let changed = true; changed; ) {
        changed = false;
        for (let s = 0; s < dfa.nStates; s++) {
          if (canAccept[s]) continue;
          for (let c = 0; c < dfa.nClasses; c++) {
            const t = dfa.trans[s * dfa.nClasses + c]!;
            if (t >= 0 && canAccept[t]) { canAccept[s] = true; changed = true; break; }
          }
        }
      }
      expect(canAccept.every(Boolean), g.file).toBe(true);
    }
  });

  it("the recursion cuts are the calls that open a nested construct", () => {
    const cuts = (f: string) => callSites(callGraph(grammar(f))).filter((s) => s.cut).map((s) => `${grammarRules(f)[s.from]}>${grammarRules(f)[s.to]}`);
    expect(cuts("arithmetic.gbnf")).toEqual(["factor>expr"]);
    expect(cuts("json.gbnf")).toEqual(["member>value", "array-1>value", "array-2>value"]);
    expect(cuts("cooking.gbnf")).toEqual([]);
  });

  it("is deterministic: the same grammar gives identical tables", () => {
    const a = grammarToDfa(grammar("json.gbnf"), { maxDepth: 2 }).dfa;
    const b = grammarToDfa(grammar("json.gbnf"), { maxDepth: 2 }).dfa;
    expect(b).toEqual(a);
  });

  it("ws* sentence ws* (agent content) accepts whitespace, newlines included, around a sentence", () => {
    const { dfa } = compiledGrammar("arithmetic.gbnf", 2);
    const w = withSurroundingWhitespace(dfa);
    for (const t of ["1+2", " \n (1) \r\n", "\t-3\n"]) expect(accepts(w, enc.encode(t)), t).toBe(true);
    for (const t of ["", " \n", "1 +", "\n1\n2"]) expect(accepts(w, enc.encode(t)), t).toBe(false);
  });
});

const ruleNames = new Map<string, string[]>();
function grammarRules(f: string): string[] {
  let n = ruleNames.get(f);
  if (!n) ruleNames.set(f, (n = grammar(f).rules.map((r) => r.name)));
  return n;
}

// ───────────────────────────── (b) tail recursion, (c) nesting bound ─────────────────────────────

describe("(b) tail calls are loops: repetition is unbounded", () => {
  it("a JSON array of 500 items, an object of 500 members and a 500-term sum at maxDepth 2", () => {
    const json = grammarToDfa(grammar("json.gbnf"), { maxDepth: 2 }).dfa;
    const items = Array.from({ length: 500 }, (_, i) => String(i)).join(", ");
    expect(accepts(json, enc.encode(`{"list": [${items}]}`))).toBe(true);
    const members = Array.from({ length: 500 }, (_, i) => `"k${i}": [${i}]`).join(", ");
    expect(accepts(json, enc.encode(`{${members}}`))).toBe(true);
    const arith = grammarToDfa(grammar("arithmetic.gbnf"), { maxDepth: 2 }).dfa;
    expect(accepts(arith, enc.encode(Array.from({ length: 500 }, (_, i) => `(${i} * 2)`).join(" + ")))).toBe(true);
    const long = "1" + "-1".repeat(600);
    expect(accepts(arith, enc.encode(long))).toBe(true);
    expect(recognize(grammar("arithmetic.gbnf"), long)).toBe(true);
  });

  it("the DFA does not grow with the repetition: it has a handful of states per level", () => {
    const a2 = grammarToDfa(grammar("arithmetic.gbnf"), { maxDepth: 2 }).dfa.nStates;
    const a4 = grammarToDfa(grammar("arithmetic.gbnf"), { maxDepth: 4 }).dfa.nStates;
    expect(a4 - a2).toBeLessThan(20); // linear in the depth
    expect(grammarToDfa(grammar("cooking.gbnf"), { maxDepth: 0 }).depthLimited).toBe(false);
  });
});

describe("(c) nesting beyond maxDepth is refused, nesting up to it accepted", () => {
  const nestArith = (k: number) => "(".repeat(k) + "1" + ")".repeat(k);
  const nestJson = (k: number) => `{"a": ${"[".repeat(k - 1)}1${"]".repeat(k - 1)}}`; // depth k
  for (const n of [0, 1, 3, 6]) {
    it(`maxDepth ${n}`, () => {
      const arith = grammarToDfa(grammar("arithmetic.gbnf"), { maxDepth: n });
      expect(arith.depthLimited).toBe(true);
      expect(accepts(arith.dfa, enc.encode(nestArith(n)))).toBe(true);
      expect(accepts(arith.dfa, enc.encode(nestArith(n + 1)))).toBe(false);
      expect(recognize(grammar("arithmetic.gbnf"), nestArith(n + 1))).toBe(true);
      // Not offered: the opening parenthesis N + 1 is already a dead byte.
      expect(runGrammarDfa(arith.dfa, enc.encode("(".repeat(n + 1)))).toBe(-(n + 1));
      if (n === 0) return;
      const json = grammarToDfa(grammar("json.gbnf"), { maxDepth: n }).dfa;
      expect(accepts(json, enc.encode(nestJson(n)))).toBe(true);
      expect(accepts(json, enc.encode(nestJson(n + 1)))).toBe(false);
      expect(accepts(json, enc.encode(`{"a": ${"[".repeat(n)}]${"]".repeat(n - 1)}}`))).toBe(true); // empty innermost: depth n
      const objs = `${'{"a": '.repeat(n)}{}${"}".repeat(n)}`;
      expect(accepts(json, enc.encode(objs))).toBe(true);
      expect(accepts(json, enc.encode(`{"x": ${objs}}`))).toBe(false);
    });
  }

  it("a grammar whose every sentence nests deeper than maxDepth has an empty language (E0711)", () => {
    // The search reaches u through v first, so u → v is the cut, and root needs u.
    const cfg = parseGrammar('root ::= v "?" u\nv ::= "x" u "y" | "v"\nu ::= "[" v "]"', "nest.gbnf");
    expect(() => grammarToDfa(cfg, { maxDepth: 0 })).toThrow(SpecError);
    try { grammarToDfa(cfg, { maxDepth: 0 }); } catch (e) { expect((e as SpecError).code).toBe("E0711"); }
    expect(accepts(grammarToDfa(cfg, { maxDepth: 1 }).dfa, enc.encode("v?[v]"))).toBe(true);
  });

  it("the state limit is a SpecLimitError that names the limit and points at --max-depth", () => {
    expect(() => grammarToDfa(grammar("json.gbnf"), { maxDepth: 8, maxStates: 500 })).toThrow(SpecLimitError);
    try {
      grammarToDfa(grammar("json.gbnf"), { maxDepth: 8, maxStates: 500, name: "json.gbnf" });
    } catch (e) {
      expect((e as SpecLimitError).limit).toBe("maxGrammarStates");
      expect((e as SpecLimitError).message).toContain("json.gbnf");
      expect((e as SpecLimitError).hint).toContain("--max-depth");
    }
  });
});

// ───────────────────────────── (d) masks on a real vocabulary ─────────────────────────────

describe("(d) masks of a compiled grammar equal a brute-force walk (Llama 3)", () => {
  let vocab: Vocabulary;
  beforeAll(() => { vocab = Vocabulary.fromTokenizerJsonObject(loadTokenizerJson("llama3_1")); });

  function bruteMask(dfa: ByteDfa, state: number, words: number): Int32Array {
    const out = new Int32Array(words);
    const acc = (dfa.flags[state]! & ByteFlag.Accepting) !== 0;
    for (let id = 0; id < vocab.size; id++) {
      const b = vocab.tokenBytes(id);
      const ok = b === null ? vocab.isEos(id) && acc : runBytes(dfa, state, b) >= 0;
      if (ok) out[id >> 5]! |= 1 << (id & 31);
    }
    return out;
  }

  for (const [file, depth, nStates] of [["arithmetic.gbnf", 8, 24], ["json.gbnf", 3, 24], ["openagi.gbnf", 1, 12]] as const) {
    it(`${file} at maxDepth ${depth}: ${nStates} reachable states`, async () => {
      const c = compileGrammarSource(readFileSync(`${EX}/${file}`, "utf8"), file, { maxDepth: depth });
      const wasm = compileToWasm(c);
      // Zero spec states: the tables serialize, parse back and load.
      expect(c.ir.states).toEqual([]);
      const back = parseTables(serializeTables(c.byteDfa, []));
      expect(back.states).toEqual([]);
      expect(back.dfa.trans).toEqual(c.byteDfa.trans);
      const spec = await Spec.load(wasm, { vocab });
      expect(spec.states).toEqual([]);
      expect(spec.exports.spec_count()).toBe(0);
      const r = seededRandom(depth * 101 + file.length);
      // A seeded walk through the automaton collects reachable states of every kind.
      const states = new Set<number>([c.byteDfa.initial]);
      let s = c.byteDfa.initial;
      for (let k = 0; states.size < Math.min(nStates, c.byteDfa.nStates) && k < 100_000; k++) {
        const next: number[] = [];
        for (let cl = 0; cl < c.byteDfa.nClasses; cl++) { const t = c.byteDfa.trans[s * c.byteDfa.nClasses + cl]!; if (t >= 0) next.push(t); }
        s = next.length && r() < 0.97 ? next[Math.floor(r() * next.length)]! : c.byteDfa.initial;
        states.add(s);
      }
      const sentence = file === "json.gbnf" ? '{"a": [1, {"b": "x"}]}' : file === "arithmetic.gbnf" ? "(48 / 2) + 24" : "Image Classification(i)";
      const bytes = enc.encode(sentence);
      for (let i = 0; i <= bytes.length; i++) states.add(runBytes(c.byteDfa, c.byteDfa.initial, bytes.subarray(0, i)));
      expect([...states].some((x) => c.byteDfa.flags[x]! & ByteFlag.Accepting)).toBe(true);
      for (const st of states) {
        const got = spec.stateMask(st);
        const want = bruteMask(c.byteDfa, st, spec.maskWords);
        let diff = 0;
        for (let w = 0; w < want.length; w++) if (got[w] !== want[w]) diff++;
        expect(diff, `${file} state ${st}`).toBe(0);
      }
      // A matcher runs a sentence token by token and ends with EOS.
      const m = spec.matcher();
      expect(m.feedText(sentence)).toBe("continue");
      expect(m.isAccepting).toBe(true);
      expect(m.commit(vocab.eos[0]!)).toBe("done");
    });
  }
});

// ───────────────────────────── (e) agent specs with grammar content ─────────────────────────────

const L = (text: string) => ({ by: "llm" as const, text });
const E = (text: string) => ({ by: "env" as const, text });
const P = (text: string) => ({ by: "prompt" as const, text });

describe("(e) agent specs with grammar content", () => {
  const specs = new Map<string, Compiled>();
  const compiled = (name: string) => {
    let c = specs.get(name);
    if (!c) specs.set(name, (c = compileSource(readFileSync(`examples/${name}.agent`, "utf8"), `examples/${name}.agent`)));
    return c;
  };
  const verdict = (name: string, t: Trace) => {
    const c = compiled(name);
    return runTrace(byteDfaEngine(c.byteDfa), t, c.ir.states.map((s) => s.marker)).verdict;
  };

  it("react-calculator.agent: one automaton; Fig. 8's transcript and nested arithmetic conform", () => {
    const c = compiled("react-calculator");
    expect(c.ir.states.find((s) => s.name === "Action-Input")!.content.kind).toBe("grammar");
    expect(c.byteDfa.nStates).toBeLessThan(400);
    const ok: Trace[] = [
      { segments: [P("Question: Natalia sold clips to 48 of her friends in April...\n"), L("Thought: I need to use the number of clips in April.\nAction: Calculator\nAction Input: 48 / 2\nObservation:"), E(" 24\n"),
        L("Thought: Now I need to add.\nAction: Calculator\nAction Input: 24 + 48\nObservation:"), E(" 72\n"), L("Final Thought: So Natalia sold 72 clips.\nAnswer: 72")] },
      { segments: [L("Thought: x\nAction: Calculator\nAction Input: (48 / 2) + 24\nObservation:"), E(" 48\n"), L("Final Thought: done\nAnswer: 48")] },
      { segments: [L("Thought: x\nAction:  Calculator \nAction Input:\n  -((1.5 * (2 - 3)) / 4)  \nObservation:"), E("-0.375"), L("Final Thought: ok\nAnswer: -0.375")] },
    ];
    for (const t of ok) expect(verdict("react-calculator", t)).toBe("conforms");
  });

  it("react-calculator.agent: violations of the grammar or the tool name are refused", () => {
    const bad = [
      "Action Input: 48 //\nObservation:",
      "Action Input: 48 +\nObservation:",
      "Action Input: (48 / 2\nObservation:",
      "Action Input: half of 48\nObservation:",
      "Action Input: \nObservation:",
    ];
    for (const b of bad) {
      expect(verdict("react-calculator", { segments: [L(`Thought: x\nAction: Calculator\n${b}`)] }), b).toBe("violation");
    }
    // No :max-depth: the expression runs on a stack, exact at any depth.
    for (const k of [8, 9, 40]) {
      expect(verdict("react-calculator", { segments: [L(`Thought: x\nAction: Calculator\nAction Input: ${"(".repeat(k)}1${")".repeat(k)}\nObservation:`)] })).toBe("incomplete");
    }
    expect(compiled("react-calculator").byteDfa.calls).toBeDefined();
    expect(verdict("react-calculator", { segments: [L("Thought: x\nAction: Search\nAction Input: 1\nObservation:")] })).toBe("violation");
  });

  it("tool-json.agent: JSON arguments conform at any depth, broken JSON does not", () => {
    const run = (args: string) => verdict("tool-json", { segments: [L(`Thought: check\nAction: get_weather\nAction Input: ${args}\nObservation:`), E(" sunny\n"), L("Thought: done\nFinal Answer: sunny")] });
    for (const a of ['{"city": "Paris"}', '{"city": "Paris", "days": [1, 2]}', ' {"q": {"lang": "en", "n": 3}, "tags": []} ', '{"s": "thought - a string may hold anything but a marker"}', "{}",
      '{"a": [[1]]}', '{"a": {"b": {"c": 1}}}', `{"a": ${"[".repeat(30)}${"]".repeat(30)}}`]) {
      expect(run(a), a).toBe("conforms");
    }
    for (const a of ['{"city": Paris}', '{"city": "Paris",}', '["Paris"]', '{"s": "Thought: no"}', `{"a": ${"[".repeat(30)}${"]".repeat(29)}}`]) {
      expect(run(a), a).toBe("violation");
    }
  });

  for (const [name, gfile, vocabSeed] of [["react-calculator", "arithmetic.gbnf", 11], ["tool-json", "json.gbnf", 12]] as const) {
    it(`${name}.agent: 200 seeded samples under the masks (Llama 3) conform, and their content is a sentence`, async () => {
      const c = compiled(name);
      const vocab = Vocabulary.fromTokenizerJsonObject(loadTokenizerJson("llama3_1"));
      const spec = await Spec.load(compileToWasm(c), { vocab });
      const traces = sampleTraces(spec, vocab, { n: 200, seed: vocabSeed, maxStateTokens: 12 });
      const engine = byteDfaEngine(c.byteDfa);
      const markers = c.ir.states.map((s) => s.marker);
      const cfg = grammar(gfile);
      let inputs = 0;
      for (const t of traces) {
        expect(runTrace(engine, t, markers).verdict, JSON.stringify(t)).toBe("conforms");
        for (const seg of t.segments) {
          if (seg.by !== "llm") continue;
          let at = seg.text.indexOf("Action Input:");
          while (at >= 0) {
            const from = at + "Action Input:".length;
            const end = seg.text.indexOf("Observation:", from);
            const content = seg.text.slice(from, end < 0 ? undefined : end).replace(/^[ \t\n\r]+|[ \t\n\r]+$/g, "");
            if (end >= 0) {
              inputs++;
              expect(recognize(cfg, content), `content ${JSON.stringify(content)}`).toBe(true);
            }
            at = seg.text.indexOf("Action Input:", from);
          }
        }
      }
      expect(inputs).toBeGreaterThan(50);
    });
  }
});

// ───────────────────────────── (f) diagnostics ─────────────────────────────

async function cli(...argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(argv, { out: (s) => out.push(s), err: (s) => err.push(s) });
  return { code, out: out.join("\n"), err: err.join("\n") };
}

describe("(f) diagnostics", () => {
  const tmp = mkdtempSync(join(tmpdir(), "specc-gdfa-"));
  const spec = (content: string) =>
    `# test\n(define g\n  (:states\n    (A (:text "A:") ${content})\n    (B (:text "B:")))\n  (:behavior (next A B)))\n`;

  it("a missing grammar file is E0213 at the path, naming the resolved path", async () => {
    const f = join(tmp, "missing.agent");
    writeFileSync(f, spec('(:grammar "nope.gbnf")'));
    const r = await cli("compile", f, "-o", join(tmp, "x.wasm"));
    expect(r.code).toBe(EXIT.input);
    expect(r.err).toContain(`${f}:4:31: error[E0213]: cannot read grammar file ${join(tmp, "nope.gbnf")}: no such file`);
    expect(r.err).toContain('(:grammar "nope.gbnf")');
  });

  it("an error in a grammar file is reported at the grammar file's line and column", async () => {
    writeFileSync(join(tmp, "bad.gbnf"), 'root ::= item+\nitem ::= "a" | undefined-rule\n');
    const f = join(tmp, "badfile.agent");
    writeFileSync(f, spec('(:grammar "bad.gbnf")'));
    const r = await cli("compile", f);
    expect(r.code).toBe(EXIT.input);
    expect(r.err).toContain(`${join(tmp, "bad.gbnf")}:2:16: error[E0705]: undefined rule undefined-rule`);
    expect(r.err).toContain('2 | item ::= "a" | undefined-rule');
  });

  it("an error in an inline grammar points at the character of the spec's string", async () => {
    const f = join(tmp, "inline.agent");
    writeFileSync(f, spec('(:grammar-text "root ::= \\"x\\" | (\\"y\\"")'));
    const r = await cli("compile", f);
    expect(r.code).toBe(EXIT.input);
    expect(r.err).toMatch(new RegExp(`${f.replace(/[.]/g, "\\.")}:4:\\d+: error\\[E070\\d\\]`));
    const col = Number(/inline\.agent:4:(\d+)/.exec(r.err)![1]);
    expect(col).toBeGreaterThan(35); // inside the string literal, not at its start
    const inline2 = join(tmp, "inline2.agent");
    writeFileSync(inline2, spec('(:grammar-text "root ::= [0-9]+ | nope")'));
    const r2 = await cli("compile", inline2);
    expect(r2.err).toContain(`${inline2}:4:55: error[E0705]: undefined rule nope`);
    expect(r2.err).toMatch(/\n\s+\|\s+\^\^\^\^/);
  });

  it("inline grammars with escapes compile; :max-depth and a start rule are honored", () => {
    const c = compileSource(spec('(:grammar-text "root ::= list\\nlist ::= \\"[\\" (list (\\",\\" list)*)? \\"]\\"" "list" :max-depth 2)'), "inline.agent");
    const t = (x: string) => runTrace(byteDfaEngine(c.byteDfa), { segments: [L(`A: ${x}\nB: end`)] }, ["A:", "B:"]).verdict;
    expect(t("[]")).toBe("conforms");
    expect(t("[[],[[]]]")).toBe("conforms");
    expect(t("[[[[]]]]")).toBe("violation");
  });

  it("malformed :grammar forms and two content constraints are E0210", () => {
    for (const bad of ['(:grammar)', '(:grammar 3)', '(:grammar "x.gbnf" :max-depth)', '(:grammar "x.gbnf" :max-depth 999)', '(:grammar-text "root ::= \\"a\\"" :bogus)', '(:output-constrs "a") (:grammar-text "root ::= \\"a\\"")']) {
      try {
        compileSource(spec(bad), "bad.agent");
        expect.unreachable(bad);
      } catch (e) {
        expect((e as SpecError).code, bad).toMatch(/E0210|E0213/);
        expect((e as SpecError).span?.line, bad).toBe(4);
      }
    }
  });

  it("a grammar state limit inside a spec points at the state's (:grammar ...)", () => {
    try {
      compileSource(spec('(:grammar "examples/grammars/json.gbnf" :max-depth 8)'), "lim.agent", { maxGrammarStates: 300 });
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(SpecLimitError);
      expect((e as SpecError).span?.line).toBe(4);
      expect((e as SpecError).hint).toContain("--max-depth");
    }
    // Without a bound the same grammar runs on a stack: 73 states, well under the limit.
    expect(compileSource(spec('(:grammar "examples/grammars/json.gbnf")'), "lim.agent", { maxGrammarStates: 300 }).byteDfa.calls).toBeDefined();
  });

  it("grammar warnings are printed as warnings", async () => {
    writeFileSync(join(tmp, "warn.gbnf"), 'root ::= "a"\nunused ::= "b"\n');
    const r = await cli("compile", join(tmp, "warn.gbnf"), "-o", join(tmp, "w.wasm"));
    expect(r.code).toBe(EXIT.ok);
    expect(r.err).toContain(`${join(tmp, "warn.gbnf")}:2:1: warning[E0709]`);
  });
});

// ───────────────────────────── standalone grammars on the CLI ─────────────────────────────

describe("standalone grammars: specc compile / check / render / replay / sample on .gbnf", () => {
  const tmp = mkdtempSync(join(tmpdir(), "specc-gcli-"));
  const vocabPath = tokenizerJsonPath("llama3_1");

  it("compile writes a self-contained .wasm with no spec states; --max-depth N makes it a bounded DFA", async () => {
    const out = join(tmp, "arith.wasm");
    const r = await cli("compile", `${EX}/arithmetic.gbnf`, "-o", out);
    expect(r.code).toBe(EXIT.ok);
    expect(r.out).toMatch(/grammar arithmetic \(start root\) · pushdown automaton \d+ states × \d+ classes, \d+ call edges into expr · exact at any nesting depth/);
    const mod = await WebAssembly.compile(readFileSync(out));
    expect(WebAssembly.Module.imports(mod)).toEqual([]);
    const spec = await Spec.load(readFileSync(out));
    expect(spec.states).toEqual([]);
    const r2 = await cli("compile", `${EX}/arithmetic.gbnf`, "-o", join(tmp, "a2.wasm"), "--max-depth", "2");
    expect(r2.out).toContain("nesting depth 2");
    expect((await cli("compile", `${EX}/cooking.gbnf`, "-o", join(tmp, "c.wasm"))).out).toContain("exact (nothing nests)");
    expect((await cli("compile", `${EX}/arithmetic.gbnf`, "--max-depth", "x")).code).toBe(EXIT.usage);
    const lim = await cli("compile", `${EX}/openagi.gbnf`, "-o", join(tmp, "o.wasm"), "--max-depth", "8", "--max-grammar-states", "2000");
    expect(lim.code).toBe(EXIT.input);
    expect(lim.err).toContain("error[E0501]");
    expect(lim.err).toContain("lower --max-depth");
  });

  it("check --trace: a sentence conforms; a violation shows the bytes expected", async () => {
    const ok = join(tmp, "ok.json"), bad = join(tmp, "bad.json"), inc = join(tmp, "inc.json");
    writeFileSync(ok, JSON.stringify({ segments: [{ by: "prompt", text: "Compute:" }, { by: "llm", text: "(48 / 2) + 24" }] }));
    writeFileSync(bad, JSON.stringify({ segments: [{ by: "llm", text: "48 //" }] }));
    writeFileSync(inc, JSON.stringify({ segments: [{ by: "llm", text: "(48 /" }] }));
    const r = await cli("check", `${EX}/arithmetic.gbnf`, "--trace", ok, "--trace", bad, "--trace", inc);
    expect(r.code).toBe(EXIT.nonconforming);
    expect(r.out).toContain(`${ok}: conforms (a sentence of the grammar)`);
    expect(r.out).toContain(`${bad}: violation in segment 0 (llm) at offset 4: text not allowed here`);
    expect(r.out).toContain("expected: [\\t (\\-0-9]");
    expect(r.out).toContain(`${inc}: incomplete`);
    const wasm = join(tmp, "arith.wasm");
    await cli("compile", `${EX}/arithmetic.gbnf`, "-o", wasm);
    const r2 = await cli("check", wasm, "--trace", ok, "--trace", bad);
    expect(r2.out).toContain("conforms (a sentence of the grammar)");
    expect(r2.out).toContain("at offset 4");
  });

  it("render draws the rule graph (recursion cuts in red); --level bytes the automaton, or refuses a big one", async () => {
    const dot = join(tmp, "json.dot");
    const r = await cli("render", `${EX}/json.gbnf`, "-o", dot);
    expect(r.code).toBe(EXIT.ok);
    expect(r.out).toContain("rule graph of grammar json");
    const text = readFileSync(dot, "utf8");
    expect(text).toContain('r0 [label="root"]');
    expect(text).toMatch(/r3 -> r1 \[color="#c0392b"/); // member -> value
    const svg = await cli("render", `${EX}/arithmetic.gbnf`, "-o", join(tmp, "a.svg"));
    expect(svg.code).toBe(EXIT.ok);
    expect(readFileSync(join(tmp, "a.svg"), "utf8")).toContain("<svg");
    expect((await cli("render", `${EX}/arithmetic.gbnf`, "--level", "bytes", "-o", join(tmp, "ab.dot"))).code).toBe(EXIT.ok);
    // (Pushdown JSON has 73 states; its bounded DFA at depth 4 has 633.)
    const big = await cli("render", `${EX}/json.gbnf`, "--level", "bytes", "--max-depth", "4", "-o", join(tmp, "jb.dot"));
    expect(big.code).toBe(EXIT.input);
    expect(big.err).toContain("more than the 400 a drawing can show");
  });

  it("replay and sample work on a .gbnf as on a spec", async () => {
    const t = join(tmp, "j.json");
    writeFileSync(t, JSON.stringify({ segments: [{ by: "llm", text: '{"city": "Paris", "days": [1, 2]}' }] }));
    const r = await cli("replay", `${EX}/json.gbnf`, "--vocab", vocabPath, "--trace", t, "--json", "--max-depth", "3");
    expect(r.code).toBe(EXIT.ok);
    const j = JSON.parse(r.out);
    expect(j.firstForbidden).toBe(-1);
    expect(j.accepted).toBe(true);
    const dir = join(tmp, "samples");
    const s = await cli("sample", `${EX}/arithmetic.gbnf`, "--vocab", vocabPath, "--n", "5", "--seed", "3", "--out", dir, "--max-depth", "3");
    expect(s.code).toBe(EXIT.ok);
    const files = Array.from({ length: 5 }, (_, i) => join(dir, `sample-000${i}.json`));
    const c = await cli("check", `${EX}/arithmetic.gbnf`, "--max-depth", "3", ...files.flatMap((f) => ["--trace", f]));
    expect(c.code).toBe(EXIT.ok);
    const cfg = grammar("arithmetic.gbnf");
    for (const f of files) {
      const tr = JSON.parse(readFileSync(f, "utf8")) as Trace;
      expect(recognize(cfg, tr.segments.map((x) => x.text).join(""))).toBe(true);
    }
  });

  it("compileGrammarSource honors the start rule", () => {
    const c: CompiledGrammar = compileGrammarSource(readFileSync(`${EX}/json.gbnf`, "utf8"), "json.gbnf", { maxDepth: 2 }, "value");
    const run = (x: string) => { const s = runBytes(c.byteDfa, c.byteDfa.initial, enc.encode(x)); return s >= 0 && (c.byteDfa.flags[s]! & ByteFlag.Accepting) !== 0; };
    expect(run("[1, 2]")).toBe(true);
    expect(run('"x"')).toBe(true);
    expect(c.grammar.cfg.rules[c.grammar.cfg.start]!.name).toBe("value");
  });
});
