/**
 * @fileoverview Token-level tools over a loaded spec: `replayTrace` (DESIGN §4: tokenize a
 * transcript's LLM text with the real tokenizer and ask, token by token, whether the mask allowed
 * it) and `sampleTraces` (seeded random logits standing in for a model, sampling only allowed
 * tokens, seeded random environment text at each yield). Both back the `specc replay` and
 * `specc sample` commands and the tests.
 */
import { PdaRunner, pdaOfByteDfa } from "../compiler/grammar/pda.js";
import { firstMarker, type Trace } from "../compiler/trace.js";
import { seededRandom } from "../compiler/random.js";
import { decodeBytes } from "../compiler/tokens.js";
import type { Matcher, Spec } from "./spec.js";
import type { Vocabulary } from "./vocab.js";

export interface ReplayStep {
  segment: number;
  token: number;
  text: string;
  allowed: boolean;
  /** Allowed tokens in the mask the token was checked against. */
  popcount: number;
  /** Time of fillMask for this step, in nanoseconds. */
  maskNs: number;
  status: string;
}

export interface ReplayResult {
  steps: ReplayStep[];
  /** Index into `steps` of the first forbidden token, or -1. */
  firstForbidden: number;
  accepted: boolean;
  /** Host text (prompt or env) that did not fit the spec, in words. */
  error?: string;
}

