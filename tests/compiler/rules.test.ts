/**
 * AgentSpec rules (seed 003), the front end: compiler/rules (moo + nearley + lowering) on the
 * paper's examples, its diagnostics on the broken fixtures (tests/fixtures/rules/broken), and a
 * parser fuzz. The enforcer: tests/agents/rules.test.ts; the predicates: rules-predicates.test.ts.
 */
import { readdirSync, readFileSync } from "node:fs";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { formatDiagnostic, SpecError } from "../../compiler/diagnostics.js";
import { checkRulesFile, DEFAULT_SELF_REFLECT_TRIALS, parseRules, predicateNames, printRules, type RuleIR } from "../../compiler/rules/index.js";
import { defaultPredicates } from "../../agents/rules-predicates.js";

const FIX = "tests/fixtures/rules";
const read = (p: string) => readFileSync(p, "utf8");

/** The IR without spans, for structural comparisons. */
function strip(x: unknown): unknown {
  if (Array.isArray(x)) return x.map(strip);
  if (x && typeof x === "object") {
    return Object.fromEntries(Object.entries(x).filter(([k]) => !/span$/i.test(k) && k !== "argSpans").map(([k, v]) => [k, strip(v)]));
  }
  return x;
}

function diag(text: string, file = "t.rules", known?: string[]): SpecError {
  try {
    checkRulesFile(text, file, known);
  } catch (e) {
    if (e instanceof SpecError) return e;
    throw e;
  }
  throw new Error("expected a diagnostic");
}

