/**
 * @fileoverview The AgentSpec runtime enforcer (seed 003 §3.2, Algorithm 1 `validate_and_enforce`):
 * before a tool call runs, the rules whose trigger matches it are checked in file order; a rule
 * whose predicates all hold applies its enforcements in order (user inspection, LLM self-reflection
 * with a bounded number of revisions, a host action, stop), and the result is a decision: run the
 * call, run a revised call instead, or block it. Every step is logged.
 *
 * The rules come from compiler/rules (parseRules); real predicates for a shell and an email tool are
 * in agents/rules-predicates.ts. Load-time checks (constructor) make a misconfigured enforcer fail
 * before the first call rather than silently allow: an unregistered predicate (E0809, listing every
 * missing name) and an enforcement whose host callback is absent (E0812).
 *
 * Where Algorithm 1 leaves room, the choices are (each marked "Decision" below):
 *  - the check is a conjunction evaluated left to right, stopping at the first false predicate
 *    (line 6 reads `pred ← pred && eval_pred(pred)`; §3.1 says "conjunctions of predicates"); the
 *    log marks the predicates left unevaluated with `value: null`;
 *  - predicate values are cached per call (a predicate is a function of the call and the context;
 *    several rules commonly share one, and predicates may be costly);
 *  - `llm_self_reflect`'s "max trial" is a per-rule bound on revisions within one check, written
 *    `llm_self_reflect(N)` (default 3, DEFAULT_SELF_REFLECT_TRIALS); when it is exhausted or the LLM
 *    offers no revision, the call is stopped (Algorithm 1 would fall through and ground an action
 *    that still violates the rule; a safety rule that lets the violation through defeats itself)
 *    after the rule's remaining enforcements run; a `user_inspection` among them can still approve;
 *  - failures fail closed: a predicate or callback that throws (or a predicate that returns a
 *    non-boolean) blocks the call, and the log says why.
 */
import { readFile } from "node:fs/promises";
import { SpecError } from "../compiler/diagnostics.js";
import {
  checkPredicates, parseRules, printEnforce, printPred,
  type EnforceIR, type EnforceKind, type JsonValue, type PredIR, type RuleIR, type TriggerIR,
} from "../compiler/rules/index.js";

export type { RuleIR, EnforceIR, PredIR, TriggerIR, JsonValue, EnforceKind };

/** An action a_n of seed 003 §2.1: a tool f_n of a toolkit, with its arguments ξ. */
export interface ToolCall {
  toolkit: string;
  tool: string;
  args: Record<string, unknown>;
}

/** `toolCall("Terminal.Execute", { command: "ls" })`. */
export function toolCall(name: string, args: Record<string, unknown> = {}): ToolCall {
  const dot = name.indexOf(".");
  if (dot <= 0 || dot === name.length - 1) throw new TypeError(`toolCall: expected "Toolkit.Tool", got ${JSON.stringify(name)}`);
  return { toolkit: name.slice(0, dot), tool: name.slice(dot + 1), args };
}

/** One step of the trajectory τ_N = (a_1, ω_1, ..., a_N, ω_N) (seed 003 §2.1). */
export interface TrajectoryStep {
  call: ToolCall;
  observation?: unknown;
}

/**
 * What the host knows besides the call: the rest of Algorithm 1's `states` (line 2: the trajectory
 * and the prompt) and whatever its predicates need (the user's domain, contacts, working directory).
 */
export interface AgentContext {
  trajectory?: readonly TrajectoryStep[];
  prompt?: string;
  user?: { email?: string; domain?: string; internalDomains?: readonly string[]; contacts?: readonly string[] };
  /** Working directory of a shell tool: relative paths are resolved against it. */
  cwd?: string;
  homeDir?: string;
  /** Paths the user cares about (a deletion of one of them, or below it, is "important"). */
  importantPaths?: readonly string[];
  [key: string]: unknown;
}

/** What predicates and callbacks see: Algorithm 1's `states` (line 2) plus the rule at hand. */
export interface RuleState<C = AgentContext> {
  /** `a`: the action under validation, the original call or a revision of it. */
  call: ToolCall;
  ctx: C;
  rule: RuleIR;
  /** 0 for the original call, k for the k-th revision. */
  attempt: number;
}

export type Predicate<C = AgentContext> = (state: RuleState<C>) => boolean | Promise<boolean>;

export interface InspectionRequest {
  ruleId: string;
  trigger: string;
  call: ToolCall;
  /** The remedies the rule lists, e.g. Fig. 1's add_contact, remove_sensitive_info. */
  options: string[];
  /** The predicates that held (why the rule fired). */
  reasons: string[];
}

