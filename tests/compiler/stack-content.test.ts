/**
 * Grammar content inside agent states run on a stack (compiler/automata/pushdown-bytes.ts), exact
 * at any nesting depth, checked against the reference interpreter (tests/helpers/interpreter.ts:
 * leftmost-longest marker split, then the Earley recognizer on each content, no depth bound):
 *  - random specs whose markers overlap each other and the grammar's own bytes ("[" starts the
 *    marker "[A]" and every nested construct, "]:" closes a bracket and opens a marker), random transcripts and sampled
 *    runs with deep brackets: the unminimized, minimized and reloaded automata agree with the
 *    reference, and with the bounded DFA (`:max-depth`) on the first rejected byte wherever the
 *    text stays within its bound;
 *  - examples/tool-json.agent (no :max-depth) on a 20-deep JSON argument, through every engine
 *    including the .wasm, and its masks on Llama 3 against a brute force;
 *  - a recursive JSON Schema as state content, with ajv as the oracle.
 */
import { readFileSync } from "node:fs";
import fc from "fast-check";
import Ajv from "ajv";
import { beforeAll, describe, expect, it } from "vitest";
import { compileIR, compileSource, compileToWasm } from "../../compiler/compile.js";
import { SpecError } from "../../compiler/diagnostics.js";
import { parseGrammar } from "../../compiler/grammar/index.js";
import { PdaRunner, pdaOfByteDfa, type PdaConfig } from "../../compiler/grammar/pda.js";
import type { Behavior, SpecIR } from "../../compiler/ir.js";
import { seededRandom } from "../../compiler/random.js";
import { parseTables, serializeTables } from "../../compiler/tables.js";
import { byteDfaEngine, runTrace, type Trace } from "../../compiler/trace.js";
import { Spec, Vocabulary, wasmEngine } from "../../bindings/index.js";
import { checkTrace } from "../helpers/interpreter.js";
import { ensureRuntime } from "../helpers/runtime.js";
import { loadTokenizerJson } from "../helpers/tokenizers.js";
import { maskDiff } from "../helpers/differential.js";

beforeAll(ensureRuntime, 60_000);

const span = { file: "stack", line: 1, col: 1, offset: 0, end: 0 };
const enc = new TextEncoder();

/** Brackets that nest without bound; "a" and "x" are atoms. */
const BRACKETS = 'root ::= "[" ( item ( "," item )* )? "]"\nitem ::= "a" | "x" | root\n';
const MARKERS = ["A:", "B:", "[A]", "]:", "Final A:", "B", "Obs:"];

function specOf(n: number, behavior: Behavior, markers: string[], env: boolean[], grammar: boolean[], maxDepth?: number): SpecIR {
  const cfg = parseGrammar(BRACKETS, "brackets.gbnf", { start: "root" });
  return {
    name: "stack", file: "stack", behavior, constraints: [],
    states: Array.from({ length: n }, (_, id) => ({
      id, name: `S${id}`, marker: markers[id]!, env: env[id]!, span,
      content: grammar[id]
        ? { kind: "grammar" as const, cfg, source: { file: "brackets.gbnf", inline: false, start: "root" }, span, ...(maxDepth === undefined ? {} : { maxDepth }) }
        : { kind: "any" as const },
    })),
  };
}

function tryCompile(ir: SpecIR) {
  try { return compileIR(ir, { maxByteStates: 30_000 }); } catch (e) {
    if (e instanceof SpecError) return null;
    throw e;
  }
}

/** A random sentence of BRACKETS nesting up to `depth`. */
function brackets(r: () => number, depth: number): string {
  const items: string[] = [];
  const n = Math.floor(r() * 3);
  for (let i = 0; i < n; i++) items.push(depth > 0 && r() < 0.5 ? brackets(r, depth - 1) : r() < 0.5 ? "a" : "x");
  return `[${items.join(",")}]`;
}
const nesting = (t: Trace): number => {
  let d = 0, max = 0;
  for (const s of t.segments) for (const ch of s.text) { if (ch === "[") max = Math.max(max, ++d); else if (ch === "]") d = Math.max(0, d - 1); }
  return max;
};

