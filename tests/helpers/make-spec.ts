/**
 * @fileoverview Hand-built SpecIR for tests, independent of the real front end.
 *
 * `makeSpec` builds a SpecIR from a list of states and a behavior written in the spec language's
 * formula syntax (a tiny reader for formulas only: atoms and parenthesized operators). `EXAMPLE_SPECS`
 * mirrors every file of examples/ by hand, so the reference interpreter can run the data-driven trace
 * suite (tests/fixtures/traces/index.json) without the parser; once the front end exists, its output
 * for each file should equal (modulo spans) the IR built here.
 */

import { readFileSync } from "node:fs";
import { parseGrammar } from "../../compiler/grammar/index.js";
import { readTools } from "../../compiler/tools.js";
import { TOKEN_BYTES } from "../../compiler/tokens.js";
import type { Behavior, ConstraintIR, ContentIR, SpecIR, Span, StateIR } from "../../compiler/ir.js";

/** [name, marker, env?, options of :output-constrs?] */
export type StateDef = [name: string, marker: string, env?: boolean, outputConstrs?: string[]];

const span = (file: string): Span => ({ file, line: 1, col: 1, offset: 0, end: 0 });

type Sexpr = string | Sexpr[];

/** Reads one s-expression of atoms and lists (no strings, no comments): enough for formulas. */
function readSexpr(src: string): Sexpr {
  const tokens = src.match(/[()]|[^\s()]+/g) ?? [];
  let pos = 0;
  function read(): Sexpr {
    const t = tokens[pos++];
    if (t === undefined) throw new Error(`formula ends early: ${src}`);
    if (t === ")") throw new Error(`unexpected ')' in formula: ${src}`);
    if (t !== "(") return t;
    const list: Sexpr[] = [];
    while (tokens[pos] !== ")") {
      if (pos >= tokens.length) throw new Error(`unclosed '(' in formula: ${src}`);
      list.push(read());
    }
    pos++;
    return list;
  }
  const e = read();
  if (pos !== tokens.length) throw new Error(`trailing tokens in formula: ${src}`);
  return e;
}

function lowerBehavior(e: Sexpr, stateId: (name: string) => number, file: string): Behavior {
  const sp = span(file);
  if (typeof e === "string") return { op: "state", state: stateId(e), span: sp };
  const [head, ...rest] = e;
  if (typeof head !== "string") throw new Error(`operator expected`);
  const args = rest.map((a) => lowerBehavior(a, stateId, file));
  const bounded = /^until(?:_(\d+))?(?:_(\d+))?$/.exec(head);
  if (head === "next" || head === "or") {
    if (args.length < 1) throw new Error(`${head} needs arguments`);
    return { op: head, args, span: sp };
  }
  if (head === "always") {
    if (args.length !== 1) throw new Error(`always takes 1 argument`);
    return { op: "always", body: args[0]!, span: sp };
  }
  if (bounded) {
    if (args.length !== 2) throw new Error(`${head} takes 2 arguments`);
    const [, a, b] = bounded;
    const min = b !== undefined ? Number(a) : 0;
    const max = b !== undefined ? Number(b) : a !== undefined ? Number(a) : null;
    return { op: "until", body: args[0]!, then: args[1]!, min, max, span: sp };
  }
  throw new Error(`unknown operator ${head}`);
}

function lowerConstraint(src: string, stateId: (name: string) => number, file: string): ConstraintIR {
  const e = readSexpr(src);
  const sp = span(file);
  if (!Array.isArray(e)) throw new Error(`constraint expected: ${src}`);
  const [head, a, b] = e;
  if (head === "at-most" || head === "at-least") {
    if (typeof a !== "string" || typeof b !== "string") throw new Error(`(${head} N S) expected`);
    return { kind: head === "at-most" ? "atMost" : "atLeast", n: Number(a), state: stateId(b), span: sp };
  }
  if (head === "eventually" && typeof a === "string") return { kind: "eventually", state: stateId(a), span: sp };
  throw new Error(`unknown constraint ${src}`);
}

/**
 * Builds a SpecIR by hand. `behavior` is a formula in the spec syntax, e.g.
 * `(next (until (next Thought Action) Final-Thought) Answer)`, or a ready Behavior.
 * `constraints` are written like `(at-most 2 Action)`.
 */
