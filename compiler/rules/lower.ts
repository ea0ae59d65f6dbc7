/**
 * @fileoverview Raw parse tree (rules/parse.ts) → RuleIR (rules/ir.ts). The grammar accepts any
 * name as a trigger, predicate or enforcement; this is where those names are checked against
 * seed 003 Fig. 3, with a did-you-mean for enforcements. Like compiler/lower.ts, it collects every
 * error it can and throws the first with the others attached as `more`.
 */
import { SpecError, suggest, type Code } from "../diagnostics.js";
import type { Span } from "../ir.js";
import {
  DEFAULT_SELF_REFLECT_TRIALS, ENFORCEMENTS, MAX_SELF_REFLECT_TRIALS,
  type EnforceIR, type JsonValue, type PredIR, type RuleIR, type TriggerIR,
} from "./ir.js";
import { tokenSpan, unescapeString, type RuleToken } from "./lexer.js";
import type { RawEnf, RawPred, RawRule, RawValue } from "./parse.js";

/** Words people write for an enforcement, mapped to the one AgentSpec means. */
const ALIASES: Record<string, string> = {
  block: "stop", deny: "stop", abort: "stop", halt: "stop", reject: "stop", refuse: "stop",
  ask_user: "user_inspection", confirm: "user_inspection", user_confirm: "user_inspection", user_approval: "user_inspection",
  inspect: "user_inspection", user_inspect: "user_inspection",
  reflect: "llm_self_reflect", self_reflect: "llm_self_reflect", llm_reflect: "llm_self_reflect", self_reflection: "llm_self_reflect",
  invoke: "invoke_action", action: "invoke_action", call_action: "invoke_action", run_action: "invoke_action",
};

export function suggestEnforcement(word: string): string | undefined {
  const alias = ALIASES[word.toLowerCase()];
  if (alias) return `did you mean ${alias}?`;
  const near = suggest(word, [...ENFORCEMENTS]);
  if (near) return near;
  const w = word.toLowerCase();
  const pre = w.length >= 4 ? ENFORCEMENTS.find((e) => e.startsWith(w) || w.startsWith(e)) : undefined;
  return pre ? `did you mean ${pre}?` : undefined;
}

const span = (file: string, a: RuleToken, b: RuleToken = a): Span =>
  ({ file, line: a.line, col: a.col, offset: a.offset, end: b.offset + b.text.length });

export function lowerRules(raw: RawRule[], file: string): RuleIR[] {
  const errors: SpecError[] = [];
  const fail = (code: Code, msg: string, at: Span, hint?: string) => { errors.push(new SpecError(code, msg, at, hint)); };
  const out: RuleIR[] = [];
  const seen = new Map<string, RuleIR>();
  for (const r of raw) {
    const rule = lowerRule(r, file, fail);
    const dup = seen.get(rule.id);
    if (dup && rule.id !== "") {
      fail("E0807", `duplicate rule id @${rule.id} (first defined at ${dup.idSpan.line}:${dup.idSpan.col})`, rule.idSpan,
        "give each rule a unique id; the enforcement log names rules by id");
    } else seen.set(rule.id, rule);
    out.push(rule);
  }
  if (errors.length > 0) {
    const first = errors[0]!;
    (first as SpecError & { more?: SpecError[] }).more = errors.slice(1);
    throw first;
  }
  return out;
}

type Fail = (code: Code, msg: string, at: Span, hint?: string) => void;

function lowerRule(r: RawRule, file: string, fail: Fail): RuleIR {
  const idSpan = tokenSpan(file, r.id);
  const id = r.id.text.slice(1);
  if (!/^[\p{L}\p{N}_][\p{L}\p{N}_.\-]*$/u.test(id)) {
    fail("E0813", id === "" ? "empty rule id: `@` must be followed by a name" : `malformed rule id @${id}`, idSpan,
      "a rule id is @ followed by letters, digits, _, . or -, starting with a letter, digit or _ (e.g. @inspect_sensitive_email)");
  }
  return {
    id,
    trigger: lowerTrigger(r.target, file, fail),
    check: r.preds.map((p) => lowerPred(p, file, fail)),
    enforce: r.enfs.map((e) => lowerEnforce(e, file, fail)),
    span: span(file, r.kw, r.end),
    idSpan,
  };
}

const NAME_SEGMENT = /^[\p{L}_][\p{L}\p{N}_]*$/u;

