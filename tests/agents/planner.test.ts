/**
 * The Formal-LLM planner (agents/planner.ts, seed 002): on the four seed grammars, scripted choosers
 * reproduce the paper's worked results (the OpenAGI plan e1 a1 i b1 i and its A.3 prompt, the cooking
 * recipe, the daily plan, the risk-management plan); every plan any chooser produces is a sentence of
 * the grammar (the Earley recognizer) and uses each tool at most once (counted independently in the
 * text); dead ends are backtracked out of; on small random grammars the planner finds a plan exactly
 * when brute-force enumeration of derivations does; "no plan" is null; budgets are typed errors; the
 * `specc plan` command; and the LLM choosers end to end with the tiny real model (skipped, with a
 * message, where ../shared/models/stories260K.gguf is absent).
 */
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseGrammar, recognize, type ByteSym, type Cfg } from "../../compiler/grammar/index.js";
import {
  PlannerError, PlannerLimitError, defaultIsTool, formatPrompt, plan, toolSteps,
  type ChoiceContext, type Chooser, type PlanNode, type PlanOptions, type PlanResult,
} from "../../agents/planner.js";
import { firstChooser, llamaOptionScorer, llmChooser, logprobChooser, randomChooser, scriptedChooser, type ChooserModel, type ChooserSequence } from "../../agents/planner-choosers.js";
import { seededRandom } from "../../bindings/adapters/llama.js";
import { runPlanCommand } from "../../cli/plan.js";
import { loadGrammar, runWith, type Example } from "../../examples/planner/common.js";
import { openagi, openagiImageTask } from "../../examples/planner/openagi.js";
import { cooking } from "../../examples/planner/cooking.js";
import { dailyPlan } from "../../examples/planner/daily-plan.js";
import { riskManagement } from "../../examples/planner/risk-management.js";

const MODEL = new URL("../../../shared/models/stories260K.gguf", import.meta.url).pathname;
const haveModel = existsSync(MODEL);
if (!haveModel) console.warn(`planner.test.ts: the LLM chooser tests are skipped — the model file ${MODEL} is absent (it ships in the workspace's shared/models)`);

const g = (text: string) => parseGrammar(text, "test.gbnf");
/** Records every chooser call's context, then delegates. */
function recording(inner: Chooser): Chooser & { seen: ChoiceContext[] } {
  const f = (async (ctx: ChoiceContext) => { f.seen.push(ctx); return inner(ctx); }) as Chooser & { seen: ChoiceContext[] };
  f.seen = [];
  return f;
}
const grammarComment = (file: string, from: string, lines: number) => {
  const c = readFileSync(`examples/grammars/${file}`, "utf8").split("\n").filter((l) => l.startsWith("#   ")).map((l) => l.slice(4));
  const i = c.findIndex((l) => l.startsWith(from));
  return c.slice(i, i + lines);
};

const OPENAGI_TOOLS = ["Colorization", "Super-Resolution", "Image Denoising", "Image Deblurring", "Image Classification", "Object Detection",
  "Image Captioning", "Text-to-Image Generation", "Sentiment Analysis", "Text Summarization", "Machine Translation", "Fill Mask",
  "Text Generation", "Visual Question Answering", "Question Answering"];
/** Tool uses counted in the plan text: a tool name right after the start, "(" or ", " and before "(". */
const openagiUses = (text: string) => Object.fromEntries(OPENAGI_TOOLS.map((t) => [t, (text.match(new RegExp(`(?:^|\\(|, )${t}\\(`, "g")) ?? []).length]));
const ACTIVITIES = ["Turning on the washer/laundry machine.", "House cleaning.", "Eating breakfast.", "Grocery shopping.", "Playing basketball.",
  "Eating lunch.", "Doing homework.", "Eating supper.", "Doing nothing for one hour."];
const dailyUses = (text: string) => Object.fromEntries(ACTIVITIES.map((a) => [a, text.split("\n").filter((l) => l.replace(/^\d\d:\d\d - \d\d:\d\d /, "") === a).length]));

// ─────────────────────────── the paper's worked results ───────────────────────────