export function makeSpec(
  states: StateDef[],
  behavior: string | Behavior,
  opts: { name?: string; file?: string; constraints?: string[] } = {},
): SpecIR {
  const file = opts.file ?? "<test>";
  const irStates: StateIR[] = states.map(([name, marker, env, options], id) => {
    const content: ContentIR = options ? { kind: "oneOf", options, span: span(file) } : { kind: "any" };
    return { id, name, marker, env: env ?? false, content, span: span(file) };
  });
  const stateId = (n: string): number => {
    const s = irStates.find((st) => st.name === n);
    if (!s) throw new Error(`undefined state ${n}`);
    return s.id;
  };
  return {
    name: opts.name ?? "test-agent",
    file,
    states: irStates,
    behavior: typeof behavior === "string" ? lowerBehavior(readSexpr(behavior), stateId, file) : behavior,
    constraints: (opts.constraints ?? []).map((c) => lowerConstraint(c, stateId, file)),
  };
}

// ───────────────────────────── the examples/ directory, built by hand ─────────────────────────────

const REACT_COLON: StateDef[] = [
  ["Thought", "Thought:"],
  ["Action", "Action:"],
  ["Action-Input", "Action Input:"],
  ["Observation", "Observation:", true],
  ["Final-Thought", "Final Thought:"],
  ["Answer", "Answer:"],
];
const REACT_COLON_BEHAVIOR = "(next (until (next Thought Action Action-Input Observation) Final-Thought) Answer)";

const REACT_BRACKETS: StateDef[] = [
  ["Ques", "[Question]"],
  ["Tht", "[Thought]"],
  ["Act", "[Action]"],
  ["Act-Inp", "[Action Input]"],
  ["Obs", "[Observation]", true],
  ["Final-Tht", "[Final Thought]"],
  ["Ans", "[Answer]"],
];
const REACT_BRACKETS_BEHAVIOR = "(next Ques (until (next Tht Act Act-Inp Obs) Final-Tht) Ans)";

const PASS: StateDef[] = [
  ["Ques", "[Question]"],
  ["Plan", "[Thought]"],
  ["Act", "[Action]"],
  ["Act-Inp", "[Action Input]"],
  ["Sum", "[Summary]", true],
  ["Final-Tht", "[Final Thought]"],
  ["Ans", "[Answer]"],
];
const PASS_BEHAVIOR = "(next Ques (until (next Plan (until (next Act Act-Inp) Sum)) Final-Tht) Ans)";

const REACT_ZH: StateDef[] = [
  ["Ques", "[问题]"],
  ["Tht", "[思考]"],
  ["Act", "[行动]"],
  ["Act-Inp", "[行动输入]"],
  ["Obs", "[观察]", true],
  ["Final-Tht", "[最终思考]"],
  ["Ans", "[答案]"],
];

const build = (file: string, name: string, states: StateDef[], behavior: string, constraints?: string[]) =>
  makeSpec(states, behavior, { name, file, ...(constraints ? { constraints } : {}) });

/** Gives state `name` of `ir` a grammar content (parsed by the grammar front end from `file`). */
function withGrammar(ir: SpecIR, name: string, file: string, maxDepth?: number): SpecIR {
  const text = readFileSync(file, "utf8");
  const cfg = parseGrammar(text, file);
  const span = { file, line: 1, col: 1, offset: 0, end: 0 };
  for (const st of ir.states) {
    if (st.name === name) st.content = { kind: "grammar", cfg, source: { file, inline: false, start: "root" }, ...(maxDepth ? { maxDepth } : {}), span } as SpecIR["states"][number]["content"];
  }
  return ir;
}

/**
 * Gives `ir` the tools of `toolsFile` (read by compiler/tools.ts: the tool grammars are the JSON
 * Schema front end's), tool contents for the named states, token markers (bytes in declaration
 * order) and tool constraints written as `[kind, ...tool names]`: `["before", "a", "b"]`,
 * `["at-most", 2, "b"]`, `["at-most", 1, "*"]` (each tool).
 */
function withTools(
  ir: SpecIR, toolsFile: string,
  contents: Record<string, ContentIR["kind"]>, tokenStates: string[],
  constraints: (string | number)[][],
): SpecIR {
  const tools = readTools(readFileSync(toolsFile, "utf8"), toolsFile);
  const sp = span(ir.file);
  const idx = (n: string | number) => {
    const i = tools.findIndex((t) => t.name === n);
    if (i < 0) throw new Error(`no tool ${String(n)}`);
    return i;
  };
  for (const st of ir.states) {
    const k = contents[st.name];
    if (k === "empty") st.content = { kind: "empty" };
    else if (k === "toolName" || k === "toolArgs" || k === "toolCall") st.content = { kind: k, span: sp } as ContentIR;
    const t = tokenStates.indexOf(st.name);
    if (t >= 0) st.tokenByte = TOKEN_BYTES[t]!;
  }
  for (const c of constraints) {
    if (c[0] === "before") ir.constraints.push({ kind: "toolBefore", first: idx(c[1]!), then: idx(c[2]!), span: sp });
    else if (c[2] === "*") tools.forEach((_, i) => ir.constraints.push({ kind: "toolAtMost", tool: i, n: c[1] as number, span: sp }));
    else ir.constraints.push({ kind: "toolAtMost", tool: idx(c[2]!), n: c[1] as number, span: sp });
  }
  return { ...ir, tools };
}