function lowerTrigger(t: RuleToken, file: string, fail: Fail): TriggerIR {
  const at = tokenSpan(file, t);
  if (t.text === "any") return { toolkit: "any", tool: "any", text: "any.any", span: at };
  const parts = t.text.split(".");
  if (parts.length !== 2 || !parts.every((p) => NAME_SEGMENT.test(p))) {
    const hint = parts.length === 1
      ? `a trigger names a toolkit and a tool: write ${t.text}.any for every tool of ${t.text}, or any.${t.text} for the tool ${t.text} of every toolkit`
      : parts.some((p) => p === "") ? "a trigger is Toolkit.Tool, two names joined by one dot"
      : `a trigger is Toolkit.Tool with exactly one dot (found ${parts.length - 1})`;
    fail("E0805", `malformed trigger ${t.text}: expected Toolkit.Tool`, at, hint);
    return { toolkit: "any", tool: "any", text: t.text, span: at };
  }
  return { toolkit: parts[0]!, tool: parts[1]!, text: t.text, span: at };
}

function lowerPred(p: RawPred, file: string, fail: Fail): PredIR {
  // `not` chains are lowered iteratively: the parser accepts any depth.
  const nots: RuleToken[] = [];
  let cur = p;
  while (cur.kind === "not") { nots.push(cur.tok); cur = cur.pred; }
  const t = cur.tok;
  const at = tokenSpan(file, t);
  let base: PredIR;
  if (t.text === "true" || t.text === "True") base = { kind: "const", value: true, span: at };
  else if (t.text === "false" || t.text === "False") base = { kind: "const", value: false, span: at };
  else {
    const low = t.text.toLowerCase();
    if (low === "and" || low === "or") {
      fail("E0814", `\`${t.text}\` is not a predicate`, at,
        low === "and" ? "the predicates of a check section are already a conjunction: write one per line, without `and`"
          : "a check section is a conjunction; for a disjunction write one rule per alternative");
    } else if (t.text === "any") {
      fail("E0814", "`any` is reserved for triggers and cannot name a predicate", at, "use `true` for a predicate that always holds");
    } else if (!t.text.split(".").every((s) => NAME_SEGMENT.test(s))) {
      fail("E0814", `malformed predicate name ${t.text}`, at, "a predicate name is made of letters, digits and _, in parts joined by single dots");
    }
    base = { kind: "named", name: t.text, span: at };
  }
  for (let i = nots.length - 1; i >= 0; i--) {
    base = { kind: "not", pred: base, span: { ...tokenSpan(file, nots[i]!), end: at.end } };
  }
  return base;
}

function lowerEnforce(e: RawEnf, file: string, fail: Fail): EnforceIR {
  const at = span(file, e.name, e.close);
  const name = e.name.text;
  const args = e.args;
  const argSpan = (v: RawValue): Span => span(file, v.tok, "close" in v ? v.close : v.tok);
  switch (name) {
    case "stop":
      if (args !== null) fail("E0811", "stop takes no arguments", at, "write stop");
      return { kind: "stop", span: at };
    case "user_inspection": {
      const options: { name: string; span: Span }[] = [];
      for (const a of args ?? []) {
        if (a.kind === "name") options.push({ name: a.tok.text, span: tokenSpan(file, a.tok) });
        else fail("E0811", "user_inspection options are names", argSpan(a), "e.g. user_inspection(add_contact, remove_sensitive_info) (Fig. 1 of seed 003)");
      }
      return { kind: "user_inspection", options, span: at };
    }
    case "llm_self_reflect": {
      let maxTrials = DEFAULT_SELF_REFLECT_TRIALS;
      const usage = `write llm_self_reflect (at most ${DEFAULT_SELF_REFLECT_TRIALS} revisions) or llm_self_reflect(N) with 1 <= N <= ${MAX_SELF_REFLECT_TRIALS}`;
      if (args !== null) {
        const a = args[0];
        if (args.length !== 1 || !a || a.kind !== "number") {
          fail("E0811", "llm_self_reflect takes one argument, the number of revisions to ask for", args.length > 1 ? argSpan(args[1]!) : a ? argSpan(a) : at, usage);
        } else {
          const n = Number(a.tok.text);
          if (!Number.isInteger(n) || n < 1 || n > MAX_SELF_REFLECT_TRIALS) {
            fail("E0811", `bad llm_self_reflect bound ${a.tok.text}`, argSpan(a), usage);
          } else maxTrials = n;
        }
      }
      return { kind: "llm_self_reflect", maxTrials, explicitBound: args !== null, span: at };
    }
    case "invoke_action":
      return lowerInvoke(e, at, file, fail);
    default: {
      fail("E0804", `unknown enforcement ${name}`, tokenSpan(file, e.name),
        [suggestEnforcement(name), "enforcements: user_inspection, llm_self_reflect, invoke_action(Name, {...}), stop"].filter(Boolean).join(" "));
      return { kind: "stop", span: at };
    }
  }
}

