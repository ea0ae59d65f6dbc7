/**
 * @fileoverview Formal-LLM's risk management (seed 002, A.5.3, Fig. 7) on
 * examples/grammars/risk-management.gbnf: the flowchart is a DFA, one question per state, answered by
 * number; the parties are filled in (the grammar leaves them free text). Nothing is a one-use tool.
 *
 *   npx tsx examples/planner/risk-management.ts [--paper | --first | --random SEED | --scorer] [--verbose]
 *
 * The paper's result after applying Formal-LLM (A.6), reproduced by --paper:
 *   Here is the final plan for Microsoft:
 *   1: We need more information to ensure Shareholders of Blizzard Entertainment is entitled to sell Blizzard Entertainment. But we assume …
 *   2: Then, based on current information, we believe Blizzard Entertainment is in good standing without material outstanding liabilities.
 *   3: Then, based on current information, we believe neither CFIUS filings nor foreign investment filings in China are needed.
 *   4: Then, we need to submit the regional antitrust filing of the United States and/or China. But we assume …
 *   5: Pass the preliminary risk analysis. Details to be discussed in the transaction documents.
 */
import type { ChoiceContext, Describe } from "../../agents/planner.js";
import { isMain, main, type Example } from "./common.js";

export const SELLER = "Shareholders of Blizzard Entertainment";
export const COMPANY = "Blizzard Entertainment";
export const BUYER = "Microsoft";

const INSUFFICIENT = "Insufficient information to make a judgment.";
/** One question per flowchart state; the answers in the grammar's order of alternatives. */
const QUESTIONS: Record<string, { q: string; a: string[] }> = {
  "check-seller": { q: `Is ${SELLER} entitled to sell ${COMPANY}?`, a: ["Yes.", INSUFFICIENT, "No."] },
  "check-company": { q: `Is ${COMPANY} in good standing without material outstanding liabilities?`, a: ["Yes.", INSUFFICIENT, "No."] },
  "check-investment": {
    q: `Does ${BUYER} buying ${COMPANY} need CFIUS filings or foreign investment filings in China?`,
    a: ["No.", "Yes.", INSUFFICIENT, "Yes, and the transaction would not be cleared."],
  },
  "check-antitrust": {
    q: `Does ${BUYER} buying ${COMPANY} trigger mandatory antitrust filing?`,
    a: ["No.", "Yes.", INSUFFICIENT, "Yes, and the transaction would not be approved."],
  },
};

export const riskDescribe: Describe = {
  target: (t) => QUESTIONS[t.owner]?.q,
  option: (o) => QUESTIONS[o.rule]?.a[o.alts[0]!],
  // The plan's numbered lines, without their numbers (the planner numbers the steps).
  steps: (_tree, plan) => plan.split("\n").filter((l) => /^\d+: /.test(l)).map((l) => l.replace(/^\d+: /, "")),
};

/** A.5.3's Formal-LLM prompt. */
export function riskPrompt(ctx: Omit<ChoiceContext, "prompt">): string {
  return [
    ctx.task,
    `Question: ${ctx.target}`,
    ...ctx.options.map((o, i) => `${i + 1}: ${o.text}`),
    "Your answer should be only one number, such as 1, referring to the option.",
    "Your choice:",
  ].join("\n");
}

export const riskManagement: Example = {
  grammar: "risk-management.gbnf",
  task: [
    "Task: You are a plan maker to design a risk management plan for deals related to companies.",
    `Scenario: ${SELLER} wants to sell the ${COMPANY} which ${BUYER} wants to buy. Design a risk management plan for ${BUYER} before negotiating a detailed contract.`,
  ].join("\n"),
  options: {
    isTool: () => false,
    // party occurs as the buyer (the plan's title), then the seller and the company, then the company.
    fill: { party: [BUYER, SELLER, COMPANY] },
    describe: riskDescribe,
    prompt: riskPrompt,
  },
  // Seller: insufficient information; company: in good standing; no CFIUS filing; antitrust filing: yes.
  paperChoices: [1, 0, 0, 1],
  print: (r, out) => out(r.plan.trimEnd()),
};

if (isMain(import.meta.url)) await main(riskManagement);