export interface ReflectionFeedback {
  ruleId: string;
  trigger: string;
  /** The predicates that held on the call (why it was rejected). */
  reasons: string[];
  /** 1 for the first revision asked for by this rule in this check. */
  trial: number;
  maxTrials: number;
  /** A ready-made message for the LLM. */
  message: string;
}

export interface RuleEnforcerOptions<C = AgentContext> {
  /** The named predicates the rules use (own properties only). */
  predicates: Record<string, Predicate<C>>;
  /** `user_inspection`: resolve to true to let the call through; anything else stops it. */
  userInspection?: (state: RuleState<C>, request: InspectionRequest) => Promise<boolean>;
  /** `llm_self_reflect`: a revised call (checked again against every rule), or null to give up. */
  selfReflect?: (state: RuleState<C>, feedback: ReflectionFeedback) => Promise<ToolCall | null>;
  /** `invoke_action(Name, {...})`: run the host action; its result is logged. */
  invokeAction?: (name: string, args: { [key: string]: JsonValue }, state: RuleState<C>) => Promise<unknown>;
  /** Receives every log entry as it is made (they are also returned in the decision). */
  log?: (entry: LogEntry) => void;
}

export interface PredicateResult {
  pred: string;
  /** null: not evaluated, an earlier predicate of the conjunction was false (or threw). */
  value: boolean | null;
  error?: string;
}

export type EnforceOutcome =
  | "approved" | "denied" | "revised" | "no_revision" | "exhausted" | "invoked" | "failed" | "stopped";

export type LogEntry =
  /** A rule whose trigger matched the call (rules that did not match are not logged). */
  | { kind: "rule"; ruleId: string; trigger: string; call: ToolCall; attempt: number; predicates: PredicateResult[]; fired: boolean }
  | {
    kind: "enforce"; ruleId: string; trigger: string; enforcement: EnforceKind; text: string; attempt: number; outcome: EnforceOutcome;
    revision?: ToolCall; action?: string; args?: { [key: string]: JsonValue }; result?: unknown;
    trial?: number; maxTrials?: number; options?: string[]; error?: string;
  }
  | { kind: "decision"; action: DecisionAction; call: ToolCall; attempt: number; ruleId?: string; reason: string };

export type DecisionAction = "allow" | "block" | "replace";

export interface Decision {
  /** allow: run `call` (the original); replace: run `call` (a revision) instead; block: run nothing. */
  action: DecisionAction;
  /** The call to run, or for block the call that was blocked. */
  call: ToolCall;
  original: ToolCall;
  blockedBy?: { ruleId: string; enforcement: EnforceKind | "predicate"; reason: string };
  log: LogEntry[];
}

/** Seed 003 §3.2: "The trigger condition is evaluated based on the tool name and the toolkit name". */
export function matchesTrigger(t: TriggerIR, call: ToolCall): boolean {
  return (t.toolkit === "any" || t.toolkit === call.toolkit) && (t.tool === "any" || t.tool === call.tool);
}

const NEEDS: Record<Exclude<EnforceKind, "stop">, "userInspection" | "selfReflect" | "invokeAction"> = {
  user_inspection: "userInspection",
  llm_self_reflect: "selfReflect",
  invoke_action: "invokeAction",
};

function isToolCall(x: unknown): x is ToolCall {
  const c = x as ToolCall | null;
  return typeof c === "object" && c !== null && typeof c.toolkit === "string" && typeof c.tool === "string"
    && typeof c.args === "object" && c.args !== null;
}

const message = (e: unknown) => (e instanceof Error ? e.message : String(e));

interface Run<C> {
  ctx: C;
  log: LogEntry[];
  /** Revisions asked for so far, per rule (the bound of llm_self_reflect). */
  trials: Map<RuleIR, number>;
}

type Outcome = { call: ToolCall; attempt: number; blocked?: NonNullable<Decision["blockedBy"]> };

export class RuleEnforcer<C = AgentContext> {
  readonly rules: readonly RuleIR[];
  private readonly predicates: Map<string, Predicate<C>>;

