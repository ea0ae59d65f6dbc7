/**
 * The pushdown compilation of grammars (compiler/grammar/pda.ts), checked against the Earley
 * recognizer (the grammar's meaning, no automata): same sentences, same viable prefixes — on every
 * example grammar with seeded samples far deeper than any DFA bound, on mutated strings, and
 * exhaustively on small hand-written grammars that are ambiguous, nullable, left-recursive or
 * mutually recursive. Plus the limits, the tables (format 3 call table) and the CLI.
 * The runtime's pushdown mode is checked against PdaRunner in tests/runtime/pda-runtime.test.ts.
 */
import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { EXIT, main } from "../../cli/main.js";
import { compileGrammarSource, compileToWasm } from "../../compiler/compile.js";
import { SpecLimitError } from "../../compiler/diagnostics.js";
import { emitGrammar } from "../../compiler/emit-grammar.js";
import type { Cfg } from "../../compiler/grammar/cfg.js";
import { parseGrammar, recognize, sampleSentence, seededRandom, viablePrefix } from "../../compiler/grammar/index.js";
import { PDA_MAX_PAIRS, PDA_MAX_STACK, PdaRunner, grammarToPda } from "../../compiler/grammar/pda.js";
import { parseTables, serializeTables } from "../../compiler/tables.js";
import { byteDfaEngine, runTrace } from "../../compiler/trace.js";
import { Spec } from "../../bindings/spec.js";
import { loadPackageTokenizer, loadTokenizerJson, tokenizerJsonPath } from "../helpers/tokenizers.js";
import { Vocabulary } from "../../bindings/vocab.js";
import { sampleTraces } from "../../bindings/replay.js";
import { mutate } from "../helpers/differential.js";

const EX = "examples/grammars";
const enc = new TextEncoder();
const dec = new TextDecoder();
const files = readdirSync(EX).filter((f) => f.endsWith(".gbnf")).sort();
const grammar = (f: string): Cfg => parseGrammar(readFileSync(`${EX}/${f}`, "utf8"), f);
const inline = (text: string): Cfg => parseGrammar(text, "inline.gbnf", { portability: false });

/** PdaRunner and Earley agree on acceptance and on every prefix's viability. */
function agree(cfg: Cfg, runner: PdaRunner, s: Uint8Array, what: string): void {
  let c = runner.start();
  let dead = -1;
  for (let i = 0; i < s.length; i++) {
    const n = runner.step(c, s[i]!);
    if (!n) { dead = i; break; }
    c = n;
  }
  const firstBad = (() => {
    // The first index whose prefix s[0..i] is not viable (binary search: viability is prefix-closed).
    let lo = 0, hi = s.length;
    if (viablePrefix(cfg, s)) return -1;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (viablePrefix(cfg, s.subarray(0, mid + 1))) lo = mid + 1; else hi = mid; }
    return lo;
  })();
  expect(dead, `${what}: first rejected byte of ${JSON.stringify(dec.decode(s))}`).toBe(firstBad);
  if (dead < 0) expect(c.accept, `${what}: accepts ${JSON.stringify(dec.decode(s))}`).toBe(recognize(cfg, s));
}

