/**
 * @fileoverview Rule text → raw parse tree. moo tokenizes (rules/lexer.ts), nearley parses
 * (rules/rules.ne, compiled by `npm run build:grammar` to rules.generated.ts), and lowering
 * (rules/lower.ts) turns the tree into RuleIR.
 *
 * Nearley only says "unexpected token"; the paper's users deserve better. When it fails, we read
 * the terminals its last parse column was waiting for (the Earley states whose next symbol is a
 * token) and the context of the failure (the open rule, the section, an open argument list), and
 * name the actual mistake: a missing `end` or `enforce`, a malformed trigger, bad invoke_action
 * arguments. Every diagnostic points at the token where parsing stopped (or just after the last
 * token at end of input), so it always lies inside the text.
 */
import type nearley from "nearley";
import compiled from "./rules.generated.js";
import { nearleyParser } from "../frontend/nearley-parser.js";
import { SpecError, spanAt, type Code } from "../diagnostics.js";
import type { Span } from "../ir.js";
import { ENFORCEMENTS } from "./ir.js";
import { tokenizeRules, tokenSpan, type RuleToken } from "./lexer.js";


/** The deepest nesting of ( [ { accepted; deeper input is rejected before parsing (no recursion blow-up later). */
export const MAX_NESTING = 32;

export interface RawRule { kind: "rule"; kw: RuleToken; id: RuleToken; target: RuleToken; preds: RawPred[]; enfs: RawEnf[]; end: RuleToken }
export type RawPred = { kind: "name"; tok: RuleToken } | { kind: "not"; tok: RuleToken; pred: RawPred };
export interface RawEnf { name: RuleToken; args: RawValue[] | null; close: RuleToken }
export type RawValue =
  | { kind: "string" | "number" | "name"; tok: RuleToken }
  | { kind: "array"; tok: RuleToken; items: RawValue[]; close: RuleToken }
  | { kind: "object"; tok: RuleToken; pairs: { key: RuleToken; value: RawValue }[]; close: RuleToken };

/** What rules.ne builds: lists as cons cells (see the note there). */
type Cons<T> = { prev: Cons<T>; item: T } | null;
type GValue =
  | { kind: "string" | "number" | "name"; tok: RuleToken }
  | { kind: "array"; tok: RuleToken; items: Cons<GValue>; close: RuleToken }
  | { kind: "object"; tok: RuleToken; pairs: Cons<{ key: RuleToken; value: GValue }>; close: RuleToken };
interface GEnf { name: RuleToken; args: Cons<GValue> | undefined | null; close: RuleToken }
interface GRule { kind: "rule"; kw: RuleToken; id: RuleToken; target: RuleToken; preds: Cons<RawPred>; enfs: Cons<GEnf>; end: RuleToken }

function list<T>(l: Cons<T>): T[] {
  const out: T[] = [];
  for (let c = l; c; c = c.prev) out.push(c.item);
  return out.reverse();
}

function value(v: GValue): RawValue {
  switch (v.kind) {
    case "array": return { kind: "array", tok: v.tok, items: list(v.items).map(value), close: v.close };
    case "object": return { kind: "object", tok: v.tok, pairs: list(v.pairs).map((p) => ({ key: p.key, value: value(p.value) })), close: v.close };
    default: return v;
  }
}

export function parseRawRules(file: string, text: string): RawRule[] {
  const toks = tokenizeRules(file, text);
  if (toks.length === 0) {
    throw new SpecError("E0808", "empty input: no rule found", spanAt(file, text, 0, 0),
      "a rules file holds one or more `rule @id trigger Toolkit.Tool check ... enforce ... end`; see examples/rules/email.rules");
  }
  checkNesting(file, toks);
  const parser = nearleyParser(compiled, toks);
  try {
    parser.feed("");
  } catch (e) {
    const at = (e as { offset?: number }).offset;
    if (typeof at !== "number") throw e;
    throw syntaxError(file, text, toks, at, expectedTerminals(parser, at));
  }
  const results = parser.results as Cons<GRule>[];
  if (results.length === 0) throw syntaxError(file, text, toks, toks.length, expectedTerminals(parser, toks.length));
  // The grammar is unambiguous, so there is exactly one result.
  return list(results[0]!).map((r) => ({
    ...r,
    preds: list(r.preds),
    // `stop` has no argument list (args undefined in the grammar's output); `stop()` has an empty one.
    enfs: list(r.enfs).map((e) => ({ name: e.name, args: e.args === undefined ? null : list(e.args).map(value), close: e.close })),
  }));
}

/** The token types the parser could have accepted after `index` tokens. */
function expectedTerminals(parser: nearley.Parser, index: number): Set<string> {
  const table = (parser as unknown as { table: { states: { rule: { symbols: unknown[] }; dot: number }[] }[] }).table;
  const column = table[index];
  const out = new Set<string>();
  for (const st of column?.states ?? []) {
    const sym = st.rule.symbols[st.dot] as { type?: string } | string | undefined;
    if (sym && typeof sym === "object" && typeof sym.type === "string") out.add(sym.type);
  }
  return out;
}

