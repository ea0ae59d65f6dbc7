/**
 * The grammar front end (compiler/grammar/): the examples of examples/grammars/ parse, accept their
 * sentences and reject near misses; prefix viability; every diagnostic on the broken grammars of
 * tests/fixtures/grammars/ (each file names its expected code and line:col in its first line);
 * the Earley recognizer against a brute-force oracle; left-recursion removal preserves the
 * language; the parser survives fuzzing; printGbnf round-trips; and, where node-llama-cpp's native
 * binding loads, llama.cpp's own grammar engine agrees with ours on every example (and so does
 * XGrammar's, where @mlc-ai/web-xgrammar is installed).
 * Property tests are seeded (fast-check), so a failure replays.
 */
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { SpecError, SpecLimitError } from "../../compiler/diagnostics.js";
import { compact, productiveRules, reachableRules } from "../../compiler/grammar/analyze.js";
import { byteLit, DEFAULT_LIMITS, ruleSym, type Cfg, type CfgRule, type Sym } from "../../compiler/grammar/cfg.js";
import { Earley } from "../../compiler/grammar/earley.js";
import {
  parseGrammar, printGbnf, recognize, sampleSentence, seededRandom, viablePrefix, type GrammarOptions,
} from "../../compiler/grammar/index.js";
import { leftRecursiveComponents, removeLeftRecursion } from "../../compiler/grammar/left-recursion.js";
import { PdaRunner, grammarToPda } from "../../compiler/grammar/pda.js";
import { emitGrammar } from "../../compiler/emit-grammar.js";
import { grammarByteDfa } from "../../compiler/compile.js";
import { NameGen } from "../../compiler/grammar/lower.js";
import { tokenize, type GToken } from "../../compiler/grammar/lexer.js";
import { parseGrammarAst, parseLL1, parseNearley, type RawRule } from "../../compiler/grammar/parse.js";
import { readGeneratedGrammar } from "../../compiler/grammar/read-generated.js";
import type { GrammarAst } from "../../compiler/grammar/ast.js";
import { fixedSample, loadMaskBench, maskBenchPath } from "../../bench/maskbench/data.js";
import { jsonSchemaToGbnf } from "../../compiler/jsonschema/index.js";
import { complementCodePoints, decodeUtf8Sequence, encodeUtf8, normalizeCodePoints, utf8Sequences } from "../../compiler/grammar/utf8.js";

const EX = "examples/grammars";
const FIX = "tests/fixtures/grammars";
const exampleFiles = readdirSync(EX).filter((f) => f.endsWith(".gbnf")).sort();
const source = (f: string) => readFileSync(`${EX}/${f}`, "utf8");
const example = (f: string, opts: GrammarOptions = {}) => parseGrammar(source(f), f, opts);
const utf8 = (s: string) => new TextEncoder().encode(s);
const text = (b: Uint8Array) => new TextDecoder().decode(b);