export function popcount(mask: Int32Array): number {
  let n = 0;
  for (let i = 0; i < mask.length; i++) {
    let v = mask[i]! >>> 0;
    v = v - ((v >>> 1) & 0x55555555);
    v = (v & 0x33333333) + ((v >>> 2) & 0x33333333);
    n += (((v + (v >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
  }
  return n;
}

const isSet = (mask: Int32Array, id: number) => ((mask[id >> 5]! >>> (id & 31)) & 1) === 1;

/**
 * Replays a transcript token by token. `encode` is the real tokenizer (no special tokens added).
 * Prompt text from its first marker on and env text are fed as text; LLM text is tokenized and
 * each token is checked against the mask before it is committed. Stops at the first forbidden token.
 */
export function replayTrace(spec: Spec, vocab: Vocabulary, encode: (text: string) => number[], trace: Trace): ReplayResult {
  const m = spec.matcher();
  const mask = new Int32Array(spec.maskWords);
  const markers = spec.states.map((s) => s.marker);
  const dec = new TextDecoder();
  const steps: ReplayStep[] = [];
  let started = false;
  for (let i = 0; i < trace.segments.length; i++) {
    const seg = trace.segments[i]!;
    if (seg.by === "env") {
      if (!m.yielding) return { steps, firstForbidden: -1, accepted: false, error: `segment ${i}: environment text where the run is not yielding` };
      m.feedEnv(seg.text);
      started = true;
      continue;
    }
    if (seg.by === "prompt") {
      let text = seg.text;
      if (!started) {
        const at = firstMarker(text, markers);
        if (at < 0) continue;
        text = text.slice(at);
      }
      started = true;
      const r = m.feed(text);
      if (!r.ok) return { steps, firstForbidden: -1, accepted: false, error: `segment ${i}: prompt text does not conform at byte ${r.offset}` };
      continue;
    }
    started = true;
    for (const tok of encode(seg.text)) {
      const t0 = process.hrtime.bigint();
      m.fillMask(mask);
      const maskNs = Number(process.hrtime.bigint() - t0);
      const allowed = isSet(mask, tok);
      const bytes = vocab.tokenBytes(tok);
      const step: ReplayStep = { segment: i, token: tok, text: bytes ? dec.decode(bytes) : vocab.addedContent(tok) ?? `<special ${tok}>`, allowed, popcount: popcount(mask), maskNs, status: "" };
      steps.push(step);
      if (!allowed) { step.status = "forbidden"; return { steps, firstForbidden: steps.length - 1, accepted: false }; }
      step.status = m.commit(tok);
    }
  }
  return { steps, firstForbidden: -1, accepted: m.isAccepting };
}

export interface SampleOptions {
  n: number;
  seed: number;
  /** Tokens per spec state before the budget forces a transition (the reference implementation: 128). */
  maxStateTokens?: number;
  maxTokens?: number;
  /** false: the same sampler over all non-special tokens, ignoring the spec (for comparison). */
  masked?: boolean;
  /** When given, receives each sample's token ids as committed (forced markers included; EOS not). */
  ids?: number[][];
}

const WORDS = ["the", "result", "is", "42", "Paris", "found", "page", "not", "a", "river", "(1970)", "\n", "yes", "no"];

/** The token ids a mask allows, in order. */
function allowedIds(mask: Int32Array): Int32Array {
  const ids = new Int32Array(popcount(mask));
  let k = 0;
  for (let w = 0; w < mask.length; w++) {
    let v = mask[w]! >>> 0;
    while (v) {
      ids[k++] = w * 32 + (31 - Math.clz32(v & -v));
      v &= v - 1;
    }
  }
  return ids;
}

/**
 * Seeded samples: random logits, argmax over the allowed tokens — i.e. a uniform choice among
 * them. Masks are shared between states, so the allowed-id list is built once per distinct mask.
 */
export function sampleTraces(spec: Spec, vocab: Vocabulary, o: SampleOptions): Trace[] {
  const out: Trace[] = [];
  const masked = o.masked !== false;
  const maxTokens = o.maxTokens ?? 8192;
  // Token bytes as the spec's automaton reads them: with token markers (`(:token ...)`) the
  // vocabulary is bound to them (the marker ids read as one byte each, see token-markers.ts).
  const bytesOf = automatonBytes(spec, vocab);
  const eosIds = new Set((spec.vocab ?? vocab).eos);
  const allTokens: number[] = [];
  for (let id = 0; id < vocab.size; id++) if (bytesOf(id) || eosIds.has(id)) allTokens.push(id);
  const byMask = new Map<number, Int32Array>();
  const dec = { decode: (b: Uint8Array) => decodeBytes(b, spec.tokens) };
  const envMarkers = spec.states.filter((s) => s.env).map((s) => s.marker);
  const k = o.maxStateTokens ?? 8;
  const spell = speller(spec, vocab);
  const m: Matcher = spec.matcher();
  // A pushdown automaton has no token budgets. A grammar's (no spec states to move on to): past 4k
  // tokens the sampler writes a shortest completion of the whole sentence (PdaRunner.finish), so
  // every sample ends. An agent's whose content runs on a stack: past 4k tokens in one spec state
  // it writes a shortest way to the next marker instead, and moves on at k as a DFA agent does.
  const finisher = spec.pushdown ? new PdaRunner(pdaOfByteDfa(spec.dfa)) : null;
  const agent = spec.states.length > 0;
  const d = spec.dfa;
  for (let n = 0; n < o.n; n++) {
    const rand = seededRandom(o.seed * 1_000_003 + n);
    m.reset();
    if (!finisher) m.budget = 4 * k; // the runtime's budget is only the safety net; the sampler moves on at k
    const segments: Trace["segments"] = [];
    const record: number[] = [];
    o.ids?.push(record);
    const commit = (id: number) => { const r = m.commit(id); if (r !== "rejected" && !eosIds.has(id)) record.push(id); return r; };
    let bytes: number[] = [];
    /** What the automaton read so far: LLM bytes, null for an environment's text (pushdown agents). */
    const read: (Uint8Array | null)[] = [];
    const flush = () => {
      if (bytes.length) { segments.push({ by: "llm", text: dec.decode(Uint8Array.from(bytes)) }); read.push(Uint8Array.from(bytes)); }
      bytes = [];
    };
    const yieldEnv = () => {
      flush();
      const env = " " + Array.from({ length: 1 + Math.floor(rand() * 6) }, () => WORDS[Math.floor(rand() * WORDS.length)]).join(" ") + "\n";
      segments.push({ by: "env", text: env });
      read.push(null);
      if (masked) m.feedEnv(env);
    };
    /** The reference configuration of the text so far (pushdown agents). */
    const reference = () => {
      let c = finisher!.start();
      for (const r of [...read, Uint8Array.from(bytes)]) {
        c = r ? finisher!.run(r, c)! : finisher!.at(d.envNext[c.states[0]!]!)!;
      }
      return c;
    };
    for (let t = 0; t < maxTokens; t++) {
      let tok: number;
      if (masked && finisher && m.tokensInState >= 4 * k && rand() < 0.5) {
        let rest: Uint8Array | null;
        if (agent) {
          // A shortest way out of this spec state: to the byte that commits the next marker.
          const from = reference();
          const spec0 = d.specState[from.states[0]!]!;
          rest = finisher.finish(from, 100_000, (c) => c.accept || c.states.length === 0 || d.specState[c.states[0]!] !== spec0);
        } else rest = finisher.finish(finisher.run(Uint8Array.from(bytes))!);
        const ids = rest && spell(dec.decode(rest));
        const snapshot = m.state;
        const before = record.length;
        if (ids && ids.every((id) => commit(id) !== "rejected")) {
          for (const b of rest!) bytes.push(b);
          if (agent) {
            if (m.yielding) yieldEnv();
            continue;
          }
          const eos = [...eosIds][0];
          if (eos !== undefined) m.commit(eos);
          break;
        }
        m.state = snapshot; // a completion that does not spell (e.g. mid-character): go on sampling
        record.length = before;
      }
      if (masked && (!finisher || agent) && m.tokensInState >= k && rand() < 0.5) {
        // Past k tokens in a state, move on: write one of the valid next markers (or end the run).
        const before = record.length;
        const forced = forceMarker(m, spell, rand, spec, [...eosIds][0], commit);
        if (forced === null) record.length = before;
        if (forced === "eos") break;
        if (forced !== null) {
          for (const b of forced.bytes) bytes.push(b);
          if (m.yielding) yieldEnv();
          continue;
        }
      }
      if (masked) {
        const idx = spec.exports.m_mask(m.handle);
        let ids = byMask.get(idx);
        if (!ids) byMask.set(idx, (ids = allowedIds(spec.maskAt(idx))));
        if (ids.length === 0) break;
        tok = ids[Math.floor(rand() * ids.length)]!;
      } else {
        tok = allTokens[Math.floor(rand() * allTokens.length)]!;
      }
      if (eosIds.has(tok)) break;
      for (const b of bytesOf(tok)!) bytes.push(b);
      const yielded = masked ? commit(tok) === "yield" : envMarkers.some((mk) => dec.decode(Uint8Array.from(bytes)).endsWith(mk));
      if (yielded) yieldEnv();
    }
    flush();
    out.push({ segments });
  }
  return out;
}

/** Token id → the bytes the spec's automaton reads for it, or null (special). */
function automatonBytes(spec: Spec, vocab: Vocabulary): (id: number) => Uint8Array | null {
  if (!spec.tokens.length || !spec.vocab) return (id) => vocab.tokenBytes(id);
  const { bytes, offsets, special } = spec.vocab.flat();
  return (id) => (special[id] ? null : bytes.subarray(offsets[id]!, offsets[id + 1]!));
}

/** Greedy longest-match spelling of text as token ids (any valid tokenization will do here). */
function speller(spec: Spec, vocab: Vocabulary): (text: string) => number[] | null {
  const byBytes = new Map<string, number>();
  let maxLen = 0;
  const bytesOf = automatonBytes(spec, vocab);
  for (let id = 0; id < vocab.size; id++) {
    const b = bytesOf(id);
    if (!b || b.length === 0 || b.length > 48) continue;
    const key = String.fromCharCode(...b);
    if (!byBytes.has(key)) byBytes.set(key, id);
    maxLen = Math.max(maxLen, b.length);
  }
  return (text) => {
    const s = String.fromCharCode(...spec.encode(text));
    const ids: number[] = [];
    for (let i = 0; i < s.length; ) {
      let found = -1, len = 0;
      for (let l = Math.min(maxLen, s.length - i); l > 0 && found < 0; l--) {
        const id = byBytes.get(s.slice(i, i + l));
        if (id !== undefined) { found = id; len = l; }
      }
      if (found < 0) return null;
      ids.push(found);
      i += len;
    }
    return ids;
  };
}

/**
 * Commits the tokens of a randomly chosen valid next marker (or EOS when the run may end).
 * Returns what was written, "eos", or null (nothing fits here yet, e.g. unfinished one-of content;
 * the matcher is then unchanged).
 */
function forceMarker(m: Matcher, spell: (t: string) => number[] | null, rand: () => number, spec: Spec, eos: number | undefined,
  commit: (id: number) => string = (id) => m.commit(id)): { bytes: Uint8Array } | "eos" | null {
  const names = m.validNext();
  const options: (string | null)[] = names.map((n) => spec.states.find((s) => s.name === n)!.marker);
  if (m.isAccepting) options.push(null);
  if (!options.length) return null;
  const pick = options[Math.floor(rand() * options.length)]!;
  if (pick === null) {
    if (eos === undefined || m.commit(eos) !== "done") return null;
    return "eos";
  }
  const ids = spell(pick);
  if (!ids) return null;
  const snapshot = m.state;
  for (let i = 0; i < ids.length; i++) {
    if (commit(ids[i]!) === "rejected") {
      if (i <= m.rollbackLimit) m.rollback(i);
      else m.state = snapshot;
      return null;
    }
  }
  return { bytes: new TextEncoder().encode(pick) };
}