  /** Throws SpecError E0807 (duplicate rule id), E0809 (unknown predicates), E0812 (missing callback). */
  constructor(rules: readonly RuleIR[], private readonly options: RuleEnforcerOptions<C>) {
    this.rules = [...rules];
    this.predicates = new Map();
    for (const name of Object.keys(options.predicates ?? {})) {
      const fn = Object.prototype.hasOwnProperty.call(options.predicates, name) ? options.predicates[name] : undefined;
      if (typeof fn !== "function") throw new TypeError(`predicate ${name} is not a function`);
      this.predicates.set(name, fn);
    }
    const ids = new Map<string, RuleIR>();
    for (const r of this.rules) {
      const dup = ids.get(r.id);
      if (dup) {
        throw new SpecError("E0807", `duplicate rule id @${r.id} (first defined at ${dup.idSpan.file}:${dup.idSpan.line}:${dup.idSpan.col})`, r.idSpan,
          "give each rule a unique id; the enforcement log names rules by id");
      }
      ids.set(r.id, r);
    }
    checkPredicates(this.rules as RuleIR[], this.predicates.keys());
    const missing: SpecError[] = [];
    for (const r of this.rules) {
      for (const e of r.enforce) {
        if (e.kind === "stop") continue;
        const cb = NEEDS[e.kind];
        if (typeof options[cb] !== "function") {
          missing.push(new SpecError("E0812", `rule @${r.id} uses ${e.kind} but the enforcer has no ${cb} callback`, e.span,
            `pass ${cb} in the RuleEnforcer options`));
        }
      }
    }
    if (missing.length > 0) {
      (missing[0] as SpecError & { more?: SpecError[] }).more = missing.slice(1);
      throw missing[0];
    }
  }

  /** Parses `text` (a rules file) and builds an enforcer. */
  static fromText<C = AgentContext>(text: string, file: string, options: RuleEnforcerOptions<C>): RuleEnforcer<C> {
    return new RuleEnforcer(parseRules(text, file), options);
  }

  static async fromFile<C = AgentContext>(path: string, options: RuleEnforcerOptions<C>): Promise<RuleEnforcer<C>> {
    return RuleEnforcer.fromText(await readFile(path, "utf8"), path, options);
  }

  /**
   * Runs before a tool call executes: Algorithm 1 up to line 15. The host grounds the decided call
   * (line 16) itself, or lets `guard` do it.
   */
  async check(call: ToolCall, ctx?: C): Promise<Decision> {
    if (!isToolCall(call)) throw new TypeError("RuleEnforcer.check: expected a ToolCall { toolkit, tool, args }");
    const run: Run<C> = { ctx: (ctx ?? {}) as C, log: [], trials: new Map() };
    const out = await this.validateAndEnforce(call, 0, run);
    const action: DecisionAction = out.blocked ? "block" : out.call === call ? "allow" : "replace";
    this.emit(run, {
      kind: "decision", action, call: out.call, attempt: out.attempt,
      ...(out.blocked ? { ruleId: out.blocked.ruleId } : {}),
      reason: out.blocked ? out.blocked.reason
        : action === "replace" ? `revision ${out.attempt} passed every rule`
        : run.log.some((e) => e.kind === "rule" && e.fired) ? "every enforcement let the call through"
        : "no rule fired",
    });
    return { action, call: out.call, original: call, ...(out.blocked ? { blockedBy: out.blocked } : {}), log: run.log };
  }

  /**
   * Algorithm 1 whole: check, then ground the decided call with `ground` (line 16) unless blocked.
   * Returns the decision and, when the call ran, its observation.
   */
  async guard<T>(call: ToolCall, ctx: C | undefined, ground: (call: ToolCall) => Promise<T>): Promise<{ decision: Decision; observation?: T }> {
    const decision = await this.check(call, ctx);
    if (decision.action === "block") return { decision };
    return { decision, observation: await ground(decision.call) };
  }

  private emit(run: Run<C>, entry: LogEntry): void {
    run.log.push(entry);
    this.options.log?.(entry);
  }

