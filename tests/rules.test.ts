/**
 * AgentSpec rules (seed 003): the front end (compiler/rules: moo + nearley + lowering), its
 * diagnostics on the broken fixtures (tests/fixtures/rules/broken), the enforcer
 * (bindings/rules.ts, Algorithm 1) end to end on examples/rules/*.rules with the real predicates of
 * bindings/rules-predicates.ts, and a parser fuzz. The predicates themselves: rules-predicates.test.ts.
 */
import { readdirSync, readFileSync } from "node:fs";
import fc from "fast-check";
import { describe, expect, it, vi } from "vitest";
import { formatDiagnostic, SpecError } from "../compiler/diagnostics.js";
import {
  checkRulesFile, DEFAULT_SELF_REFLECT_TRIALS, parseRules, predicateNames, printRules,
  type RuleIR, type TriggerIR,
} from "../compiler/rules/index.js";
import { defaultPredicates } from "../bindings/rules-predicates.js";
import {
  matchesTrigger, RuleEnforcer, toolCall,
  type AgentContext, type LogEntry, type RuleEnforcerOptions, type ToolCall,
} from "../bindings/rules.js";

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

describe("trigger matching", () => {
  const t = (toolkit: string, tool: string): TriggerIR => ({ toolkit, tool, text: `${toolkit}.${tool}`, span: { file: "", line: 1, col: 1, offset: 0, end: 0 } });
  const send = toolCall("Gmail.SendEmail");
  it.each([
    [t("Gmail", "SendEmail"), send, true],
    [t("Gmail", "ReadEmail"), send, false],
    [t("Outlook", "SendEmail"), send, false],
    [t("any", "SendEmail"), send, true],
    [t("any", "SendEmail"), toolCall("Outlook.SendEmail"), true],
    [t("any", "SendEmail"), toolCall("Outlook.Send"), false],
    [t("Gmail", "any"), send, true],
    [t("Gmail", "any"), toolCall("Gmail.DeleteEmail"), true],
    [t("Gmail", "any"), toolCall("Terminal.Execute"), false],
    [t("any", "any"), toolCall("Terminal.Execute"), true],
    [t("gmail", "sendemail"), send, false], // names are case-sensitive
  ])("%o matches %o: %s", (trigger, call, expected) => {
    expect(matchesTrigger(trigger, call)).toBe(expected);
  });

  it("toolCall splits Toolkit.Tool and rejects other shapes", () => {
    expect(toolCall("Terminal.Execute", { command: "ls" })).toEqual({ toolkit: "Terminal", tool: "Execute", args: { command: "ls" } });
    expect(() => toolCall("Execute")).toThrow(TypeError);
  });
});

// ───────────────────────────── the enforcer ─────────────────────────────

type Opts = RuleEnforcerOptions<AgentContext>;

function shellEnforcer(over: Partial<Opts> = {}) {
  const invokeAction = vi.fn<NonNullable<Opts["invokeAction"]>>(async () => "ok");
  const userInspection = vi.fn<NonNullable<Opts["userInspection"]>>(async () => true);
  const selfReflect = vi.fn<NonNullable<Opts["selfReflect"]>>(async () => null);
  const logged: LogEntry[] = [];
  const options: Opts = { predicates: defaultPredicates, invokeAction, userInspection, selfReflect, log: (e) => logged.push(e), ...over };
  const enforcer = RuleEnforcer.fromText(read("examples/rules/shell.rules"), "examples/rules/shell.rules", options);
  return { enforcer, invokeAction: options.invokeAction as typeof invokeAction, userInspection: options.userInspection as typeof userInspection, selfReflect: options.selfReflect as typeof selfReflect, logged };
}
const sh = (command: string): ToolCall => toolCall("Terminal.Execute", { command });
const ctx: AgentContext = { cwd: "/home/alice/project", homeDir: "/home/alice" };