describe("pushdown automata agree with the Earley recognizer", () => {
  for (const f of files) {
    it(`${f}: seeded deep samples and their mutations — acceptance and the first rejected byte`, () => {
      const cfg = grammar(f);
      const runner = new PdaRunner(grammarToPda(cfg).pda);
      const random = seededRandom(7 + f.length);
      const alphabet = enc.encode("{}[]()\",:0123456789 +-*/.eEtruefalsn\\ab\n");
      for (let k = 0; k < 25; k++) {
        const s = sampleSentence(cfg, { random, depth: 6 + (k % 3) * 8 });
        if (!s) continue; // the sampler gives up on some derivations (sample.ts)
        agree(cfg, runner, s, f);
        expect(runner.accepts(s), `${f}: a sample is a sentence`).toBe(true);
        agree(cfg, runner, mutate(s, random, alphabet), `${f} mutated`);
      }
    });
  }

  it("rules entered by a call (`called`): the same sentences and prefixes, fewer states", () => {
    // JSON with bounded whitespace (a state per character allowed) used in many places.
    const text = readFileSync(`${EX}/json.gbnf`, "utf8").replace(/^ws\s*::=.*$/m, "ws ::= [ \\t\\n\\r]{0,12}");
    const cfg = inline(text);
    const plain = grammarToPda(cfg).pda;
    const called = grammarToPda(cfg, { called: ["ws", "value", "no-such-rule"] }).pda;
    expect(called.nStates * 2).toBeLessThan(plain.nStates);
    const runner = new PdaRunner(called);
    const random = seededRandom(41);
    const alphabet = enc.encode('{}[]",:0123456789 \n\t+-.eEtruefalsn\\a');
    let n = 0;
    for (let k = 0; k < 40; k++) {
      const s = sampleSentence(cfg, { random, depth: 5 + (k % 4) * 4 });
      if (!s) continue;
      agree(cfg, runner, s, "called");
      expect(runner.accepts(s)).toBe(true);
      agree(cfg, runner, mutate(s, random, alphabet), "called, mutated");
      n++;
    }
    expect(n).toBeGreaterThan(20);
    // Whitespace runs past the bound are refused where the call's machine ends.
    agree(cfg, runner, enc.encode(`[1,${" ".repeat(13)}2]`), "called, long run");
    agree(cfg, runner, enc.encode(`[1,${" ".repeat(12)}2]`), "called, longest run");
  });

  it("a called rule in tail position is entered by a call too (one machine), unless it reaches its caller", () => {
    // `str` ends `a` and `b` (a JSON Schema's last property value); `list` is right-recursive.
    const cfg = inline([
      'root ::= "{" a "," b "}" list',
      'a ::= "a:" str',
      'b ::= "b:" str',
      'str ::= "\\"" [a-z]{0,40} "\\""',
      'list ::= "x" list | ""',
    ].join("\n"));
    const pda = grammarToPda(cfg, { called: ["str", "list"] }).pda;
    const runner = new PdaRunner(pda);
    // One machine for both strings: the same top state inside either value.
    const top = (text: string): number[] => {
      let c = runner.start();
      for (const b of enc.encode(text)) c = runner.step(c, b)!;
      return [...new Set(c.states)].sort((x, y) => x - y);
    };
    expect(top('{a:"xy')).toEqual(top('{a:"x",b:"xy'));
    // Inlined, each string had its own 40-odd states.
    expect(pda.nStates + 30).toBeLessThan(grammarToPda(cfg, { called: [] }).pda.nStates);
    // The right recursion stays a loop: 10,000 x's need no frames.
    expect(runner.accepts(enc.encode(`{a:"",b:"abc"}${"x".repeat(10000)}`))).toBe(true);
    for (const s of ['{a:"",b:""}', '{a:"q",b:"' + "z".repeat(40) + '"}x', '{a:"q",b:"' + "z".repeat(41) + '"}', '{a:"",b:"}', '{a:"Q",b:""}']) {
      agree(cfg, runner, enc.encode(s), "tail call");
    }
  });

  it("nesting far beyond any DFA bound: 300 levels of JSON and of parentheses", () => {
    const json = new PdaRunner(grammarToPda(grammar("json.gbnf")).pda);
    const deep = `{"a": ${"[".repeat(300)}{"b": "]}"}${"]".repeat(300)}}`;
    expect(json.accepts(enc.encode(deep))).toBe(true);
    expect(json.accepts(enc.encode(deep.slice(0, -2) + "}"))).toBe(false);
    const arith = new PdaRunner(grammarToPda(grammar("arithmetic.gbnf")).pda);
    expect(arith.accepts(enc.encode(`${"(".repeat(300)}1+2${")".repeat(300)}*3`))).toBe(true);
    expect(arith.run(enc.encode(`${"(".repeat(300)}1+2${")".repeat(301)}`))).toBeNull();
  });

  it("the stack limit: nesting deeper than PDA_MAX_STACK frames is not offered, exactly at the frame that overflows", () => {
    const arith = new PdaRunner(grammarToPda(grammar("arithmetic.gbnf")).pda);
    const open = enc.encode("(".repeat(PDA_MAX_STACK + 5));
    let c = arith.start();
    let stopped = -1;
    for (let i = 0; i < open.length; i++) { const n = arith.step(c, open[i]!); if (!n) { stopped = i; break; } c = n; }
    // One frame per parenthesis: the (PDA_MAX_STACK + 1)-th "(" would need one more.
    expect(stopped).toBe(PDA_MAX_STACK);
    const small = new PdaRunner(grammarToPda(grammar("arithmetic.gbnf")).pda, 3);
    expect(small.accepts(enc.encode("(((1)))"))).toBe(true);
    expect(small.run(enc.encode("(((("))).toBeNull();
  });

  const SMALL: { name: string; text: string; alphabet: string; len: number }[] = [
    { name: "ambiguous concatenation", text: 'root ::= a a\na ::= "x" | "x" "x" | "(" a ")"\n', alphabet: "x()", len: 8 },
    { name: "nullable recursion (Dyck)", text: 'root ::= s\ns ::= "(" s ")" s | ""\n', alphabet: "()", len: 10 },
    { name: "left recursion (rewritten)", text: 'root ::= e\ne ::= e "+" t | t\nt ::= t "*" f | f\nf ::= "(" e ")" | "1"\n', alphabet: "1+*()", len: 7 },
    { name: "mutual recursion through a nullable prefix", text: 'root ::= a\na ::= b "[" a "]" a | "x"\nb ::= "y"?\n', alphabet: "xy[]", len: 8 },
    { name: "palindromes (not LL, nondeterministic)", text: 'root ::= p\np ::= "a" p "a" | "b" p "b" | "a" | "b" | ""\n', alphabet: "ab", len: 10 },
    { name: "ambiguous nesting with two closers", text: 'root ::= x\nx ::= "<" x ">" | "<" x ">>" | "<" y | "."\ny ::= x ")" | "."\n', alphabet: "<>.)", len: 8 },
  ];
  for (const g of SMALL) {
    it(`exhaustively up to length ${g.len}: ${g.name}`, () => {
      const cfg = inline(g.text);
      const runner = new PdaRunner(grammarToPda(cfg).pda);
      const alpha = enc.encode(g.alphabet);
      let n = 0;
      const rec = (prefix: number[]): void => {
        const s = Uint8Array.from(prefix);
        agree(cfg, runner, s, g.name);
        n++;
        if (prefix.length < g.len && runner.run(s)) for (const b of alpha) rec([...prefix, b]);
      };
      rec([]);
      expect(n).toBeGreaterThan(g.alphabet.length);
    });
  }
});