describe("OpenAGI (seed 002 §4.2, Eq.(3)+(4), Fig. 5, A.3)", () => {
  it("the paper's plan e1 a1 i b1 i: Visual Question Answering(Colorization(i), Image Classification(i)), steps inputs-first", async () => {
    const r = (await runWith(openagi, scriptedChooser(openagi.paperChoices)))!;
    expect(r.plan).toBe("Visual Question Answering(Colorization(i), Image Classification(i))");
    expect(r.steps).toEqual([
      "1. Use Colorization on the input image",
      "2. Use Image Classification on the input image",
      "3. Use Visual Question Answering on the output of Colorization and the output of Image Classification",
    ]);
    expect(recognize(loadGrammar("openagi.gbnf"), r.plan)).toBe(true);
    expect(r.toolUses).toEqual({ "Visual Question Answering": 1, Colorization: 1, "Image Classification": 1 });
    expect(r.backtracks).toBe(0);
    // Figure 5's derivation tree: T → E I T, I → A I, I → i, T → B I, I → i.
    const shape = (n: PlanNode): unknown => (n.kind === "rule" ? { [`${n.rule}/${n.alt}`]: n.children.filter((c) => c.kind !== "text" || c.tool).map(shape) } : n.kind === "text" ? n.text : n.text);
    expect(shape(r.tree)).toEqual({ "root/0": [{ "T/2": [
      { "E/0": ["Visual Question Answering"] },
      { "I/0": [{ "A/0": ["Colorization"] }, { "I/2": [] }] },
      { "T/0": [{ "B/0": ["Image Classification"] }, { "I/2": [] }] },
    ] }] });
    // The choices the paper's prompts offer: tool names, not categories ("we directly use the tool name", A.3).
    expect(r.choices.filter((c) => !c.auto).map((c) => c.text)).toEqual([
      "the output of Visual Question Answering", "the output of Colorization", "Input Image", "the output of Image Classification", "Input Image",
    ]);
  });

  it("reproduces A.3's prompt example: after Super-Resolution, the five remaining ways to get the input image", async () => {
    const ch = recording(scriptedChooser(openagiImageTask.paperChoices));
    await runWith(openagiImageTask, ch);
    const paper = [
      'You will help me generate a plan for the problem: "Given a grayscale image, how to return the regular image step by step?" by answering a series of my questions.',
      "Current Progress:",
      "Step n: Use Image Super Resolution;",
      "Step (n-1): ?",
      'To get the input image of "Image Super Resolution", we have the following choices:',
      "1: the output of Colorization,",
      "2: the output of Image Denoising,",
      "3: the output of Image Deblurring,",
      "4: the output of Text to Image Generation,",
      "5: Input Image.",
      "Your answer should be only an integer, referring to the desired choice.",
    ].join("\n").replaceAll("Image Super Resolution", "Super-Resolution").replaceAll("Text to Image Generation", "Text-to-Image Generation");
    expect(ch.seen[1]!.prompt).toBe(`${paper}\nYour choice:`);
    // The first prompt offers all six ways to get an image; Super-Resolution, once used, is gone from the second.
    expect(ch.seen[0]!.options.map((o) => o.text)).toEqual([
      "the output of Colorization", "the output of Super-Resolution", "the output of Image Denoising", "the output of Image Deblurring",
      "the output of Text-to-Image Generation", "Input Image"]);
  });

  it("each tool at most once: a used tool is never offered again", async () => {
    const ch = recording(randomChooser(3));
    const r = (await runWith(openagi, ch))!;
    const used = new Set<string>();
    for (const ctx of ch.seen) {
      for (const o of ctx.options) for (const t of o.tools) expect(used.has(t)).toBe(false);
      const picked = r.choices.find((c) => c.question === ctx.question && c.options.length === ctx.options.length);
      if (picked) for (const t of ctx.options[picked.chosen]!.tools) used.add(t);
    }
  });
});

describe("cooking recipe (A.5.2, Eq.(5))", () => {
  it("the paper's plan and its 11 steps, read back from the derivation tree", async () => {
    const ch = recording(scriptedChooser(cooking.paperChoices));
    const r = (await runWith(cooking, ch))!;
    expect(r.plan).toBe(grammarComment("cooking.gbnf", "wok [", 3).map((l) => l.replace(/\s+\(on one line\)$/, "").trim()).join(" "));
    expect(recognize(loadGrammar("cooking.gbnf"), r.plan)).toBe(true);
    const season = "ginger, garlic, cooking oil, salt, light soy sauce, cooking wine, white pepper";
    expect(r.steps).toEqual([
      "Step 1: Wash raw beef slices with water.",
      `Step 2: Prepare the seasoning: ${season} for the step: "Marinate clean slices of beef in a bowl with seasoning".`,
      "Step 3: Marinate clean slices of beef in a bowl with seasoning.",
      "Step 4: Stir-fry the marinaded beef in a wok.",
      "Step 5: Wash broccoli with water.",
      "Step 6: Blanch clean broccoli in a cooking pot.",
      "Step 7: Use a bowl to drain the blanched broccoli.",
      "Step 8: Combine lightly cooked beef and blanched and drained broccoli in a wok.",
      `Step 9: Prepare the seasoning: ${season} for the step: "Stir-fry the beef and broccoli mixture with the seasoning in a wok".`,
      "Step 10: Stir-fry the beef and broccoli mixture with the seasoning in a wok.",
      "Step 11: Then, we get the cooked broccoli beef.",
    ].map((s) => s.replace(/^Step (\d+): /, "$1. ")));
    // A.5.2's prompt example: the two ways to get the mixture of beef and broccoli.
    const b = ch.seen.find((c) => c.rule === "B")!;
    expect(b.prompt).toContain([
      "Decide on the previous step before current progress.",
      'Here are possible options to get the mixture of beef and broccoli for the step: "Stir-fry the beef and broccoli mixture with the seasoning in a wok."',
      "1: Combine lightly cooked beef and lightly cooked broccoli in a wok.",
      "2: Combine lightly cooked beef and blanched and drained broccoli in a wok.",
      "Your reply should be only one number, such as 1, referring to the option.",
    ].join("\n"));
    expect(b.prompt).toMatch(/^Generate a broccoli beef cooking plan\.\n[^]*\nStep n: Then, we get the cooked broccoli beef\.\nStep n-1: Stir-fry the beef and broccoli mixture with the seasoning in a wok\.\nStep n-2: \?\n/);
  });
});

