/**
 * @fileoverview Formal-LLM's OpenAGI benchmark planning (seed 002, §4.2–4.3, A.3) on
 * examples/grammars/openagi.gbnf: tools with image/text inputs form a tree-structured plan; each
 * tool at most once; the options are tool names ("the output of Colorization"), as in the paper.
 *
 *   npx tsx examples/planner/openagi.ts [--paper | --first | --random SEED | --scorer] [--verbose]
 *
 * The paper's worked plan (Eq.(3)+(4), Fig. 5): e1 a1 i b1 i =
 *   Visual Question Answering(Colorization(i), Image Classification(i))
 *   1. Use Colorization on the input image
 *   2. Use Image Classification on the input image
 *   3. Use Visual Question Answering on the output of Colorization and the output of Image Classification
 */
import { formatPrompt, type Describe } from "../../agents/planner.js";
import { isMain, main, type Example } from "./common.js";

const kind = (rule: string) => (rule === "I" ? "image" : "text");

/** The paper's wording (A.3): "To get the input image of "X"", "the output of X", "Input Image". */
export const openagiDescribe: Describe = {
  text: { i: "the input image" },
  option: (o) => (o.tools.length ? `the output of ${o.tools[0]}` : o.rule === "I" && o.alts[0] === 2 ? "Input Image" : undefined),
  progress: (o) => (o.tools.length ? `Use ${o.tools[0]}` : "Use the input image"),
  target: (t) => (t.parent ? `the input ${kind(t.rule)} of "${t.parent.tool ?? t.parent.text}"` : `the final ${kind(t.rule)}`),
};

/** The prompt of A.3: progress listed from the final step backwards (the plan is derived from its output). */
export const openagiPrompt = (ctx: Parameters<typeof formatPrompt>[0]) => formatPrompt(ctx, { numbering: "backward" });

export const openagi: Example = {
  grammar: "openagi.gbnf",
  // Eq.(4)'s task: image in, text out (root ::= T, I → i).
  task: "Given blurry gray-scale images, how to return the object names in English step by step?",
  options: { toolLimit: 1, describe: openagiDescribe, prompt: openagiPrompt },
  // T: Visual Question Answering (9th of 10); I: Colorization; I: Input Image; T: Image Classification; I: Input Image.
  paperChoices: [8, 0, 4, 0, 4],
};

/** A.3's prompt example: "Given a grayscale image, how to return the regular image step by step?" (image in,
 *  image out: start I); after choosing Super-Resolution the next prompt is the paper's example. */
export const openagiImageTask: Example = {
  ...openagi,
  start: "I",
  task: "Given a grayscale image, how to return the regular image step by step?",
  paperChoices: [1, 4],
};

if (isMain(import.meta.url)) await main(openagi);
