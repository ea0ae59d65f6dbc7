/**
 * @fileoverview `npm run maskbench`: MaskBench (../shared/maskbench) through specc and, in the same
 * run on the same tokens, XGrammar's WebAssembly build. Per schema: compile (TTFM), replay every
 * valid and invalid instance token by token with the Llama 3 tokenizer (TBM per mask), verdict.
 *
 * Resumable: every schema's results are appended to a JSON-lines file as they finish, and a rerun
 * skips the schemas already there (`--fresh` starts over). Each schema runs in a worker thread
 * with a time budget (`--budget-s`, default 60 s for all of its engines' work) and a heap limit;
 * past either it is a timeout or an out-of-memory, and the worker is restarted. At the end (or with
 * `--report` alone) the results table is written to bench/results/MASKBENCH.md.
 *
 * `--young-mb M` sizes the worker's young generation (V8's default is 48 MB: three 16 MB
 * semi-spaces), as `node --max-semi-space-size=M/3` would a process: a host tuning that specc's
 * compile is sensitive to (README, "JSON Schema", host tuning); the default leaves V8's.
 *
 *   npm run maskbench -- [--sample N | --limit N] [--names REGEX] [--engines specc,xgrammar]
 *                        [--budget-s S] [--young-mb M] [--out FILE] [--fresh] [--report]
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { Worker } from "node:worker_threads";
import { repoRoot } from "../harness/common.js";
import { fixedSample, loadMaskBench, maskBenchPath, type MaskBenchCase } from "./data.js";
import type { EngineResult, Verdict } from "./engines.js";
import { writeReport } from "./report.js";
import type { WorkerReply } from "./worker.js";

type Engine = "specc" | "xgrammar";

const { values } = parseArgs({
  options: {
    sample: { type: "string" }, limit: { type: "string" }, names: { type: "string" },
    engines: { type: "string", default: "specc,xgrammar" }, "budget-s": { type: "string", default: "60" },
    "heap-mb": { type: "string", default: "4096" }, "young-mb": { type: "string" }, vocab: { type: "string" },
    out: { type: "string" }, fresh: { type: "boolean", default: false }, report: { type: "boolean", default: false },
    help: { type: "boolean", short: "h", default: false },
  },
});
if (values.help) {
  console.log(readFileSync(new URL(import.meta.url), "utf8").split("*/")[0]!.replace(/^\/\*\*|^ \* ?/gm, "").trim());
  process.exit(0);
}
const root = repoRoot();
const out = values.out ?? join(root, "bench", "results", "maskbench", "results.jsonl");
const reportPath = values.out ? out.replace(/\.jsonl$/, "") + ".md" : join(root, "bench", "results", "MASKBENCH.md");
const engines = values.engines.split(",").map((e) => e.trim()) as Engine[];
for (const e of engines) if (e !== "specc" && e !== "xgrammar") throw new Error(`--engines: unknown engine '${e}' (specc, xgrammar)`);
const vocabPath = values.vocab ?? join(root, "node_modules", "@lenml", "tokenizer-llama3_1", "models", "tokenizer.json");
const budgetMs = Number(values["budget-s"]) * 1000;
const youngMb = values["young-mb"] === undefined ? undefined : Number(values["young-mb"]);
if (youngMb !== undefined && !(Number.isInteger(youngMb) && youngMb >= 3)) throw new Error(`--young-mb: a whole number of MB, at least 3 (not '${values["young-mb"]}')`);

export interface ResultLine { name: string; engine: Engine; result: EngineResult; youngMb?: number }

function readDone(): Map<string, Set<Engine>> {
  const done = new Map<string, Set<Engine>>();
  if (!existsSync(out)) return done;
  for (const line of readFileSync(out, "utf8").split("\n")) {
    if (!line.trim()) continue;
    try {
      const r = JSON.parse(line) as ResultLine;
      let s = done.get(r.name);
      if (!s) done.set(r.name, (s = new Set()));
      s.add(r.engine);
    } catch { /* a line cut short by an interrupted run: redo that schema */ }
  }
  return done;
}

