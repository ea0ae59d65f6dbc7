/**
 * @fileoverview Formal-LLM's daily plan (seed 002, §4.2 Fig. 4, A.5.1) on examples/grammars/daily-plan.gbnf:
 * the PDA over the hours 10:00–20:00 as a grammar; every activity is a tool used at most once, so
 * choosing an activity early removes it from the later lists, and a day that can no longer be filled
 * is a dead end the planner backtracks out of.
 *
 *   npx tsx examples/planner/daily-plan.ts [--paper | --first | --random SEED | --scorer] [--verbose]
 *
 * The paper's result after applying Formal-LLM (A.6), reproduced by --paper:
 *   10:00 - 10:00 Turning on the washer/laundry machine.
 *   10:00 - 11:00 House cleaning.
 *   11:00 - 12:00 Eating breakfast.
 *   12:00 - 13:00 Grocery shopping.
 *   13:00 - 15:00 Playing basketball.
 *   15:00 - 16:00 Eating lunch.
 *   16:00 - 19:00 Doing homework.
 *   19:00 - 20:00 Eating supper.
 */
import type { ChoiceContext, Describe } from "../../agents/planner.js";
import { isMain, main, type Example } from "./common.js";

const TASK = [
  "Generate a plan for activities between 10:00 and 20:00.",
  "Breakfast, lunch, and supper need 1 hour each.",
  "Outdoor activities: basketball playing 13:00 - 15:00; do grocery shopping needs 1 hour.",
  "Indoor activities: house cleaning needs 1 hour; homework needs three hours; turning on the washer/laundry machine needs 0 minutes but needs to stay home for one hour.",
  "Other constrain:",
  "Cannot play basketball within an hour after a meal.",
].join("\n");

export const dailyDescribe: Describe = {
  // tH-K: "it is H:00 and K meals are planned"; homeH-K: the hour at home after starting the washer at H:00.
  target: (t) => {
    const m = /^(t|home)(\d+)-\d$/.exec(t.owner);
    if (!m) return undefined;
    return m[1] === "t" ? `the activity starting at ${m[2]}:00` : `the activity at home starting at ${m[2]}:00 (the washer is running)`;
  },
};

/** A.5.1's Formal-LLM prompt, planning forwards from 10:00 (the paper plans backwards from 20:00). */
export function dailyPrompt(ctx: Omit<ChoiceContext, "prompt">): string {
  const done = ctx.planSoFar.split("\n").filter((l) => /\d\d:\d\d - \d\d:\d\d .+/.test(l));
  return [
    ctx.task,
    "Lets start planning from the beginning.",
    "Current Progress:",
    ...(done.length ? done : ["(nothing yet)"]),
    `Decide on ${ctx.target}.`,
    "Here are possible options:",
    ...ctx.options.map((o, i) => `${i + 1}. ${o.text}`),
    "Your reply should be only one number, such as 1, referring to the option.",
    "Your choice:",
  ].join("\n");
}

export const dailyPlan: Example = {
  grammar: "daily-plan.gbnf",
  task: TASK,
  // Every activity ("Eating breakfast.", "House cleaning.", …) is a word-like leaf: a tool, used at most once.
  options: { toolLimit: 1, describe: dailyDescribe, prompt: dailyPrompt, stepStyle: "lines" },
  // Washer at 10:00, house cleaning (home), breakfast, grocery shopping, (basketball), lunch, homework, (supper).
  paperChoices: [0, 0, 2, 0, 0, 1],
};

if (isMain(import.meta.url)) await main(dailyPlan);