  /** Algorithm 1 (`validate_and_enforce`), lines 1–15, for the action `call`. */
  private async validateAndEnforce(call: ToolCall, attempt: number, run: Run<C>): Promise<Outcome> {
    const cache = new Map<string, boolean>(); // Decision: predicate values are cached per call.
    for (const rule of this.rules) { // line 1
      if (!matchesTrigger(rule.trigger, call)) continue; // line 3: is_triggered(rule, states(a))
      const state: RuleState<C> = { call, ctx: run.ctx, rule, attempt }; // line 2
      const trigger = rule.trigger.text;
      // Lines 4–7: check ← True; check ← check && eval_pred(pred) for each predicate.
      const predicates: PredicateResult[] = rule.check.map((p) => ({ pred: printPred(p), value: null }));
      let check = true;
      for (let i = 0; i < rule.check.length && check; i++) {
        try {
          check = await this.evalPred(rule.check[i]!, state, cache);
          predicates[i]!.value = check;
        } catch (e) {
          predicates[i]!.error = message(e);
          this.emit(run, { kind: "rule", ruleId: rule.id, trigger, call, attempt, predicates, fired: false });
          return { call, attempt, blocked: { ruleId: rule.id, enforcement: "predicate", reason: `predicate ${predicates[i]!.pred} failed: ${message(e)}` } };
        }
      }
      this.emit(run, { kind: "rule", ruleId: rule.id, trigger, call, attempt, predicates, fired: check });
      if (!check) continue; // line 8
      const reasons = predicates.map((p) => p.pred);
      // Line 9: action ← apply(rule.enforce, state), one enforcement after the other.
      let mustStop: string | undefined; // set when llm_self_reflect gave up (see the file comment)
      for (const enf of rule.enforce) {
        const base = { kind: "enforce" as const, ruleId: rule.id, trigger, enforcement: enf.kind, text: printEnforce(enf), attempt };
        const block = (reason: string): Outcome => ({ call, attempt, blocked: { ruleId: rule.id, enforcement: enf.kind, reason } });
        switch (enf.kind) {
          case "stop":
            this.emit(run, { ...base, outcome: "stopped" });
            return block(`rule @${rule.id} stops ${trigger}`);
          case "user_inspection": {
            const options = enf.options.map((o) => o.name);
            let ok: unknown;
            try {
              ok = await this.options.userInspection!(state, { ruleId: rule.id, trigger, call, options, reasons });
            } catch (e) {
              this.emit(run, { ...base, outcome: "failed", options, error: message(e) });
              return block(`user inspection failed: ${message(e)}`);
            }
            if (ok !== true) {
              this.emit(run, { ...base, outcome: "denied", options });
              return block("the user denied the call");
            }
            this.emit(run, { ...base, outcome: "approved", options });
            mustStop = undefined; // the user may approve what self-reflection could not fix
            break;
          }
          case "invoke_action": {
            const args = structuredClone(enf.args);
            try {
              const result = await this.options.invokeAction!(enf.action, args, state);
              this.emit(run, { ...base, outcome: "invoked", action: enf.action, args, result });
            } catch (e) {
              this.emit(run, { ...base, outcome: "failed", action: enf.action, args, error: message(e) });
              return block(`action ${enf.action} failed: ${message(e)}`);
            }
            break;
          }
          case "llm_self_reflect": {
            // Lines 10–11: if not exceeding the max trial, return validate_and_enforce(revised action).
            const used = run.trials.get(rule) ?? 0;
            if (used >= enf.maxTrials) {
              this.emit(run, { ...base, outcome: "exhausted", trial: used, maxTrials: enf.maxTrials });
              mustStop = `self-reflection did not produce an acceptable call within ${enf.maxTrials} revision${enf.maxTrials === 1 ? "" : "s"}`;
              break;
            }
            const trial = used + 1;
            run.trials.set(rule, trial);
            const feedback: ReflectionFeedback = {
              ruleId: rule.id, trigger, reasons, trial, maxTrials: enf.maxTrials,
              message: `The call ${call.toolkit}.${call.tool} ${JSON.stringify(call.args)} violates rule @${rule.id}`
                + (reasons.length ? ` (${reasons.join(", ")})` : "") + `. Propose a safer call that achieves the task, or none (revision ${trial} of ${enf.maxTrials}).`,
            };
            let revised: unknown;
            try {
              revised = await this.options.selfReflect!(state, feedback);
            } catch (e) {
              this.emit(run, { ...base, outcome: "failed", trial, maxTrials: enf.maxTrials, error: message(e) });
              return block(`self-reflection failed: ${message(e)}`);
            }
            if (revised === null || revised === undefined) {
              this.emit(run, { ...base, outcome: "no_revision", trial, maxTrials: enf.maxTrials });
              mustStop = "self-reflection offered no revision";
              break;
            }
            if (!isToolCall(revised)) {
              this.emit(run, { ...base, outcome: "failed", trial, maxTrials: enf.maxTrials, error: "the revision is not a ToolCall" });
              return block("self-reflection returned something that is not a ToolCall");
            }
            this.emit(run, { ...base, outcome: "revised", trial, maxTrials: enf.maxTrials, revision: revised });
            return this.validateAndEnforce(revised, attempt + 1, run); // line 11: every rule again, from the first
          }
        }
      }
      if (mustStop) return { call, attempt, blocked: { ruleId: rule.id, enforcement: "llm_self_reflect", reason: mustStop } };
    }
    return { call, attempt }; // line 16 (ground) is the host's
  }

  private async evalPred(p: PredIR, state: RuleState<C>, cache: Map<string, boolean>): Promise<boolean> {
    let negate = false;
    while (p.kind === "not") { negate = !negate; p = p.pred; }
    let v: boolean;
    if (p.kind === "const") v = p.value;
    else {
      const hit = cache.get(p.name);
      if (hit !== undefined) v = hit;
      else {
        const r: unknown = await this.predicates.get(p.name)!(state);
        if (typeof r !== "boolean") throw new TypeError(`predicate ${p.name} returned ${r === null ? "null" : typeof r}, not a boolean`);
        cache.set(p.name, r);
        v = r;
      }
    }
    return negate ? !v : v;
  }
}