describe("daily plan (A.5.1, Fig. 4)", () => {
  const paper = [
    "10:00 - 10:00 Turning on the washer/laundry machine.", "10:00 - 11:00 House cleaning.", "11:00 - 12:00 Eating breakfast.",
    "12:00 - 13:00 Grocery shopping.", "13:00 - 15:00 Playing basketball.", "15:00 - 16:00 Eating lunch.",
    "16:00 - 19:00 Doing homework.", "19:00 - 20:00 Eating supper."];

  it("the paper's plan, activity by activity, each activity offered only while unused", async () => {
    const ch = recording(scriptedChooser(dailyPlan.paperChoices));
    const r = (await runWith(dailyPlan, ch))!;
    expect(r.plan).toBe(paper.join("\n") + "\n");
    expect(r.steps).toEqual(paper.map((l, i) => `${i + 1}. ${l}`));
    expect(r.backtracks).toBe(0);
    expect(ch.seen[0]!.options.map((o) => o.text)).toEqual([
      "Turning on the washer/laundry machine.", "Grocery shopping.", "House cleaning.", "Doing nothing for one hour.", "Eating breakfast.", "Doing homework."]);
    expect(ch.seen[2]!.prompt).toContain("Decide on the activity starting at 11:00.\nHere are possible options:\n1. Grocery shopping.\n2. Doing nothing for one hour.\n3. Eating breakfast.\n");
  });

  it("a choice that dead-ends (grocery shopping at 11:00 leaves no way to fit homework) is backtracked out of", async () => {
    const ch = recording(scriptedChooser([0, 0, 0, 0, 0, 0, 1]));
    const r = (await runWith(dailyPlan, ch))!;
    expect(r.plan).toBe(paper.join("\n") + "\n");
    expect(r.backtracks).toBe(2);
    const eleven = r.choices[2]!;
    expect(eleven.eliminated).toEqual(["Grocery shopping.", "Doing nothing for one hour."]);
    expect(eleven.text).toBe("Eating breakfast.");
    expect(r.trace.filter((e) => e.kind === "dead-end")).toHaveLength(2);
    // The chooser was asked again with the dead branch removed.
    expect(ch.seen[3]!.eliminated).toEqual(["Grocery shopping."]);
    expect(ch.seen[3]!.options.map((o) => o.text)).toEqual(["Doing nothing for one hour.", "Eating breakfast."]);
  });
});

describe("risk management (A.5.3, Fig. 7)", () => {
  it("the paper's plan for Microsoft, one numbered question per flowchart state", async () => {
    const ch = recording(scriptedChooser(riskManagement.paperChoices));
    const r = (await runWith(riskManagement, ch))!;
    const paper = grammarComment("risk-management.gbnf", "Here is the final plan for Microsoft:", 7);
    expect(r.plan).toBe(paper.join("\n") + "\n");
    expect(r.steps).toEqual(paper.slice(1, 6).map((l) => l.replace(/^(\d+): /, "$1. ")));
    expect(ch.seen.map((c) => c.rule)).toEqual(["check-seller", "check-company", "check-investment", "check-antitrust"]);
    expect(ch.seen[3]!.prompt).toBe([
      "Task: You are a plan maker to design a risk management plan for deals related to companies.",
      "Scenario: Shareholders of Blizzard Entertainment wants to sell the Blizzard Entertainment which Microsoft wants to buy. Design a risk management plan for Microsoft before negotiating a detailed contract.",
      "Question: Does Microsoft buying Blizzard Entertainment trigger mandatory antitrust filing?",
      "1: No.", "2: Yes.", "3: Insufficient information to make a judgment.", "4: Yes, and the transaction would not be approved.",
      "Your answer should be only one number, such as 1, referring to the option.",
      "Your choice:",
    ].join("\n"));
    expect(r.trace.filter((e) => e.kind === "fill").map((e) => (e as { text: string }).text)).toEqual(["Microsoft", "Shareholders of Blizzard Entertainment", "Blizzard Entertainment", "Blizzard Entertainment"]);
  });
});

// ─────────────────────────── every plan is valid ───────────────────────────

