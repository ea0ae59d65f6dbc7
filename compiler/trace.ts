/**
 * @fileoverview Transcripts (DESIGN §4) and the conformance check that runs one through any
 * engine: the byte DFA before or after minimization, or a compiled .wasm. The same runner serves
 * `specc check` and the differential test suite, so every engine sees exactly the same bytes.
 *
 * `prompt` text up to the first marker is context and skipped; from the first marker on it is fed
 * like LLM text. `env` text is opaque: it is only legal while the run is yielding.
 */
import { SpecError } from "./diagnostics.js";
import { ByteFlag, type ByteDfa } from "./ir.js";
import { runBytes } from "./automata/bytes.js";
import { encodeText, type TokenMarker } from "./tokens.js";
import { PdaRunner, pdaOfByteDfa, type PdaConfig } from "./grammar/pda.js";

export interface Segment { by: "prompt" | "llm" | "env"; text: string }
export interface Trace {
  segments: Segment[];
  /** The typed tool calls of the run, with their results, as the runners record them (not checked). */
  toolCalls?: { name: string; arguments: Record<string, unknown>; result: string }[];
}

/** What the runner needs from an automaton. States are opaque numbers. */
export interface Engine {
  initial(): number;
  /** New state, or -(1 + index) of the first byte that is not allowed. */
  feed(state: number, bytes: Uint8Array): number;
  /** The state after env text, or -1 when `state` is not yielding. */
  env(state: number): number;
  flags(state: number): number;
  specState(state: number): number;
  nextMarkers(state: number): number[];
}

export function byteDfaEngine(d: ByteDfa): Engine {
  if (d.calls) return pdaEngine(d);
  return {
    initial: () => d.initial,
    feed: (s, b) => runBytes(d, s, b),
    env: (s) => d.envNext[s]!,
    flags: (s) => d.flags[s]!,
    specState: (s) => d.specState[s]!,
    nextMarkers: (s) => d.nextMarkers[s]!,
  };
}

/**
 * A pushdown automaton (a grammar, grammar/pda.ts, or an agent with stack content,
 * automata/pushdown-bytes.ts) as an Engine: the opaque states are configurations, numbered in
 * order of first appearance (so equal configurations are equal numbers). Per-state outputs (spec
 * state, flags, next markers, env edge) are those of the configuration's first pair: every pair of
 * an agent's configuration agrees on them (pushdown-bytes.ts); a grammar has none.
 */
export function pdaEngine(d: ByteDfa): Engine {
  const runner = new PdaRunner(pdaOfByteDfa(d));
  const configs: PdaConfig[] = [];
  const ids = new Map<string, number>();
  const id = (c: PdaConfig): number => {
    const k = PdaRunner.key(c);
    let n = ids.get(k);
    if (n === undefined) { n = configs.length; ids.set(k, n); configs.push(c); }
    return n;
  };
  const initial = id(runner.start());
  const rep = (s: number): number => configs[s]!.states[0] ?? -1;
  return {
    initial: () => initial,
    feed: (s, bytes) => {
      let c: PdaConfig | null = configs[s]!;
      for (let i = 0; i < bytes.length; i++) {
        c = runner.step(c, bytes[i]!);
        if (!c) return -(1 + i);
      }
      return id(c);
    },
    env: (s) => {
      const q = rep(s);
      const t = q < 0 ? -1 : d.envNext[q]!;
      const c = t < 0 ? null : runner.at(t);
      return c ? id(c) : -1;
    },
    flags: (s) => (configs[s]!.accept ? ByteFlag.Accepting : 0) | (rep(s) < 0 ? 0 : d.flags[rep(s)]! & ~ByteFlag.Accepting),
    specState: (s) => (rep(s) < 0 ? -1 : d.specState[rep(s)]!),
    nextMarkers: (s) => (rep(s) < 0 ? [] : d.nextMarkers[rep(s)]!),
  };
}

export type Verdict =
  | { verdict: "conforms"; state: number }
  | { verdict: "incomplete"; state: number; specState: number; expected: number[] }
  | {
      verdict: "violation"; segment: number; offset: number; specState: number; expected: number[];
      reason: "text" | "env-not-expected";
      /** The automaton state the run was in when the text was refused. */
      state: number;
    };

/** Parses and validates a trace file's JSON. Throws SpecError E0601 with a precise message. */
export function parseTrace(text: string, file: string): Trace {
  let v: unknown;
  try { v = JSON.parse(text); } catch (e) {
    throw new SpecError("E0601", `${file} is not valid JSON: ${(e as Error).message}`, null,
      'a trace is {"segments": [{"by": "prompt"|"llm"|"env", "text": "..."}]}');
  }
  const segs = (v as { segments?: unknown })?.segments;
  if (!Array.isArray(segs)) {
    throw new SpecError("E0601", `${file} has no "segments" array`, null,
      'a trace is {"segments": [{"by": "prompt"|"llm"|"env", "text": "..."}]}');
  }
  segs.forEach((s: unknown, i) => {
    const seg = s as Partial<Segment>;
    if (!seg || typeof seg.text !== "string" || !["prompt", "llm", "env"].includes(seg.by as string)) {
      throw new SpecError("E0601", `${file}: segment ${i} must be {"by": "prompt"|"llm"|"env", "text": string}`, null);
    }
  });
  return { segments: segs as Segment[] };
}

/** The index in `text` of the leftmost-longest marker occurrence, or -1. */
export function firstMarker(text: string, markers: string[]): number {
  let best = -1;
  for (const m of markers) {
    const i = text.indexOf(m);
    if (i >= 0 && (best < 0 || i < best)) best = i;
  }
  return best;
}

const enc = new TextEncoder();

/**
 * Runs a trace through an engine. `markers` are the spec states' marker texts; `tokens` the token
 * markers (compiler/tokens.ts), matched here by their text.
 */
export function runTrace(engine: Engine, trace: Trace, markers: string[], tokens: readonly TokenMarker[] = []): Verdict {
  let s = engine.initial();
  let started = false;
  for (let i = 0; i < trace.segments.length; i++) {
    const seg = trace.segments[i]!;
    if (seg.by === "env") {
      const t = engine.env(s);
      if (t < 0) {
        return { verdict: "violation", segment: i, offset: 0, specState: engine.specState(s), expected: engine.nextMarkers(s), reason: "env-not-expected", state: s };
      }
      s = t;
      started = true;
      continue;
    }
    let text = seg.text;
    let skipped = 0;
    if (seg.by === "prompt" && !started) {
      const at = firstMarker(text, markers);
      if (at < 0) continue;
      skipped = at;
      text = text.slice(at);
    }
    started = true;
    const { bytes, at: byteAt } = tokens.length ? encodeText(text, tokens) : { bytes: enc.encode(text), at: null };
    const t = engine.feed(s, bytes);
    if (t < 0) {
      const byteIdx = -t - 1;
      const offset = skipped + (byteAt ? byteAt[byteIdx]! : new TextDecoder().decode(bytes.subarray(0, byteIdx)).length);
      const at = byteIdx > 0 ? engine.feed(s, bytes.subarray(0, byteIdx)) : s;
      return { verdict: "violation", segment: i, offset, specState: engine.specState(at), expected: engine.nextMarkers(at), reason: "text", state: at };
    }
    s = t;
  }
  if (engine.flags(s) & ByteFlag.Accepting) return { verdict: "conforms", state: s };
  return { verdict: "incomplete", state: s, specState: engine.specState(s), expected: engine.nextMarkers(s) };
}
