/**
 * @fileoverview `npm run fuzz` (issue 14): every front end and loader (bench/fuzz/targets.ts) fed
 * seeded mutations of the shipped examples, one worker thread per target at a time, with a time
 * budget per target, a per-input watchdog (an input still running after --hang-s is a hang: the
 * worker is stopped and restarted after it) and a heap limit (a worker that runs out of memory is an
 * out-of-memory defect). Crashing inputs are minimized (delta debugging) and kept as fixtures in
 * tests/fixtures/fuzz/, which the test suite replays. Prints a progress line and a summary table.
 *
 *   npm run fuzz -- [--budget-s 60] [--targets agent,gbnf] [--seed 1] [--max N] [--hang-s 10] [--heap-mb 512]
 */
import { createHash } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { Worker } from "node:worker_threads";
import { TARGETS, inputOf, type LoopResult, type Target } from "./targets.js";

const { values } = parseArgs({ options: {
  "budget-s": { type: "string", default: "60" }, targets: { type: "string" }, seed: { type: "string", default: "1" },
  max: { type: "string", default: "1000000" }, "hang-s": { type: "string", default: "10" }, "heap-mb": { type: "string", default: "512" },
} });
const budgetMs = Number(values["budget-s"]) * 1000;
const seed = Number(values.seed);
const max = Number(values.max);
const hangMs = Number(values["hang-s"]) * 1000;
const targets = values.targets ? TARGETS.filter((t) => values.targets!.split(",").includes(t.name)) : TARGETS;
const FIXTURES = "tests/fixtures/fuzz";

/** The chunk a worker is on, for the progress line (inputs finished inside it count too). */
let running: { from: number; at: Int32Array } | undefined;

interface Summary { target: string; tried: number; ok: number; refused: number; crashes: number; hangs: number; oom: number; slowestMs: number; slowestInput: number; seconds: number }

/** Runs inputs [from, from+count) in a worker; resolves with its result, or with a hang / OOM at an index. */
function runWorker(t: Target, from: number, count: number, deadline: number): Promise<{ r?: LoopResult; stopped?: { kind: "hang" | "oom"; at: number; message: string } }> {
  const progress = new SharedArrayBuffer(4);
  const at = new Int32Array(progress);
  at[0] = from;
  running = { from, at };
  const w = new Worker(new URL("./worker-entry.mjs", import.meta.url), {
    workerData: { target: t.name, seed, from, count, deadline, progress },
    resourceLimits: { maxOldGenerationSizeMb: Number(values["heap-mb"]) },
  });
  return new Promise((resolve) => {
    let last = -1, since = Date.now();
    const timer = setInterval(() => {
      const i = Atomics.load(at, 0);
      if (i !== last) { last = i; since = Date.now(); return; }
      if (Date.now() - since > hangMs) {
        clearInterval(timer);
        void w.terminate();
        resolve({ stopped: { kind: "hang", at: i, message: `input ${i} ran for more than ${hangMs / 1000} s` } });
      }
    }, 250);
    w.once("message", (r: LoopResult) => { clearInterval(timer); void w.terminate(); resolve({ r }); });
    w.once("error", (e) => {
      clearInterval(timer);
      const oom = /out of memory|ERR_WORKER_OUT_OF_MEMORY/i.test(`${(e as Error).message} ${(e as { code?: string }).code ?? ""}`);
      resolve({ stopped: { kind: oom ? "oom" : "hang", at: Atomics.load(at, 0), message: (e as Error).message } });
    });
  });
}

/** Delta debugging: a smaller input that still throws the same kind of error, within a few seconds. */
async function minimize(t: Target, input: Uint8Array, message: string): Promise<Uint8Array> {
  const kind = message.split(":")[0];
  const fails = async (b: Uint8Array) => {
    try { await t.run(b); return false; } catch (e) { return (e instanceof Error ? e.name : "") === kind; }
  };
  let cur = input;
  const stop = Date.now() + 20_000;
  for (let chunk = Math.max(1, cur.length >> 1); chunk >= 1 && Date.now() < stop; chunk >>= 1) {
    for (let i = 0; i + chunk <= cur.length && Date.now() < stop; ) {
      const cand = new Uint8Array(cur.length - chunk);
      cand.set(cur.subarray(0, i));
      cand.set(cur.subarray(i + chunk), i);
      if (await fails(cand)) cur = cand;
      else i += chunk;
    }
  }
  return cur;
}