describe("pushdown tables", () => {
  it("the subset construction finds a state it has made however large its table has grown", () => {
    // 4,000 words whose ends all meet in a few states, looked up again from every word: past 512,
    // 1,024, 2,048, 4,096 and 8,192 states the table (id-table.ts) is rebuilt, and a state it lost
    // would be made twice (minimization would hide that: the raw count shows it). 9,389 is what
    // the Map of buckets this table replaced counted (e6a06e8).
    const random = seededRandom(7);
    const words = new Set<string>();
    while (words.size < 4000) {
      let w = "";
      for (let i = 0; i < 8; i++) w += "abcdefghijklmnop"[Math.floor(random() * 16)];
      words.add(w);
    }
    const cfg = parseGrammar(`root ::= word ("," root)?\nword ::= ${[...words].map((w) => `"${w}"`).join(" | ")}\n`, "words.gbnf");
    const r = grammarToPda(cfg);
    expect(r.rawStates).toBe(9389); // a state lost from the table is made again: 9,390 (checked by dropping states at a rebuild)
    const runner = new PdaRunner(r.pda);
    const some = [...words].filter((_, i) => i % 500 === 0);
    for (const w of some) expect(runner.accepts(enc.encode(`${w},${some[0]}`)), w).toBe(true);
    expect(runner.accepts(enc.encode(`${some[0]},`))).toBe(false);
  });

  it("JSON compiles to a small automaton with calls into `value`; equal grammars give byte-identical tables", () => {
    const a = compileGrammarSource(readFileSync(`${EX}/json.gbnf`, "utf8"), "json.gbnf");
    expect(a.grammar.mode).toBe("pushdown");
    expect(a.grammar.calledRules).toEqual(["value"]);
    expect(a.byteDfa.nStates).toBeLessThan(200);
    const b = compileGrammarSource(readFileSync(`${EX}/json.gbnf`, "utf8"), "json.gbnf");
    expect(compileToWasm(a)).toEqual(compileToWasm(b));
    const t = serializeTables(a.byteDfa, []);
    const back = parseTables(t).dfa;
    expect(back.calls).toEqual(a.byteDfa.calls!.map((l) => l.map(([s, r]) => [s, r])));
    expect(serializeTables(back, [])).toEqual(t);
  });

  it("a grammar that does not nest has no call table (the runtime runs it as a plain DFA)", () => {
    const c = compileGrammarSource(readFileSync(`${EX}/cooking.gbnf`, "utf8"), "cooking.gbnf");
    expect(c.byteDfa.calls).toBeUndefined();
    const t = serializeTables(c.byteDfa, []);
    expect(new DataView(t.buffer).getUint32(52, true)).toBe(0);
  });

  it("parseTables rejects a call table that is out of order or names a state that does not exist", () => {
    const c = compileGrammarSource(readFileSync(`${EX}/arithmetic.gbnf`, "utf8"), "arithmetic.gbnf");
    const t = serializeTables(c.byteDfa, []);
    const v = new DataView(t.buffer);
    const off = v.getUint32(52, true);
    const n = c.byteDfa.nStates;
    const bad1 = t.slice();
    new DataView(bad1.buffer).setUint32(off + 4 * n, 0, true); // index end ≠ nCallPairs
    expect(() => parseTables(bad1)).toThrow(/call index/);
    const bad2 = t.slice();
    new DataView(bad2.buffer).setUint16(off + 4 * (n + 1), 0xfff0, true);
    expect(() => parseTables(bad2)).toThrow(/names state/);
    const bad3 = t.slice();
    new DataView(bad3.buffer).setUint32(56, 0, true);
    expect(() => parseTables(bad3)).toThrow(/call table offset/);
  });

  it("the state limit is a SpecLimitError whose hint does not mention a depth", () => {
    try {
      grammarToPda(grammar("openagi.gbnf"), { maxStates: 50, name: "openagi.gbnf" });
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(SpecLimitError);
      expect((e as SpecLimitError).message).toContain("pushdown automaton of grammar openagi.gbnf");
      expect((e as SpecLimitError).hint).toContain("--max-grammar-states");
      expect((e as SpecLimitError).hint).not.toContain("--max-depth");
    }
  });

  it("the closure limit: a pathologically ambiguous grammar is cut, never hangs", () => {
    // x ::= x x | "a" rewritten has exponentially many parses; the closure stays finite by the limit.
    const cfg = inline('root ::= x\nx ::= "(" x ")" x | "(" x ")" | ""\n');
    const runner = new PdaRunner(grammarToPda(cfg).pda, PDA_MAX_STACK, 8);
    const s = enc.encode("(".repeat(40));
    const c = runner.run(s);
    // Either still alive under the cut or stopped; if alive, what is left is completable.
    if (c) expect(runner.accepts(enc.encode("(".repeat(40) + ")".repeat(40)))).toBe(true);
    expect(PDA_MAX_PAIRS).toBeGreaterThan(8);
  });

  it("--emit ebnf of a pushdown grammar is an equivalent grammar (calls become `s<start> s<ret>`)", () => {
    for (const f of ["json.gbnf", "arithmetic.gbnf"]) {
      const c = compileGrammarSource(readFileSync(`${EX}/${f}`, "utf8"), f);
      const emitted = inline(emitGrammar(c.byteDfa, "gbnf", f));
      const cfg = grammar(f);
      const random = seededRandom(99);
      for (let k = 0; k < 15; k++) {
        const s = sampleSentence(cfg, { random, depth: 14 })!;
        expect(recognize(emitted, s)).toBe(true);
        const m = mutate(s, random, enc.encode("{}[]()\",:01+"));
        expect(recognize(emitted, m), `${f}: ${JSON.stringify(dec.decode(m))}`).toBe(recognize(cfg, m));
      }
    }
  });
});

