/**
 * @fileoverview Formal-LLM's cooking recipe (seed 002, A.5.2, Eq.(5)) on examples/grammars/cooking.gbnf:
 * the plan is derived from the final dish backwards ("Decide on the previous step before current
 * progress"), the options are cooking steps, and the finished derivation tree is read back as the
 * paper's numbered recipe. Utensils and ingredients are reused (the paper's own plan uses the wok
 * four times), so nothing here is a one-use tool: `isTool` is off and the grammar alone constrains.
 *
 *   npx tsx examples/planner/cooking.ts [--paper | --first | --random SEED | --scorer] [--verbose]
 *
 * The paper's result (A.6), reproduced by --paper:
 *   Step 1: Wash raw beef slices with water.
 *   Step 2: Prepare the seasoning: ginger, garlic, cooking oil, salt, light soy sauce, cooking wine, white pepper for the step: "Marinate clean slices of beef in a bowl with seasoning".
 *   …
 *   Step 11: Then, we get the cooked broccoli beef.
 */
import type { ChoiceContext, Describe, PlanNode } from "../../agents/planner.js";
import { isMain, main, type Example } from "./common.js";

/** The seasoning words of Eq.(5)'s grammar → the paper's recipe wording. */
const SEASONING: Record<string, string> = {
  onion: "onion", ginger: "ginger", garlic: "garlic", oil: "cooking oil", salt: "salt", "light soy oil": "light soy sauce",
  "cooking wine": "cooking wine", "white pepper": "white pepper", sugar: "sugar", vinegar: "vinegar",
};
/** The rule X-on of the seasoning list → X. */
const CHAIN: Record<string, string> = {
  "onion-on": "onion", "ginger-on": "ginger", "garlic-on": "garlic", "oil-on": "oil", "salt-on": "salt", "soy-on": "light soy oil",
  "wine-on": "cooking wine", "pepper-on": "white pepper", "sugar-on": "sugar", "vinegar-on": "vinegar",
};
/** What each nonterminal is (Eq.(5)'s legend) and the step that makes it. */
const ITEM: Record<string, string> = {
  S: "the final beef broccoli", B: "the mixture of beef and broccoli", C: "lightly cooked beef", D: "lightly cooked broccoli",
  E: "blanched and drained broccoli", F: "marinaded beef", G: "clean slices of beef", H: "blanched broccoli", I: "clean broccoli", A: "the seasoning",
};
const STEP: Record<string, string> = {
  S: "Stir-fry the beef and broccoli mixture with the seasoning in a wok",
  C: "Stir-fry the marinaded beef in a wok",
  D: "Stir-fry clean broccoli with the seasoning in a wok",
  E: "Use a bowl to drain the blanched broccoli",
  F: "Marinate clean slices of beef in a bowl with seasoning",
  G: "Wash raw beef slices with water",
  I: "Wash broccoli with water",
};
const B_STEP = ["Combine lightly cooked beef and lightly cooked broccoli in a wok", "Combine lightly cooked beef and blanched and drained broccoli in a wok"];
const H_STEP = ["Blanch broccoli in a cooking pot", "Blanch clean broccoli in a cooking pot"];

const isSeasoning = (owner: string) => owner === "A" || owner in CHAIN;

export const cookingDescribe: Describe = {
  option: (o) => {
    if (o.rule === "B") return `${B_STEP[o.alts[0]!]}.`;
    if (o.rule === "H") return `${H_STEP[o.alts[0]!]}.`;
    // A ::= "[" onion-on? "]": the optional list is part of A's options.
    if (o.rule === "A") return o.alts[1] === 0 ? "Prepare a seasoning." : "Use no seasoning.";
    // X-on ::= "X" ( ", " next-on )? | next-on: add X and go on, add X as the last one, or leave X out.
    const x = CHAIN[o.rule];
    if (!x) return undefined;
    if (o.alts[0] === 1) return `Leave out ${SEASONING[x]}.`;
    return o.alts[1] === 0 ? `Add ${SEASONING[x]}, and more seasonings after it.` : `Add ${SEASONING[x]} as the last seasoning.`;
  },
  // The seasoning list is one step of the recipe; its yes/no questions are not listed as progress.
  progress: (o, text) => (isSeasoning(o.owner) ? "" : text),
  target: (t) => {
    const stepRule = t.ancestors.find((a) => a in STEP || a === "B");
    const step = stepRule === "B" ? "Combine the beef and the broccoli in a wok" : stepRule ? STEP[stepRule] : undefined;
    const item = isSeasoning(t.owner) ? "the seasoning" : ITEM[t.owner] ?? t.text;
    return step ? `${item} for the step: "${step}."` : item;
  },
  steps: (tree) => recipe(tree),
};