describe("grammar content on a stack (random specs, overlapping markers)", () => {
  it("agrees with the reference interpreter, and with the bounded DFA within its bound", () => {
    let stack = 0, conforming = 0, total = 0, deep = 0, compared = 0;
    // The bounded DFA counts recursive calls (regular.ts), two per bracket level here (root → item
    // → root): :max-depth 8 holds 4 levels.
    const BOUND = 8;
    const LEVELS = 4;
    const behaviorArb = (n: number): fc.Arbitrary<Behavior> => fc.oneof(
      fc.constant<Behavior>({ op: "always", body: { op: "next", args: Array.from({ length: n }, (_, state) => ({ op: "state", state, span })), span }, span }),
      fc.constant<Behavior>({ op: "until", min: 0, max: null, span, body: { op: "or", args: Array.from({ length: n - 1 }, (_, state) => ({ op: "state", state, span })), span }, then: { op: "state", state: n - 1, span } }),
    );
    fc.assert(fc.property(fc.integer({ min: 2, max: 3 }).chain((n) => fc.record({
      n: fc.constant(n), behavior: behaviorArb(n),
      markers: fc.shuffledSubarray(MARKERS, { minLength: n, maxLength: n }),
      env: fc.array(fc.boolean(), { minLength: 3, maxLength: 3 }),
      grammar: fc.array(fc.boolean(), { minLength: 3, maxLength: 3 }),
      seed: fc.nat(1_000_000),
    })), ({ n, behavior, markers, env, grammar, seed }) => {
      fc.pre(grammar.slice(0, n).some((g, i) => g && !env[i]));
      const ir = specOf(n, behavior, markers, env, grammar);
      const c = tryCompile(ir);
      if (!c) return;
      // Grammar content without :max-depth runs on a stack, unless a nested construct can end with
      // more than one pending marker prefix ("]" of "]:", or nothing): it then
      // stays a bounded DFA (8 levels), and only texts within that bound are compared.
      const onStack = c.byteDfa.calls !== undefined;
      if (onStack) stack++;
      else expect(markers.slice(0, n)).toContain("]:");
      const bounded = tryCompile(specOf(n, behavior, markers, env, grammar, BOUND));
      const engines = {
        raw: byteDfaEngine(c.rawByteDfa()),
        min: byteDfaEngine(c.byteDfa),
        reloaded: byteDfaEngine(parseTables(serializeTables(c.byteDfa, c.ir.states)).dfa),
      };
      const dfa = bounded ? byteDfaEngine(bounded.byteDfa) : null;
      const r = seededRandom(seed);
      const pieces = [...markers, ...markers, "[", "]", ",", "a", "A", "x", " ", "\n", "[A]", "[a]", "[[", "]]", "Fin", ":", "é"];
      const traces: Trace[] = [];
      for (let k = 0; k < 24; k++) {
        // A run in state order, contents drawn from the grammar (some deep), then perhaps damaged.
        const segs: Trace["segments"] = [];
        let text = "";
        for (let rep = 0; rep < 1 + Math.floor(r() * 2); rep++) {
          for (let i = 0; i < n; i++) {
            text += markers[i]!;
            if (env[i]) { segs.push({ by: "llm", text }); segs.push({ by: "env", text: " ok" }); text = r() < 0.5 ? "\n" : ""; continue; }
            text += grammar[i] ? ` ${brackets(r, k % 3 === 0 ? 12 : 3)}${r() < 0.5 ? "\n" : ""}` : r() < 0.5 ? " x\n" : " y ";
          }
        }
        if (text) segs.push({ by: "llm", text });
        if (k % 2 === 1) {
          const s = segs[Math.floor(r() * segs.length)]!;
          if (s.by === "llm") {
            const at = Math.floor(r() * (s.text.length + 1));
            s.text = r() < 0.5 ? s.text.slice(0, at) + s.text.slice(at + 1) : s.text.slice(0, at) + pieces[Math.floor(r() * pieces.length)] + s.text.slice(at);
          }
        }
        traces.push({ segments: segs });
      }
      for (let k = 0; k < 12; k++) {
        traces.push({ segments: [{ by: "llm", text: Array.from({ length: 1 + Math.floor(r() * 8) }, () => pieces[Math.floor(r() * pieces.length)]).join("") }] });
      }
      for (const trace of traces) {
        const ref = checkTrace(ir, trace);
        total++;
        if (ref) conforming++;
        if (nesting(trace) > LEVELS) { if (!onStack) continue; deep++; }
        const verdicts = Object.entries(engines).map(([name, e]) => [name, runTrace(e, trace, markers)] as const);
        for (const [name, v] of verdicts) expect(v.verdict === "conforms", `${name}: ${JSON.stringify(trace)}`).toBe(ref);
        const [, a] = verdicts[0]!;
        for (const [name, v] of verdicts) {
          if (a.verdict === "violation" && v.verdict === "violation") expect([v.segment, v.offset], name).toEqual([a.segment, a.offset]);
        }
        if (dfa && nesting(trace) <= LEVELS) {
          const b = runTrace(dfa, trace, markers);
          compared++;
          expect(b.verdict, `bounded DFA: ${JSON.stringify(trace)}`).toBe(a.verdict);
          if (a.verdict === "violation" && b.verdict === "violation") expect([b.segment, b.offset, b.specState]).toEqual([a.segment, a.offset, a.specState]);
        }
      }
    }), { numRuns: 120, seed: 21 });
    expect(stack).toBeGreaterThan(15);
    expect(conforming).toBeGreaterThan(total / 5);
    expect(conforming).toBeLessThan(total);
    expect(deep).toBeGreaterThan(30);
    expect(compared).toBeGreaterThan(500);
  });
});

