/**
 * Compile benchmark: wall time of the whole `specc compile` command (a fresh node process, as a
 * user runs it) for every example, plus the .wasm size and automaton sizes. Targets (DESIGN §5):
 * ≤ 300 ms per command, ≤ 64 KB per .wasm. Run: `npx tsx bench/compile.bench.ts [--runs N] [--json]`.
 * Needs `npm run build` first (it runs bin/specc.js, i.e. dist/).
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const args = process.argv.slice(2);
const runs = Number(args[args.indexOf("--runs") + 1]) || 5;
const json = args.includes("--json");
const tmp = mkdtempSync(join(tmpdir(), "specc-bench-"));
const rows: { spec: string; medianMs: number; minMs: number; maxMs: number; wasmBytes: number; summary: string }[] = [];

for (const f of readdirSync("examples").filter((x) => x.endsWith(".agent")).sort()) {
  const out = join(tmp, f.replace(".agent", ".wasm"));
  const times: number[] = [];
  let summary = "";
  for (let i = 0; i < runs; i++) {
    const t0 = process.hrtime.bigint();
    const r = spawnSync(process.execPath, ["bin/specc.js", "compile", `examples/${f}`, "-o", out], { encoding: "utf8" });
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    if (r.status !== 0) throw new Error(`specc compile examples/${f} failed:\n${r.stderr}`);
    summary = r.stdout.trim().replace(/^[^:]*: /, "");
  }
  times.sort((a, b) => a - b);
  rows.push({ spec: f, medianMs: times[times.length >> 1]!, minMs: times[0]!, maxMs: times[times.length - 1]!, wasmBytes: statSync(out).size, summary });
  if (!json) process.stderr.write(".");
}
if (json) {
  process.stdout.write(JSON.stringify({ runs, node: process.version, rows }, null, 2) + "\n");
} else {
  process.stderr.write("\n");
  console.log(`specc compile, whole command, ${runs} runs each (node ${process.version}); targets: ≤ 300 ms, ≤ 64 KB`);
  console.log("| spec | median ms | min | max | .wasm bytes | automata |");
  console.log("|---|---:|---:|---:|---:|---|");
  for (const r of rows) console.log(`| ${r.spec} | ${r.medianMs.toFixed(0)} | ${r.minMs.toFixed(0)} | ${r.maxMs.toFixed(0)} | ${r.wasmBytes} | ${r.summary.replace(/^\d+ bytes · /, "")} |`);
  const worst = rows.reduce((a, b) => (a.medianMs > b.medianMs ? a : b));
  const biggest = rows.reduce((a, b) => (a.wasmBytes > b.wasmBytes ? a : b));
  console.log(`\nslowest: ${worst.spec} ${worst.medianMs.toFixed(0)} ms${worst.medianMs > 300 ? " — OVER the 300 ms target" : ""}; largest: ${biggest.spec} ${biggest.wasmBytes} B${biggest.wasmBytes > 65536 ? " — OVER 64 KB" : ""}`);
}
writeFileSync(join("bench", "results", "compile.json"), JSON.stringify({ date: new Date().toISOString(), node: process.version, runs, rows }, null, 2) + "\n");
