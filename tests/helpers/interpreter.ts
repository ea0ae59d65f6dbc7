/**
 * @fileoverview The REFERENCE INTERPRETER of specc's trace semantics: the test oracle.
 *
 * Every optimized engine (state NFA, DFA, minimized DFA, byte automaton, the .wasm runtime) is tested
 * against this file, so it is written to be obviously right rather than fast. It never builds an
 * automaton: each rule of DESIGN.md (§1.1, §4) is one small function, applied to the whole trace at
 * once, and the behavior formula is evaluated by recursion over its definition (with a memo table
 * only so that long traces finish).
 *
 * A trace conforms (a complete, accepted run) iff all of these hold:
 *
 *  1. Segments. Adjacent `prompt`/`llm` segments are concatenated into one *text run*; each `env`
 *     segment stands alone. Env text is opaque: never scanned for markers, never checked.
 *  2. Markers. Each text run is split into markers and free text, leftmost-longest: repeatedly take
 *     the smallest index where some state's marker occurs, and of the markers occurring there the
 *     longest. Matching spans consecutive prompt/llm segments but never an env segment.
 *  3. Prompt context. `prompt` text before the first marker of the trace is context: it is skipped.
 *     From the first marker on, prompt text is treated exactly like llm text.
 *  4. Leading text. In every text run, the (non-context) text before its first marker must be
 *     whitespace only (space, \t, \n, \r): at the start of generation and right after env text.
 *  5. Env markers. The marker of an `:env-input` state must be the last thing of its text run (not
 *     even whitespace may follow it in that run); the run is then followed by an env segment (the
 *     state's content) or by the end of the trace.
 *  6. Env segments. Every env segment directly follows a text run that ends with an env marker.
 *     (So two env segments in a row, or an env segment first, are violations.)
 *  7. Content. The content of a non-env state is the free text after its marker up to the next
 *     marker or the end of its run. `oneOf`: the content, trimmed of whitespace, equals one of the
 *     options exactly. `any`: anything. Env states' content is never checked.
 *  8. Behavior. The sequence of states (markers in order) is in the language of the behavior formula,
 *     read as a regular expression over states (see `matches`).
 *  9. Constraints. Each temporal constraint holds: at most / at least N occurrences of S; S occurs.
 * 10. Tools (specs with `(:tools ...)`). The content of a :tool-name state, trimmed, is a tool's
 *     name; of a :tool-call state, a sentence of exactly one tool's call grammar
 *     ({"name": N, "arguments": A}); either is a *call* of that tool. The content of a :tool-args
 *     state is a sentence of the argument grammar of the tool called last (none called: violation).
 *     `:empty` content is whitespace. The sequence of calls satisfies every tool constraint: at most
 *     N calls of T; no call of B before the first call of A (`before`).
 *
 * Token markers (`(:token ...)`) are matched here by their text, as `specc check` matches them
 * without a vocabulary.
 *
 * Choices where the definitions leave room (see also tests/fixtures/traces/index.json):
 *  - A trace that ends right after an env marker, with no env segment, conforms iff the rest holds
 *    (the env text is simply missing; e.g. a chat-bot run that stops at "User:").
 *  - Two markers of the same length at the same index (a duplicate marker, a compile error anyway):
 *    the state declared first wins. States with an empty marker never match (also a compile error).
 *  - A marker is any exact occurrence of the string, even inside a word ("xThought:" contains
 *    Thought). Only text runs are scanned; a marker inside env text is not a marker.
 */

import { recognize } from "../../compiler/grammar/index.js";
import type { Behavior, ConstraintIR, ContentIR, SpecIR } from "../../compiler/ir.js";

// ───────────────────────────────────────────── traces ─────────────────────────────────────────────

export type Segment = { by: "prompt" | "llm" | "env"; text: string };
export type Trace = { segments: Segment[] };

/** A stretch of consecutive prompt/llm segments, kept with their origin, or one env segment. */
export type Item =
  | { kind: "text"; text: string; /** for each UTF-16 unit of `text`: was it prompt text? */ fromPrompt: boolean[] }
  | { kind: "env"; text: string };

/** One piece of a text run after marker splitting. `at` is the UTF-16 index in the run's text. */
export type Piece =
  | { kind: "free"; text: string; at: number }
  | { kind: "marker"; state: number; at: number };

/** A visited spec state with the content it got. */
export interface Step {
  state: number;
  /** Free text after the marker (non-env states), the env text, or null (env text missing). */
  content: string | null;
}

export interface Verdict {
  conforms: boolean;
  /** The first rule that failed, in words; null when the trace conforms. */
  reason: string | null;
  /** Names of the states visited, in order (as far as the trace could be read). */
  states: string[];
}

// ───────────────────────────────────────────── rule 1 ─────────────────────────────────────────────