describe("seeded samples under the runtime's masks", () => {
  it("every example grammar, compiled as a pushdown automaton, on Llama 3: 20 samples each, all sentences (Earley)", async () => {
    const vocab = Vocabulary.fromTokenizerJsonObject(loadTokenizerJson("llama3_1"));
    for (const f of files) {
      const c = compileGrammarSource(readFileSync(`${EX}/${f}`, "utf8"), f);
      const spec = await Spec.load(compileToWasm(c), { vocab });
      const cfg = grammar(f);
      const traces = sampleTraces(spec, vocab, { n: 20, seed: 31 + f.length, maxStateTokens: 8 });
      for (const t of traces) {
        const text = t.segments.map((x) => x.text).join("");
        expect(recognize(cfg, text), `${f}: ${JSON.stringify(text.slice(0, 200))}`).toBe(true);
      }
    }
  });

  it("PdaRunner.finish completes any reachable configuration with a shortest suffix", () => {
    const runner = new PdaRunner(grammarToPda(grammar("json.gbnf")).pda);
    for (const prefix of ['{"a": [[[{"b": "x', '{', ' {"k": 1', '{"k": [1, {"z": tru']) {
      const rest = runner.finish(runner.run(enc.encode(prefix))!)!;
      expect(recognize(grammar("json.gbnf"), prefix + dec.decode(rest)), prefix).toBe(true);
    }
    expect(dec.decode(runner.finish(runner.run(enc.encode('{"a": [[')) !)!)).toBe("]]}");
  });
});