// ---- examples/tool-json.agent without :max-depth ----

const TOOL_JSON = "examples/tool-json.agent";
const unbounded = () => readFileSync(TOOL_JSON, "utf8");
const bounded2 = () => readFileSync(TOOL_JSON, "utf8").replace('(:grammar "grammars/json.gbnf")', '(:grammar "grammars/json.gbnf" :max-depth 2)');
const deepJson = (n: number): string => `{"city": "Paris", "days": ${"[".repeat(n)}1${"]".repeat(n)}}`;
const run = (args: string): Trace => ({
  segments: [
    { by: "llm", text: `Thought: look it up\nAction: get_weather\nAction Input: ${args}\nObservation:` },
    { by: "env", text: " 21C" },
    { by: "llm", text: "\nThought: done\nFinal Answer: warm" },
  ],
});

describe("examples/tool-json.agent (no :max-depth)", () => {
  it("compiles to a pushdown automaton that takes a 20-deep argument in every engine, as the reference does", async () => {
    expect(readFileSync(TOOL_JSON, "utf8")).not.toMatch(/\(:grammar[^)]*:max-depth/);
    const c = compileSource(unbounded(), TOOL_JSON);
    expect(c.byteDfa.calls).toBeDefined();
    const wasm = await Spec.load(compileToWasm(c));
    expect(wasm.pushdown).toBe(true);
    const engines = [byteDfaEngine(c.rawByteDfa()), byteDfaEngine(c.byteDfa), byteDfaEngine(parseTables(serializeTables(c.byteDfa, c.ir.states)).dfa), wasmEngine(wasm)];
    const markers = c.ir.states.map((s) => s.marker);
    const bounded = compileSource(bounded2(), TOOL_JSON);
    expect(bounded.byteDfa.calls).toBeUndefined();
    const cases: [string, Trace][] = [
      ["20 deep", run(deepJson(20))],
      ["20 deep, one ] missing", run(deepJson(20).replace("]}", "}"))],
      ["a marker inside a string", run('{"city": "Final Answer: x"}')],
      ["a marker's prefix inside a string", run('{"city": "Final Answer", "q": [[{"a": "Obs"}]]}')],
      ["trailing whitespace", run('{"a": [[[]]]}   \n ')],
    ];
    for (const [what, trace] of cases) {
      const ref = checkTrace(c.ir, trace);
      const verdicts = engines.map((e) => runTrace(e, trace, markers));
      for (const v of verdicts) expect(v, what).toEqual(verdicts[0]);
      expect(verdicts[0]!.verdict === "conforms", what).toBe(ref);
    }
    expect(checkTrace(c.ir, cases[0]![1])).toBe(true);
    // With :max-depth 2 it is a DFA of 2 levels: the same argument is refused there, at the third [.
    const v = runTrace(byteDfaEngine(bounded.byteDfa), cases[0]![1], markers);
    expect(v.verdict).toBe("violation");
    expect(v.verdict === "violation" && v.offset).toBe(cases[0]![1].segments[0]!.text.indexOf("[[[") + 2);
    // Yield, env and spec states through the runtime's pushdown mode.
    const m = wasm.matcher();
    expect(m.feed(enc.encode(cases[0]![1].segments[0]!.text)).ok).toBe(true);
    expect(m.yielding).toBe(true);
    expect(m.specState).toBe("Observation");
    m.feedEnv(" 21C");
    expect(m.yielding).toBe(false);
    expect(m.feed(enc.encode("\nThought: done\nFinal Answer: warm")).ok).toBe(true);
    expect(m.accepting).toBe(true);
  });

  it("masks on Llama 3 equal a brute force over the reference configuration along a deep argument", async () => {
    const c = compileSource(unbounded(), TOOL_JSON);
    const vocab = Vocabulary.fromTokenizerJsonObject(loadTokenizerJson("llama3_1"));
    const spec = await Spec.load(compileToWasm(c), { vocab });
    const runner = new PdaRunner(pdaOfByteDfa(c.byteDfa));
    const toks = Array.from({ length: vocab.size }, (_, id) => vocab.tokenBytes(id));
    const brute = (cfg: PdaConfig): Int32Array => {
      const out = new Int32Array(spec.maskWords);
      const memo = new Map<PdaConfig, Map<number, PdaConfig | null>>();
      const step = (x: PdaConfig, b: number) => {
        let mm = memo.get(x);
        if (!mm) memo.set(x, (mm = new Map()));
        let y = mm.get(b);
        if (y === undefined) { y = runner.step(x, b); mm.set(b, y); }
        return y;
      };
      for (let id = 0; id < vocab.size; id++) {
        const b = toks[id]!;
        let ok: boolean;
        if (b === null) ok = vocab.isEos(id) && cfg.accept;
        else { let x: PdaConfig | null = cfg; for (let i = 0; x && i < b.length; i++) x = step(x, b[i]!); ok = x !== null; }
        if (ok) out[id >> 5]! |= 1 << (id & 31);
      }
      return out;
    };
    // Free text, markers, a deep argument, a yield; then after the environment's text free text in
    // an accepting state (Final Answer), whose masks come from walks with the empty stack.
    const m = spec.matcher();
    let cfg: PdaConfig | null = runner.start();
    let checked = 0;
    const check = (where: string) => {
      const got = m.maskView().slice();
      expect(maskDiff(got, brute(cfg!), vocab), where).toEqual([]);
      checked++;
    };
    const feed = (text: string, at: number[]) => {
      const bytes = enc.encode(text);
      for (let i = 0; i <= bytes.length; i++) {
        if (at.includes(i)) check(`at byte ${i} of ${JSON.stringify(text)}`);
        if (i === bytes.length) break;
        expect(m.feed(bytes.subarray(i, i + 1)).ok).toBe(true);
        cfg = runner.step(cfg!, bytes[i]!);
        expect(cfg).not.toBeNull();
      }
    };
    const first = `Thought: look it up\nAction: get_weather\nAction Input: ${deepJson(12)}\nObservation:`;
    feed(first, [0, 9, 25, 40, 50, 54, 58, 62, 66, 70, 74, 80, 85, 90, enc.encode(first).length - 5, enc.encode(first).length]);
    m.feedEnv(" 21C");
    cfg = runner.at(c.byteDfa.envNext[cfg!.states[0]!]!);
    feed("\nThought: warm. Final\nFinal Answer: warm (21C), Thought", [0, 2, 10, 20, 22, 27, 33, 36, 45, 50, 54]);
    expect(m.accepting).toBe(true); // "Thought" without ":" is free text at the end
    expect(checked).toBe(27);
  }, 180_000);
});