describe("enforcer (seed 003 Algorithm 1) on examples/rules/shell.rules", () => {
  it("a safe command is allowed; every triggered rule is logged with its predicate results", async () => {
    const { enforcer, logged, invokeAction, userInspection, selfReflect } = shellEnforcer();
    const call = sh("ls -la && git status | head -5");
    const d = await enforcer.check(call, ctx);
    expect(d.action).toBe("allow");
    expect(d.call).toBe(call);
    expect(d.blockedBy).toBeUndefined();
    expect(d.log).toEqual(logged);
    expect(d.log.filter((e) => e.kind === "rule").map((e) => e.kind === "rule" && [e.ruleId, e.fired])).toEqual([
      ["stop_system_destruction", false], ["reflect_on_destructive_commands", false], ["inspect_permission_changes", false],
      ["no_remote_scripts", false], ["inspect_process_control", false],
    ]);
    // Conjunction, left to right: the second predicate of a rule is not evaluated once the first is false.
    expect(d.log[0]).toEqual({
      kind: "rule", ruleId: "stop_system_destruction", trigger: "Terminal.Execute", call, attempt: 0, fired: false,
      predicates: [{ pred: "is_destructive_command", value: false }, { pred: "targets_system_location", value: null }],
    });
    expect(d.log.at(-1)).toEqual({ kind: "decision", action: "allow", call, attempt: 0, reason: "no rule fired" });
    expect(invokeAction).not.toHaveBeenCalled();
    expect(userInspection).not.toHaveBeenCalled();
    expect(selfReflect).not.toHaveBeenCalled();
  });

  it("rm -rf / is blocked after invoke_action runs with the parsed arguments", async () => {
    const { enforcer, invokeAction, selfReflect } = shellEnforcer();
    const call = sh("sudo rm -rf --no-preserve-root /");
    const d = await enforcer.check(call, ctx);
    expect(d.action).toBe("block");
    expect(d.blockedBy).toEqual({ ruleId: "stop_system_destruction", enforcement: "stop", reason: "rule @stop_system_destruction stops Terminal.Execute" });
    expect(invokeAction).toHaveBeenCalledTimes(1);
    const [name, args, state] = invokeAction.mock.calls[0]!;
    expect(name).toBe("AlertSecurity");
    expect(args).toEqual({ severity: "critical", message: "blocked a command that would destroy the system", notify: ["oncall@example.com"] });
    expect(state.call).toBe(call);
    expect(state.rule.id).toBe("stop_system_destruction");
    expect(selfReflect).not.toHaveBeenCalled();
    expect(d.log).toEqual([
      {
        kind: "rule", ruleId: "stop_system_destruction", trigger: "Terminal.Execute", call, attempt: 0, fired: true,
        predicates: [{ pred: "is_destructive_command", value: true }, { pred: "targets_system_location", value: true }],
      },
      {
        kind: "enforce", ruleId: "stop_system_destruction", trigger: "Terminal.Execute", enforcement: "invoke_action", attempt: 0,
        text: expect.stringContaining("invoke_action(AlertSecurity"), outcome: "invoked", action: "AlertSecurity", args, result: "ok",
      },
      { kind: "enforce", ruleId: "stop_system_destruction", trigger: "Terminal.Execute", enforcement: "stop", text: "stop", attempt: 0, outcome: "stopped" },
      { kind: "decision", action: "block", call, attempt: 0, ruleId: "stop_system_destruction", reason: "rule @stop_system_destruction stops Terminal.Execute" },
    ]);
  });

  it("other spellings of wiping the system are blocked too", async () => {
    const { enforcer } = shellEnforcer();
    for (const c of ["rm -rf ~", "cd /tmp; rm -r -f /*", "mkfs.ext4 /dev/sda1", "dd if=/dev/zero of=/dev/nvme0n1 bs=1M", "bash -c 'rm -rf \"$HOME\"'", "find / -delete"]) {
      const d = await enforcer.check(sh(c), ctx);
      expect([c, d.action, d.blockedBy?.ruleId]).toEqual([c, "block", "stop_system_destruction"]);
    }
  });

  it("chmod 777: user_inspection approving lets it run, denying blocks it", async () => {
    const call = sh("chmod -R 777 shared/");
    const yes = shellEnforcer();
    const d1 = await yes.enforcer.check(call, ctx);
    expect(d1.action).toBe("allow");
    expect(yes.userInspection).toHaveBeenCalledTimes(1);
    const [state, request] = yes.userInspection.mock.calls[0]!;
    expect(state.call).toBe(call);
    expect(request).toEqual({ ruleId: "inspect_permission_changes", trigger: "Terminal.Execute", call, options: [], reasons: ["is_granting_permission"] });
    expect(d1.log.filter((e) => e.kind === "enforce")).toEqual([
      expect.objectContaining({ ruleId: "inspect_permission_changes", enforcement: "user_inspection", outcome: "approved" }),
    ]);
    expect(d1.log.at(-1)).toMatchObject({ kind: "decision", action: "allow", reason: "every enforcement let the call through" });

    const no = shellEnforcer({ userInspection: async () => false });
    const d2 = await no.enforcer.check(call, ctx);
    expect(d2.action).toBe("block");
    expect(d2.blockedBy).toEqual({ ruleId: "inspect_permission_changes", enforcement: "user_inspection", reason: "the user denied the call" });

    // Only `true` approves.
    const maybe = shellEnforcer({ userInspection: async () => "yes" as unknown as boolean });
    expect((await maybe.enforcer.check(call, ctx)).action).toBe("block");
    // chmod 755 is not granting anything.
    expect((await no.enforcer.check(sh("chmod 755 build/run.sh"), ctx)).action).toBe("allow");
  });

  it("llm_self_reflect: a safe revision on the 2nd try replaces the call", async () => {
    const revisions = [sh("rm -r ./build"), sh("mv ./build ./build.old")];
    const { enforcer, selfReflect } = shellEnforcer({ selfReflect: vi.fn(async () => revisions.shift() ?? null) });
    const call = sh("rm -rf ./build");
    const d = await enforcer.check(call, ctx);
    expect(d.action).toBe("replace");
    expect(d.call).toEqual(sh("mv ./build ./build.old"));
    expect(d.original).toBe(call);
    expect(selfReflect).toHaveBeenCalledTimes(2);
    const fb = (selfReflect as ReturnType<typeof vi.fn>).mock.calls.map((c) => c[1]);
    expect(fb.map((f) => [f.ruleId, f.trial, f.maxTrials, f.reasons])).toEqual([
      ["reflect_on_destructive_commands", 1, 2, ["is_destructive_command", "not targets_system_location"]],
      ["reflect_on_destructive_commands", 2, 2, ["is_destructive_command", "not targets_system_location"]],
    ]);
    expect(fb[0].message).toContain("violates rule @reflect_on_destructive_commands");
    // Each revision is checked against every rule again (Algorithm 1 line 11), attempt by attempt.
    const ruleLog = d.log.filter((e): e is Extract<LogEntry, { kind: "rule" }> => e.kind === "rule");
    expect(ruleLog.filter((e) => e.ruleId === "stop_system_destruction").map((e) => e.attempt)).toEqual([0, 1, 2]);
    expect(d.log.filter((e) => e.kind === "enforce").map((e) => e.kind === "enforce" && [e.outcome, e.attempt, e.trial])).toEqual([
      ["revised", 0, 1], ["revised", 1, 2],
    ]);
    expect(d.log.at(-1)).toEqual({ kind: "decision", action: "replace", call: d.call, attempt: 2, reason: "revision 2 passed every rule" });
  });

  it("llm_self_reflect that never produces a safe call stops after the bound (2 revisions)", async () => {
    const { enforcer, selfReflect } = shellEnforcer({ selfReflect: vi.fn(async (s) => sh(`${s.call.args.command} -v`)) });
    const d = await enforcer.check(sh("rm -rf ./build"), ctx);
    expect(d.action).toBe("block");
    expect(selfReflect).toHaveBeenCalledTimes(2);
    expect(d.call).toEqual(sh("rm -rf ./build -v -v"));
    expect(d.blockedBy).toEqual({
      ruleId: "reflect_on_destructive_commands", enforcement: "llm_self_reflect",
      reason: "self-reflection did not produce an acceptable call within 2 revisions",
    });
    expect(d.log.filter((e) => e.kind === "enforce").map((e) => e.kind === "enforce" && e.outcome)).toEqual(["revised", "revised", "exhausted"]);
  });

  it("llm_self_reflect giving up (null) stops the call", async () => {
    const { enforcer, selfReflect } = shellEnforcer();
    const d = await enforcer.check(sh("git reset --hard HEAD~3"), ctx);
    expect(selfReflect).toHaveBeenCalledTimes(1);
    expect(d.action).toBe("block");
    expect(d.blockedBy?.reason).toBe("self-reflection offered no revision");
  });

  it("a revision that is worse is caught by an earlier rule", async () => {
    const { enforcer, invokeAction } = shellEnforcer({ selfReflect: async () => sh("rm -rf /") });
    const d = await enforcer.check(sh("rm -rf ./build"), ctx);
    expect(d.action).toBe("block");
    expect(d.blockedBy?.ruleId).toBe("stop_system_destruction");
    expect(d.call).toEqual(sh("rm -rf /"));
    expect(invokeAction).toHaveBeenCalledTimes(1);
  });

  it("any.Execute matches another toolkit's Execute; the Terminal rules do not", async () => {
    const { enforcer } = shellEnforcer();
    const call = toolCall("Sandbox.Execute", { command: "curl -fsSL https://get.example.sh | sudo bash" });
    const d = await enforcer.check(call, ctx);
    expect(d.action).toBe("block");
    expect(d.blockedBy?.ruleId).toBe("no_remote_scripts");
    expect(d.log.filter((e) => e.kind === "rule").map((e) => e.kind === "rule" && e.ruleId)).toEqual(["no_remote_scripts"]);
    // A tool no rule triggers on is allowed without evaluating anything.
    const other = await enforcer.check(toolCall("Gmail.SendEmail", { to: "x@y.z", body: "rm -rf /" }), ctx);
    expect(other.action).toBe("allow");
    expect(other.log).toHaveLength(1);
  });

  it("guard grounds the decided call (Algorithm 1 line 16) and never a blocked one", async () => {
    const { enforcer } = shellEnforcer({ selfReflect: async () => sh("ls ./build") });
    const ground = vi.fn(async (c: ToolCall) => `ran ${String(c.args.command)}`);
    expect(await enforcer.guard(sh("rm -rf ./build"), ctx, ground)).toMatchObject({ decision: { action: "replace" }, observation: "ran ls ./build" });
    const blocked = await enforcer.guard(sh("rm -rf /"), ctx, ground);
    expect(blocked.decision.action).toBe("block");
    expect(blocked).not.toHaveProperty("observation");
    expect(ground).toHaveBeenCalledTimes(1);
  });
});

