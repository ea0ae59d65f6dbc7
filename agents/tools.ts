/**
 * @fileoverview Typed tool calls in the runners: an env-state handler (`typedTools`) that reads the
 * tool calls the model wrote since the environment last answered — `{"name", "arguments"}` objects
 * of a `:tool-call` state (Hermes/Qwen3), or `:tool-name` + `:tool-args` pairs (ReAct's Action /
 * Action Input) — hands each tool's handler its parsed arguments object (already valid for the
 * tool's schema: the spec's automaton enforced it), optionally checks each call against AgentSpec
 * rules first (by tool name and argument values), and records every call with its result.
 *
 * ```ts
 * const tools = typedTools({
 *   callState: "Call",
 *   handlers: { get_weather: ({ city, days }) => forecast(city, days) },
 *   format: hermesResponses,            // Qwen3's <tool_response> turn
 *   guard: { enforcer: new RuleEnforcer(parseRules(text), { predicates }), toolkit: "Travel" },
 * });
 * const run = await runAgent({ spec, backend, tools: { "Turn-End": tools } });
 * run.toolCalls;   // [{ state: "Call", name: "get_weather", arguments: { city: "Oslo" }, result: "…" }]
 * ```
 */
import type { AgentContext, CallRecord, RawEnv, ToolHandler, TypedCall } from "./runner.js";
import type { Decision, ToolCall } from "./rules.js";

export type { CallRecord, TypedCall };

/** A tool's handler: the parsed arguments, and the context of the env state being answered. */
export type TypedHandler = (args: Record<string, unknown>, ctx: AgentContext & { call: TypedCall }) => unknown;

export interface TypedToolsOptions {
  /** Handlers by tool name. A call of a tool without one is an error. */
  handlers: Record<string, TypedHandler>;
  /** The `:tool-call` state whose content is `{"name": …, "arguments": …}`. */
  callState?: string;
  /** Or the `:tool-name` state … */
  nameState?: string;
  /** … and the `:tool-args` state after it. */
  argsState?: string;
  /** The env text from the calls of one turn (default: `plainResults`). */
  format?: (calls: readonly CallRecord[]) => string | RawEnv;
  /**
   * AgentSpec rules (agents/rules.ts) checked before each call runs; the call is seen as
   * `toolkit.name` with its parsed arguments (predicates read `call.args`). Blocked calls do not run.
   */
  guard?: {
    enforcer: { check(call: ToolCall, ctx?: unknown): Promise<Decision> };
    /** Toolkit name of every tool (default "Tools"), for rules' `trigger Toolkit.tool`. */
    toolkit?: string;
    blockedText?: (d: Decision) => string;
  };
}

/** The default env text: each call's result on its own line (ReAct's Observation). */
export function plainResults(calls: readonly CallRecord[]): string {
  return calls.map((c) => c.result).join("\n");
}

/**
 * Qwen3's (Hermes) tool-response turn, exactly as its chat template writes it after the
 * assistant's `<|im_end|>`: a user turn with one `<tool_response>` per call, then the assistant's
 * turn header. Returned raw (not reshaped by `envText`).
 */
export function hermesResponses(calls: readonly CallRecord[]): RawEnv {
  const body = calls.map((c) => `<tool_response>\n${c.result}\n</tool_response>`).join("\n");
  return { raw: `\n<|im_start|>user\n${body}<|im_end|>\n<|im_start|>assistant\n` };
}

/** The calls written since the env state being answered was last visited. */
export function callsSince(ctx: AgentContext, o: Pick<TypedToolsOptions, "callState" | "nameState" | "argsState">): (TypedCall & { state: string })[] {
  const steps = ctx.steps;
  let from = steps.length;
  while (from > 0 && steps[from - 1]!.state !== ctx.state) from--;
  const out: (TypedCall & { state: string })[] = [];
  let pendingName: string | undefined;
  const object = (text: string, what: string): Record<string, unknown> => {
    const v = JSON.parse(text) as unknown;
    if (typeof v !== "object" || v === null || Array.isArray(v)) throw new Error(`${what} is not a JSON object: ${text.slice(0, 80)}`);
    return v as Record<string, unknown>;
  };
  for (const step of steps.slice(from)) {
    if (step.state === o.callState) {
      const c = object(step.content, `the content of ${step.state}`);
      if (typeof c["name"] !== "string") throw new Error(`the call in ${step.state} has no "name": ${step.content.slice(0, 80)}`);
      out.push({ state: step.state, name: c["name"], arguments: object(JSON.stringify(c["arguments"] ?? {}), `the arguments in ${step.state}`) });
    } else if (step.state === o.nameState) {
      pendingName = step.content;
    } else if (step.state === o.argsState && pendingName !== undefined) {
      out.push({ state: step.state, name: pendingName, arguments: object(step.content, `the content of ${step.state}`) });
      pendingName = undefined;
    }
  }
  return out;
}

/** An env-state handler that runs typed tool calls (see the file overview); `.calls` records them. */
export function typedTools(o: TypedToolsOptions): ToolHandler & { calls: CallRecord[] } {
  if (!o.callState && !(o.nameState && o.argsState)) {
    throw new TypeError("typedTools: name the :tool-call state ({ callState }) or the :tool-name and :tool-args states ({ nameState, argsState })");
  }
  const calls: CallRecord[] = [];
  const handler = async (ctx: AgentContext) => {
    const turn: CallRecord[] = [];
    for (const call of callsSince(ctx, o)) {
      let rec: CallRecord | undefined;
      let { name, arguments: args } = call;
      if (o.guard) {
        const d = await o.guard.enforcer.check({ toolkit: o.guard.toolkit ?? "Tools", tool: name, args }, ctx);
        if (d.action === "block") {
          const why = o.guard.blockedText?.(d) ?? `Blocked by rule @${d.blockedBy?.ruleId ?? "?"}: ${d.blockedBy?.reason ?? "not allowed"}`;
          rec = { ...call, result: why, blockedBy: d.blockedBy?.ruleId ?? "?" };
        } else ({ tool: name, args } = d.call); // allowed as is, or replaced (invoke_action, a revision)
      }
      if (!rec) {
        const fn = o.handlers[name];
        if (!fn) throw new Error(`typedTools: no handler for tool ${name} (handlers: ${Object.keys(o.handlers).join(", ") || "none"})`);
        const r = await fn(args, { ...ctx, call: { name, arguments: args } });
        rec = { state: call.state, name, arguments: args, result: typeof r === "string" ? r : JSON.stringify(r) };
      }
      turn.push(rec);
      calls.push(rec);
    }
    return (o.format ?? plainResults)(turn);
  };
  return Object.assign(handler, { calls });
}