function checkNesting(file: string, toks: RuleToken[]): void {
  let depth = 0;
  for (const t of toks) {
    if (t.type === "lparen" || t.type === "lbracket" || t.type === "lbrace") {
      if (++depth > MAX_NESTING) {
        throw new SpecError("E0801", `arguments nested more than ${MAX_NESTING} levels deep`, tokenSpan(file, t),
          "invoke_action arguments are small JSON-like literals; flatten this value");
      }
    } else if (t.type === "rparen" || t.type === "rbracket" || t.type === "rbrace") depth = Math.max(0, depth - 1);
  }
}

const SHOW: Record<string, string> = {
  rule: "`rule`", trigger: "`trigger`", check: "`check`", enforce: "`enforce`", end: "`end`", not: "`not`",
  ruleid: "a rule id (@name)", name: "a name", string: "a string", number: "a number",
  lparen: "'('", rparen: "')'", lbrace: "'{'", rbrace: "'}'", lbracket: "'['", rbracket: "']'",
  comma: "','", colon: "':'", bang: "'!'",
};

function describe(t: RuleToken | undefined): string {
  if (!t) return "end of input";
  switch (t.type) {
    case "name": return `\`${t.text}\``;
    case "ruleid": return `rule id ${t.text}`;
    case "string": return `string ${t.text.length > 40 ? t.text.slice(0, 37) + "..." : t.text}`;
    case "number": return `number ${t.text}`;
    default: return SHOW[t.type] ?? `\`${t.text}\``;
  }
}

const ENFORCE_HINT = "enforcements: user_inspection, llm_self_reflect (or llm_self_reflect(N)), invoke_action(Name, {\"key\": value}), stop";
const INVOKE_HINT = 'write invoke_action(Name, {"key": value, ...}): an action name, then an object of "string": value pairs';