/** Every spec file of examples/, keyed by its path relative to the repository root. */
export const EXAMPLE_SPECS: Record<string, SpecIR> = {
  "examples/react-calculator.agent": withGrammar(build(
    "examples/react-calculator.agent", "react-calculator-agent",
    [
      ["Thought", "Thought:"],
      ["Action", "Action:", false, ["Calculator"]],
      ["Action-Input", "Action Input:"],
      ["Observation", "Observation:", true],
      ["Final-Thought", "Final Thought:"],
      ["Answer", "Answer:"],
    ],
    "(next (until (next Thought Action Action-Input Observation) Final-Thought) Answer)"),
    "Action-Input", "examples/grammars/arithmetic.gbnf"),
  "examples/tool-json.agent": withGrammar(build(
    "examples/tool-json.agent", "tool-json-agent",
    [
      ["Thought", "Thought:"],
      ["Action", "Action:", false, ["get_weather", "web_search", "send_email"]],
      ["Action-Input", "Action Input:"],
      ["Observation", "Observation:", true],
      ["Final-Answer", "Final Answer:"],
    ],
    "(next (until (next Thought Action Action-Input Observation) Thought) Final-Answer)"),
    "Action-Input", "examples/grammars/json.gbnf"),
  "examples/react.agent": build("examples/react.agent", "react-agent", REACT_COLON, REACT_COLON_BEHAVIOR),
  "examples/react-brackets.agent": build("examples/react-brackets.agent", "react-agent", REACT_BRACKETS, REACT_BRACKETS_BEHAVIOR),
  "examples/react-brackets-oneline.agent": build(
    "examples/react-brackets-oneline.agent", "react-agent", REACT_BRACKETS, REACT_BRACKETS_BEHAVIOR),
  "examples/pass.agent": build("examples/pass.agent", "pass-agent", PASS, PASS_BEHAVIOR),
  "examples/pass-oneline.agent": build("examples/pass-oneline.agent", "pass-agent", PASS, PASS_BEHAVIOR),
  "examples/rewoo.agent": build(
    "examples/rewoo.agent", "rewoo-agent",
    [
      ["Ques", "[Question]"],
      ["Plan", "[Plan]"],
      ["Act-Lbl", "[Action Label]"],
      ["Act", "[Action]"],
      ["Act-Inp", "[Action Input]"],
      ["Solver", "[Answer]", true],
    ],
    "(next Ques (until (next Plan Act-Lbl Act Act-Inp) Solver))"),
  "examples/reflexion-brackets.agent": build(
    "examples/reflexion-brackets.agent", "reflexion-agent",
    [
      ["Ques", "[Question]"],
      ["Tht", "[Thought]"],
      ["Act", "[Action]"],
      ["Act-Inp", "[Action Input]"],
      ["Obs", "[Observation]", true],
      ["Final-Tht", "[Final Thought]"],
      ["Prop-Ans", "[Proposed Answer]"],
      ["Eval", "[Evaluation]", true],
      ["Ref", "[Reflection]"],
      ["Ans", "[Answer]"],
    ],
    "(next Ques (until (next (until (next Tht Act Act-Inp Obs) Final-Tht) Prop-Ans Eval Ref) Ans))"),
  "examples/reflexion.agent": build(
    "examples/reflexion.agent", "reflexion-agent",
    [
      ...REACT_COLON,
      ["Evaluator", "Evaluation:", true],
      ["Reflection", "Reflection:"],
      ["Finish", "Generation complete!"],
    ],
    "(until (next (until (next Thought Action Action-Input Observation) Final-Thought) Answer Evaluator Reflection) Finish)"),
  "examples/cot-brackets.agent": build(
    "examples/cot-brackets.agent", "cot-agent",
    [["Ques", "[Question]"], ["Tht", "[Thought]"], ["Ans", "[Answer]"]],
    "(next Ques Tht Ans)"),
  "examples/cot.agent": build(
    "examples/cot.agent", "chain-of-thought-agent",
    [["Thought", "Let's think step by step. "], ["Answer", "Answer:"]],
    "(next Thought Answer)"),
  "examples/direct.agent": build(
    "examples/direct.agent", "direct-agent", [["Ques", "[Question]"], ["Ans", "[Answer]"]], "(next Ques Ans)"),
  "examples/chat-bot.agent": build(
    "examples/chat-bot.agent", "chat-bot-agent",
    [["Chat-Bot", "Chat Bot:"], ["User", "User:", true]],
    "(always (next Chat-Bot User))"),
  "examples/react-ablation.agent": build(
    "examples/react-ablation.agent", "react-ablation-agent",
    [["Thought", "Thought:"], ["Observation", "Observation:", true], ["Final-Thought", "Final Thought:"]],
    "(until (next Thought Observation) Final-Thought)"),
  "examples/react-zh.agent": build("examples/react-zh.agent", "react-agent", REACT_ZH, REACT_BRACKETS_BEHAVIOR),
  "examples/rewoo-zh.agent": build(
    "examples/rewoo-zh.agent", "rewoo-agent",
    [
      ["Ques", "[问题]"],
      ["Plan", "[计划]"],
      ["Act-Lbl", "[行动标签]"],
      ["Act", "[行动]"],
      ["Act-Inp", "[行动输入]"],
      ["Solver", "[答案]", true],
    ],
    "(next Ques (until (next Plan Act-Lbl Act Act-Inp) Solver))"),
  "examples/reflexion-zh.agent": build(
    "examples/reflexion-zh.agent", "reflexion-agent",
    [
      ...REACT_ZH.slice(0, 6),
      ["Prop-Ans", "[拟议答案]"],
      ["Eval", "[评估]", true],
      ["Ref", "[反思]"],
      ["Ans", "[答案]"],
    ],
    "(next Ques (until (next (until (next Tht Act Act-Inp Obs) Final-Tht) Prop-Ans Eval Ref) Ans))"),
  "examples/cot-zh.agent": build(
    "examples/cot-zh.agent", "cot-agent", [["Ques", "[问题]"], ["Tht", "[思考]"], ["Ans", "[答案]"]], "(next Ques Tht Ans)"),
  "examples/direct-zh.agent": build(
    "examples/direct-zh.agent", "direct-agent", [["Ques", "[问题]"], ["Ans", "[答案]"]], "(next Ques Ans)"),
  "examples/react-tools.agent": build(
    "examples/react-tools.agent", "react-tools-agent",
    [
      ["thought", "Thought:"],
      ["action", "Action:", false, ["Search", "Lookup"]],
      ["action-input", "Action Input:"],
      ["observation", "Observation:", true],
      ["final-thought", "Final Thought:"],
      ["answer", "Answer:"],
    ],
    "(next (until_3 (next thought action action-input observation) final-thought) answer)"),
  "examples/react-bounded.agent": build(
    "examples/react-bounded.agent", "react-bounded-agent",
    [
      ["question", "[Question]"],
      ["thought", "[Thought]"],
      ["action", "[Action]"],
      ["action-input", "[Action Input]"],
      ["observation", "[Observation]", true],
      ["final-thought", "[Final Thought]"],
      ["answer", "[Answer]"],
    ],
    "(next question (until_1_3 (next thought action action-input observation) final-thought) answer)"),
  "examples/react-limits.agent": build(
    "examples/react-limits.agent", "react-limits-agent", REACT_COLON,
    "(next (until (next Thought Action Action-Input Observation) (or Final-Thought Thought)) Answer)",
    ["(at-most 2 Action)", "(at-least 1 Action)", "(eventually Final-Thought)"]),
  "examples/react-typed.agent": withTools(build(
    "examples/react-typed.agent", "react-typed",
    [
      ["Thought", "Thought:"],
      ["Action", "Action:"],
      ["Action-Input", "Action Input:"],
      ["Observation", "Observation:", true],
      ["Final-Answer", "Final Answer:"],
    ],
    "(next (until (next Thought Action Action-Input Observation) Thought) Final-Answer)"),
    "examples/tools/travel.tools.json", { "Action": "toolName", "Action-Input": "toolArgs" }, [],
    [["before", "search_flights", "book_flight"], ["at-most", 2, "book_flight"]]),
  "examples/qwen3-tools.agent": withTools(build(
    "examples/qwen3-tools.agent", "qwen3-tools",
    [
      ["Think", "<think>"],
      ["Think-End", "</think>"],
      ["Call", "<tool_call>"],
      ["Call-End", "</tool_call>"],
      ["Turn-End", "<|im_end|>", true],
    ],
    "(next (until (next Think Think-End Call Call-End (until (next Call Call-End) Turn-End)) (next Think Think-End Turn-End)))"),
    "examples/tools/travel.tools.json", { "Call": "toolCall", "Call-End": "empty" }, ["Think", "Think-End", "Call", "Call-End", "Turn-End"],
    [["before", "search_flights", "book_flight"], ["at-most", 1, "*"]]),
};