describe("a recursive JSON Schema as state content", () => {
  it("takes trees of any depth that ajv validates and refuses those it does not", () => {
    const schema = {
      $defs: { node: { type: "object", properties: { name: { type: "string", maxLength: 8 }, kids: { type: "array", items: { $ref: "#/$defs/node" } } }, required: ["name"], additionalProperties: false } },
      $ref: "#/$defs/node",
    };
    const src = `(define tree (:states (Q (:text "Question:")) (T (:text "Tree:") (:json-schema-text ${JSON.stringify(JSON.stringify(schema))})) (A (:text "Answer:"))) (:behavior (next Q T A)))`;
    const c = compileSource(src, "tree.agent");
    expect(c.byteDfa.calls).toBeDefined();
    const validate = new Ajv({ strict: false }).compile(schema);
    const engine = byteDfaEngine(c.byteDfa);
    const markers = c.ir.states.map((s) => s.marker);
    const r = seededRandom(7);
    const tree = (d: number): unknown => ({ name: r() < 0.1 ? "a-long-name" : "n", ...(d > 0 ? { kids: Array.from({ length: 1 + Math.floor(r() * 2) }, () => tree(d - 1)) } : {}) });
    let ok = 0, bad = 0;
    for (let k = 0; k < 40; k++) {
      const v = k % 4 === 0 ? { name: "x", kids: [{ kids: [] }] } : tree(k % 10 === 1 ? 15 : 1 + (k % 5));
      const json = JSON.stringify(v, null, k % 3 === 0 ? 1 : undefined);
      if (json.length > 20_000) continue;
      const verdict = runTrace(engine, { segments: [{ by: "llm", text: `Question: q\nTree: ${json}\nAnswer: a` }] }, markers);
      expect(verdict.verdict === "conforms", json.slice(0, 200)).toBe(validate(v));
      if (validate(v)) ok++; else bad++;
    }
    expect(ok).toBeGreaterThan(10);
    expect(bad).toBeGreaterThan(5);
  });
});