/** Rule 1: merge adjacent prompt/llm segments into text runs; env segments stay on their own. */
export function toItems(trace: Trace): Item[] {
  const items: Item[] = [];
  for (const seg of trace.segments) {
    if (seg.by !== "prompt" && seg.by !== "llm" && seg.by !== "env") {
      throw new TypeError(`trace segment with unknown "by": ${JSON.stringify(seg.by)}`);
    }
    if (typeof seg.text !== "string") throw new TypeError(`trace segment text must be a string`);
    if (seg.by === "env") {
      items.push({ kind: "env", text: seg.text });
      continue;
    }
    let last = items[items.length - 1];
    if (last === undefined || last.kind !== "text") {
      last = { kind: "text", text: "", fromPrompt: [] };
      items.push(last);
    }
    last.text += seg.text;
    for (let k = 0; k < seg.text.length; k++) last.fromPrompt.push(seg.by === "prompt");
  }
  return items;
}

// ───────────────────────────────────────────── rule 2 ─────────────────────────────────────────────

/** Does some state's marker occur at index i? Returns the longest one (first declared on a tie). */
export function markerAt(ir: SpecIR, text: string, i: number): number | null {
  let best: number | null = null;
  for (const s of ir.states) {
    if (s.marker.length === 0 || !text.startsWith(s.marker, i)) continue;
    if (best === null || s.marker.length > ir.states[best]!.marker.length) best = s.id;
  }
  return best;
}

/** Rule 2: split one text run into markers and free text, leftmost-longest. */
export function splitMarkers(ir: SpecIR, text: string): Piece[] {
  const pieces: Piece[] = [];
  let pos = 0;
  while (pos < text.length) {
    // the smallest index i ≥ pos where some marker occurs
    let i = pos;
    let state: number | null = null;
    for (; i < text.length; i++) {
      state = markerAt(ir, text, i);
      if (state !== null) break;
    }
    if (state === null) {
      pieces.push({ kind: "free", text: text.slice(pos), at: pos });
      break;
    }
    if (i > pos) pieces.push({ kind: "free", text: text.slice(pos, i), at: pos });
    pieces.push({ kind: "marker", state, at: i });
    pos = i + ir.states[state]!.marker.length;
  }
  return pieces;
}

// ─────────────────────────────────────────── rules 3 and 4 ───────────────────────────────────────────

const WS = new Set([" ", "\t", "\n", "\r"]);

export function isWhitespace(text: string): boolean {
  for (const ch of text) if (!WS.has(ch)) return false;
  return true;
}

export function trimWhitespace(text: string): string {
  let a = 0;
  let b = text.length;
  while (a < b && WS.has(text[a]!)) a++;
  while (b > a && WS.has(text[b - 1]!)) b--;
  return text.slice(a, b);
}

/**
 * Rules 3 + 4: the text of a run before its first marker. `isFirstRun`: the first text run of the
 * trace, where prompt text before the first marker is context and is dropped. Returns the text that
 * must be whitespace.
 */
export function leadingText(item: Extract<Item, { kind: "text" }>, pieces: Piece[], isFirstRun: boolean): string {
  const first = pieces[0];
  if (first === undefined || first.kind !== "free") return "";
  if (!isFirstRun) return first.text;
  let kept = "";
  for (let k = first.at; k < first.at + first.text.length; k++) {
    if (!item.fromPrompt[k]) kept += item.text[k]!;
  }
  return kept;
}

// ───────────────────────────────────────────── rule 7 ─────────────────────────────────────────────

/** Rule 7: may a state with this content constraint have this content? (Tool contents: rule 10.) */
export function contentOk(content: ContentIR, text: string): boolean {
  switch (content.kind) {
    case "any":
      return true;
    case "empty":
      return isWhitespace(text);
    case "toolName":
    case "toolArgs":
    case "toolCall":
      throw new Error("tool contents depend on the run: see toolCalls (rule 10)");
    case "oneOf":
      return content.options.includes(trimWhitespace(text));
    case "grammar":
      // The Earley recognizer of compiler/grammar (no automaton): the trimmed content must be a
      // sentence. It ignores the DFA's nesting bound, so cases must stay within it.
      return recognize(content.cfg, new TextEncoder().encode(trimWhitespace(text)));
  }
}

// ───────────────────────────────────────────── rule 8 ─────────────────────────────────────────────

/**
 * Rule 8: the set of sequences of a behavior formula, as a regular expression over states.
 * `matches(f, seq, i, j)` is true iff seq[i..j) (j exclusive) is in the language of f:
 *   state S            seq[i..j) = <S>
 *   (next a b …)       seq[i..j) splits into consecutive parts matching a, b, … in order
 *   (or a b …)         seq[i..j) matches one of them
 *   (until_M_N a b)    seq[i..j) = k parts matching a, with M ≤ k ≤ N (N may be unbounded), then one part matching b
 *   (always a)         seq[i..j) = k ≥ 1 parts each matching a
 * No formula matches the empty sequence (every operator needs at least one state), so a repetition
 * count never has to exceed the length of the slice; the loops below use that bound.
 */