describe("every plan is a sentence of its grammar and uses each tool at most once", () => {
  const cases: [string, Example, ((t: string) => Record<string, number>) | null][] = [
    ["openagi", openagi, openagiUses], ["daily-plan", dailyPlan, dailyUses], ["cooking", cooking, null], ["risk-management", riskManagement, null],
  ];
  for (const [name, ex, uses] of cases) {
    it(`${name}: 60 random feasible choosers × three lookahead modes`, async () => {
      const cfg = loadGrammar(ex.grammar, ex.start);
      let backtracks = 0;
      for (const lookahead of ["local", "exact", "none"] as const) {
        for (let seed = 1; seed <= 20; seed++) {
          const r = await plan({ cfg, task: ex.task, chooser: randomChooser(seed * 7 + lookahead.length), ...ex.options, lookahead });
          expect(r, `${name} seed ${seed} ${lookahead}`).not.toBeNull();
          expect(recognize(cfg, r!.plan), r!.plan).toBe(true);
          if (uses) {
            const counted = uses(r!.plan);
            for (const [tool, n] of Object.entries(counted)) expect(n, `${tool} in ${r!.plan}`).toBeLessThanOrEqual(1);
            expect(Object.fromEntries(Object.entries(counted).filter(([, n]) => n > 0))).toEqual(
              Object.fromEntries(Object.entries(r!.toolUses).map(([t, n]) => [t.replace(/\n$/, ""), n])));
          }
          if (lookahead === "exact") expect(r!.backtracks).toBe(0);
          backtracks += r!.backtracks;
        }
      }
      if (name === "daily-plan") expect(backtracks).toBeGreaterThan(0);
    });
  }

  it("the first-feasible and the last-feasible choosers plan every grammar too", async () => {
    for (const ex of [openagi, dailyPlan, cooking, riskManagement]) {
      const cfg = loadGrammar(ex.grammar, ex.start);
      for (const chooser of [firstChooser(), ((c: ChoiceContext) => c.options.length - 1) as Chooser]) {
        const r = (await plan({ cfg, task: ex.task, chooser, ...ex.options }))!;
        expect(recognize(cfg, r.plan)).toBe(true);
      }
    }
  });
});

// ─────────────────────────── backtracking, exhaustiveness, no plan ───────────────────────────

describe("backtracking", () => {
  // x takes one of three tools; y and z then need the two that are left: only x = alpha completes.
  const cfg = g(`root ::= x " " y " " z
x ::= "beta" | "gamma" | "alpha"
y ::= "beta" | "gamma"
z ::= "beta" | "gamma"`);

  it("a greedy first choice dead-ends (the tools it needs later are used); the planner backtracks and finds the plan", async () => {
    const r = (await plan({ cfg, task: "t", chooser: firstChooser() }))!;
    expect(r.plan).toBe("alpha beta gamma");
    expect(r.backtracks).toBeGreaterThan(0);
    // x is flattened into root's options (a leading choice among literals): the first choice point is root's.
    expect(r.choices[0]).toMatchObject({ rule: "root", text: "alpha", eliminated: ["beta", "gamma"], auto: true });
    const kinds = r.trace.map((e) => e.kind);
    expect(kinds.filter((k) => k === "dead-end").length).toBe(r.backtracks);
  });

  it("lookahead exact never offers the dead branches; none offers everything and backtracks more", async () => {
    const exact = (await plan({ cfg, task: "t", chooser: firstChooser(), lookahead: "exact" }))!;
    expect(exact).toMatchObject({ plan: "alpha beta gamma", backtracks: 0 });
    expect(exact.choices[0]).toMatchObject({ options: ["alpha"], auto: true });
    const none = (await plan({ cfg, task: "t", chooser: firstChooser(), lookahead: "none" }))!;
    const local = (await plan({ cfg, task: "t", chooser: firstChooser() }))!;
    expect(none.plan).toBe("alpha beta gamma");
    expect(none.backtracks).toBeGreaterThanOrEqual(local.backtracks);
  });

  it("OpenAGI: a pair of texts with one text tool left dead-ends at the second; backtracking recovers", async () => {
    // Question Answering(T, T) after the image-to-text tools are spent on the first T: the second T needs one.
    const r = (await plan({ cfg: loadGrammar("openagi.gbnf"), task: "t", chooser: (c) => c.options.length - 1, lookahead: "local", ...{ describe: openagi.options.describe } }))!;
    expect(recognize(loadGrammar("openagi.gbnf"), r.plan)).toBe(true);
    for (const n of Object.values(openagiUses(r.plan))) expect(n).toBeLessThanOrEqual(1);
  });
});

