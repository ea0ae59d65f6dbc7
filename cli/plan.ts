/**
 * @fileoverview `specc plan GRAMMAR --task "..."`: Formal-LLM planning from the command line
 * (agents/planner.ts does the planning, agents/planner-choosers.ts the choosing).
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { SpecError, formatDiagnostic } from "../compiler/diagnostics.js";
import { parseGrammar, type Cfg } from "../compiler/grammar/index.js";
import { PlannerError, defaultIsTool, plan, type Chooser } from "../agents/planner.js";

export interface PlanCommandIo { out: (s: string) => void; err: (s: string) => void }

export const PLAN_USAGE = `usage: specc plan GRAMMAR.gbnf --task "…" [options]
  derive a plan from a grammar, Formal-LLM style: numbered choices, each tool at most N times, backtracking
  --task TEXT            the problem, shown in every prompt (required)
  --start RULE           start rule (default root)
  --tool-limit N         uses allowed per tool (default 1; 0 = unlimited)
  --tools A,B,…          exactly these leaves are tools (default: word-like leaves)
  --no-tools             no leaf is a tool
  --chooser KIND         first (default) | random | script | llm
  --choices 1,3,2        with --chooser script: the option NUMBERS (1-based) in order
  --seed N               random chooser / LLM sampling seed (default 1)
  --model FILE.gguf      with --chooser llm: the model (node-llama-cpp, CPU)
  --lookahead MODE       local (default) | exact | none
  --max-steps N          most derivation steps in a plan (default 1000)
  --fill RULE=TEXT       text for a rule the planner should not expand (repeatable; repeats fill successive uses)
  --steps tools|lines    how the steps are written (default: tools when the plan uses one)
  --verbose              print every prompt and answer
  --json                 print the result as JSON
exit codes: 0 a plan, 1 no plan exists, 2 usage error, 3 error in the grammar, 70 internal error`;

/**
 * `specc plan GRAMMAR --task "..."`: parses the grammar, plans, prints the numbered steps and the
 * plan text. Returns the exit code (0 plan, 1 no plan, 2 usage, 3 grammar error, 70 internal).
 */