/** Builds the diagnostic for a parse that stopped before token `index` (toks.length = end of input). */
function syntaxError(file: string, text: string, toks: RuleToken[], index: number, expected: Set<string>): SpecError {
  const tok = toks[index];
  const prev = toks[index - 1];
  const span: Span = tok ? tokenSpan(file, tok)
    : prev ? spanAt(file, text, prev.offset + prev.text.length, prev.offset + prev.text.length) : spanAt(file, text, 0, 0);
  const found = describe(tok);
  const err = (code: Code, msg: string, hint?: string, at: Span = span) => new SpecError(code, msg, at, hint);

  // Reconstruct the context of the prefix that parsed: the open rule, its sections, open brackets.
  let open: { kw: RuleToken; id?: RuleToken; sections: Map<string, RuleToken>; checkNames: RuleToken[] } | undefined;
  const brackets: { tok: RuleToken; owner?: RuleToken }[] = [];
  for (let k = 0; k < index; k++) {
    const t = toks[k]!;
    switch (t.type) {
      case "rule": open = { kw: t, sections: new Map(), checkNames: [] }; break;
      case "ruleid": if (open && !open.id) open.id = t; break;
      case "trigger": case "check": case "enforce": open?.sections.set(t.type, t); break;
      case "end": if (brackets.length === 0) open = undefined; break;
      case "name":
        if (open && open.sections.has("check") && !open.sections.has("enforce") && brackets.length === 0) open.checkNames.push(t);
        break;
      case "lparen": case "lbracket": case "lbrace":
        brackets.push({ tok: t, owner: t.type === "lparen" && toks[k - 1]?.type === "name" ? toks[k - 1] : undefined });
        break;
      case "rparen": case "rbracket": case "rbrace": brackets.pop(); break;
    }
  }
  const ruleName = open?.id ? `rule ${open.id.text}` : "this rule";
  const where = (t: RuleToken) => `${t.line}:${t.col}`;
  const expectList = [...expected].map((e) => SHOW[e] ?? e).sort().join(", ");

  // Inside an enforcement's argument list.
  if (brackets.length > 0) {
    const owner = brackets[0]!.owner;
    const unclosed = !tok || tok.type === "rule" || tok.type === "end" || tok.type === "enforce" || tok.type === "check" || tok.type === "trigger";
    const what = unclosed
      ? `the '${brackets[brackets.length - 1]!.tok.text}' opened at ${where(brackets[brackets.length - 1]!.tok)} is never closed (found ${found})`
      : `expected ${expectList}, found ${found}`;
    if (owner?.text === "invoke_action") return err("E0806", `malformed invoke_action arguments: ${what}`, INVOKE_HINT);
    if (owner && (ENFORCEMENTS as readonly string[]).includes(owner.text)) {
      return err("E0811", `malformed ${owner.text} arguments: ${what}`,
        owner.text === "llm_self_reflect" ? "write llm_self_reflect or llm_self_reflect(N) with N the number of revisions to ask for"
          : owner.text === "user_inspection" ? "write user_inspection or user_inspection(option, option, ...)" : "write stop, without arguments");
    }
    return err("E0801", `syntax error in an argument list: ${what}`);
  }

  // Between rules.
  if (!open) {
    if (tok?.type === "end") return err("E0801", "`end` without a matching `rule`", "remove it, or start a rule before it with `rule @id`");
    return err("E0801", `expected \`rule\`, found ${found}`,
      "a rules file is a sequence of `rule @id trigger Toolkit.Tool check ... enforce ... end`");
  }

  if (expected.has("ruleid")) {
    return err("E0813", `expected a rule id after \`rule\`, found ${found}`,
      tok?.type === "name" ? `rule ids start with @: write rule @${tok.text}` : "write rule @name");
  }
  if (expected.has("trigger")) {
    return err("E0813", `${ruleName} has no \`trigger\`: expected \`trigger Toolkit.Tool\`, found ${found}`,
      tok?.type === "name" ? `write trigger ${tok.text}` : "every rule starts with `rule @id` then `trigger Toolkit.Tool` (any as toolkit or tool matches every one)");
  }
  if (prev?.type === "trigger") {
    return err("E0805", `malformed trigger: expected Toolkit.Tool after \`trigger\`, found ${found}`,
      tok?.type === "string" ? "write the trigger without quotes, e.g. trigger Gmail.SendEmail" : "e.g. trigger Gmail.SendEmail, trigger any.SendEmail, trigger Gmail.any, or trigger any");
  }
  if (expected.has("check")) {
    if (tok?.type === "name" || tok?.type === "number" || tok?.type === "ruleid") {
      return err("E0805", `malformed trigger: unexpected ${found} after ${prev?.text ?? "the trigger"}`,
        tok.type === "name" && prev?.type === "name" ? `a trigger is one Toolkit.Tool: write ${prev.text}.${tok.text}` : "a trigger is one Toolkit.Tool, e.g. Gmail.SendEmail");
    }
    return err("E0813", `${ruleName} has no \`check\` section (found ${found} after the trigger)`,
      "write `check` after the trigger; with no predicate after it, the rule fires on every matching call");
  }

  // In the check section.
  if (expected.has("enforce")) {
    const misplaced = open.checkNames.find((n) => (ENFORCEMENTS as readonly string[]).includes(n.text));
    if (misplaced && (!tok || tok.type === "end" || tok.type === "rule" || tok.type === "lparen")) {
      return err("E0803", `missing \`enforce\` before ${misplaced.text} in ${ruleName}`,
        `write \`enforce\` on the line before ${misplaced.text}: without it, ${misplaced.text} reads as a predicate`, tokenSpan(file, misplaced));
    }
    if (!tok || tok.type === "end" || tok.type === "rule") {
      return err("E0803", `${ruleName} has no \`enforce\` section (found ${found})`,
        `add \`enforce\` and at least one enforcement before \`end\`; ${ENFORCE_HINT}`);
    }
    if (tok.type === "lparen") {
      return err("E0814", `predicates take no arguments (found '(' after ${prev?.text ?? "a predicate"})`,
        "a predicate is a name the host registers; its function receives the tool call itself");
    }
    return err("E0814", `expected a predicate, \`not\` or \`enforce\`, found ${found}`,
      "a predicate is true, false, not P, !P, or a name the host registers (letters, digits, _ and .)");
  }
  if (prev && (prev.type === "not" || prev.type === "bang")) {
    return err("E0814", `\`${prev.text}\` needs a predicate after it, found ${found}`, "e.g. not is_internal_receiver");
  }

  // In the enforce section.
  if (open.sections.has("enforce")) {
    if (expected.has("end")) {
      if (!tok || tok.type === "rule") {
        return err("E0802", `missing \`end\`: ${ruleName} (opened at ${where(open.kw)}) is not closed${tok ? " before the next rule" : ""}`,
          "write `end` after the rule's last enforcement");
      }
      return err("E0801", `expected an enforcement or \`end\`, found ${found}`,
        tok.type === "check" || tok.type === "trigger" ? `each rule has one \`${tok.type}\`; did you forget \`end\` and \`rule @id\` before it?` : ENFORCE_HINT);
    }
    if (tok?.type === "end") {
      return err("E0803", `\`enforce\` in ${ruleName} lists no enforcement`, `give at least one; ${ENFORCE_HINT}`);
    }
    if (!tok || tok.type === "rule") {
      return err("E0803", `\`enforce\` in ${ruleName} lists no enforcement, and the rule has no \`end\``, ENFORCE_HINT);
    }
    return err("E0801", `expected an enforcement, found ${found}`, ENFORCE_HINT);
  }
  return err("E0801", `syntax error: expected ${expectList || "nothing more"}, found ${found}`);
}