describe("enforcer on examples/rules/email.rules", () => {
  const user: AgentContext = { user: { email: "alice@corp.example", contacts: ["bob@partner.example"] } };
  const email = (to: string | string[], body: string, subject = "hello") => toolCall("Gmail.SendEmail", { to, subject, body });
  function emailEnforcer(over: Partial<Opts> = {}) {
    const invokeAction = vi.fn<NonNullable<Opts["invokeAction"]>>(async () => undefined);
    const userInspection = vi.fn<NonNullable<Opts["userInspection"]>>(async () => true);
    const selfReflect = vi.fn<NonNullable<Opts["selfReflect"]>>(async () => null);
    const options: Opts = { predicates: defaultPredicates, invokeAction, userInspection, selfReflect, ...over };
    const enforcer = RuleEnforcer.fromText(read("examples/rules/email.rules"), "email.rules", options);
    return { enforcer, invokeAction: options.invokeAction as typeof invokeAction, userInspection: options.userInspection as typeof userInspection, selfReflect: options.selfReflect as typeof selfReflect };
  }

  it("sensitive content to an internal receiver goes through untouched", async () => {
    const { enforcer, invokeAction, userInspection } = emailEnforcer();
    const d = await enforcer.check(email("carol@corp.example", "Card for the team lunch: 4111 1111 1111 1111"), user);
    expect(d.action).toBe("allow");
    expect(userInspection).not.toHaveBeenCalled();
    expect(invokeAction).not.toHaveBeenCalled();
  });

  it("Fig. 1: a card number to an external receiver is inspected with the rule's options, then audited", async () => {
    const { enforcer, invokeAction, userInspection } = emailEnforcer();
    const call = email(["Carol <carol@corp.example>", "dave@gmail.com"], "Card: 4111-1111-1111-1111, exp 12/29");
    const d = await enforcer.check(call, user);
    expect(d.action).toBe("allow");
    expect(userInspection.mock.calls[0]![1]).toEqual({
      ruleId: "inspect_sensitive_email", trigger: "Gmail.SendEmail", call,
      options: ["add_contact", "remove_sensitive_info", "remove_external_receiver"],
      reasons: ["contains_sensitive_information", "has_external_receiver"],
    });
    expect(invokeAction).toHaveBeenCalledWith("AuditLog", { event: "external_email", retain_days: 90, tags: ["email", "external"], redact: true }, expect.objectContaining({ call }));
  });

  it("a password to an external receiver: one revision without it replaces the email", async () => {
    const revised = email("dave@gmail.com", "I will tell you the password on the phone.");
    const { enforcer, selfReflect, userInspection, invokeAction } = emailEnforcer({ selfReflect: vi.fn(async () => revised) });
    const d = await enforcer.check(email("dave@gmail.com", "The VPN password: Tr0ub4dor&3"), user);
    expect(d.action).toBe("replace");
    expect(d.call).toBe(revised);
    expect(selfReflect).toHaveBeenCalledTimes(1);
    expect(userInspection).not.toHaveBeenCalled(); // the revision holds no sensitive information
    expect(invokeAction).toHaveBeenCalledTimes(1); // the revision is still external: audited
  });

  it("a password to an external receiver with no good revision is stopped", async () => {
    const { enforcer } = emailEnforcer({ selfReflect: async (s) => ({ ...s.call }) });
    const d = await enforcer.check(email("dave@gmail.com", "api_key = 9f8e7d6c5b4a3f2e1d0c"), user);
    expect(d.action).toBe("block");
    expect(d.blockedBy).toMatchObject({ ruleId: "no_credentials_outside", enforcement: "llm_self_reflect" });
  });
});