describe("pushdown grammars on the CLI", () => {
  const tmp = mkdtempSync(join(tmpdir(), "specc-pda-"));
  const cli = async (...args: string[]) => {
    let out = "", err = "";
    const code = await main(args, { out: (s) => { out += s + "\n"; }, err: (s) => { err += s + "\n"; } });
    return { code, out, err };
  };

  it("compile says pushdown, check accepts 100-deep JSON, --max-depth 3 gives the bounded DFA that rejects it", async () => {
    const r = await cli("compile", `${EX}/json.gbnf`, "-o", join(tmp, "json.wasm"));
    expect(r.code).toBe(EXIT.ok);
    expect(r.out).toMatch(/pushdown automaton \d+ states × \d+ classes, \d+ call edges into value · exact at any nesting depth/);
    const deep = { segments: [{ by: "llm", text: `{"k": ${"[".repeat(100)}1${"]".repeat(100)}}` }] };
    writeFileSync(join(tmp, "deep.json"), JSON.stringify(deep));
    expect((await cli("check", `${EX}/json.gbnf`, "--trace", join(tmp, "deep.json"))).code).toBe(EXIT.ok);
    const bounded = await cli("check", `${EX}/json.gbnf`, "--max-depth", "3", "--trace", join(tmp, "deep.json"));
    expect(bounded.code).toBe(EXIT.nonconforming);
  });

  it("the TS engine of a pushdown grammar reports the first bad byte like the DFA does", () => {
    const c = compileGrammarSource(readFileSync(`${EX}/arithmetic.gbnf`, "utf8"), "arithmetic.gbnf");
    const e = byteDfaEngine(c.byteDfa);
    const v = runTrace(e, { segments: [{ by: "llm", text: "((1+2)*3))" }] }, []);
    expect(v.verdict).toBe("violation");
    const ok = runTrace(e, { segments: [{ by: "llm", text: `${"(".repeat(50)}7${")".repeat(50)}` }] }, []);
    expect(ok.verdict).toBe("conforms");
  });

  it("compile --vocab on a pushdown grammar bakes the vocabulary but no per-state masks, and the module loads and masks", async () => {
    const out = join(tmp, "json-vocab.wasm");
    const r = await cli("compile", `${EX}/json.gbnf`, "-o", out, "--vocab", tokenizerJsonPath("llama3_1"));
    expect(r.code).toBe(EXIT.ok);
    const bytes = readFileSync(out);
    const mod = await WebAssembly.compile(bytes);
    const vocabSections = WebAssembly.Module.customSections(mod, "specc.vocab");
    expect(vocabSections.length).toBe(1);
    expect(WebAssembly.Module.customSections(mod, "specc.masks").length).toBe(0);
    // The vocabulary, the runtime and the tables: less than four 16 KB masks beside the vocabulary.
    expect(bytes.length - vocabSections[0]!.byteLength).toBeLessThan(64_000);
    const spec = await Spec.load(bytes);
    expect(spec.pushdown).toBe(true);
    const m = spec.matcher();
    m.feedText(`{"a": ${"[".repeat(40)}`);
    const mask = new Int32Array(spec.maskWords);
    m.fillMask(mask);
    const allowed = (t: number) => ((mask[t >> 5]! >>> (t & 31)) & 1) === 1;
    const tok = await loadPackageTokenizer("llama3_1");
    const ids = (text: string) => tok.encode(text);
    expect(allowed(ids("]")[0]!)).toBe(true);
    expect(allowed(ids("}")[0]!)).toBe(false);
  });

  it("render --level bytes draws call edges", async () => {
    const r = await cli("render", `${EX}/arithmetic.gbnf`, "--level", "bytes", "-o", join(tmp, "a.dot"));
    expect(r.code).toBe(EXIT.ok);
    const dot = readFileSync(join(tmp, "a.dot"), "utf8");
    expect(dot).toMatch(/label="call"/);
  });
});
