/**
 * @fileoverview RuleIR → canonical rule text, and the one-line summaries `specc check` prints.
 * `parseRules(printRules(rules))` gives back the same rules (spans aside): the fuzz/property tests
 * in tests/compiler/rules.test.ts and tests/agents/rules.test.ts rely on it.
 */
import type { EnforceIR, JsonValue, PredIR, RuleIR } from "./ir.js";

export function printPred(p: PredIR): string {
  switch (p.kind) {
    case "const": return p.value ? "true" : "false";
    case "named": return p.name;
    case "not": return `not ${printPred(p.pred)}`;
  }
}

function printJson(v: JsonValue): string {
  if (Array.isArray(v)) return `[${v.map(printJson).join(", ")}]`;
  if (v !== null && typeof v === "object") return `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}: ${printJson(x)}`).join(", ")}}`;
  return JSON.stringify(v);
}

export function printEnforce(e: EnforceIR): string {
  switch (e.kind) {
    case "stop": return "stop";
    case "user_inspection": return e.options.length ? `user_inspection(${e.options.map((o) => o.name).join(", ")})` : "user_inspection";
    case "llm_self_reflect": return e.explicitBound ? `llm_self_reflect(${e.maxTrials})` : "llm_self_reflect";
    case "invoke_action": return `invoke_action(${e.action}, ${printJson(e.args)})`;
  }
}

export function printRule(r: RuleIR): string {
  return [
    `rule @${r.id}`,
    `trigger ${r.trigger.text === "any.any" ? "any" : r.trigger.text}`,
    "check",
    ...r.check.map((p) => `    ${printPred(p)}`),
    "enforce",
    ...r.enforce.map((e) => `    ${printEnforce(e)}`),
    "end",
  ].join("\n");
}

export function printRules(rules: RuleIR[]): string {
  return rules.map(printRule).join("\n\n") + "\n";
}

/** `@id  Toolkit.Tool  if p ∧ q  →  e1; e2` */
export function summarizeRule(r: RuleIR): string {
  const cond = r.check.length === 0 ? "always" : `if ${r.check.map(printPred).join(" and ")}`;
  return `@${r.id}: on ${r.trigger.text}, ${cond} -> ${r.enforce.map(printEnforce).join("; ")}`;
}