function keep(t: Target, input: Uint8Array, what: string): string {
  mkdirSync(FIXTURES, { recursive: true });
  const name = `${t.name}-${createHash("sha256").update(input).digest("hex").slice(0, 12)}`;
  writeFileSync(`${FIXTURES}/${name}.bin`, input);
  writeFileSync(`${FIXTURES}/${name}.txt`, `${what}\n`);
  return name;
}

const summaries: Summary[] = [];
for (const t of targets) {
  const s: Summary = { target: t.name, tried: 0, ok: 0, refused: 0, crashes: 0, hangs: 0, oom: 0, slowestMs: 0, slowestInput: -1, seconds: 0 };
  const t0 = Date.now();
  const deadline = t0 + budgetMs;
  let next = 0;
  const tick = setInterval(() => {
    const inChunk = running ? Math.max(0, Atomics.load(running.at, 0) - running.from) : 0;
    process.stdout.write(`\rfuzz ${t.name}: ${(s.tried + inChunk).toLocaleString()} inputs · ${s.crashes} crashes · ${s.hangs} hangs · ${s.oom} out of memory · slowest ${s.slowestMs.toFixed(0)} ms · ${Math.round((Date.now() - t0) / 1000)} s   `);
  }, 2000);
  while (Date.now() < deadline && next < max) {
    const chunk = Math.min(20_000, max - next);
    const { r, stopped } = await runWorker(t, next, chunk, deadline);
    running = undefined;
    if (r) {
      s.tried += r.tried; s.ok += r.ok; s.refused += r.refused;
      if (r.slowest.ms > s.slowestMs) { s.slowestMs = r.slowest.ms; s.slowestInput = r.slowest.i; }
      for (const c of r.crashes) {
        s.crashes++;
        const small = await minimize(t, inputOf(t, seed, c.i), c.message);
        console.log(`\ncrash in ${t.name}, input ${c.i}: ${c.message} → kept as ${keep(t, small, c.message)}`);
      }
      next += r.tried;
      if (r.tried === 0) break;
    } else if (stopped) {
      s.tried += stopped.at - next + 1;
      if (stopped.kind === "hang") s.hangs++; else s.oom++;
      console.log(`\n${stopped.kind} in ${t.name}, input ${stopped.at}: ${stopped.message} → kept as ${keep(t, inputOf(t, seed, stopped.at), `${stopped.kind}: ${stopped.message}`)}`);
      next = stopped.at + 1;
    }
  }
  clearInterval(tick);
  s.seconds = Math.round((Date.now() - t0) / 100) / 10;
  summaries.push(s);
  console.log(`\rfuzz ${t.name}: ${s.tried.toLocaleString()} inputs in ${s.seconds} s · ${s.crashes} crashes · ${s.hangs} hangs · ${s.oom} out of memory · slowest ${s.slowestMs.toFixed(1)} ms (input ${s.slowestInput})          `);
}
console.log("\n| target | inputs | compiled/loaded | refused | crashes | hangs | out of memory | slowest input | inputs/s |");
console.log("|---|---|---|---|---|---|---|---|---|");
for (const s of summaries) {
  console.log(`| ${s.target} | ${s.tried.toLocaleString()} | ${s.ok.toLocaleString()} | ${s.refused.toLocaleString()} | ${s.crashes} | ${s.hangs} | ${s.oom} | ${s.slowestMs.toFixed(1)} ms | ${Math.round(s.tried / s.seconds).toLocaleString()} |`);
}
process.exitCode = summaries.some((s) => s.crashes || s.hangs || s.oom) ? 1 : 0;
