/**
 * @fileoverview Validation of a prompt's few-shot examples against the spec (seed 001: a spec
 * makes it possible to "formally validate prompt examples"). The same runner as `specc check`
 * (compiler/trace.ts) decides; this module only finds the examples in a prompt and turns each
 * into a transcript.
 *
 * How a prompt is read:
 * - It is split into blocks at blank lines (or at `separator`); a block is an example when it
 *   contains a marker of the spec. A block that is only a marker (the query slot at the end of a
 *   prompt, "[Question]") is skipped. With `from`, only the text after its first match is read
 *   (e.g. `from: "Here are some examples."` skips the instructions).
 * - A format template in the instructions ("Thought: you should always think…\nAction: …") is a
 *   block with markers too, and is checked like an example; a template that lists the states in a
 *   conforming order passes. Use `from` to leave it out.
 * - An example may itself contain blank lines (seed 001 Fig 1 has one after an observation): a
 *   block that begins with a marker the previous, incomplete example may continue with is joined
 *   to it.
 * - Within an example, text before its first marker is context (the "Claim: …" or "Question: …"
 *   of a spec without such a state), as in DESIGN §4. The content of an env-input state
 *   ("Observation: …") is environment text: it runs to the next marker of any state, even on the
 *   same line (seed 001 Fig 6: "…intended as a pilot. Final Thought: …"); everything else is fed as
 *   LLM text.
 * - The first violation is reported with its position in the prompt: where a marker that is not
 *   allowed there begins (`found`), or the first character that is not allowed; an example that
 *   stops before the spec's run can end is "incomplete", positioned at its end.
 */
import type { Compiled } from "../compiler/ir.js";
import { byteDfaEngine, runTrace, type Engine, type Segment, type Trace } from "../compiler/trace.js";
import { nextMarker } from "./runner.js";
import { wasmEngine, type Spec } from "../bindings/spec.js";

interface StateLike {
  readonly name: string;
  readonly marker: string;
  readonly env: boolean;
}

export interface ExampleViolation {
  /** "text": not allowed here; "env-not-expected": environment text with no env marker before it; "incomplete". */
  reason: "text" | "env-not-expected" | "incomplete";
  /** Segment of `trace` and character offset in it (runTrace's terms). */
  segment: number;
  offset: number;
  /** Character index in the prompt, and its 1-based line and column. */
  at: number;
  line: number;
  col: number;
  /** The spec state the run was in, null before the first marker. */
  state: string | null;
  /** Marker texts that were valid there. */
  expected: string[];
  /** The marker that was written where it is not allowed, when the violation completes one. */
  found?: string;
}

export interface ExampleReport {
  /** 1-based, in prompt order. */
  index: number;
  text: string;
  /** Character index of the example in the prompt, and its 1-based line. */
  start: number;
  line: number;
  verdict: "conforms" | "violation" | "incomplete";
  firstViolation: ExampleViolation | null;
  /** The example as a transcript (what `specc check --trace` would read). */
  trace: Trace;
}

export interface CheckExamplesOptions {
  /** Where examples are split (default: blank lines). */
  separator?: string | RegExp;
  /** Read only the text after the first match (e.g. "Here are some examples."). */
  from?: string | RegExp;
}

type Checker = { engine: Engine; states: StateLike[] };

function checkerOf(spec: Compiled | Spec): Checker {
  if ("ir" in spec && "byteDfa" in spec) {
    return { engine: byteDfaEngine(spec.byteDfa), states: spec.ir.states.map((s) => ({ name: s.name, marker: s.marker, env: s.env })) };
  }
  return { engine: wasmEngine(spec as Spec), states: [...(spec as Spec).states] };
}


/** An example's text as a transcript; `starts[i]` is where segment i begins in `text`. */
export function exampleTrace(text: string, states: readonly StateLike[]): { trace: Trace; starts: number[] } {
  const segments: Segment[] = [];
  const starts: number[] = [];
  let kind: "prompt" | "llm" = "prompt";
  let segStart = 0;
  let i = 0;
  for (;;) {
    const hit = nextMarker(text, i, states);
    if (!hit) break;
    i = hit.at + hit.state.marker.length;
    if (!hit.state.env) continue;
    segments.push({ by: kind, text: text.slice(segStart, i) });
    starts.push(segStart);
    kind = "llm";
    const nx = nextMarker(text, i, states);
    const end = nx ? nx.at : text.length;
    segments.push({ by: "env", text: text.slice(i, end) });
    starts.push(i);
    segStart = i = end;
  }
  if (segStart < text.length || segments.length === 0) {
    segments.push({ by: kind, text: text.slice(segStart) });
    starts.push(segStart);
  }
  return { trace: { segments }, starts };
}

function lineCol(text: string, at: number): { line: number; col: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < at; i++) if (text.charCodeAt(i) === 10) { line++; lineStart = i + 1; }
  return { line, col: at - lineStart + 1 };
}

function blocks(text: string, base: number, sep: string | RegExp): { start: number; end: number }[] {
  const out: { start: number; end: number }[] = [];
  const re = typeof sep === "string" ? new RegExp(sep.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), "g") : new RegExp(sep.source, sep.flags.includes("g") ? sep.flags : sep.flags + "g");
  let last = 0;
  for (const m of text.matchAll(re)) {
    if (m[0].length === 0) continue;
    out.push({ start: base + last, end: base + m.index! });
    last = m.index! + m[0].length;
  }
  out.push({ start: base + last, end: base + text.length });
  return out;
}