/** A tiny grammar's sentences that use each tool at most `limit` times, by enumerating every leftmost derivation. */
function bruteForce(cfg: Cfg, isTool: (t: string) => boolean, limit: number, maxSteps: number): Set<string> {
  const out = new Set<string>();
  const dec = new TextDecoder();
  const single = (s: Cfg["rules"][number]["alts"][number][number]) => s.kind === "bytes" && s.ranges.length === 1 && s.ranges[0]![0] === s.ranges[0]![1];
  const toolsOfAlt = (alt: Cfg["rules"][number]["alts"][number]): string[] => {
    const ts: string[] = [];
    for (let i = 0; i < alt.length;) {
      if (!single(alt[i]!)) { i++; continue; }
      const st = i;
      while (i < alt.length && single(alt[i]!)) i++;
      const t = dec.decode(Uint8Array.from(alt.slice(st, i).map((s) => (s as ByteSym).ranges[0]![0]))).trim();
      if (t && isTool(t)) ts.push(t);
    }
    return ts;
  };
  const go = (stack: Cfg["rules"][number]["alts"][number], text: number[], tools: string[], steps: number): void => {
    if (steps > maxSteps) return;
    let i = 0;
    const t = [...text];
    while (i < stack.length && single(stack[i]!)) t.push((stack[i] as ByteSym).ranges[0]![0]), i++;
    if (i === stack.length) {
      const counts = new Map<string, number>();
      for (const x of tools) counts.set(x, (counts.get(x) ?? 0) + 1);
      if ([...counts.values()].every((n) => n <= limit)) out.add(dec.decode(Uint8Array.from(t)));
      return;
    }
    const top = stack[i]!;
    if (top.kind !== "rule") throw new Error("the tiny grammars have literals only");
    cfg.rules[top.rule]!.alts.forEach((alt) => go([...alt, ...stack.slice(i + 1)], t, [...tools, ...toolsOfAlt(alt)], steps + 1));
  };
  go([{ kind: "rule", rule: cfg.start }], [], [], 0);
  return out;
}

describe("exhaustiveness on tiny grammars: the planner finds a plan iff one exists", () => {
  it("agrees with brute-force enumeration on 300 random grammars, every lookahead mode and chooser", async () => {
    const rand = seededRandom(2024);
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)]!;
    const TOOLS = ["ab", "cd"];
    const isTool = (t: string) => TOOLS.includes(t);
    let withPlan = 0, withoutPlan = 0, checked = 0;
    for (let n = 0; n < 300; n++) {
      // 2–4 rules; alternatives of 1–3 symbols (ε rarely): rule references, the tools ab and cd, the non-tool x.
      // Every other grammar's root needs three things from its rules: with two tools, often impossible.
      const nr = 2 + Math.floor(rand() * 3);
      const names = Array.from({ length: nr }, (_, i) => (i === 0 ? "root" : `r${i}`));
      const sym = () => (rand() < 0.3 ? pick(names) : `"${pick([...TOOLS, ...TOOLS, "x"])}"`);
      const alt = () => { const k = rand() < 0.1 ? 0 : 1 + Math.floor(rand() * 3); return k ? Array.from({ length: k }, sym).join(" ") : `""`; };
      const text = names.map((name, i) => `${name} ::= ${i === 0 && n % 2
        ? Array.from({ length: 3 }, () => pick(names.slice(1))).join(" ")
        : Array.from({ length: 1 + Math.floor(rand() * 3) }, alt).join(" | ")}`).join("\n");
      let cfg: Cfg;
      try { cfg = parseGrammar(text, "random.gbnf"); } catch { continue; }
      const maxSteps = 7;
      const all = bruteForce(cfg, isTool, 1, maxSteps);
      all.size ? withPlan++ : withoutPlan++;
      for (const lookahead of ["local", "exact", "none"] as const) {
        for (const chooser of [firstChooser(), randomChooser(n), ((c: ChoiceContext) => c.options.length - 1) as Chooser]) {
          const r = await plan({ cfg, task: "t", chooser, isTool, toolLimit: 1, maxSteps, lookahead });
          expect(r !== null, `${text}\n${lookahead}: brute force finds ${[...all].slice(0, 3).join(" | ")}`).toBe(all.size > 0);
          if (r) expect(all.has(r.plan), `${text}\n${r.plan}`).toBe(true);
          checked++;
        }
      }
    }
    expect(withPlan).toBeGreaterThan(100);
    expect(withoutPlan).toBeGreaterThan(15);
    expect(checked).toBeGreaterThan(1000);
  });
});

