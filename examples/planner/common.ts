/**
 * @fileoverview Shared by the Formal-LLM planner examples (examples/planner/*.ts): load a seed-002
 * grammar, pick a chooser, plan, print the numbered steps.
 *
 *   npx tsx examples/planner/openagi.ts            the tiny model chooses when its file exists, else the paper's choices
 *   npx tsx examples/planner/openagi.ts --paper    the paper's worked result (scripted choices)
 *   npx tsx examples/planner/openagi.ts --first    the first feasible option at every choice
 *   npx tsx examples/planner/openagi.ts --random 7 a seeded random feasible option
 *   npx tsx examples/planner/openagi.ts --scorer   the option text with the best mean log-probability (model)
 *   … --verbose                                    print every prompt and answer
 *
 * The model is ../shared/models/stories260K.gguf (SPECC_MODEL overrides it), a 260K-parameter story
 * model: its choices are valid by construction, not wise.
 */
import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseGrammar, type Cfg } from "../../compiler/grammar/index.js";
import { plan, type Chooser, type PlanOptions, type PlanResult } from "../../agents/planner.js";
import { firstChooser, loadLlmChooser, randomChooser, scriptedChooser } from "../../agents/planner-choosers.js";

export const MODEL = process.env.SPECC_MODEL ?? fileURLToPath(new URL("../../../shared/models/stories260K.gguf", import.meta.url));

export interface Example {
  /** File name under examples/grammars. */
  grammar: string;
  start?: string;
  task: string;
  /** Everything else plan() takes. */
  options: Omit<PlanOptions, "cfg" | "task" | "chooser">;
  /** The choices (0-based option indices) that reproduce the paper's worked result. */
  paperChoices: number[];
  /** Prints the result (default: the numbered steps and the plan text). */
  print?: (r: PlanResult, out: (s: string) => void) => void;
}

export function loadGrammar(file: string, start?: string): Cfg {
  const path = fileURLToPath(new URL(`../grammars/${file}`, import.meta.url));
  return parseGrammar(readFileSync(path, "utf8"), file, start ? { start } : {});
}

/** Plans the example with the given chooser. */
export async function runWith(ex: Example, chooser: Chooser, extra: Partial<PlanOptions> = {}): Promise<PlanResult | null> {
  return plan({ cfg: loadGrammar(ex.grammar, ex.start), task: ex.task, chooser, ...ex.options, ...extra });
}

/** True when `url` (import.meta.url) is the script node/tsx was started with. */
export function isMain(url: string): boolean {
  return !!process.argv[1] && resolve(process.argv[1]) === fileURLToPath(url);
}

/** The command line of every example. */
export async function main(ex: Example, argv = process.argv.slice(2), out: (s: string) => void = console.log): Promise<PlanResult | null> {
  const t0 = performance.now();
  const verbose = argv.includes("--verbose");
  let chooser: Chooser;
  let label: string;
  let dispose = async () => {};
  const ri = argv.indexOf("--random");
  if (argv.includes("--paper")) { chooser = scriptedChooser(ex.paperChoices); label = "the paper's choices (scripted)"; }
  else if (argv.includes("--first")) { chooser = firstChooser(); label = "the first feasible option"; }
  else if (ri >= 0) { const seed = Number(argv[ri + 1] ?? 1); chooser = randomChooser(seed); label = `random feasible options (seed ${seed})`; }
  else if (existsSync(MODEL)) {
    const llm = await loadLlmChooser(MODEL);
    dispose = llm.dispose;
    chooser = argv.includes("--scorer") ? llm.scorer : llm.chooser;
    label = `${argv.includes("--scorer") ? "option log-probabilities from" : "answers constrained to the option numbers, by"} ${MODEL.split("/").pop()} (loaded in ${llm.loadMs.toFixed(0)} ms)`;
  } else {
    chooser = scriptedChooser(ex.paperChoices);
    label = `the paper's choices (scripted; no model at ${MODEL})`;
  }
  try {
    out(`Chooser: ${label}`);
    const r = await runWith(ex, chooser, verbose ? {
      onEvent: (e) => {
        if (e.kind === "choice" && !e.auto) out(`\n${e.prompt}\n→ ${e.chosen + 1} (${e.options[e.chosen]})`);
        if (e.kind === "backtrack") out(`\n(dead end: backtracking, dropped "${e.eliminated}")`);
      },
    } : {});
    if (!r) { out("No plan exists."); return null; }
    out("");
    if (ex.print) ex.print(r, out);
    else { for (const s of r.steps) out(s); out(`\nPlan: ${r.plan}`); }
    out(`\n${r.choices.filter((c) => !c.auto).length} choices asked, ${r.backtracks} backtracks, ${r.stats.decisions} derivation steps; planning ${r.stats.ms.toFixed(0)} ms, total ${(performance.now() - t0).toFixed(0)} ms`);
    return r;
  } finally {
    await dispose();
  }
}