/** Checks every few-shot example of `prompt` against the spec (see the file overview). */
export function checkExamples(spec: Compiled | Spec, prompt: string, opts: CheckExamplesOptions = {}): ExampleReport[] {
  const { engine, states } = checkerOf(spec);
  const markers = states.map((s) => s.marker);
  let base = 0;
  if (opts.from !== undefined) {
    if (typeof opts.from === "string") {
      const k = prompt.indexOf(opts.from);
      base = k < 0 ? prompt.length : k + opts.from.length;
    } else {
      const m = new RegExp(opts.from.source, opts.from.flags.replace("g", "")).exec(prompt);
      base = m ? m.index + m[0].length : prompt.length;
    }
  }
  const parts = blocks(prompt.slice(base), base, opts.separator ?? /\r?\n[ \t]*\r?\n/)
    .filter((b) => nextMarker(prompt.slice(b.start, b.end), 0, states) !== null)
    .filter((b) => !markers.includes(prompt.slice(b.start, b.end).trim()));

  const run = (text: string) => {
    const { trace, starts } = exampleTrace(text, states);
    return { trace, starts, v: runTrace(engine, trace, markers) };
  };
  const spans: { start: number; end: number }[] = [];
  for (const b of parts) {
    const prev = spans[spans.length - 1];
    if (prev) {
      const text = prompt.slice(b.start, b.end);
      const lead = nextMarker(text, 0, states)!;
      const r = run(prompt.slice(prev.start, prev.end));
      if (text.slice(0, lead.at).trim() === "" && r.v.verdict === "incomplete" && r.v.expected.some((i) => markers[i] === lead.state.marker)) {
        prev.end = b.end;
        continue;
      }
    }
    spans.push({ ...b });
  }

  return spans.map((sp, k): ExampleReport => {
    const text = prompt.slice(sp.start, sp.end);
    const { trace, starts, v } = run(text);
    const name = (i: number) => (i < 0 ? null : states[i]!.name);
    const where = (local: number) => ({ at: sp.start + local, ...lineCol(prompt, sp.start + local) });
    let firstViolation: ExampleViolation | null = null;
    if (v.verdict === "violation") {
      let local = starts[v.segment]! + v.offset;
      let found: string | undefined;
      if (v.reason === "text") {
        const upto = text.slice(0, local + 1);
        found = [...markers].sort((a, b) => b.length - a.length).find((mk) => upto.endsWith(mk));
        if (found) local = local + 1 - found.length;
      }
      firstViolation = {
        reason: v.reason, segment: v.segment, offset: v.offset, ...where(local),
        state: name(v.specState), expected: v.expected.map((i) => markers[i]!), ...(found ? { found } : {}),
      };
    } else if (v.verdict === "incomplete") {
      const last = trace.segments.length - 1;
      firstViolation = {
        reason: "incomplete", segment: last, offset: trace.segments[last]!.text.length, ...where(text.trimEnd().length),
        state: name(v.specState), expected: v.expected.map((i) => markers[i]!),
      };
    }
    return { index: k + 1, text, start: sp.start, line: lineCol(prompt, sp.start).line, verdict: v.verdict, firstViolation, trace };
  });
}

/**
 * The report as `specc check SPEC --examples PROMPT` prints it: one line per example, and for a
 * failing one the state, the valid markers and the line with a caret; then a summary line.
 */
export function formatExamplesReport(reports: readonly ExampleReport[], opts: { file?: string } = {}): string {
  const file = opts.file ?? "<prompt>";
  const out: string[] = [];
  if (!reports.length) return `${file}: no examples found (no block of the prompt contains a marker of the spec)`;
  for (const r of reports) {
    const v = r.firstViolation;
    if (r.verdict === "conforms") {
      out.push(`${file}:${r.line}: example ${r.index}: conforms`);
      continue;
    }
    const exp = v!.expected.map((x) => JSON.stringify(x)).join(", ") || "none";
    if (r.verdict === "incomplete") {
      out.push(`${file}:${v!.line}:${v!.col}: example ${r.index}: incomplete — it stops in ${v!.state ?? "(start)"}; it may continue with ${exp}`);
      continue;
    }
    const what = v!.reason === "env-not-expected" ? "environment text where none is expected"
      : v!.found ? `${JSON.stringify(v!.found)} is not allowed here` : "text not allowed here";
    out.push(`${file}:${v!.line}:${v!.col}: example ${r.index}: violation: ${what}`);
    out.push(`  state: ${v!.state ?? "(start)"}; valid next markers: ${exp}`);
    // The example's line, cut to a window around the caret.
    const src = r.text;
    const local = v!.at - r.start;
    const ls = Math.max(src.lastIndexOf("\n", local - 1) + 1, local - 60);
    let le = src.indexOf("\n", local);
    if (le < 0) le = src.length;
    le = Math.min(le, local + 40);
    out.push(`  | ${src.slice(ls, le).replace(/[\t\r]/g, " ")}`);
    out.push(`  | ${" ".repeat(local - ls)}^`);
  }
  const bad = reports.filter((r) => r.verdict !== "conforms").length;
  out.push(`${file}: ${reports.length} example${reports.length > 1 ? "s" : ""}, ${reports.length - bad} conform${bad ? `, ${bad} do${bad > 1 ? "" : "es"} not` : ""}`);
  return out.join("\n");
}