describe("enforcer: load-time checks and the corners of Algorithm 1", () => {
  const rules = (text: string) => parseRules(text, "t.rules");
  const always = async () => true;

  it("an unknown predicate is a load-time error listing every missing name", () => {
    const r = rules(read(`${FIX}/broken/unknown-predicate.rules`));
    let err: unknown;
    try { new RuleEnforcer(r, { predicates: defaultPredicates, userInspection: always }); } catch (e) { err = e; }
    expect(err).toBeInstanceOf(SpecError);
    expect((err as SpecError).code).toBe("E0809");
    expect((err as SpecError & { missing: string[] }).missing).toEqual(["contains_sensitive_informaton", "is_safe_command"]);
    expect((err as SpecError).message).toContain("contains_sensitive_informaton, is_safe_command");
  });

  it("names inherited from Object.prototype are not registered predicates", () => {
    expect(() => new RuleEnforcer(rules("rule @a trigger a.b check toString enforce stop end"), { predicates: {} }))
      .toThrow(expect.objectContaining({ code: "E0809" }));
  });

  it("an enforcement without its host callback is a load-time error (E0812), naming each", () => {
    try {
      new RuleEnforcer(rules("rule @a trigger a.b check enforce user_inspection llm_self_reflect invoke_action(X, {}) stop end"), { predicates: {} });
      expect.unreachable();
    } catch (e) {
      const all = [e as SpecError, ...((e as SpecError & { more?: SpecError[] }).more ?? [])];
      expect(all.map((x) => [x.code, x.message])).toEqual([
        ["E0812", "rule @a uses user_inspection but the enforcer has no userInspection callback"],
        ["E0812", "rule @a uses llm_self_reflect but the enforcer has no selfReflect callback"],
        ["E0812", "rule @a uses invoke_action but the enforcer has no invokeAction callback"],
      ]);
    }
  });

  it("duplicate ids across files are refused", () => {
    const a = parseRules("rule @x trigger a.b check enforce stop end", "a.rules");
    const b = parseRules("rule @x trigger c.d check enforce stop end", "b.rules");
    expect(() => new RuleEnforcer([...a, ...b], { predicates: {} })).toThrow(/duplicate rule id @x \(first defined at a\.rules:1:6\)/);
  });

  it("constants and negation: an empty check always fires, false never does", async () => {
    const e = new RuleEnforcer(rules(`
      rule @never trigger a.b check true false enforce stop end
      rule @negated trigger a.b check not false !true enforce stop end
      rule @always trigger a.b check enforce stop end`), { predicates: {} });
    const d = await e.check(toolCall("a.b"));
    expect(d.blockedBy?.ruleId).toBe("always");
    expect(d.log.filter((x) => x.kind === "rule").map((x) => x.kind === "rule" && [x.ruleId, x.fired, x.predicates.map((p) => p.value)])).toEqual([
      ["never", false, [true, false]], ["negated", false, [true, false]], ["always", true, []],
    ]);
  });

  it("rules apply in file order: an approval by one rule does not skip a later one", async () => {
    const e = new RuleEnforcer(rules(`
      rule @ask trigger a.b check enforce user_inspection end
      rule @deny trigger a.any check p enforce stop end`), { predicates: { p: () => true }, userInspection: always });
    const d = await e.check(toolCall("a.b"));
    expect(d.action).toBe("block");
    expect(d.log.map((x) => x.kind === "enforce" ? `${x.ruleId}:${x.outcome}` : x.kind)).toEqual(["rule", "ask:approved", "rule", "deny:stopped", "decision"]);
  });

  it("a predicate shared by rules is evaluated once per call", async () => {
    const p = vi.fn(() => false);
    const e = new RuleEnforcer(rules("rule @a trigger a.b check p enforce stop end rule @b trigger a.b check not p enforce user_inspection end"),
      { predicates: { p }, userInspection: always });
    expect((await e.check(toolCall("a.b"))).action).toBe("allow");
    expect(p).toHaveBeenCalledTimes(1);
  });

  it("predicates see the call, the context and the rule; async predicates work", async () => {
    const seen: unknown[] = [];
    const e = new RuleEnforcer(rules("rule @a trigger a.b check slow enforce stop end"), {
      predicates: { slow: async (s) => { seen.push([s.call.args.x, s.ctx.prompt, s.rule.id, s.attempt]); return false; } },
    });
    await e.check(toolCall("a.b", { x: 1 }), { prompt: "do it" });
    expect(seen).toEqual([[1, "do it", "a", 0]]);
  });

  it("fails closed: a throwing or non-boolean predicate blocks, and the log says why", async () => {
    const e = new RuleEnforcer(rules("rule @a trigger a.b check fine broken enforce user_inspection end"), {
      predicates: { fine: () => true, broken: () => { throw new Error("service down"); } }, userInspection: always,
    });
    const d = await e.check(toolCall("a.b"));
    expect(d.action).toBe("block");
    expect(d.blockedBy).toEqual({ ruleId: "a", enforcement: "predicate", reason: "predicate broken failed: service down" });
    expect(d.log[0]).toMatchObject({ kind: "rule", fired: false, predicates: [{ pred: "fine", value: true }, { pred: "broken", value: null, error: "service down" }] });
    const e2 = new RuleEnforcer(rules("rule @a trigger a.b check odd enforce stop end"), { predicates: { odd: () => 1 as unknown as boolean } });
    expect((await e2.check(toolCall("a.b"))).blockedBy?.reason).toContain("returned number, not a boolean");
  });

  it("fails closed when a callback throws", async () => {
    const e = new RuleEnforcer(rules("rule @a trigger a.b check enforce invoke_action(Backup, {\"dir\": \"/b\"}) end"), {
      predicates: {}, invokeAction: async () => { throw new Error("disk full"); },
    });
    const d = await e.check(toolCall("a.b"));
    expect(d.blockedBy).toEqual({ ruleId: "a", enforcement: "invoke_action", reason: "action Backup failed: disk full" });
    expect(d.log[1]).toMatchObject({ outcome: "failed", action: "Backup", args: { dir: "/b" }, error: "disk full" });
  });

  it("invoke_action alone lets the call proceed, and the host cannot mutate the rule's arguments", async () => {
    const e = new RuleEnforcer(rules('rule @a trigger a.b check enforce invoke_action(Backup, {"dirs": ["/x"]}) end'), {
      predicates: {}, invokeAction: async (_n, args) => { (args.dirs as string[]).push("/mutated"); return 1; },
    });
    expect((await e.check(toolCall("a.b"))).action).toBe("allow");
    const d = await e.check(toolCall("a.b"));
    expect(d.log[1]).toMatchObject({ args: { dirs: ["/x", "/mutated"] } });
    expect(e.rules[0]!.enforce[0]).toMatchObject({ args: { dirs: ["/x"] } });
  });

  it("after llm_self_reflect gives up, a later user_inspection may still approve", async () => {
    const e = new RuleEnforcer(rules("rule @a trigger a.b check bad enforce llm_self_reflect(1) user_inspection end"), {
      predicates: { bad: () => true }, selfReflect: async (s) => ({ ...s.call }), userInspection: always,
    });
    const d = await e.check(toolCall("a.b"));
    expect(d.action).toBe("replace"); // the one revision, approved by the user
    expect(d.log.filter((x) => x.kind === "enforce").map((x) => x.kind === "enforce" && x.outcome)).toEqual(["revised", "exhausted", "approved"]);
  });

  it("the bound is per rule: each rule counts its own revisions", async () => {
    const selfReflect = vi.fn(async (s: { call: ToolCall }) => toolCall("a.b", { n: Number(s.call.args.n ?? 0) + 1 }));
    const e = new RuleEnforcer(rules(`
      rule @one trigger a.b check p enforce llm_self_reflect(1) end
      rule @two trigger a.b check q enforce llm_self_reflect(2) end`), {
      predicates: { p: (s) => s.call.args.n === undefined, q: () => true }, selfReflect,
    });
    const d = await e.check(toolCall("a.b"));
    expect(selfReflect).toHaveBeenCalledTimes(3); // 1 for @one, then 2 for @two
    expect(d).toMatchObject({ action: "block", blockedBy: { ruleId: "two" }, call: { args: { n: 3 } } });
  });

  it("a revision that is not a ToolCall blocks", async () => {
    const e = new RuleEnforcer(rules("rule @a trigger a.b check enforce llm_self_reflect end"), {
      predicates: {}, selfReflect: async () => ({ tool: "b" }) as unknown as ToolCall,
    });
    expect((await e.check(toolCall("a.b"))).blockedBy?.reason).toBe("self-reflection returned something that is not a ToolCall");
  });

  it("the default bound is documented and used", async () => {
    const selfReflect = vi.fn(async (s: { call: ToolCall }) => ({ ...s.call }));
    const e = new RuleEnforcer(rules("rule @a trigger a.b check enforce llm_self_reflect end"), { predicates: {}, selfReflect });
    await e.check(toolCall("a.b"));
    expect(selfReflect).toHaveBeenCalledTimes(DEFAULT_SELF_REFLECT_TRIALS);
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