async function main(): Promise<void> {
  if (values.report) { writeReport(out, reportPath, loadMaskBench(maskBenchPath(root))); console.log(`wrote ${reportPath}`); return; }
  mkdirSync(dirname(out), { recursive: true });
  if (values.fresh) writeFileSync(out, "");
  const all = loadMaskBench(maskBenchPath(root));
  let cases = all;
  if (values.names) { const re = new RegExp(values.names); cases = cases.filter((c) => re.test(c.name)); }
  if (values.sample) cases = fixedSample(cases, Number(values.sample));
  if (values.limit) cases = cases.slice(0, Number(values.limit));
  const done = readDone();
  const todo = cases.filter((c) => engines.some((e) => !done.get(c.name)?.has(e)));
  console.log(`maskbench: ${cases.length} schemas, ${cases.length - todo.length} already in ${out}, ${todo.length} to run; engines ${engines.join(", ")}; budget ${budgetMs / 1000} s a schema`);

  let worker: Worker | undefined;
  const start = async (): Promise<Worker> => {
    const w = new Worker(new URL("./worker-entry.mjs", import.meta.url), {
      workerData: { vocabPath, engines },
      resourceLimits: {
        maxOldGenerationSizeMb: Number(values["heap-mb"]),
        ...(youngMb === undefined ? {} : { maxYoungGenerationSizeMb: youngMb }),
      },
    });
    await new Promise<void>((res, rej) => {
      w.once("message", () => res());
      w.once("error", rej);
    });
    return w;
  };
  const counts = new Map<string, number>();
  const t0 = Date.now();
  for (let i = 0; i < todo.length; i++) {
    const c = todo[i]!;
    const want = engines.filter((e) => !done.get(c.name)?.has(e));
    worker ??= await start();
    const got = await runOne(worker, c, want);
    if (got.restart) { await worker.terminate().catch(() => {}); worker = undefined; }
    for (const r of got.lines) {
      appendFileSync(out, JSON.stringify(youngMb === undefined ? r : { ...r, youngMb }) + "\n");
      const k = `${r.engine}:${r.result.verdict}`;
      counts.set(k, (counts.get(k) ?? 0) + 1);
    }
    if ((i + 1) % 25 === 0 || i + 1 === todo.length) {
      const el = (Date.now() - t0) / 1000;
      const summary = engines.map((e) => `${e} ${["pass", "compile_error", "validation_error", "invalidation_error", "crash", "timeout", "oom"].map((v) => counts.get(`${e}:${v}`) ?? 0).join("/")}`).join("  ");
      process.stdout.write(`[${i + 1}/${todo.length}] ${el.toFixed(0)} s, eta ${((el / (i + 1)) * (todo.length - i - 1)).toFixed(0)} s  (pass/compile/valid/invalid/crash/timeout/oom) ${summary}\n`);
    }
  }
  await worker?.terminate();
  writeReport(out, reportPath, all);
  console.log(`wrote ${reportPath}`);
}

/** One schema in the worker, within the budget; a dead or late worker gives timeout / oom lines. */
function runOne(w: Worker, c: MaskBenchCase, want: Engine[]): Promise<{ lines: ResultLine[]; restart: boolean }> {
  return new Promise((resolve) => {
    const lines: ResultLine[] = [];
    const pending = new Set(want);
    const finish = (verdict: Verdict | null, restart: boolean, error?: string) => {
      clearTimeout(timer);
      w.off("message", onMessage);
      w.off("error", onError);
      w.off("exit", onExit);
      if (verdict) for (const e of pending) lines.push({ name: c.name, engine: e, result: { verdict, error } });
      resolve({ lines, restart });
    };
    const onMessage = (m: WorkerReply | { done: string }) => {
      if ("done" in m) return finish(null, false);
      lines.push({ name: m.name, engine: m.engine, result: m.result });
      pending.delete(m.engine);
    };
    const onError = (e: Error) => finish(/heap|memory/i.test(String(e?.message)) ? "oom" : "crash", true, String(e?.message ?? e).slice(0, 200));
    const onExit = (code: number) => finish("crash", true, `worker exited with ${code}`);
    const timer = setTimeout(() => finish("timeout", true, `over ${budgetMs / 1000} s`), budgetMs);
    w.on("message", onMessage);
    w.on("error", onError);
    w.on("exit", onExit);
    w.postMessage({ case: c, engines: want });
  });
}

await main();