export async function runPlanCommand(args: string[], io: PlanCommandIo): Promise<number> {
  let values: Record<string, string | boolean | string[] | undefined>;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({ args, allowPositionals: true, options: {
      task: { type: "string" }, start: { type: "string" }, "tool-limit": { type: "string" }, tools: { type: "string" },
      "no-tools": { type: "boolean" }, chooser: { type: "string", default: "first" }, choices: { type: "string" },
      seed: { type: "string", default: "1" }, model: { type: "string" }, lookahead: { type: "string", default: "local" },
      "max-steps": { type: "string", default: "1000" }, fill: { type: "string", multiple: true }, steps: { type: "string" },
      verbose: { type: "boolean" }, json: { type: "boolean" }, help: { type: "boolean", short: "h" },
    } }));
  } catch (e) {
    io.err(`error: ${(e as Error).message}\n\n${PLAN_USAGE}`);
    return 2;
  }
  const usage = (m: string) => { io.err(`error: ${m}\n\n${PLAN_USAGE}`); return 2; };
  if (values.help) { io.out(PLAN_USAGE); return 0; }
  if (positionals.length !== 1) return usage(positionals.length ? `expected one grammar file, got ${positionals.length}` : "missing grammar file");
  if (typeof values.task !== "string") return usage("--task is required");
  const int = (v: unknown, name: string, min: number): number | null => {
    const x = Number(v);
    return Number.isInteger(x) && x >= min ? x : (usage(`--${name} must be an integer ≥ ${min}, not '${String(v)}'`), null);
  };
  const toolLimit = values["tool-limit"] === undefined ? 1 : int(values["tool-limit"], "tool-limit", 0);
  const seed = int(values.seed, "seed", 0);
  const maxSteps = int(values["max-steps"], "max-steps", 1);
  if (toolLimit === null || seed === null || maxSteps === null) return 2;
  const lookahead = values.lookahead as string;
  if (!["local", "exact", "none"].includes(lookahead)) return usage(`--lookahead must be local, exact or none, not '${lookahead}'`);
  const stepStyle = values.steps as string | undefined;
  if (stepStyle !== undefined && stepStyle !== "tools" && stepStyle !== "lines") return usage(`--steps must be tools or lines, not '${stepStyle}'`);
  const fill: Record<string, string[]> = {};
  for (const f of (values.fill as string[] | undefined) ?? []) {
    const eq = f.indexOf("=");
    if (eq <= 0) return usage(`--fill expects RULE=TEXT, not '${f}'`);
    (fill[f.slice(0, eq)] ??= []).push(f.slice(eq + 1));
  }
  const file = positionals[0]!;
  let text: string;
  try { text = readFileSync(file, "utf8"); } catch (e) { io.err(`error: ${file}: ${(e as Error).message}`); return 3; }
  let cfg: Cfg;
  try {
    cfg = parseGrammar(text, file, values.start ? { start: values.start as string } : {});
  } catch (e) {
    if (e instanceof SpecError) {
      io.err(formatDiagnostic(e, text));
      for (const m of (e as SpecError & { more?: SpecError[] }).more ?? []) io.err(formatDiagnostic(m, text));
      return 3;
    }
    throw e;
  }
  const toolList = typeof values.tools === "string" ? new Set(values.tools.split(",").map((s) => s.trim()).filter(Boolean)) : null;
  const isTool = values["no-tools"] ? () => false : toolList ? (t: string) => toolList.has(t) : defaultIsTool;
  const ch = await import("../agents/planner-choosers.js");
  let chooser: Chooser;
  let cleanup = async () => {};
  try {
    switch (values.chooser) {
      case "first": chooser = ch.firstChooser(); break;
      case "random": chooser = ch.randomChooser(seed); break;
      case "script": {
        if (typeof values.choices !== "string") return usage("--chooser script needs --choices 1,2,…");
        const nums = values.choices.split(",").map((s) => Number(s.trim()));
        if (nums.some((n) => !Number.isInteger(n) || n < 1)) return usage(`--choices must be option numbers ≥ 1, not '${values.choices}'`);
        chooser = ch.scriptedChooser(nums.map((n) => n - 1));
        break;
      }
      case "llm": {
        if (typeof values.model !== "string") return usage("--chooser llm needs --model FILE.gguf");
        const llm = await ch.loadLlmChooser(values.model, { seed, temperature: 0 });
        chooser = llm.chooser;
        cleanup = llm.dispose;
        break;
      }
      default: return usage(`--chooser must be first, random, script or llm, not '${String(values.chooser)}'`);
    }
    const verbose = !!values.verbose;
    const r = await plan({
      cfg, task: values.task, chooser, toolLimit: toolLimit === 0 ? Infinity : toolLimit, isTool, maxSteps,
      lookahead: lookahead as "local", fill, ...(stepStyle ? { stepStyle } : {}),
      onEvent: verbose ? (e) => {
        if (e.kind === "choice" && !e.auto) io.out(`${e.prompt}\n→ ${e.chosen + 1}\n`);
        else if (e.kind === "dead-end") io.out(`dead end: ${e.reason} (plan so far: ${JSON.stringify(e.planSoFar)})`);
        else if (e.kind === "backtrack") io.out(`backtrack: dropped "${e.eliminated}", ${e.remaining} option(s) left`);
      } : undefined,
    });
    if (!r) {
      io.err(`no plan: ${file} has no sentence that uses each tool at most ${toolLimit || "any number of"} time(s) within ${maxSteps} derivation steps`);
      return 1;
    }
    if (values.json) io.out(JSON.stringify({ plan: r.plan, steps: r.steps, choices: r.choices, backtracks: r.backtracks, toolUses: r.toolUses, tree: r.tree }, null, 2));
    else {
      for (const s of r.steps) io.out(s);
      io.out(`\nplan: ${JSON.stringify(r.plan)}`);
      io.out(`${r.choices.filter((c) => !c.auto).length} choices, ${r.backtracks} backtracks, ${r.stats.decisions} derivation steps, ${r.stats.ms.toFixed(1)} ms`);
    }
    return 0;
  } catch (e) {
    if (e instanceof PlannerError) { io.err(`error: ${e.message}`); return e.code === "limit" ? 1 : 3; }
    throw e;
  } finally {
    await cleanup();
  }
}