describe("no plan, limits and errors", () => {
  it("no plan is null, with a done event, not an error", async () => {
    const events: string[] = [];
    const r = await plan({ cfg: g(`root ::= tool " and " tool\ntool ::= "alpha" | "beta" "!"`), task: "t", chooser: firstChooser(), isTool: (t) => t === "alpha" || t === "beta", onEvent: (e) => events.push(e.kind) });
    // Adjacent literals make one leaf: "beta" "!" is the leaf "beta!", which is not a tool here.
    expect(r?.plan).toBe("alpha and beta!");
    const none = await plan({ cfg: g(`root ::= tool " and " tool\ntool ::= "alpha"`), task: "t", chooser: firstChooser(), onEvent: (e) => events.push(e.kind) });
    expect(none).toBeNull();
    expect(events.at(-1)).toBe("done");
    // With two uses allowed, it exists.
    expect((await plan({ cfg: g(`root ::= tool " and " tool\ntool ::= "alpha"`), task: "t", chooser: firstChooser(), toolLimit: 2 }))?.plan).toBe("alpha and alpha");
  });

  it("unbounded recursion is cut by maxSteps: the planner steers to a finite plan; a too small maxSteps means no plan", async () => {
    const cfg = g(`root ::= "(" root ")" | "x"`);
    const deep = (await plan({ cfg, task: "t", chooser: firstChooser(), maxSteps: 10 }))!;
    expect(deep.plan).toBe("(((((((((x)))))))))");
    expect(deep.stats.decisions).toBe(10);
    expect(await plan({ cfg: g(`root ::= "(" a ")"\na ::= "(" b ")"\nb ::= "x"`), task: "t", chooser: firstChooser(), maxSteps: 2 })).toBeNull();
  });

  it("typed errors: the search budget, a chooser out of range, a fill the rule does not derive", async () => {
    const cfg = g(`root ::= a a a a a a\na ::= "p" | "q" | "r" | "s"`);
    const err = await plan({ cfg, task: "t", chooser: firstChooser(), maxNodes: 5 }).catch((e) => e);
    expect(err).toBeInstanceOf(PlannerLimitError);
    expect(err).toMatchObject({ limit: "maxNodes", value: 5 });
    await expect(plan({ cfg, task: "t", chooser: () => 9 })).rejects.toThrow(/chooser answered 9, but the options are 0…3/);
    await expect(plan({ cfg, task: "t", chooser: scriptedChooser([0]) })).rejects.toBeInstanceOf(PlannerError);
    const party = g(`root ::= "Buyer: " party\nparty ::= [A-Z] [a-z]*`);
    expect((await plan({ cfg: party, task: "t", chooser: firstChooser(), fill: { party: "Microsoft" } }))?.plan).toBe("Buyer: Microsoft");
    await expect(plan({ cfg: party, task: "t", chooser: firstChooser(), fill: { party: "microsoft" } })).rejects.toThrow(/not derived by the rule/);
    await expect(plan({ cfg: party, task: "t", chooser: firstChooser(), fill: { nobody: "x" } })).rejects.toThrow(/no rule 'nobody'/);
  });

  it("without a fill, free text is chosen byte by byte from the class", async () => {
    const cfg = g(`root ::= "Buyer: " [A-C] [a-b]? "."`);
    const ch = recording(scriptedChooser([2, 0, 1]));
    const r = (await plan({ cfg, task: "t", chooser: ch }))!;
    expect(ch.seen[0]!.options.map((o) => o.text)).toEqual(['"A"', '"B"', '"C"']);
    expect(r.plan).toBe("Buyer: Cb.");
  });
});