describe("rules front end: the paper's examples parse as printed", () => {
  it("Fig. 1 (inspect sensitive email), with user_inspection's options spanning two lines", () => {
    const [r, ...rest] = parseRules(read(`${FIX}/paper-fig1.rules`), "fig1.rules");
    expect(rest).toEqual([]);
    expect(strip(r)).toEqual({
      id: "inspect_sensitive_email",
      trigger: { toolkit: "Gmail", tool: "SendEmail", text: "Gmail.SendEmail" },
      check: [{ kind: "named", name: "contains_sensitive_information" }, { kind: "named", name: "has_external_receiver" }],
      enforce: [{ kind: "user_inspection", options: [{ name: "add_contact" }, { name: "remove_sensitive_info" }, { name: "remove_external_receiver" }] }],
    });
    expect(r!.span).toMatchObject({ file: "fig1.rules", line: 1, col: 1 });
    expect(r!.idSpan).toMatchObject({ line: 1, col: 6 });
    expect(r!.trigger.span).toMatchObject({ line: 2, col: 9 });
    expect(r!.check[1]!.span).toMatchObject({ line: 5, col: 5 });
    expect(r!.enforce[0]!.span).toMatchObject({ line: 7, col: 5 });
    const u = r!.enforce[0]!;
    expect(u.kind === "user_inspection" && u.options[2]!.span).toMatchObject({ line: 8, col: 21 });
  });

  it("Fig. 2 (rule @check_, an id ending in _)", () => {
    const rules = parseRules(read(`${FIX}/paper-fig2.rules`), "fig2.rules");
    expect(strip(rules)).toEqual([{
      id: "check_",
      trigger: { toolkit: "Terminal", tool: "Execute", text: "Terminal.Execute" },
      check: [{ kind: "named", name: "is_delete_important_file" }],
      enforce: [{ kind: "user_inspection", options: [] }],
    }]);
  });

  it("the listings with their line-number gutter are the same text once the gutter is removed", () => {
    for (const n of [1, 2]) {
      const numbered = read(`${FIX}/paper-fig${n}-numbered.txt`);
      expect(numbered.replace(/^\d+ /gm, "")).toBe(read(`${FIX}/paper-fig${n}.rules`));
    }
  });

  it("DESIGN.md §1.3's example", () => {
    const [r] = parseRules(read(`${FIX}/design-1.3.rules`), "d.rules");
    expect(r!.enforce).toEqual([{ kind: "user_inspection", options: [], span: expect.anything() }]);
  });

  it("the examples parse, and every predicate they use is implemented", () => {
    for (const f of ["shell.rules", "email.rules"]) {
      const { rules, summary } = checkRulesFile(read(`examples/rules/${f}`), `examples/rules/${f}`, Object.keys(defaultPredicates));
      expect(rules.length).toBeGreaterThanOrEqual(3);
      expect(summary).toContain(`examples/rules/${f}: ${rules.length} rules OK`);
      for (const r of rules) expect(summary).toContain(`@${r.id}:`);
    }
  });

  it("Fig. 3's grammar: any, True/False, not/!/¬, every enforcement, comments, JSON-like values", () => {
    const text = `
      // comment
      rule @all_forms   # another comment
      trigger any
      check
          true
          True
          not false
          !False
          ¬ not ns.dotted_pred
          not not p2
      enforce
          llm_self_reflect
          llm_self_reflect(5)
          user_inspection()
          invoke_action(Notify, {"s": "a\\"b\\u00e9\\n", 'single': 'it\\'s', bare_key: -1.5e2, "t": true, "f": False, "n": null, "N": None, "arr": [1, [2], {}], "obj": {"x": [],},})
          invoke_action(Ns.Action, {})
          stop
      end
      rule @kit_any trigger Gmail.any check enforce stop end
      rule @tool_any trigger any.SendEmail check enforce stop end
    `;
    const [r, kit, tool] = parseRules(text, "forms.rules");
    expect(r!.trigger).toMatchObject({ toolkit: "any", tool: "any", text: "any.any" });
    expect(kit!.trigger).toMatchObject({ toolkit: "Gmail", tool: "any" });
    expect(tool!.trigger).toMatchObject({ toolkit: "any", tool: "SendEmail" });
    expect(strip(r!.check)).toEqual([
      { kind: "const", value: true },
      { kind: "const", value: true },
      { kind: "not", pred: { kind: "const", value: false } },
      { kind: "not", pred: { kind: "const", value: false } },
      { kind: "not", pred: { kind: "not", pred: { kind: "named", name: "ns.dotted_pred" } } },
      { kind: "not", pred: { kind: "not", pred: { kind: "named", name: "p2" } } },
    ]);
    expect(strip(r!.enforce)).toEqual([
      { kind: "llm_self_reflect", maxTrials: DEFAULT_SELF_REFLECT_TRIALS, explicitBound: false },
      { kind: "llm_self_reflect", maxTrials: 5, explicitBound: true },
      { kind: "user_inspection", options: [] },
      {
        kind: "invoke_action", action: "Notify",
        args: { s: 'a"b\u00e9\n', single: "it's", bare_key: -150, t: true, f: false, n: null, N: null, arr: [1, [2], {}], obj: { x: [] } },
      },
      { kind: "invoke_action", action: "Ns.Action", args: {} },
      { kind: "stop" },
    ]);
    expect(predicateNames([r!])).toEqual(["ns.dotted_pred", "p2"]);
  });

  it("a key named __proto__ stays plain data", () => {
    const [r] = parseRules('rule @p trigger a.b check enforce invoke_action(A, {"__proto__": {"polluted": true}}) end');
    const e = r!.enforce[0]!;
    expect(e.kind === "invoke_action" && Object.keys(e.args)).toEqual(["__proto__"]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("printRules gives text that parses back to the same rules", () => {
    for (const f of [`${FIX}/paper-fig1.rules`, `${FIX}/paper-fig2.rules`, "examples/rules/shell.rules", "examples/rules/email.rules"]) {
      const rules = parseRules(read(f), f);
      expect(strip(parseRules(printRules(rules), "printed.rules"))).toEqual(strip(rules));
    }
  });
});

describe("rules diagnostics (E08xx) on broken fixtures", () => {
  // [fixture, code, line, col, a fragment of the message or hint]
  const cases: [string, string, number, number, string][] = [
    ["missing-end.rules", "E0802", 8, 1, "rule @first (opened at 1:1) is not closed before the next rule"],
    ["missing-end-eof.rules", "E0802", 6, 9, "missing `end`"],
    ["missing-enforce.rules", "E0803", 5, 1, "has no `enforce` section"],
    ["enforce-as-predicate.rules", "E0803", 5, 5, "missing `enforce` before user_inspection"],
    ["empty-enforce.rules", "E0803", 6, 1, "lists no enforcement"],
    ["unknown-enforcement.rules", "E0804", 6, 5, "did you mean user_inspection?"],
    ["unknown-enforcement-alias.rules", "E0804", 6, 5, "did you mean stop?"],
    ["trigger-no-tool.rules", "E0805", 2, 9, "write Gmail.any"],
    ["trigger-space.rules", "E0805", 2, 15, "write Gmail.SendEmail"],
    ["trigger-three-parts.rules", "E0805", 2, 9, "exactly one dot"],
    ["trigger-missing.rules", "E0805", 3, 1, "expected Toolkit.Tool after `trigger`"],
    ["invoke-missing-colon.rules", "E0806", 6, 34, "expected ':'"],
    ["invoke-bare-word.rules", "E0806", 6, 35, 'quote it ("tmp")'],
    ["invoke-no-object.rules", "E0806", 5, 5, "needs an argument object"],
    ["invoke-unclosed.rules", "E0806", 6, 1, "opened at 5:18 is never closed"],
    ["invoke-duplicate-key.rules", "E0806", 5, 51, 'duplicate key "to"'],
    ["duplicate-id.rules", "E0807", 8, 6, "first defined at 1:6"],
    ["empty.rules", "E0808", 1, 1, "no rule found"],
    ["comments-only.rules", "E0808", 1, 1, "no rule found"],
    ["unterminated-string.rules", "E0810", 5, 35, "unterminated string"],
    ["bad-character.rules", "E0810", 4, 27, "need no separator"],
    ["reflect-bad-bound.rules", "E0811", 6, 22, "1 <= N <= 100"],
    ["stop-with-args.rules", "E0811", 5, 5, "stop takes no arguments"],
    ["missing-rule-id.rules", "E0813", 1, 6, "write rule @inspect_email"],
    ["missing-trigger.rules", "E0813", 2, 1, "has no `trigger`"],
    ["missing-check.rules", "E0813", 3, 1, "has no `check` section"],
    ["and-in-check.rules", "E0814", 4, 36, "without `and`"],
    ["dangling-not.rules", "E0814", 6, 1, "`not` needs a predicate"],
    ["predicate-with-args.rules", "E0814", 4, 20, "predicates take no arguments"],
    ["stray-end.rules", "E0801", 7, 1, "`end` without a matching `rule`"],
  ];

  it("every broken fixture is covered", () => {
    const files = readdirSync(`${FIX}/broken`).filter((f) => f.endsWith(".rules") && f !== "unknown-predicate.rules");
    expect(files.sort()).toEqual(cases.map((c) => c[0]).sort());
  });

  it.each(cases)("%s → %s at %i:%i", (file, code, line, col, fragment) => {
    const text = read(`${FIX}/broken/${file}`);
    const e = diag(text, file);
    expect(e.code).toBe(code);
    expect(e.span).toMatchObject({ file, line, col });
    expect(`${e.message} ${e.hint ?? ""}`).toContain(fragment);
    const printed = formatDiagnostic(e, text);
    expect(printed.split("\n")[0]).toBe(`${file}:${line}:${col}: error[${code}]: ${e.message}`);
    expect(printed).toMatch(/\n\s*\d+ \| .*\n\s+\| +\^+/); // the source line and a caret
  });

  it("unknown predicates (checked against the host's names): E0809 lists every missing name, with did-you-mean", () => {
    const text = read(`${FIX}/broken/unknown-predicate.rules`);
    const e = diag(text, "u.rules", Object.keys(defaultPredicates));
    expect(e.code).toBe("E0809");
    expect(e.message).toBe("unknown predicates contains_sensitive_informaton, is_safe_command (used by @email, @shell)");
    expect(e.span).toMatchObject({ line: 4, col: 5 });
    expect(e.hint).toContain("did you mean contains_sensitive_information?");
    const more = (e as SpecError & { more?: SpecError[] }).more!;
    expect(more.map((m) => [m.code, m.span?.line, m.span?.col])).toEqual([["E0809", 13, 9]]);
    // Without a list of known predicates the same file is fine.
    expect(checkRulesFile(text, "u.rules").rules).toHaveLength(2);
  });

  it("several lowering errors are reported together", () => {
    const e = diag("rule @a trigger X check enforce user_inspect end\nrule @a trigger Y.Z check enforce stop(1) end");
    const all = [e, ...((e as SpecError & { more?: SpecError[] }).more ?? [])].map((x) => x.code);
    expect(all).toEqual(["E0805", "E0804", "E0811", "E0807"]);
  });

  it("a rule that can never fire is noted in the summary", () => {
    expect(checkRulesFile("rule @off trigger a.b check false enforce stop end", "n.rules").summary)
      .toContain("note: @off never fires: its check contains false (1:29)");
  });
});


// ───────────────────────────── fuzz ─────────────────────────────

function outcome(text: string): RuleIR[] | SpecError {
  try {
    return parseRules(text, "fuzz.rules");
  } catch (e) {
    if (!(e instanceof SpecError)) throw e;
    expect(e.code).toMatch(/^E08\d\d$/);
    expect(e.span).not.toBeNull();
    expect(e.span!.file).toBe("fuzz.rules");
    expect(e.span!.line).toBeGreaterThanOrEqual(1);
    expect(e.span!.line).toBeLessThanOrEqual(text.split("\n").length);
    expect(e.span!.col).toBeGreaterThanOrEqual(1);
    expect(e.span!.offset).toBeLessThanOrEqual(text.length);
    formatDiagnostic(e, text);
    return e;
  }
}

describe("rules parser fuzz", () => {
  const samples = [
    ...["shell.rules", "email.rules"].map((f) => read(`examples/rules/${f}`)),
    read(`${FIX}/paper-fig1.rules`), read(`${FIX}/paper-fig2.rules`),
    ...readdirSync(`${FIX}/broken`).map((f) => read(`${FIX}/broken/${f}`)),
  ];

  it("random token soups end in rules or a positioned E08xx diagnostic", () => {
    const token = fc.constantFrom("rule", "rule", "@r", "@", "@r2", "trigger", "check", "enforce", "end", "end", "not", "!", "¬", "any",
      "Gmail.SendEmail", "any.X", "A.", "A.B.C", "p", "q", "true", "False", "and", "user_inspection", "llm_self_reflect", "invoke_action",
      "stop", "block", "(", ")", "{", "}", "[", "]", ",", ":", "\"k\"", "'v'", "\"open", "1", "-2.5", "0", "null", "#c\n", "//c\n", "\n", " ", ";", ".", "é", "\\");
    let ok = 0;
    fc.assert(fc.property(fc.array(token, { maxLength: 50 }), (toks) => {
      if (Array.isArray(outcome(toks.join(" ")))) ok++;
    }), { numRuns: 2000, seed: 3 });
    expect(ok).toBeGreaterThanOrEqual(0);
  });

  it("structured rule soups reach deep into the grammar", () => {
    // Mostly valid pieces, sometimes a broken one: both the parser's success and error paths get exercised.
    const pick = (good: string[], bad: string[]) => fc.oneof({ weight: 12, arbitrary: fc.constantFrom(...good) }, { weight: 1, arbitrary: fc.constantFrom(...bad) });
    const pred = pick(["p", "not p", "!q", "¬ r.s", "true", "False", "x.y"], ["and", "\"s\"", "not", "(", "p(1)"]);
    const enf = pick(["stop", "user_inspection", "user_inspection(a, b)", "llm_self_reflect", "llm_self_reflect(2)", "invoke_action(A, {\"k\": 1})",
      "invoke_action(A.b, {'k': [1, {\"j\": null}], x: -2e3,})", "invoke_action(A, {})"],
    ["llm_self_reflect(x)", "invoke_action(A, {\"k\" 1})", "invoke_action(A)", "invoke_action(A, {\"k\": [1]}", "reflect", "end", "stop()"]);
    const rule = fc.record({
      id: pick(["@a", "@b", "@c-1"], ["a", "@"]), trigger: pick(["T.x", "any", "any.any", "T.any", "any.x"], ["T", "T x", "", "T.x.y"]),
      preds: fc.array(pred, { maxLength: 3 }), enfs: fc.array(enf, { minLength: 1, maxLength: 3 }), end: pick(["end"], [""]),
      check: pick(["check"], [""]), enforce: pick(["enforce"], [""]),
    });
    let ok = 0;
    let errors = 0;
    fc.assert(fc.property(fc.array(rule, { minLength: 1, maxLength: 3 }), (rs) => {
      const text = rs.map((r) => [`rule ${r.id}`, `trigger ${r.trigger}`, r.check, ...r.preds, r.enforce, ...r.enfs, r.end].join("\n")).join("\n\n");
      const o = outcome(text);
      if (Array.isArray(o)) {
        ok++;
        expect(strip(parseRules(printRules(o), "again.rules"))).toEqual(strip(o));
      } else errors++;
    }), { numRuns: 2000, seed: 11 });
    expect(ok).toBeGreaterThan(20);
    expect(errors).toBeGreaterThan(200);
  });

  it("mutated examples end in rules or a positioned diagnostic; the ones that parse print back to themselves", () => {
    const mutation = fc.record({
      ex: fc.nat(samples.length - 1),
      edits: fc.array(fc.record({ at: fc.nat(), kind: fc.constantFrom("del", "ins", "dup"), ch: fc.constantFrom("(", ")", "{", "}", "\"", ":", ",", " ", "x", "\n", "#", "@", ".", "!") }), { minLength: 1, maxLength: 4 }),
    });
    let diagnostics = 0;
    fc.assert(fc.property(mutation, ({ ex, edits }) => {
      let t = samples[ex]!;
      for (const e of edits) {
        const i = e.at % (t.length + 1);
        t = e.kind === "del" ? t.slice(0, i) + t.slice(i + 1) : e.kind === "ins" ? t.slice(0, i) + e.ch + t.slice(i) : t.slice(0, i) + t.slice(i, i + 8) + t.slice(i);
      }
      const o = outcome(t);
      if (Array.isArray(o)) expect(strip(parseRules(printRules(o), "again.rules"))).toEqual(strip(o));
      else diagnostics++;
    }), { numRuns: 2000, seed: 7 });
    expect(diagnostics).toBeGreaterThan(200);
  });

  it("arbitrary strings and deep nesting get a diagnostic, not an exception", () => {
    fc.assert(fc.property(fc.string({ maxLength: 200 }), (s) => { outcome(s); }), { numRuns: 1000, seed: 5 });
    fc.assert(fc.property(fc.string({ unit: "grapheme", maxLength: 80 }), (s) => { outcome(`rule @x trigger a.b check ${s} enforce stop end`); }), { numRuns: 1000, seed: 6 });
    const deep = `rule @x trigger a.b check enforce invoke_action(A, {"k": ${"[".repeat(5000)}${"]".repeat(5000)}}) end`;
    expect((outcome(deep) as SpecError).code).toBe("E0801");
    const nots = `rule @x trigger a.b check ${"not ".repeat(5000)}p enforce stop end`;
    expect(outcome(nots)).toHaveLength(1);
  });
});