describe("tool contents on a stack (:tool-args, :tool-call)", () => {
  // A free-form value (any JSON) and a recursive schema nest without bound; `ping` takes nothing.
  const TOOLS = JSON.stringify([
    { type: "function", function: { name: "store", parameters: { type: "object", properties: { key: { type: "string", maxLength: 6 }, value: {} }, required: ["key", "value"], additionalProperties: false } } },
    { type: "function", function: { name: "tree", parameters: { $defs: { n: { type: "object", properties: { kids: { type: "array", items: { $ref: "#/$defs/n" } } }, additionalProperties: false } }, $ref: "#/$defs/n" } } },
    { type: "function", function: { name: "ping", parameters: { type: "object", properties: {}, additionalProperties: false } } },
  ]);
  const REACT = `(define a (:tools "t.tools.json") (:states (Thought (:text "Thought:")) (Action (:text "Action:") (:tool-name))
    (Input (:text "Action Input:") (:tool-args)) (Obs (:text "Observation:") (:flags :env-input)) (Final (:text "Final Answer:")))
    (:behavior (next (until (next Thought Action Input Obs) Thought) Final)) (:constraints (at-most 1 (tool ping)) (before (tool store) (tool tree))))`;
  const HERMES = `(define h (:tools "t.tools.json") (:states (Call (:text "<tool_call>") (:tool-call)) (End (:text "</tool_call>") (:empty))
    (Turn (:text "<|im_end|>") (:flags :env-input)) (Say (:text "<answer>")))
    (:behavior (next (until (next Call End Turn) Say))) (:constraints (at-most 1 (tool ping)) (before (tool store) (tool tree))))`;
  const compileWith = (spec: string, maxDepth?: number) => compileSource(spec, "/virtual/a.agent", maxDepth === undefined ? {} : { maxDepth }, {
    readFile: (p: string) => { if (!p.endsWith("t.tools.json")) throw Object.assign(new Error("no such file"), { code: "ENOENT" }); return enc.encode(TOOLS); },
  });
  const value = (r: () => number, d: number): unknown => {
    const k = r();
    if (d <= 0 || k < 0.3) return [1, "s", true, null, 2.5][Math.floor(r() * 5)];
    return k < 0.65 ? Array.from({ length: 1 + Math.floor(r() * 2) }, () => value(r, d - 1)) : { [`k${Math.floor(r() * 3)}`]: value(r, d - 1) };
  };
  const tree = (r: () => number, d: number): unknown => (d <= 0 || r() < 0.2 ? {} : { kids: Array.from({ length: 1 + Math.floor(r() * 2) }, () => tree(r, d - 1)) });

  for (const [name, spec] of [["ReAct with :tool-name and :tool-args", REACT], ["Hermes-style :tool-call", HERMES]] as const) {
    it(`${name}: deep arguments, the tool constraints and broken calls agree with the reference interpreter in every engine`, async () => {
      const c = compileWith(spec);
      expect(c.byteDfa.calls).toBeDefined();
      const wasm = await Spec.load(compileToWasm(c));
      const engines = { raw: byteDfaEngine(c.rawByteDfa()), min: byteDfaEngine(c.byteDfa), wasm: wasmEngine(wasm) };
      const bounded = byteDfaEngine(compileWith(spec, 3).byteDfa);
      const markers = c.ir.states.map((s) => s.marker);
      const r = seededRandom(name.length);
      let conforming = 0, deep = 0, boundedRefused = 0;
      for (let k = 0; k < 60; k++) {
        const calls: [string, unknown][] = [];
        for (let n = 0; n < 1 + Math.floor(r() * 3); n++) {
          const t = ["store", "tree", "ping"][Math.floor(r() * 3)]!;
          // Every fourth run nests 12 levels on purpose (random values mostly stay shallow).
          const deepRun = k % 4 === 0;
          const v = deepRun ? Array.from({ length: 12 }).reduce<unknown>((acc, _, i) => (i % 2 ? { k: acc } : [acc, 1]), "x") : value(r, 2);
          const tr = deepRun ? Array.from({ length: 12 }).reduce<unknown>((acc) => ({ kids: [acc, {}] }), {}) : tree(r, 2);
          calls.push([t, t === "store" ? { key: r() < 0.1 ? "too-long" : "k", value: v } : t === "tree" ? tr : r() < 0.1 ? { x: 1 } : {}]);
        }
        const segs: Trace["segments"] = [];
        for (const [t, args] of calls) {
          const json = JSON.stringify(args, null, k % 3 === 0 ? 1 : undefined);
          segs.push({ by: "llm", text: spec === REACT ? `Thought: go\nAction: ${t}\nAction Input: ${json}\nObservation:` : `<tool_call>{"name": "${t}", "arguments": ${json}}</tool_call><|im_end|>` });
          segs.push({ by: "env", text: " ok\n" });
        }
        segs.push({ by: "llm", text: spec === REACT ? "Thought: done\nFinal Answer: x" : "<answer> x" });
        if (k % 5 === 4) { // damage one LLM segment
          const s = segs[0]!;
          const at = Math.floor(r() * s.text.length);
          s.text = s.text.slice(0, at) + ["]", "}", "{", ",", "\"", ""][Math.floor(r() * 6)] + s.text.slice(at + 1);
        }
        const trace = { segments: segs };
        const ref = checkTrace(c.ir, trace);
        if (ref) conforming++;
        const vs = Object.entries(engines).map(([n, e]) => [n, runTrace(e, trace, markers)] as const);
        for (const [n, v] of vs) {
          expect(v.verdict === "conforms", `${n}: ${JSON.stringify(trace).slice(0, 400)}`).toBe(ref);
          expect(portableVerdict(v)).toEqual(portableVerdict(vs[0]![1]));
        }
        if (ref && jsonDepth(trace) >= 8) {
          deep++;
          if (runTrace(bounded, trace, markers).verdict !== "conforms") boundedRefused++;
        }
      }
      expect(conforming).toBeGreaterThan(10);
      expect(conforming).toBeLessThan(60);
      expect(deep).toBeGreaterThan(2);
      expect(boundedRefused, "the same calls at :max-depth 3 are refused").toBe(deep);
    });
  }
});

/** Deepest nesting of JSON brackets in a trace's LLM text (strings here hold none). */
function jsonDepth(t: Trace): number {
  let d = 0, max = 0;
  for (const s of t.segments) if (s.by === "llm") for (const ch of s.text) { if (ch === "[" || ch === "{") max = Math.max(max, ++d); else if (ch === "]" || ch === "}") d--; }
  return max;
}

/** The parts of a verdict that do not depend on state numbering. */
function portableVerdict(v: ReturnType<typeof runTrace>) {
  if (v.verdict === "conforms") return { verdict: v.verdict };
  if (v.verdict === "incomplete") return { verdict: v.verdict, specState: v.specState, expected: v.expected };
  return { verdict: v.verdict, segment: v.segment, offset: v.offset, specState: v.specState, expected: v.expected, reason: v.reason };
}