describe("definitions", () => {
  it("defaultIsTool: word-like leaves", () => {
    for (const t of ["Colorization", "Text-to-Image Generation", "Eating breakfast.", "Turning on the washer/laundry machine.", "wok"]) expect(defaultIsTool(t)).toBe(true);
    for (const t of ["i", "(", ", ", "10:00 - 11:00", "1: Based on current information, we believe", "[", ""]) expect(defaultIsTool(t)).toBe(false);
  });

  it("toolSteps: inputs before the tool, a right-linear tail after it", () => {
    const leaf = (text: string, tool = false): PlanNode => ({ kind: "text", text, tool });
    const s = (...children: PlanNode[]): PlanNode => ({ kind: "rule", rule: "s", alt: 0, children });
    expect(toolSteps(s(leaf("Wash", true), leaf(" "), s(leaf("Dry", true), leaf(" "), s(leaf("Fold.", true)))))).toEqual(["Use Wash", "Use Dry", "Use Fold"]);
    const f = (...children: PlanNode[]): PlanNode => ({ kind: "rule", rule: "f", alt: 0, children });
    expect(toolSteps(f(s(leaf("Zip", true)), leaf("("), f(s(leaf("Scan", true)), leaf("("), s(leaf("doc")), leaf(")")), leaf(")")), (t) => (t === "doc" ? "the document" : t)))
      .toEqual(["Use Scan on the document", "Use Zip on the output of Scan"]);
  });

  it("the LLM chooser's answer is constrained to the option numbers, digit by digit (a scripted stand-in model)", async () => {
    // Tokens: 0 " ", 1 "1", 2 "2", 3 "0", 4 "\n", 5 "12", 6 "a", 7 EOS. The model prefers "a", then "12"…
    const bytes = [" ", "1", "2", "0", "\n", "12", "a"].map((t) => new TextEncoder().encode(t) as Uint8Array | null);
    const { Vocabulary } = await import("../../bindings/vocab.js");
    const vocab = Vocabulary.fromTokenBytes([...bytes, null], { eos: [7] });
    const prefs: Record<string, number[]> = {
      prompt: [6, 5, 1, 2, 0],  // after the prompt: "a" (not allowed), then "12" (12 options: allowed)
      "5": [7, 4, 1],           // after "12": EOS
      "1": [3, 2, 4],           // after "1": "0" → "10"
      "0": [2, 4],              // after " ": "2"
    };
    const calls: number[][] = [];
    const sequence: ChooserSequence = {
      clearHistory: async () => {},
      controlledEvaluate: async (input) => {
        calls.push(input.map((x) => (Array.isArray(x) ? x[0] : x)));
        return input.map((x, i) => {
          if (!Array.isArray(x)) return undefined;
          const order = prefs[i === 0 && input.length === 1 ? String(x[0]) : "prompt"] ?? [4];
          return { next: { probabilities: new Map(order.map((t, k) => [t, 0.5 ** (k + 1)])) } };
        });
      },
    };
    const ask = async (n: number, first: number[]) => {
      prefs.prompt = first;
      const c = llmChooser({ model: {} as never, sequence, vocab, tokenize: () => [6, 6, 6] });
      const options = Array.from({ length: n }, (_, i) => ({ text: `o${i}`, tools: [], info: {} as never }));
      return c({ task: "t", rule: "r", target: "t", question: "q", options, progress: [], planSoFar: "", eliminated: [], depth: 0, prompt: "p" });
    };
    expect(await ask(12, [6, 5, 1, 2, 0])).toBe(11); // "12", then EOS
    expect(await ask(12, [6, 1, 5])).toBe(9);        // "1", then "0" → "10"
    expect(await ask(5, [6, 5, 1, 2, 0])).toBe(0);   // "12" is not an option of 5: "1", complete at once
    expect(await ask(3, [6, 0, 2])).toBe(1);         // " " is allowed first; then… "2" (from the prompt's preferences)
  });

  it("formatPrompt numbers forwards by default", () => {
    const p = formatPrompt({ task: "Do it", rule: "r", target: "the r", question: "To get the r, we have the following choices:",
      options: [{ text: "A.", tools: [], info: {} as never }, { text: "B", tools: [], info: {} as never }], progress: ["X"], planSoFar: "", eliminated: [], depth: 0 });
    expect(p).toBe('You will help me generate a plan for the problem: "Do it" by answering a series of my questions.\nCurrent Progress:\nStep 1: X\nStep 2: ?\nTo get the r, we have the following choices:\n1: A,\n2: B.\nYour answer should be only an integer, referring to the desired choice.\nYour choice:');
  });
});

// ─────────────────────────── specc plan ───────────────────────────