/** Sentences and near misses per example (the near misses differ from a sentence by a little). */
const CASES: Record<string, { accept: string[]; reject: string[]; prefixes?: string[]; deadPrefixes?: string[] }> = {
  "json.gbnf": {
    accept: ['{}', ' { } ', '{"a": 1}', '{"a": [1, 2.5e3, -0.5E-2, "x\\u00e9\\n", true, false, null, {}], "b": {"c": []}}', '{"é😀": "\\"\\\\\\/"}', '\n{"k":0}\n'],
    reject: ['', '[]', '{', '{"a"}', '{"a": }', '{"a": 01}', '{"a": 1,}', '{a: 1}', '{"a": tru}', '{"a": "\n"}', '{"a": "\\x"}', '{"a": 1.}', '{"a": .5}', '{"a": +1}', "{'a': 1}"],
    prefixes: ['', ' ', '{', '{"a', '{"a": [1, ', '{"a": -', '{"a": 1e', '{"a": "\\u00'],
    deadPrefixes: ['x', '{]', '{"a": ]', '{"a" 1', '{"a": 1 2', '{"a": 01'],
  },
  "arithmetic.gbnf": {
    accept: ['1', '1+2*3', ' (1 + 2) * 3 / 4.5 ', '-(-1)', '10 - -2', '((7))'],
    reject: ['', '1+', '+1', '1 2', '(1', '1)', '1..2', '1 ** 2', '1.', 'x'],
    prefixes: ['', '(', '1 +', '((1', '3.'],
    deadPrefixes: [')', '1)', '1 2', '*'],
  },
  "openagi.gbnf": {
    accept: [
      "Visual Question Answering(Colorization(i), Image Classification(i))",
      "Image Classification(i)",
      "Question Answering(Text Summarization(Image Captioning(i)), Object Detection(Image Deblurring(Super-Resolution(i))))",
      "Sentiment Analysis(Image Captioning(Text-to-Image Generation(Fill Mask(Object Detection(i)))))",
    ],
    reject: [
      "i", // the task's output is text, the input an image
      "Colorization(i)", // image in, image out: not text
      "Image Classification(Machine Translation(i))", // text where an image is needed
      "Visual Question Answering(Image Classification(i), Colorization(i))", // inputs swapped
      "Image classification(i)", "Image Classification (i)", "Image Classification(i", "Image Denoising(i)",
    ],
    prefixes: ["Visual Question Answering(", "Visual Question Answering(Colorization(i), ", "Text"],
    deadPrefixes: ["Colorization(i)", "Image Classification(Sentiment", "X"],
  },
  "cooking.gbnf": {
    accept: [
      "wok [ginger, garlic, oil, salt, light soy oil, cooking wine, white pepper] wok wok bowl [ginger, garlic, oil, salt, light soy oil, cooking wine, white pepper] water raw beef slices bowl cooking pot water broccoli",
      "wok [] wok wok bowl [] water raw beef slices wok [onion, vinegar] water broccoli",
      "wok [salt] wok wok bowl [sugar] water raw beef slices bowl cooking pot broccoli",
    ],
    reject: [
      "wok [garlic, ginger] wok wok bowl [] water raw beef slices bowl cooking pot broccoli", // out of order
      "wok [salt, salt] wok wok bowl [] water raw beef slices bowl cooking pot broccoli", // twice
      "wok [] wok wok bowl [] water raw beef slices bowl water broccoli", // E → b H, H needs the cooking pot
      "wok [] wok bowl [] water raw beef slices bowl cooking pot broccoli", // C → a F: missing wok
      "wok [] wok wok bowl [] water raw beef slices bowl cooking pot broccoli ",
      "wok [] wok wok bowl [, salt] water raw beef slices bowl cooking pot broccoli",
    ],
    prefixes: ["wok [", "wok [onion, ", "wok [] wok wok bowl [] water raw beef"],
    deadPrefixes: ["wok [salt, onion", "bowl", "wok [] bowl"],
  },
  "daily-plan.gbnf": {
    accept: [
      "10:00 - 10:00 Turning on the washer/laundry machine.\n10:00 - 11:00 House cleaning.\n11:00 - 12:00 Eating breakfast.\n12:00 - 13:00 Grocery shopping.\n13:00 - 15:00 Playing basketball.\n15:00 - 16:00 Eating lunch.\n16:00 - 19:00 Doing homework.\n19:00 - 20:00 Eating supper.\n",
      "10:00 - 11:00 Eating breakfast.\n11:00 - 12:00 Eating lunch.\n12:00 - 13:00 Doing nothing for one hour.\n13:00 - 15:00 Playing basketball.\n15:00 - 18:00 Doing homework.\n18:00 - 19:00 Eating supper.\n19:00 - 20:00 House cleaning.\n",
    ],
    reject: [
      // a meal ending at 13:00, right before basketball
      "10:00 - 11:00 Eating breakfast.\n11:00 - 12:00 Eating lunch.\n12:00 - 13:00 Eating supper.\n13:00 - 15:00 Playing basketball.\n15:00 - 20:00 Doing nothing.\n",
      // only two meals
      "10:00 - 11:00 Eating breakfast.\n11:00 - 12:00 House cleaning.\n12:00 - 13:00 Grocery shopping.\n13:00 - 15:00 Playing basketball.\n15:00 - 16:00 Eating lunch.\n16:00 - 19:00 Doing homework.\n19:00 - 20:00 House cleaning.\n",
      // grocery shopping right after turning on the washer (one must stay home)
      "10:00 - 10:00 Turning on the washer/laundry machine.\n10:00 - 11:00 Grocery shopping.\n11:00 - 12:00 Eating breakfast.\n12:00 - 13:00 House cleaning.\n13:00 - 15:00 Playing basketball.\n15:00 - 16:00 Eating lunch.\n16:00 - 19:00 Doing homework.\n19:00 - 20:00 Eating supper.\n",
      // lunch before breakfast
      "10:00 - 11:00 Eating lunch.\n",
      // past 20:00
      "10:00 - 11:00 Eating breakfast.\n11:00 - 12:00 Eating lunch.\n12:00 - 13:00 House cleaning.\n13:00 - 15:00 Playing basketball.\n15:00 - 18:00 Doing homework.\n18:00 - 19:00 Eating supper.\n19:00 - 20:00 House cleaning.\n20:00 - 21:00 House cleaning.\n",
    ],
    prefixes: ["10:00 - ", "10:00 - 13:00 Doing homework.\n13:00 - 15:00 "],
    deadPrefixes: ["11:00", "10:00 - 12:00", "10:00 - 11:00 Eating lunch", "10:00 - 13:00 Doing homework.\n13:00 - 14:00"],
  },
  "risk-management.gbnf": {
    accept: [
      readFileSync(`${EX}/risk-management.gbnf`, "utf8").split("\n").filter((l) => /^# {3}(Here|\d:|Note)/.test(l)).map((l) => l.slice(4)).join("\n") + "\n",
      "Here is the final plan for Microsoft:\n1: Shareholders of Blizzard Entertainment is not entitled to sell Blizzard Entertainment. Fail the preliminary risk analysis. The deal should not proceed.\nNote: This is a risk assessment process provided based on current information. Please ensure the accuracy of the provided information and possible additional supplemental information.\n",
    ],
    reject: [
      "Here is the final plan for Microsoft:\n5: Pass the preliminary risk analysis. Details to be discussed in the transaction documents.\n",
      "Here is the final plan for microsoft:\n",
      "Here is the final plan for Microsoft:\n1: Based on current information, we believe A is entitled to sell B.\n3: Then, based on current information, we believe neither CFIUS filings nor foreign investment filings in China are needed.\n",
    ],
    prefixes: ["Here is the final plan for M", "Here is the final plan for Microsoft:\n1: "],
    deadPrefixes: ["Here is the final plan for Microsoft:\n2:", "Here is the final plan for Microsoft:\n1: Based on current information, we believe A is entitled to sell B.\n4:"],
  },
};

describe("grammar examples", () => {
  it("every example has cases here, starts with a comment naming its source, and parses without warnings", () => {
    expect(exampleFiles.sort()).toEqual(Object.keys(CASES).sort());
    for (const f of exampleFiles) {
      expect(source(f).startsWith("# "), f).toBe(true);
      expect(source(f).split("\n")[0], f).toMatch(/Source|seed 002|RFC|Formal-LLM|Calculator/);
      const cfg = example(f);
      expect(cfg.warnings.map((w) => w.message), f).toEqual([]);
      expect(leftRecursiveComponents(cfg.rules), f).toEqual([]);
    }
  });

  for (const f of Object.keys(CASES)) {
    describe(f, () => {
      const c = CASES[f]!;
      const cfg = example(f);
      it("accepts its sentences", () => {
        for (const s of c.accept) expect(recognize(cfg, s), JSON.stringify(s)).toBe(true);
      });
      it("rejects near misses", () => {
        for (const s of c.reject) expect(recognize(cfg, s), JSON.stringify(s)).toBe(false);
      });
      it("tells viable prefixes from dead ones", () => {
        for (const s of c.prefixes ?? []) expect(viablePrefix(cfg, s), JSON.stringify(s)).toBe(true);
        for (const s of c.deadPrefixes ?? []) expect(viablePrefix(cfg, s), JSON.stringify(s)).toBe(false);
        // Every prefix of a sentence is viable, byte by byte (UTF-8 characters cut in the middle too).
        for (const s of c.accept) {
          const m = new Earley(cfg).matcher();
          utf8(s).forEach((b, k) => expect(m.feed(b) && m.viable(), `${JSON.stringify(s)}[0:${k + 1}]`).toBe(true));
          expect(m.accepts()).toBe(true);
        }
      });
      it("accepts its own random sentences", () => {
        const random = seededRandom(7);
        for (let k = 0; k < 40; k++) {
          const s = sampleSentence(cfg, { random, depth: 10 })!;
          expect(recognize(cfg, s), text(s)).toBe(true);
        }
      });
    });
  }

  it("OpenAGI: the 15 tools of Table 3, as terminals, in 6 classes", () => {
    const cfg = example("openagi.gbnf");
    const classes = ["A", "B", "C", "D", "E", "F"].map((n) => cfg.rules.find((r) => r.name === n)!);
    expect(classes.map((r) => r.alts.length)).toEqual([4, 3, 1, 5, 1, 1]);
  });

  it("JSON: the start rule can be overridden (value), which leaves root unused", () => {
    const cfg = example("json.gbnf", { start: "value" });
    for (const s of ['[1, 2]', '"x"', '-0.5', 'null', '{"a": {}}']) expect(recognize(cfg, s), s).toBe(true);
    expect(recognize(cfg, " 1")).toBe(false);
    expect(cfg.warnings.map((w) => w.code)).toEqual(["E0709"]);
  });

  it("next bytes: the recognizer lists what may follow a prefix", () => {
    const cfg = example("arithmetic.gbnf");
    const m = new Earley(cfg).matcher();
    for (const b of utf8("(1")) m.feed(b);
    expect(String.fromCharCode(...m.nextBytes())).toBe("\t )*+-./0123456789");
    expect(m.accepts()).toBe(false);
    m.feed(0x29);
    expect(m.accepts()).toBe(true);
  });
});

describe("grammar diagnostics", () => {
  const fixtures = readdirSync(FIX).filter((f) => f.endsWith(".gbnf")).sort();
  it("there is a fixture for every E07xx code and for the limits", () => {
    const codes = new Set(fixtures.map((f) => /# expect(?:-warning)?: (E\d{4})/.exec(readFileSync(`${FIX}/${f}`, "utf8"))![1]));
    for (let n = 1; n <= 13; n++) expect(codes.has(`E07${String(n).padStart(2, "0")}`), `E07${n}`).toBe(true);
    expect(codes.has("E0501")).toBe(true);
  });
  for (const f of fixtures) {
    it(f, () => {
      const src = readFileSync(`${FIX}/${f}`, "utf8");
      const m = /^# (expect|expect-warning): (E\d{4})(?: (\d+):(\d+))?/.exec(src)!;
      const optLine = /^# options: (.*)$/m.exec(src)?.[1] ?? "";
      const opts: GrammarOptions = { limits: {} };
      for (const kv of optLine.split(/\s+/).filter(Boolean)) {
        const [k, v] = kv.split("=") as [string, string];
        if (k === "leftRecursion") opts.leftRecursion = v as GrammarOptions["leftRecursion"];
        else if (k === "start") opts.start = v;
        else (opts.limits as Record<string, number>)[k] = Number(v);
      }
      const [, kind, code, line, col] = m;
      if (kind === "expect-warning") {
        const cfg = parseGrammar(src, f, opts);
        const w = cfg.warnings.find((x) => x.code === code);
        expect(w, cfg.warnings.map((x) => x.message).join("; ")).toBeDefined();
        expect(`${w!.span!.line}:${w!.span!.col}`).toBe(`${line}:${col}`);
        expect(() => parseGrammar(src, f, { ...opts, strict: true })).toThrow(SpecError);
        return;
      }
      let err: unknown;
      try {
        parseGrammar(src, f, opts);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(SpecError);
      const e = err as SpecError;
      expect(e.code, e.message).toBe(code);
      if (code === "E0501") expect(e).toBeInstanceOf(SpecLimitError);
      if (line) expect(`${e.span?.line}:${e.span?.col}`, e.message).toBe(`${line}:${col}`);
      expect(e.span?.file ?? f).toBe(f);
    });
  }

  it("messages say what was expected, what is wrong and how to fix it", () => {
    const msg = (src: string, opts: GrammarOptions = {}) => {
      try {
        parseGrammar(src, "t.gbnf", opts);
      } catch (e) {
        const s = e as SpecError;
        return `${s.message} | ${s.hint ?? ""}`;
      }
      return "no error";
    };
    expect(msg('root ::= ( "a" | "b"\n')).toMatch(/this '\(' is never closed: the input ends where .*'\)'.* was expected/);
    expect(msg('root ::= "a" {2,\n')).toMatch(/unexpected line break in a repetition/);
    expect(msg("root ::= itme\nitem ::= \"x\"\n")).toMatch(/undefined rule itme \| did you mean item\?/);
    expect(msg('root ::= "a"\nroot ::= "b"\n')).toMatch(/duplicate rule root \(first defined at 1:1\)/);
    expect(msg('root = "a"\n')).toMatch(/::=/);
    expect(msg("root ::= 'a'\n")).toMatch(/double quotes/);
    expect(msg('root ::= "a" root\n')).toMatch(/language is empty: root can never finish a derivation \(root → root\)/);
    expect(msg('root ::= "x" | a\na ::= "(" b\nb ::= a ")"\n')).toMatch(/rule a never terminates.*\(a → b → a\)/);
    expect(msg('a ::= b "x" | "y"\nb ::= a "z" | "w"\n', { start: "a", leftRecursion: "reject" })).toMatch(/left recursion: a → b → a/);
    expect(msg('root ::= [\\d]\n')).toMatch(/regex shorthands/);
    expect(msg('root ::= "a"\n', { start: "value" })).toMatch(/no rule named value/);
  });

  it("portability warnings (E0713) name the engine that would reject the construct (each checked against llama.cpp and web-xgrammar)", () => {
    const warn = (src: string) => parseGrammar(src, "p.gbnf").warnings.filter((w) => w.code === "E0713").map((w) => w.message).join(" / ");
    expect(warn('root ::= "a" .\n')).toMatch(/XGrammar does not accept it/);
    expect(warn('root ::= "a" | \n')).toMatch(/empty alternative: XGrammar rejects it/);
    expect(warn('root ::= my_rule\nmy_rule ::= "a"\n')).toMatch(/llama.cpp does not accept in names/);
    expect(warn('root ::= 1abc\n1abc ::= "a"\n')).toMatch(/starts with '1', which XGrammar does not accept/);
    expect(warn('root ::= "\\x41B"\n')).toMatch(/llama.cpp reads two digits, XGrammar reads them all/);
    expect(warn('root ::= "a"\n  "b"\n')).toMatch(/llama.cpp ends a rule at the line break/);
    expect(warn('root ::= "a"*?\n')).toMatch(/XGrammar accepts only one/);
    expect(warn("root ::= \"\\'\"\n")).toMatch(/XGrammar notation; llama.cpp rejects it/);
    expect(warn('root ::= "\\["\n')).toMatch(/llama.cpp notation; XGrammar rejects it/);
    for (const ok of ['root ::= [-a] [\\u002D] [\\-] ""\n', 'root ::= [\\[\\]] "x"\n', 'root ::= ( "a"\n | "b" )\n', 'root ::=\n  "a" |\n  "b"\n']) {
      expect(warn(ok), ok).toBe("");
    }
    expect(warn("root ::= . . .\n")).toMatch(/and 2 more like it/);
    expect(warn("root ::= [\\x41B] [\\x41B]\n")).toMatch(/and 1 more like it/); // a class written twice is noted twice
    expect(parseGrammar("root ::= .\n", "p.gbnf", { portability: false }).warnings).toEqual([]);
  });

  it("warnings: false builds none (generated text), and errors are still thrown", () => {
    const text = 'root ::= "a" x_y\nx_y ::= "b"\nunused ::= "c"\n';
    expect(parseGrammar(text, "w.gbnf").warnings.map((w) => w.code).sort()).toEqual(["E0709", "E0713"]);
    expect(parseGrammar(text, "w.gbnf", { warnings: false }).warnings).toEqual([]);
    expect(() => parseGrammar('root ::= nope\n', "w.gbnf", { warnings: false })).toThrow(/undefined rule nope/);
  });

  it("reports every error it can find, not only the first", () => {
    try {
      parseGrammar('root ::= a b c\na ::= "x"\na ::= "y"\n', "t.gbnf");
      expect.unreachable();
    } catch (e) {
      const all = [e as SpecError, ...((e as { more?: SpecError[] }).more ?? [])];
      expect(all.map((x) => x.code).sort()).toEqual(["E0704", "E0705", "E0705"]);
    }
  });
});

describe("UTF-8 compilation of character classes", () => {
  it("sequences are exactly the encodings of the set (all ranges of a random set, checked per code point sample)", () => {
    const range = fc.tuple(fc.integer({ min: 0, max: 0x10ffff }), fc.integer({ min: 0, max: 0x3000 })).map(([lo, len]) => [lo, Math.min(0x10ffff, lo + len)] as const);
    fc.assert(fc.property(fc.array(range, { minLength: 1, maxLength: 4 }), fc.array(fc.integer({ min: 0, max: 0x10ffff }), { maxLength: 60 }), (ranges, probes) => {
      const set = normalizeCodePoints(ranges);
      const seqs = utf8Sequences(set);
      const inSet = (cp: number) => set.some(([lo, hi]) => cp >= lo && cp <= hi);
      const matches = (bytes: number[]) => seqs.some((s) => s.length === bytes.length && s.every(([lo, hi], k) => bytes[k]! >= lo && bytes[k]! <= hi));
      for (const [lo, hi] of set) for (const cp of [lo, hi, (lo + hi) >> 1]) probes.push(cp, Math.max(0, cp - 1), Math.min(0x10ffff, cp + 1));
      for (const cp of probes) {
        if (cp >= 0xd800 && cp <= 0xdfff) continue;
        expect(matches(encodeUtf8(cp))).toBe(inSet(cp));
      }
      // Each sequence decodes back to one contiguous range, and they tile the set in order.
      const decoded = seqs.map((s) => decodeUtf8Sequence(s)!);
      expect(decoded.every(Boolean)).toBe(true);
      expect(normalizeCodePoints(decoded)).toEqual(set);
    }), { numRuns: 300, seed: 11 });
  });

  it("a negated class matches every other character, in every UTF-8 length, and never invalid UTF-8", () => {
    const cfg = parseGrammar('root ::= [^"\\\\a-z]\n', "t.gbnf");
    for (const ch of ["A", "é", "€", "😀", "\u0000", "\u007f", "\u0080", "\uffff", "\u{10ffff}"]) expect(recognize(cfg, ch), ch).toBe(true);
    for (const ch of ['"', "\\", "a", "q", "z"]) expect(recognize(cfg, ch), ch).toBe(false);
    for (const bad of [[0xc0, 0x80], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xff], [0x80], [0xe0, 0x80, 0x80]]) {
      expect(recognize(cfg, bad), bad.join(",")).toBe(false);
    }
    expect(complementCodePoints([[0, 0x10ffff]])).toEqual([]);
  });
});

// --- A brute-force oracle for small grammars: which rules derive which substrings (fixpoint). ---

function bruteForce(cfg: Cfg, s: Uint8Array): { member: boolean; viable: boolean } {
  const productive = productiveRules(cfg.rules);
  const rules = cfg.rules.map((r) => r.alts.filter((a) => a.every((x) => x.kind !== "rule" || productive[x.rule])));
  const n = s.length;
  const D = rules.map(() => Array.from({ length: n + 1 }, () => new Array<boolean>(n + 1).fill(false)));
  /** Positions reachable from i by deriving the symbols fully. */
  const ends = (alt: readonly Sym[], i: number): Set<number> => {
    let reach = new Set([i]);
    for (const x of alt) {
      const next = new Set<number>();
      for (const p of reach) {
        if (x.kind === "bytes") {
          if (p < n && x.ranges.some(([lo, hi]) => s[p]! >= lo && s[p]! <= hi)) next.add(p + 1);
        } else for (let q = p; q <= n; q++) if (D[x.rule]![p]![q]) next.add(q);
      }
      reach = next;
    }
    return reach;
  };
  for (let changed = true; changed;) {
    changed = false;
    rules.forEach((alts, r) => {
      for (let i = 0; i <= n; i++) for (const alt of alts) for (const j of ends(alt, i)) if (!D[r]![i]![j]) { D[r]![i]![j] = true; changed = true; }
    });
  }
  // P[r][i]: r derives some string that starts with s[i..n).
  const P = rules.map(() => new Array<boolean>(n + 1).fill(false));
  const seqPrefix = (alt: readonly Sym[], i: number): boolean => {
    let reach = new Set([i]);
    for (const x of alt) {
      if (reach.has(n)) return true; // what is left of the alternative can finish (it is productive)
      for (const p of reach) if (x.kind === "rule" && P[x.rule]![p]) return true;
      const next = new Set<number>();
      for (const p of reach) for (const q of ends([x], p)) next.add(q);
      reach = next;
    }
    return reach.has(n);
  };
  for (let changed = true; changed;) {
    changed = false;
    rules.forEach((alts, r) => {
      for (let i = 0; i <= n; i++) if (!P[r]![i] && alts.some((a) => seqPrefix(a, i))) { P[r]![i] = true; changed = true; }
    });
  }
  return { member: D[cfg.start]![0]![n]!, viable: productive[cfg.start]! && P[cfg.start]![0]! };
}

type SymSpec = "a" | "b" | number;
const arbGrammar = fc.integer({ min: 1, max: 4 }).chain((n) => fc.array(
  fc.array(fc.array(fc.oneof(fc.constant<SymSpec>("a"), fc.constant<SymSpec>("b"), fc.integer({ min: 0, max: n - 1 })), { maxLength: 3 }), { minLength: 1, maxLength: 3 }),
  { minLength: n, maxLength: n },
));

function toCfg(spec: SymSpec[][][]): Cfg {
  const rules: CfgRule[] = spec.map((alts, i) => ({
    name: `r${i}`, origin: "user", owner: i, span: null,
    alts: alts.map((a) => a.map((x): Sym => (x === "a" ? byteLit(97) : x === "b" ? byteLit(98) : ruleSym(x)))),
  }));
  return { rules, start: 0, warnings: [] };
}

/** Only what the start can reach and finish; undefined when the language is empty. */
function usable(cfg: Cfg): Cfg | undefined {
  const productive = productiveRules(cfg.rules);
  if (!productive[cfg.start]) return undefined;
  const rules = cfg.rules.map((r) => ({ ...r, alts: r.alts.filter((a) => a.every((x) => x.kind !== "rule" || productive[x.rule])) }));
  const reach = reachableRules(rules, cfg.start);
  const c = compact(rules, rules.map((_, i) => reach[i]! && productive[i]!), cfg.start);
  return { ...c, warnings: [] };
}

const shortStrings = (alphabet: string, max: number): string[] => {
  const out = [""];
  for (let k = 0, frontier = [""]; k < max; k++) {
    frontier = frontier.flatMap((s) => [...alphabet].map((c) => s + c));
    out.push(...frontier);
  }
  return out;
};
const ab5 = shortStrings("ab", 5);
const ab6 = shortStrings("ab", 6);

describe("Earley recognizer (the oracle)", () => {
  it("agrees with brute force on random small grammars: membership and viable prefixes (ε, cycles, ambiguity, left recursion)", () => {
    fc.assert(fc.property(arbGrammar, (spec) => {
      const cfg = usable(toCfg(spec));
      if (!cfg) return;
      const e = new Earley(cfg);
      for (const s of ab5) {
        const b = utf8(s);
        const bf = bruteForce(cfg, b);
        expect(e.recognize(b), `${s} in ${JSON.stringify(spec)}`).toBe(bf.member);
        expect(e.viablePrefix(b), `${s} prefix of ${JSON.stringify(spec)}`).toBe(bf.viable);
      }
    }), { numRuns: 400, seed: 5 });
  });

  it("handles the classic ε traps (Aycock–Horspool)", () => {
    const g = parseGrammar('root ::= a a "x"\na ::= b\nb ::= ""\n', "t.gbnf");
    expect(recognize(g, "x")).toBe(true);
    const h = parseGrammar('root ::= e root "a" | e\ne ::= ""\n', "t.gbnf", { leftRecursion: "keep" });
    for (const s of ["", "a", "aaa"]) expect(recognize(h, s), s).toBe(true);
  });
});

describe("left recursion", () => {
  const LR = `root ::= expr
expr ::= expr "+" term | expr "-" term | term
term ::= term "*" factor | term "/" factor | factor
factor ::= [0-9]+ | "(" expr ")" | "-" factor
`;
  it("is rewritten by default into a grammar without left recursion", () => {
    const cfg = parseGrammar(LR, "lr.gbnf");
    expect(leftRecursiveComponents(cfg.rules)).toEqual([]);
    const kept = parseGrammar(LR, "lr.gbnf", { leftRecursion: "keep" });
    expect(leftRecursiveComponents(kept.rules).map((c) => c.rules.map((r) => kept.rules[r]!.name))).toEqual([["expr"], ["term"]]);
  });

  it("the rewrite accepts the same language (random strings and random sentences)", () => {
    const rewritten = parseGrammar(LR, "lr.gbnf");
    const kept = parseGrammar(LR, "lr.gbnf", { leftRecursion: "keep" });
    const chars = fc.constantFrom("1", "2", "+", "-", "*", "/", "(", ")");
    fc.assert(fc.property(fc.array(chars, { maxLength: 12 }), (cs) => {
      const s = cs.join("");
      expect(recognize(rewritten, s), s).toBe(recognize(kept, s));
      expect(viablePrefix(rewritten, s), s).toBe(viablePrefix(kept, s));
    }), { numRuns: 2000, seed: 17 });
    const random = seededRandom(3);
    for (let k = 0; k < 200; k++) {
      const s = sampleSentence(kept, { random, depth: 8 })!;
      expect(recognize(rewritten, s), text(s)).toBe(true);
    }
  });

  it("indirect and hidden left recursion are rewritten too", () => {
    const cases = [
      'root ::= a\na ::= b "x" | "y"\nb ::= a "z" | "w"\n',                // a → b → a
      'root ::= n root "a" | "b"\nn ::= "" | "c"\n',                         // hidden: root ::= n root … with n ⇒ ε
      'root ::= ("x"?)* "y"\n',                                             // star of a nullable body
      'root ::= root root | "a" | ""\n',                                    // infinitely ambiguous
      'root ::= a\na ::= b | "x"\nb ::= a | "y"\n',                          // a unit cycle
    ];
    const alphabet = "abcwxyz";
    for (const g of cases) {
      const kept = parseGrammar(g, "t.gbnf", { leftRecursion: "keep" });
      const cfg = parseGrammar(g, "t.gbnf");
      expect(leftRecursiveComponents(cfg.rules), g).toEqual([]);
      for (const s of shortStrings(alphabet, 4)) {
        expect(recognize(cfg, s), `${g}: ${s}`).toBe(recognize(kept, s));
        expect(viablePrefix(cfg, s), `${g}: ${s} (prefix)`).toBe(viablePrefix(kept, s));
      }
    }
  });

  it("on random grammars the rewrite always succeeds, leaves no left recursion and keeps the language", () => {
    let rewrote = 0;
    fc.assert(fc.property(arbGrammar, (spec) => {
      const cfg = usable(toCfg(spec));
      if (!cfg) return;
      if (leftRecursiveComponents(cfg.rules).length > 0) rewrote++;
      const copy = cfg.rules.map((r) => ({ ...r, alts: r.alts.map((a) => [...a]) }));
      const out = removeLeftRecursion(copy, cfg.start, new NameGen(cfg.rules.map((r) => r.name)), DEFAULT_LIMITS);
      const re: Cfg = { ...out, warnings: [] };
      expect(leftRecursiveComponents(re.rules)).toEqual([]);
      const a = new Earley(cfg);
      const b = new Earley(re);
      for (const s of ab6) {
        expect(b.recognize(utf8(s)), `${s} in ${JSON.stringify(spec)}`).toBe(a.recognize(utf8(s)));
        expect(b.viablePrefix(utf8(s)), `${s} prefix of ${JSON.stringify(spec)}`).toBe(a.viablePrefix(utf8(s)));
      }
    }), { numRuns: 500, seed: 23 });
    expect(rewrote).toBeGreaterThan(50); // the generator does produce left recursion
  });

  it("rejects with the cycle named when asked to", () => {
    expect(() => parseGrammar(LR, "lr.gbnf", { leftRecursion: "reject" })).toThrow(/left recursion: expr → expr/);
  });
});

/**
 * Grammar texts for the differential parser tests: the examples, the broken fixtures, the peers'
 * grammar cases, and the JSON Schema front end's output (llama.cpp's schema cases, a small schema).
 */
function corpus(): string[] {
  const peers = join("..", "shared", "peer-suites");
  const grammars = [...exampleFiles.map(source), ...readdirSync(FIX).map((f) => readFileSync(`${FIX}/${f}`, "utf8"))];
  for (const f of ["xgrammar-grammar-cases.json", "llamacpp-grammar-cases.json"]) {
    try {
      grammars.push(...(JSON.parse(readFileSync(join(peers, f), "utf8")) as { grammar: string }[]).map((c) => c.grammar));
    } catch { /* ../shared absent: the examples and fixtures still run */ }
  }
  try {
    for (const c of JSON.parse(readFileSync(join(peers, "llamacpp-schema-cases.json"), "utf8")) as { schema: unknown }[]) {
      try {
        grammars.push(jsonSchemaToGbnf(c.schema, "s.json").gbnf);
      } catch { /* a schema the front end refuses */ }
    }
  } catch { /* ../shared absent */ }
  // The JSON Schema front end's own output: the grammars the fast path is for.
  grammars.push(jsonSchemaToGbnf({ type: "object", properties: { a: { type: "array", items: { type: "string", maxLength: 5 }, maxItems: 3 }, b: { enum: [1, "x", null] } }, required: ["a"] }, "s.json").gbnf);
  return grammars;
}

describe("grammar parser fuzz", () => {
  const limits = { maxRepeat: 40, maxSymbols: 20_000, maxRules: 2_000 };
  function outcome(src: string): "ok" | "diagnostic" {
    try {
      const cfg = parseGrammar(src, "fuzz.gbnf", { limits });
      const s = sampleSentence(cfg, { random: seededRandom(src.length), depth: 6, maxBytes: 2000 });
      if (s) expect(recognize(cfg, s)).toBe(true);
      return "ok";
    } catch (e) {
      if (!(e instanceof SpecError)) throw e;
      expect(e.code).toMatch(/^E0[57]\d\d$/);
      if (e.span) {
        expect(e.span.file).toBe("fuzz.gbnf");
        expect(e.span.line).toBeGreaterThanOrEqual(1);
        expect(e.span.line).toBeLessThanOrEqual(src.split(/\r\n|\r|\n/).length);
        expect(e.span.col).toBeGreaterThanOrEqual(1);
        expect(e.span.offset).toBeLessThanOrEqual(src.length);
      } else expect(e).toBeInstanceOf(SpecLimitError);
      return "diagnostic";
    }
  }

  it("inputs that would blow up stop at a named limit, quickly", () => {
    const limitOf = (src: string) => {
      try {
        parseGrammar(src, "big.gbnf");
      } catch (e) {
        if (e instanceof SpecLimitError) return e.limit;
        throw e;
      }
      return "none";
    };
    expect(limitOf(`root ::= ${"(".repeat(5000)}"a"${")".repeat(5000)}\n`)).toBe("maxNesting");
    expect(limitOf(`root ::= "a"${"*".repeat(5000)}\n`)).toBe("maxNesting");
    expect(limitOf('root ::= (("ab"{2000}){2000}){2000}\n')).toBe("maxSymbols");
    expect(limitOf('root ::= "a"{2001}\n')).toBe("maxRepeat");
    expect(limitOf(`root ::= ${Array.from({ length: 300 }, (_, i) => `"${i}"{0,100}`).join(" ")}\n`)).toBe("maxRules");
    expect(limitOf(`root ::= ${"(".repeat(256)}"a"${")".repeat(256)}\n`)).toBe("none");
  });

  const token = fc.constantFrom("root", "::=", "a", "b", "root ::=", "\na ::=", "\nb ::=", '"x"', '"', '""', "[a-z]", '[^"]', "[", "]", "[]",
    "(", ")", "|", "*", "+", "?", "{2}", "{2,}", "{1,3}", "{3,1}", "{", "}", ",", "{99999}", ".", "\n", "#c\n", '"\\x4"', '"\\q"', '"\\u00e9"',
    "é", "=", "'a'", "a-b", "_x", "9", "\\", "\t", "\r\n", "😀", "[\\]]", "[a-]");
  /** Two readers compared (`same`) on each grammar, on token soups, and on the grammars with up to 5 characters cut out; seeded from `seed`. */
  const differential = (grammars: string[], same: (src: string) => void, seed: number): void => {
    grammars.forEach(same);
    fc.assert(fc.property(fc.array(token, { maxLength: 40 }), (toks) => same(toks.join(" "))), { numRuns: 2000, seed });
    fc.assert(fc.property(fc.nat(grammars.length - 1), fc.nat(), fc.nat(), (g, at, len) => {
      const t = grammars[g]!;
      const i = at % (t.length + 1);
      same(t.slice(0, i) + t.slice(i + (len % 6)));
    }), { numRuns: 1500, seed: seed + 1 });
  };
  it("random token soups always end in a grammar or a positioned diagnostic", () => {
    fc.assert(fc.property(fc.array(token, { maxLength: 40 }), (toks) => { outcome(toks.join(" ")); }), { numRuns: 2000, seed: 42 });
  });

  it("the recursive-descent parse is nearley's: the same tree, and none exactly where nearley finds a syntax error", () => {
    let trees = 0;
    let errors = 0;
    const same = (src: string): void => {
      let toks: GToken[];
      try {
        toks = tokenize("t.gbnf", src);
      } catch (e) {
        if (!(e instanceof SpecError)) throw e;
        return; // a lexical error: neither parser runs
      }
      let slow: RawRule[] | null = null;
      try {
        slow = parseNearley("t.gbnf", src, toks);
      } catch (e) {
        if (!(e instanceof SpecError)) throw e;
      }
      expect(parseLL1(toks)).toStrictEqual(slow);
      if (slow) trees++;
      else errors++;
    };
    differential(corpus(), same, 43);
    expect(trees).toBeGreaterThan(300);
    expect(errors).toBeGreaterThan(300);
  });

  it("the reader of generated grammar gives parse.ts's tree, or declines: always where parse.ts reports an error", () => {
    let read = 0, errors = 0;
    const strip = (x: unknown) => JSON.parse(JSON.stringify(x, (k, v) => (k === "span" || k === "nameSpan" || k === "opSpan" ? undefined : v)));
    const same = (src: string): void => {
      let slow: GrammarAst | null = null;
      try {
        slow = parseGrammarAst("t.gbnf", src, DEFAULT_LIMITS.maxNesting).ast;
      } catch (e) {
        if (!(e instanceof SpecError)) throw e; // SpecLimitError is one
      }
      const fast = readGeneratedGrammar("t.gbnf", src, DEFAULT_LIMITS.maxNesting);
      if (fast === null) { if (!slow) errors++; return; }
      expect(slow).not.toBeNull();
      expect(strip(fast)).toStrictEqual(strip(slow));
      // Rules keep their spans (a rule's diagnostics point where they did); a node inside gets its rule's name's.
      expect(fast.rules.map((r) => [r.nameSpan, r.span])).toStrictEqual(slow!.rules.map((r) => [r.nameSpan, r.span]));
      read++;
    };
    const grammars = corpus();
    // The grammars the reader is for: the JSON Schema front end's, on a slice of MaskBench.
    try {
      for (const c of fixedSample(loadMaskBench(maskBenchPath(".")), 60)) {
        try { grammars.push(jsonSchemaToGbnf(JSON.stringify(c.schema), c.name).gbnf); } catch { /* refused */ }
      }
    } catch { /* ../shared absent */ }
    differential(grammars, same, 45);
    expect(read).toBeGreaterThan(300);
    expect(errors).toBeGreaterThan(300);
    // And what it declines still gets parse.ts's diagnostic through parseGrammar.
    for (const bad of ['root ::= "\\q"\n', "root ::= [z-a]\n", 'root ::= "a" b ::= "b"\n', 'root ::= "\\ud800"\n']) {
      const codeOf = (warnings: boolean) => { try { parseGrammar(bad, "t.gbnf", { warnings }); return "none"; } catch (e) { return (e as SpecError).code; } };
      expect(codeOf(false)).toBe(codeOf(true));
      expect(codeOf(false)).toMatch(/^E07/);
    }
  });

  it("mutated examples always end in a grammar or a positioned diagnostic", () => {
    const sources = exampleFiles.map(source);
    const mutation = fc.record({
      ex: fc.nat(sources.length - 1),
      edits: fc.array(fc.record({ at: fc.nat(), kind: fc.constantFrom("del", "ins", "dup"), ch: fc.constantFrom("(", ")", '"', ":", " ", "x", "\n", "#", "|", "[", "]", "*", "\\", "{") }), { minLength: 1, maxLength: 4 }),
    });
    let diagnostics = 0;
    fc.assert(fc.property(mutation, ({ ex, edits }) => {
      let t = sources[ex]!;
      for (const e of edits) {
        const i = e.at % (t.length + 1);
        t = e.kind === "del" ? t.slice(0, i) + t.slice(i + 1) : e.kind === "ins" ? t.slice(0, i) + e.ch + t.slice(i) : t.slice(0, i) + t.slice(i, i + 8) + t.slice(i);
      }
      if (outcome(t) === "diagnostic") diagnostics++;
    }), { numRuns: 600, seed: 7 });
    expect(diagnostics).toBeGreaterThan(100);
  });
});

describe("printGbnf round trip", () => {
  for (const f of exampleFiles) {
    it(`${f}: printed text parses back to the same language, and printing is then a fixpoint`, () => {
      const cfg = example(f);
      const printed = printGbnf(cfg);
      const back = parseGrammar(printed, `printed-${f}`);
      expect(back.warnings.map((w) => w.message)).toEqual([]);
      expect(printGbnf(back)).toBe(printed);
      const random = seededRandom(99);
      for (let k = 0; k < 40; k++) {
        const s = sampleSentence(cfg, { random, depth: 8 })!;
        expect(recognize(back, s), text(s)).toBe(true);
        const t = sampleSentence(back, { random, depth: 8 })!;
        expect(recognize(cfg, t), text(t)).toBe(true);
        // and the near misses agree
        const cut = s.subarray(0, Math.floor(random() * s.length));
        expect(recognize(back, cut)).toBe(recognize(cfg, cut));
        expect(viablePrefix(back, cut)).toBe(viablePrefix(cfg, cut));
      }
      for (const s of [...CASES[f]!.accept, ...CASES[f]!.reject]) expect(recognize(back, s), s).toBe(recognize(cfg, s));
    });
  }

  it("a grammar started elsewhere prints with root ::= <start>, so the peer engines start right", () => {
    const cfg = example("json.gbnf", { start: "value" });
    const printed = printGbnf(cfg);
    expect(printed.startsWith("root ::= value\nvalue ::= ")).toBe(true);
    const back = parseGrammar(printed, "v.gbnf");
    for (const s of ["[1]", '"x"', "{}", " 1"]) expect(recognize(back, s), s).toBe(recognize(cfg, s));
  });

  it("random grammars (with left recursion kept) print to equivalent text", () => {
    fc.assert(fc.property(arbGrammar, (spec) => {
      const cfg = usable(toCfg(spec));
      if (!cfg) return;
      const back = parseGrammar(printGbnf(cfg), "r.gbnf", { leftRecursion: "keep", start: cfg.rules[cfg.start]!.name });
      const a = new Earley(cfg);
      const b = new Earley(back);
      for (const s of ab5) expect(b.recognize(utf8(s)), s).toBe(a.recognize(utf8(s)));
    }), { numRuns: 200, seed: 31 });
  });

  it("classes, escapes and non-ASCII text survive printing", () => {
    const src = 'root ::= "tab\\there \\"q\\" \\\\ é😀\\u0000" [^"\\\\\\x00-\\x1F] [\\[\\]\\-^] [é-ë] [\\U0001F600-\\U0001F64F]+ [^a]\n';
    const cfg = parseGrammar(src, "t.gbnf");
    const printed = printGbnf(cfg);
    const back = parseGrammar(printed, "t2.gbnf");
    expect(back.warnings).toEqual([]);
    expect(printGbnf(back)).toBe(printed);
    const random = seededRandom(5);
    for (let k = 0; k < 100; k++) {
      const s = sampleSentence(cfg, { random })!;
      expect(recognize(back, s), text(s)).toBe(true);
    }
  });
});

describe("llama.cpp agrees (node-llama-cpp's native grammar engine, when it loads)", () => {
  let llama: { createGrammar(o: { grammar: string; rootRuleName?: string }): Promise<{ _testText(t: string): boolean }> } | undefined;
  beforeAll(async () => {
    try {
      const mod = await import("node-llama-cpp");
      llama = await mod.getLlama({ gpu: false, logLevel: mod.LlamaLogLevel.disabled }) as unknown as typeof llama;
    } catch {
      llama = undefined;
    }
  });

  it("every example loads in llama.cpp, and it accepts and rejects the same strings as specc", async (ctx) => {
    if (!llama) ctx.skip();
    for (const f of exampleFiles) {
      const cfg = example(f);
      const theirs = await llama!.createGrammar({ grammar: source(f) });
      const printed = await llama!.createGrammar({ grammar: printGbnf(cfg) });
      const random = seededRandom(1234);
      const strings = [...CASES[f]!.accept, ...CASES[f]!.reject];
      for (let k = 0; k < 30; k++) {
        const s = text(sampleSentence(cfg, { random, depth: 8 })!);
        strings.push(s);
        const chars = [...s];
        const i = Math.floor(random() * (chars.length + 1));
        strings.push([...chars.slice(0, i), ...chars.slice(i + 1)].join(""), [...chars.slice(0, i), chars[i - 1] ?? "x", ...chars.slice(i)].join(""));
      }
      for (const s of strings) {
        const ours = recognize(cfg, s);
        expect(theirs._testText(s), `${f}: ${JSON.stringify(s)}`).toBe(ours);
        expect(printed._testText(s), `printed ${f}: ${JSON.stringify(s)}`).toBe(ours);
      }
    }
  });
});

describe("XGrammar agrees (@mlc-ai/web-xgrammar, when it is installed)", () => {
  type XGrammar = { fromEBNF(t: string): Promise<unknown> };
  let xgr: { Grammar: XGrammar; Testings: { isGrammarAcceptString(g: unknown, s: string): Promise<boolean> } } | undefined;
  beforeAll(() => {
    try {
      // The package ships a self-contained UMD bundle under "type": "module", which neither import()
      // nor require() loads as is; a copy named .cjs loads as CommonJS.
      const req = createRequire(import.meta.url);
      const dir = mkdtempSync(join(tmpdir(), "xgrammar-"));
      const copy = join(dir, "web-xgrammar.cjs");
      copyFileSync(req.resolve("@mlc-ai/web-xgrammar"), copy);
      try {
        xgr = req(copy) as typeof xgr;
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    } catch {
      xgr = undefined;
    }
  });

  it("every example and its printed form load in XGrammar, which accepts and rejects the same strings (as do Earley and the pushdown automaton)", async (ctx) => {
    if (!xgr) ctx.skip();
    const pda = new Map(exampleFiles.map((f) => [f, new PdaRunner(grammarToPda(example(f)).pda)] as const));
    for (const f of exampleFiles) {
      const cfg = example(f);
      for (const src of [source(f), printGbnf(cfg)]) {
        const g = await xgr!.Grammar.fromEBNF(src);
        const random = seededRandom(4321);
        const strings = [...CASES[f]!.accept, ...CASES[f]!.reject];
        for (let k = 0; k < 12; k++) {
          const s = text(sampleSentence(cfg, { random, depth: 8 })!);
          const chars = [...s];
          const i = Math.floor(random() * (chars.length + 1));
          strings.push(s, [...chars.slice(0, i), ...chars.slice(i + 1)].join(""));
        }
        for (const s of strings) {
          const ours = recognize(cfg, s);
          expect(await xgr!.Testings.isGrammarAcceptString(g, s), `${f}: ${JSON.stringify(s)}`).toBe(ours);
          // …and the pushdown automaton the runtime runs (grammar/pda.ts) says the same.
          expect(pda.get(f)!.accepts(new TextEncoder().encode(s)), `pushdown ${f}: ${JSON.stringify(s)}`).toBe(ours);
        }
      }
    }
  });

  it("the grammar `specc compile --emit ebnf` writes for each example means the same to XGrammar (escapes it cannot misread)", async (ctx) => {
    if (!xgr) ctx.skip();
    for (const f of exampleFiles) {
      const cfg = example(f);
      const emitted = emitGrammar(grammarByteDfa(grammarToPda(cfg).pda), "ebnf", f);
      // XGrammar reads every hex digit after \x (`[\x5cbf]` is U+5CBF there): the emitter writes \u00HH.
      expect(emitted).not.toMatch(/\\x/);
      const g = await xgr!.Grammar.fromEBNF(emitted);
      const random = seededRandom(77);
      const strings = [...CASES[f]!.accept, ...CASES[f]!.reject];
      for (let k = 0; k < 8; k++) {
        const s = text(sampleSentence(cfg, { random, depth: 8 })!);
        strings.push(s, s.replace(/"/, '"\\\\'), s.replace(/"/, '"\\b'));
      }
      for (const s of strings) expect(await xgr!.Testings.isGrammarAcceptString(g, s), `emitted ${f}: ${JSON.stringify(s)}`).toBe(recognize(cfg, s));
    }
  });
});