export function makeMatcher(f: Behavior, seq: readonly number[]): (i: number, j: number) => boolean {
  const ids = new Map<Behavior, number>();
  const memo = new Map<string, boolean>();
  const id = (g: Behavior): number => {
    let n = ids.get(g);
    if (n === undefined) ids.set(g, (n = ids.size));
    return n;
  };
  const cached = (key: string, compute: () => boolean): boolean => {
    const hit = memo.get(key);
    if (hit !== undefined) return hit;
    const v = compute();
    memo.set(key, v);
    return v;
  };

  /** seq[i..j) ⊨ g */
  function matches(g: Behavior, i: number, j: number): boolean {
    return cached(`${id(g)}:${i}:${j}`, () => {
      switch (g.op) {
        case "state":
          return j === i + 1 && seq[i] === g.state;
        case "next":
          return concatenation(g, 0, i, j);
        case "or":
          return g.args.some((a) => matches(a, i, j));
        case "until": {
          const last = Math.min(g.max ?? Infinity, Math.max(g.min, j - i));
          for (let k = g.min; k <= last; k++) {
            for (let p = i; p <= j; p++) {
              if (repetitions(g.body, k, i, p) && matches(g.then, p, j)) return true;
            }
          }
          return false;
        }
        case "always":
          for (let k = 1; k <= Math.max(1, j - i); k++) if (repetitions(g.body, k, i, j)) return true;
          return false;
      }
    });
  }

  /** seq[i..j) ⊨ (next args[from] args[from+1] …) */
  function concatenation(g: Extract<Behavior, { op: "next" }>, from: number, i: number, j: number): boolean {
    if (from === g.args.length - 1) return matches(g.args[from]!, i, j);
    return cached(`${id(g)}:n${from}:${i}:${j}`, () => {
      for (let p = i; p <= j; p++) {
        if (matches(g.args[from]!, i, p) && concatenation(g, from + 1, p, j)) return true;
      }
      return false;
    });
  }

  /** seq[i..j) is exactly k consecutive parts, each ⊨ body. */
  function repetitions(body: Behavior, k: number, i: number, j: number): boolean {
    if (k === 0) return i === j;
    return cached(`${id(body)}:r${k}:${i}:${j}`, () => {
      for (let p = i; p <= j; p++) {
        if (matches(body, i, p) && repetitions(body, k - 1, p, j)) return true;
      }
      return false;
    });
  }

  return (i, j) => matches(f, i, j);
}

/** Rule 8 for a whole sequence. */
export function behaviorAccepts(f: Behavior, seq: readonly number[]): boolean {
  return makeMatcher(f, seq)(0, seq.length);
}

// ───────────────────────────────────────────── rule 9 ─────────────────────────────────────────────

export function occurrences(seq: readonly number[], state: number): number {
  return seq.filter((s) => s === state).length;
}

/** Rule 9: one temporal constraint over the whole sequence. */
export function constraintHolds(c: ConstraintIR, seq: readonly number[]): boolean {
  switch (c.kind) {
    case "atMost":
      return occurrences(seq, c.state) <= c.n;
    case "atLeast":
      return occurrences(seq, c.state) >= c.n;
    case "eventually":
      return occurrences(seq, c.state) >= 1;
    case "toolAtMost":
    case "toolBefore":
      throw new Error("tool constraints are about tool calls, not states: see toolCalls (rule 10)");
  }
}

// ─────────────────────────────────────── the whole trace ───────────────────────────────────────

/** Rules 1–6: read the trace into the steps it visits, or say which rule it breaks. */
export function readSteps(ir: SpecIR, trace: Trace): { steps: Step[]; violation: string | null } {
  const items = toItems(trace);
  const steps: Step[] = [];
  const name = (s: number): string => ir.states[s]!.name;
  const fail = (violation: string) => ({ steps, violation });
  /** The last step is an env state whose text has not come yet (rule 5 → rule 6). */
  let awaitingEnv = false;
  let seenText = false;

  for (const item of items) {
    if (item.kind === "env") {
      // rule 6
      if (!awaitingEnv) return fail("env text that does not directly follow an env-input marker");
      steps[steps.length - 1]!.content = item.text;
      awaitingEnv = false;
      continue;
    }
    const pieces = splitMarkers(ir, item.text);
    const isFirstRun = !seenText;
    seenText = true;
    // rule 4 (with rule 3 on the first run)
    const lead = leadingText(item, pieces, isFirstRun);
    if (!isWhitespace(lead)) {
      return fail(`non-whitespace text before the first marker${isFirstRun ? "" : " after env text"}: ${JSON.stringify(lead)}`);
    }
    for (let k = 0; k < pieces.length; k++) {
      const piece = pieces[k]!;
      if (piece.kind !== "marker") continue;
      const state = ir.states[piece.state]!;
      const after = pieces[k + 1];
      if (state.env) {
        // rule 5
        if (after !== undefined) {
          const what = after.kind === "free" ? JSON.stringify(after.text) : `the marker of ${name(after.state)}`;
          return fail(`text after the env-input marker of ${state.name} in the same llm text: ${what}`);
        }
        steps.push({ state: piece.state, content: null });
        awaitingEnv = true;
      } else {
        steps.push({ state: piece.state, content: after !== undefined && after.kind === "free" ? after.text : "" });
      }
    }
  }
  return { steps, violation: null };
}

