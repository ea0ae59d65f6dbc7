/**
 * @fileoverview Entry of the AgentSpec rules front end (seed 003; DESIGN.md §1.3).
 *
 *   parseRules(text, file)                      → RuleIR[]            (throws SpecError E08xx)
 *   checkRulesFile(text, file, knownPredicates) → { rules, summary }  (what `specc check FILE.rules` prints)
 *
 * The enforcer that runs the rules before each tool call lives in agents/rules.ts; real
 * predicates for a shell tool and an email tool in agents/rules-predicates.ts.
 */
import { SpecError, suggest } from "../diagnostics.js";
import type { PredIR, RuleIR } from "./ir.js";
import { lowerRules } from "./lower.js";
import { parseRawRules } from "./parse.js";
import { summarizeRule } from "./print.js";

export * from "./ir.js";
export { printRules, printRule, printPred, printEnforce, summarizeRule } from "./print.js";
export { suggestEnforcement } from "./lower.js";

/** Parses a rules file. Throws a SpecError (code E08xx, with a span and usually a hint) on any mistake. */
export function parseRules(text: string, file = "<input>"): RuleIR[] {
  if (text.charCodeAt(0) === 0xfeff) text = " " + text.slice(1); // a BOM: keep offsets, drop the character
  return lowerRules(parseRawRules(file, text), file);
}

/** Every use of a named predicate, in source order. */
export function predicateUses(rules: RuleIR[]): { name: string; rule: RuleIR; pred: PredIR & { kind: "named" } }[] {
  const out: { name: string; rule: RuleIR; pred: PredIR & { kind: "named" } }[] = [];
  for (const rule of rules) {
    for (let p of rule.check) {
      while (p.kind === "not") p = p.pred;
      if (p.kind === "named") out.push({ name: p.name, rule, pred: p });
    }
  }
  return out;
}

/** The distinct predicate names the rules need from the host, in order of first use. */
export function predicateNames(rules: RuleIR[]): string[] {
  return [...new Set(predicateUses(rules).map((u) => u.name))];
}

/**
 * Throws E0809 if a rule uses a predicate not in `known`. The error lists every missing name and
 * points at the first use; each further use is attached as `more` (the CLI prints them all).
 */
export function checkPredicates(rules: RuleIR[], known: Iterable<string>): void {
  const have = new Set(known);
  const missing = predicateUses(rules).filter((u) => !have.has(u.name));
  if (missing.length === 0) return;
  const names = [...new Set(missing.map((m) => m.name))];
  const registered = [...have].sort();
  const hintFor = (name: string) => [
    suggest(name, registered),
    registered.length ? `registered predicates: ${registered.join(", ")}` : "no predicate is registered",
  ].filter(Boolean).join(" ");
  const first = missing[0]!;
  const err = new SpecError("E0809",
    `unknown predicate${names.length > 1 ? "s" : ""} ${names.join(", ")} (used by ${[...new Set(missing.map((m) => "@" + m.rule.id))].join(", ")})`,
    first.pred.span, hintFor(first.name));
  (err as SpecError & { more?: SpecError[] }).more = missing.slice(1).map((m) =>
    new SpecError("E0809", `unknown predicate ${m.name} (rule @${m.rule.id})`, m.pred.span, hintFor(m.name)));
  (err as SpecError & { missing?: string[] }).missing = names;
  throw err;
}

/**
 * What `specc check FILE.rules` runs: parse, optionally check the predicate names against the ones
 * a host registers, and summarize. Throws SpecError like parseRules.
 */
export function checkRulesFile(text: string, file: string, knownPredicates?: string[]): { rules: RuleIR[]; summary: string } {
  const rules = parseRules(text, file);
  if (knownPredicates) checkPredicates(rules, knownPredicates);
  const preds = predicateNames(rules);
  const lines = [
    `${file}: ${rules.length} rule${rules.length === 1 ? "" : "s"} OK; predicates the host must supply: ${preds.length ? preds.join(", ") : "none"}`,
    ...rules.map((r) => `  ${summarizeRule(r)}`),
  ];
  for (const r of rules) {
    const never = r.check.find((p) => (p.kind === "const" && !p.value) || (p.kind === "not" && p.pred.kind === "const" && p.pred.value));
    if (never) lines.push(`  note: @${r.id} never fires: its check contains ${never.kind === "const" ? "false" : "not true"} (${never.span.line}:${never.span.col})`);
  }
  return { rules, summary: lines.join("\n") };
}