function lowerInvoke(e: RawEnf, at: Span, file: string, fail: Fail): EnforceIR {
  const bad: EnforceIR = { kind: "invoke_action", action: "", args: {}, argSpans: {}, span: at };
  const usage = 'write invoke_action(Name, {"key": value, ...}), e.g. invoke_action(BackupFiles, {"dir": "/tmp/backup"})';
  const args = e.args;
  if (args === null || args.length === 0) {
    fail("E0806", "invoke_action needs an action name and an argument object", at, usage);
    return bad;
  }
  const [nameArg, objArg, ...extra] = args;
  let ok = true;
  if (nameArg!.kind !== "name") {
    fail("E0806", "the first argument of invoke_action is the action's name (a name, not a literal)", valueSpan(file, nameArg!),
      nameArg!.kind === "string" ? "write the name without quotes" : usage);
    ok = false;
  }
  if (!objArg) {
    fail("E0806", "invoke_action needs an argument object after the action name", at, `${usage}; write {} for none`);
    return bad;
  }
  if (objArg.kind !== "object") {
    fail("E0806", "the second argument of invoke_action must be an object {\"key\": value, ...}", valueSpan(file, objArg), usage);
    return bad;
  }
  if (extra.length > 0) {
    fail("E0806", "invoke_action takes two arguments: the action name and one object", valueSpan(file, extra[0]!), usage);
    ok = false;
  }
  const argSpans: { [key: string]: Span } = {};
  const obj = lowerObject(objArg, file, fail, argSpans);
  if (!ok || obj === undefined) return bad;
  return { kind: "invoke_action", action: nameArg!.tok.text, args: obj, argSpans, span: at };
}

function valueSpan(file: string, v: RawValue): Span {
  return span(file, v.tok, "close" in v ? v.close : v.tok);
}

function lowerObject(v: Extract<RawValue, { kind: "object" }>, file: string, fail: Fail, spans?: { [key: string]: Span }): { [key: string]: JsonValue } | undefined {
  const entries: [string, JsonValue][] = [];
  const seen = new Set<string>();
  let ok = true;
  for (const { key, value } of v.pairs) {
    const k = key.type === "string" ? unescapeString(file, key) : key.text;
    if (seen.has(k)) {
      fail("E0806", `duplicate key ${JSON.stringify(k)} in invoke_action arguments`, tokenSpan(file, key), "each key may appear once");
      ok = false;
      continue;
    }
    seen.add(k);
    const val = lowerValue(value, file, fail);
    if (val === undefined) { ok = false; continue; }
    entries.push([k, val]);
    if (spans) Object.defineProperty(spans, k, { value: valueSpan(file, value), enumerable: true, writable: true, configurable: true });
  }
  // Object.fromEntries defines own properties, so a key such as "__proto__" stays plain data.
  return ok ? Object.fromEntries(entries) : undefined;
}

function lowerValue(v: RawValue, file: string, fail: Fail): JsonValue | undefined {
  switch (v.kind) {
    case "string": return unescapeString(file, v.tok);
    case "number": {
      const n = Number(v.tok.text);
      if (!Number.isFinite(n)) {
        fail("E0806", `number ${v.tok.text} is out of range`, tokenSpan(file, v.tok));
        return undefined;
      }
      return n;
    }
    case "name":
      switch (v.tok.text) {
        case "true": case "True": return true;
        case "false": case "False": return false;
        case "null": case "None": return null;
      }
      fail("E0806", `bare word ${v.tok.text} in invoke_action arguments`, tokenSpan(file, v.tok),
        `values are JSON-like literals: quote it ("${v.tok.text}"), or write a number, true, false, null, [...] or {...}`);
      return undefined;
    case "array": {
      const items: JsonValue[] = [];
      let ok = true;
      for (const it of v.items) {
        const x = lowerValue(it, file, fail);
        if (x === undefined) ok = false; else items.push(x);
      }
      return ok ? items : undefined;
    }
    case "object":
      return lowerObject(v, file, fail);
  }
}