/** The oracle, with the reason for a rejection. */
export function explainTrace(ir: SpecIR, trace: Trace): Verdict {
  const { steps, violation } = readSteps(ir, trace);
  const states = steps.map((s) => ir.states[s.state]!.name);
  const no = (reason: string): Verdict => ({ conforms: false, reason, states });
  if (violation !== null) return no(violation);

  // rule 7 (and rule 10's contents)
  const calls = toolCalls(ir, steps);
  if (typeof calls === "string") return no(calls);
  for (const step of steps) {
    const state = ir.states[step.state]!;
    if (state.env || state.content.kind === "toolName" || state.content.kind === "toolArgs" || state.content.kind === "toolCall") continue;
    if (!contentOk(state.content, step.content ?? "")) {
      return no(`content of ${state.name} is not allowed: ${JSON.stringify(step.content)}`);
    }
  }
  // rule 8
  const seq = steps.map((s) => s.state);
  if (!behaviorAccepts(ir.behavior, seq)) {
    return no(`the state sequence [${states.join(" ")}] is not a complete run of the behavior`);
  }
  // rule 10's constraints
  for (const c of ir.constraints) {
    if (c.kind !== "toolAtMost" && c.kind !== "toolBefore") continue;
    const tools = ir.tools ?? [];
    if (c.kind === "toolAtMost" && calls.filter((t) => t === c.tool).length > c.n) {
      return no(`constraint violated: at most ${c.n} × tool ${tools[c.tool]!.name}`);
    }
    if (c.kind === "toolBefore") {
      const a = calls.indexOf(c.first), b = calls.indexOf(c.then);
      if (b >= 0 && (a < 0 || a > b)) return no(`constraint violated: tool ${tools[c.then]!.name} before tool ${tools[c.first]!.name}`);
    }
  }
  // rule 9
  for (const c of ir.constraints) {
    if (c.kind === "toolAtMost" || c.kind === "toolBefore") continue;
    if (!constraintHolds(c, seq)) {
      const s = ir.states[c.state]!.name;
      const what = c.kind === "eventually" ? `eventually ${s}` : `${c.kind === "atMost" ? "at most" : "at least"} ${c.n} × ${s}`;
      return no(`constraint violated: ${what}`);
    }
  }
  return { conforms: true, reason: null, states };
}

/**
 * Rule 10: the tool called by each :tool-name / :tool-call step, in order, checking those contents
 * and every :tool-args content against the tool called last. Returns the calls, or why not.
 */
export function toolCalls(ir: SpecIR, steps: Step[]): number[] | string {
  const tools = ir.tools ?? [];
  const calls: number[] = [];
  const enc = new TextEncoder();
  for (const step of steps) {
    const state = ir.states[step.state]!;
    if (state.env) continue;
    const text = trimWhitespace(step.content ?? "");
    const kind = state.content.kind;
    if (kind === "toolName") {
      const t = tools.findIndex((x) => x.name === text);
      if (t < 0) return `content of ${state.name} is not a tool name: ${JSON.stringify(step.content)}`;
      calls.push(t);
    } else if (kind === "toolCall") {
      const matching = tools.flatMap((x, i) => (recognize(x.call, enc.encode(text)) ? [i] : []));
      if (matching.length !== 1) return `content of ${state.name} is not a call of ${matching.length ? "exactly one" : "any"} tool: ${JSON.stringify(step.content)}`;
      calls.push(matching[0]!);
    } else if (kind === "toolArgs") {
      const last = calls[calls.length - 1];
      if (last === undefined) return `content of ${state.name}: arguments before any tool was chosen`;
      if (!recognize(tools[last]!.args, enc.encode(text))) return `content of ${state.name} is not valid arguments of tool ${tools[last]!.name}: ${JSON.stringify(step.content)}`;
    }
  }
  return calls;
}

/** true iff the trace is a complete run that conforms to the spec. */
export function checkTrace(ir: SpecIR, trace: Trace): boolean {
  return explainTrace(ir, trace).conforms;
}