const rule = (n: PlanNode, name: string) => (n.kind === "rule" ? n.children.find((c) => c.kind === "rule" && c.rule === name) : undefined);
const text = (n: PlanNode | undefined): string => (!n ? "" : n.kind === "rule" ? n.children.map(text).join("") : n.text);

function seasoning(a: PlanNode | undefined, step: string): string[] {
  const items = text(a).replace(/^\[|\]$/g, "").split(", ").filter(Boolean).map((s) => SEASONING[s] ?? s);
  return items.length ? [`Prepare the seasoning: ${items.join(", ")} for the step: "${step}".`] : [];
}

/** The derivation tree read back as the recipe: every ingredient's steps before the step that uses it. */
export function recipe(n: PlanNode | undefined): string[] {
  if (!n || n.kind !== "rule") return [];
  const sub = (name: string) => recipe(rule(n, name));
  switch (n.rule) {
    case "root": return sub("S");
    case "S": return [...sub("B"), ...seasoning(rule(n, "A"), STEP.S!), `${STEP.S}.`, "Then, we get the cooked broccoli beef."];
    case "B": return [...sub("C"), ...sub(n.alt === 0 ? "D" : "E"), `${B_STEP[n.alt]}.`];
    case "C": return [...sub("F"), `${STEP.C}.`];
    case "D": return [...sub("I"), ...seasoning(rule(n, "A"), STEP.D!), `${STEP.D}.`];
    case "E": return [...sub("H"), `${STEP.E}.`];
    case "F": return [...sub("G"), ...seasoning(rule(n, "A"), STEP.F!), `${STEP.F}.`];
    case "G": return [`${STEP.G}.`];
    case "H": return [...(n.alt === 1 ? sub("I") : []), `${H_STEP[n.alt]}.`];
    case "I": return [`${STEP.I}.`];
    default: return [];
  }
}

const TASK = [
  "Generate a broccoli beef cooking plan.",
  "The ingredients include raw beef slices, carpaccio, broccoli, onions, ginger, garlic, and water.",
  "The seasonings include cooking oil, salt, light soy sauce, cooking wine, white pepper, sugar, vinegar.",
  "Cooking utensils including woks and cooking pots.",
  "Tableware including chopsticks, spoons, wok spoons, and several bowls.",
].join("\n");

/** A.5.2's Formal-LLM prompt: the task, the progress from the final step backwards, the options. */
export function cookingPrompt(ctx: Omit<ChoiceContext, "prompt">): string {
  const steps = ["Then, we get the cooked broccoli beef.", `${STEP.S}.`, ...ctx.progress];
  return [
    ctx.task,
    "Current Progress:",
    ...steps.map((s, i) => `Step ${i === 0 ? "n" : `n-${i}`}: ${s}`),
    `Step n-${steps.length}: ?`,
    "Decide on the previous step before current progress.",
    `Here are possible options to get ${ctx.target}${/[.!?]"?$/.test(ctx.target) ? "" : "."}`,
    ...ctx.options.map((o, i) => `${i + 1}: ${o.text}`),
    "Your reply should be only one number, such as 1, referring to the option.",
    "Your choice:",
  ].join("\n");
}

export const cooking: Example = {
  grammar: "cooking.gbnf",
  task: TASK,
  options: { isTool: () => false, describe: cookingDescribe, prompt: cookingPrompt },
  // The paper's seasoning (ginger, garlic, oil, salt, light soy oil, cooking wine, white pepper) twice,
  // the blanched-and-drained broccoli (B's second option) and the clean broccoli blanched (H's second).
  // Per list: prepare a seasoning, leave out onion, add ginger … cooking wine and more, white pepper last.
  paperChoices: [0, 2, 0, 0, 0, 0, 0, 0, 1, 1, 0, 2, 0, 0, 0, 0, 0, 0, 1, 1],
  print: (r, out) => {
    out("Here is the final plan:");
    for (const s of r.steps) out(s.replace(/^(\d+)\. /, "Step $1: "));
    out("Carefully cooking at each step!");
    out(`\nPlan (a sentence of Eq.(5)): ${r.plan}`);
  },
};

if (isMain(import.meta.url)) await main(cooking);