describe("runPlanCommand (specc plan)", () => {
  const run = async (args: string[]) => {
    const out: string[] = [], err: string[] = [];
    const code = await runPlanCommand(args, { out: (s) => out.push(s), err: (s) => err.push(s) });
    return { code, out: out.join("\n"), err: err.join("\n") };
  };

  it("plans with scripted option numbers and prints the steps", async () => {
    const r = await run(["examples/grammars/openagi.gbnf", "--task", "Given blurry gray-scale images, how to return the object names?", "--chooser", "script", "--choices", "9,1,5,1,5"]);
    expect(r.code).toBe(0);
    expect(r.out).toContain("1. Use Colorization on i\n2. Use Image Classification on i\n3. Use Visual Question Answering on the output of Colorization and the output of Image Classification");
    expect(r.out).toContain('plan: "Visual Question Answering(Colorization(i), Image Classification(i))"');
  });

  it("--json, --fill, --no-tools, --steps lines", async () => {
    const r = await run(["examples/grammars/risk-management.gbnf", "--task", "t", "--no-tools", "--fill", "party=Microsoft", "--steps", "lines", "--json"]);
    expect(r.code).toBe(0);
    const j = JSON.parse(r.out);
    expect(j.plan).toMatch(/^Here is the final plan for Microsoft:\n1: Based on current information, we believe Microsoft is entitled to sell Microsoft\./);
    expect(j.steps[0]).toBe("1. Here is the final plan for Microsoft:");
  });

  it("exit codes: 1 no plan, 2 usage, 3 grammar error", async () => {
    const dir = mkdtempSync(join(tmpdir(), "specc-plan-"));
    writeFileSync(join(dir, "twice.gbnf"), `root ::= tool " " tool\ntool ::= "alpha"`);
    writeFileSync(join(dir, "bad.gbnf"), `root ::= "a" (`);
    expect((await run([join(dir, "twice.gbnf"), "--task", "t"])).code).toBe(1);
    expect((await run([join(dir, "twice.gbnf"), "--task", "t", "--tool-limit", "2"])).code).toBe(0);
    expect((await run([join(dir, "twice.gbnf")])).code).toBe(2);
    expect((await run([join(dir, "twice.gbnf"), "--task", "t", "--chooser", "magic"])).code).toBe(2);
    const bad = await run([join(dir, "bad.gbnf"), "--task", "t"]);
    expect(bad.code).toBe(3);
    expect(bad.err).toMatch(/error\[E07/);
  });
});

// ─────────────────────────── the LLM choosers, end to end ───────────────────────────

describe.skipIf(!haveModel)("LLM choosers with the tiny real model (node-llama-cpp, CPU)", () => {
  let llama: { dispose(): Promise<void> };
  let model: import("node-llama-cpp").LlamaModel;
  let ctx: import("node-llama-cpp").LlamaContext;
  let seqA: ChooserSequence, seqB: ChooserSequence;

  beforeAll(async () => {
    const { getLlama, LlamaLogLevel } = await import("node-llama-cpp");
    const l = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
    llama = l;
    model = await l.loadModel({ modelPath: MODEL });
    ctx = await model.createContext({ threads: 1, contextSize: 2048, sequences: 2 });
    seqA = ctx.getSequence() as unknown as ChooserSequence;
    seqB = ctx.getSequence() as unknown as ChooserSequence;
  });
  afterAll(async () => { await ctx?.dispose(); await model?.dispose(); await llama?.dispose(); });

  it("the model's answers are always option numbers; the plans are valid; prefix re-use changes nothing", async () => {
    const m = model as unknown as ChooserModel;
    const chooser = llmChooser({ model: m, sequence: seqA });
    const seen = recording(chooser);
    for (const ex of [openagi, dailyPlan, riskManagement] as Example[]) {
      const cfg = loadGrammar(ex.grammar, ex.start);
      const r = (await plan({ cfg, task: ex.task, chooser: seen, ...ex.options } as PlanOptions))!;
      expect(r).not.toBeNull();
      expect(recognize(cfg, r.plan)).toBe(true);
      if (ex === openagi) for (const n of Object.values(openagiUses(r.plan))) expect(n).toBeLessThanOrEqual(1);
      if (ex === dailyPlan) for (const n of Object.values(dailyUses(r.plan))) expect(n).toBeLessThanOrEqual(1);
    }
    expect(chooser.log.length).toBe(seen.seen.length);
    expect(chooser.log.length).toBeGreaterThan(5);
    for (const a of chooser.log) {
      expect(a.answer).toMatch(/^ ?\d+\n?$/);
      expect(a.chosen).toBeGreaterThanOrEqual(0);
      expect(a.chosen).toBeLessThan(a.options);
      expect(a.firstTokenMass).toBeGreaterThan(0);
    }
    // The same prompts on a fresh sequence, evaluated from scratch each time, get the same answers.
    const fresh = llmChooser({ model: m, sequence: seqB });
    for (let i = 0; i < Math.min(seen.seen.length, 8); i++) {
      await seqB.clearHistory();
      expect(await fresh(seen.seen[i]!)).toBe(chooser.log[i]!.chosen);
    }
  });

  it("answers with two digits when there are ten options or more", async () => {
    const options = Array.from({ length: 12 }, (_, i) => ({ text: `Option ${i + 1}`, tools: [], info: {} as never }));
    const c = { task: "Pick", rule: "r", target: "the r", question: "q", options, progress: [], planSoFar: "", eliminated: [], depth: 0 };
    const chooser = llmChooser({ model: model as unknown as ChooserModel, sequence: seqA, temperature: 1, seed: 5 });
    const picks = new Set<number>();
    for (let i = 0; i < 12; i++) picks.add(await chooser({ ...c, prompt: formatPrompt(c) + " ".repeat(i % 3) }));
    for (const p of picks) { expect(p).toBeGreaterThanOrEqual(0); expect(p).toBeLessThan(12); }
  });

  it("the log-probability chooser: the option text with the best mean log-probability", async () => {
    const scorer = llamaOptionScorer({ model: model as unknown as ChooserModel, sequence: seqA });
    const chooser = logprobChooser(scorer);
    const cfg = loadGrammar(cooking.grammar);
    const r = (await plan({ cfg, task: cooking.task, chooser, ...cooking.options }))!;
    expect(recognize(cfg, r.plan)).toBe(true);
    for (const l of chooser.log) {
      expect(l.scores.every((s) => Number.isFinite(s) && s <= 0)).toBe(true);
      expect(l.scores[l.chosen]).toBe(Math.max(...l.scores));
    }
    // A story model prefers story words: "Once upon a" continues with "time" rather than "carburetor".
    const ctx0 = { task: "t", rule: "r", target: "t", question: "q", options: [], progress: [], planSoFar: "", eliminated: [], depth: 0, prompt: "" } as ChoiceContext;
    const story = llamaOptionScorer({ model: model as unknown as ChooserModel, sequence: seqA, prompt: () => "Once upon a" });
    expect(await story(ctx0, { text: "time", tools: [], info: {} as never })).toBeGreaterThan(await story(ctx0, { text: "carburetor", tools: [], info: {} as never }));
  });
});
