/**
 * @fileoverview The byte-level automaton: what a decoder actually runs. It is the product of
 *   - the state-level DFA (which marker may come next),
 *   - a marker scanner with leftmost-longest semantics: its state is the pending residual `r`, the
 *     shortest suffix of the text that may still start a marker (always a proper prefix of one),
 *   - the content DFA of the current state (free text, whitespace-only, one-of strings),
 *   - the phase: LLM text, Yield (an env-input marker was emitted; the host must feed the
 *     environment's text) or AfterEnv (only whitespace, then a valid marker),
 *   - with a tools list: the tool called last (it types the next :tool-args content) and the state
 *     of the tool constraints (counters of `at-most`, flags of `before`), stepped at each call, i.e.
 *     when a :tool-name or :tool-call state's content is complete.
 *
 * Bytes that no marker or content constraint tells apart share a class, so the table has
 * nStates × nClasses entries. States that cannot reach acceptance are removed, so "the next byte
 * leads to a state" is exactly "the text so far can still be completed into a conforming run".
 *
 * Scanning (normalize): in the buffer r+b find the leftmost position i where a marker is complete or
 * a marker may still start; if a longer marker may still complete at i, wait; otherwise commit the
 * longest complete marker at i. Bytes left of i are free text of the current state.
 */
import { SpecError, SpecLimitError } from "../diagnostics.js";
import { ByteFlag, type ByteDfa, type SpecIR, type StateDfa } from "../ir.js";
import { contentDfa, noContent, toolArgsContents, wsContent, type ContentDfa, type ContentOptions, type TaggedContentDfa } from "./content.js";
import { liveness, minimize } from "./minimize.js";

export const DEFAULT_MAX_BYTE_STATES = 60_000;

/**
 * Where the text is: LLM text of a state, Yield (an env-input marker was emitted), AfterEnv (only
 * whitespace, then a valid marker) or Trail (a stack content ended: only whitespace, then a marker).
 */
export const Phase = { Llm: 0, Yield: 1, AfterEnv: 2, Trail: 3 } as const;
export type Phase = (typeof Phase)[keyof typeof Phase];

export interface Tuple { q: number; s: number; phase: Phase; c: number; r: string; tool: number; tc: number }

const latin1 = (bytes: Uint8Array) => String.fromCharCode(...bytes);

export interface MarkerScanner {
  markers: string[];
  /** Proper prefixes of markers (excluding the empty string). */
  alive: Set<string>;
  /** scan() results by (final, buffer): the product asks the same few hundred questions many times. */
  memo: Map<string, { events: ScanEvent[]; rest: string }>;
}

export function markerScanner(ir: SpecIR): MarkerScanner {
  const enc = new TextEncoder();
  const markers = ir.states.map((s) => (s.tokenByte !== undefined ? String.fromCharCode(s.tokenByte) : latin1(enc.encode(s.marker))));
  const alive = new Set<string>();
  for (const m of markers) for (let k = 1; k < m.length; k++) alive.add(m.slice(0, k));
  return { markers, alive, memo: new Map() };
}

export type ScanEvent = { free: string } | { marker: number };

/**
 * Leftmost-longest scan of `buf`. With `final`, no more input follows (nothing is pending).
 * Returns the events and the new residual.
 */
export function scan(sc: MarkerScanner, buf: string, final: boolean): { events: ScanEvent[]; rest: string } {
  const key = (final ? "F" : "P") + buf;
  let hit = sc.memo.get(key);
  if (!hit) { hit = scanUncached(sc, buf, final); sc.memo.set(key, hit); }
  return hit;
}

function scanUncached(sc: MarkerScanner, buf: string, final: boolean): { events: ScanEvent[]; rest: string } {
  const events: ScanEvent[] = [];
  for (;;) {
    let found = -1;
    let best = -1;
    let pending = false;
    for (let i = 0; i < buf.length && found < 0; i++) {
      for (let m = 0; m < sc.markers.length; m++) {
        const mk = sc.markers[m]!;
        if (buf.startsWith(mk, i) && (best < 0 || mk.length > sc.markers[best]!.length)) best = m;
      }
      pending = !final && sc.alive.has(buf.slice(i));
      if (best >= 0 || pending) found = i;
    }
    if (found < 0) {
      if (buf.length) events.push({ free: buf });
      return { events, rest: "" };
    }
    if (found > 0) events.push({ free: buf.slice(0, found) });
    if (pending) return { events, rest: buf.slice(found) };
    events.push({ marker: best });
    buf = buf.slice(found + sc.markers[best]!.length);
  }
}

export interface ByteAutomatonOptions extends ContentOptions { maxStates?: number }

/** A marker was committed into a state whose content runs on a stack: the product goes on eagerly from `tuple` (content at its start) with the bytes of `tail`. */
export interface Entry { tuple: Tuple; tail: string }

/**
 * The lazy semantics every byte automaton of a spec shares: the marker scanner, the content in
 * force, the byte classes, `apply` (scan events → the next tuple) and acceptance. `pushdown(s)`
 * names the states whose content runs on a stack (automata/pushdown-bytes.ts): committing such a
 * state's marker hands the rest of the buffer over (an Entry) instead of feeding its content here;
 * `extraPartitions` are their byte classes.
 */
export function byteSemantics(ir: SpecIR, dfa: StateDfa, opts: ByteAutomatonOptions = {},
  pushdown: (s: number) => boolean = () => false, extraPartitions: Uint8Array[] = []) {
  const sc = markerScanner(ir);
  const tools = ir.tools ?? [];
  const contents = ir.states.map((s, i) => (pushdown(i) ? noContent : contentDfa(s.content, opts, tools)));
  const argsContents = ir.states.map((s, i) => (s.content.kind === "toolArgs" && !pushdown(i) ? toolArgsContents(s.content, tools, opts) : null));
  /** The content DFA in force in state `s` (phase, tool chosen last). */
  const contentIn = (s: number, phase: Phase, tool: number): ContentDfa => {
    if (s < 0 || phase === Phase.AfterEnv || phase === Phase.Trail) return wsContent;
    const byTool = argsContents[s];
    if (byTool) return tool >= 0 ? byTool[tool]! : noContent;
    return contents[s]!;
  };
  const contentOf = (t: Tuple): ContentDfa => contentIn(t.s, t.phase, t.tool);
  /** Tool-choosing states (:tool-name, :tool-call): their content's tag is the tool called. */
  const choosesTool = ir.states.map((s) => !s.env && (s.content.kind === "toolName" || s.content.kind === "toolCall"));
  const toolSteps = toolConstraintStepper(ir);
  /** The tool call that completing state `s`'s content `c` makes: [tool, tc], or null if a constraint forbids it. */
  const call = (s: number, c: number, tc: number): [number, number] | null => {
    const tool = (contents[s] as TaggedContentDfa).tag(c);
    const n = toolSteps.step(tc, tool);
    return n < 0 ? null : [tool, n];
  };

  // Byte classes: bytes of markers and content literals are significant one by one; content DFAs
  // with a partition of their own (grammars) refine the rest.
  const sig = new Set<number>();
  for (const m of sc.markers) for (let i = 0; i < m.length; i++) sig.add(m.charCodeAt(i));
  const allContents = [wsContent, ...contents, ...argsContents.flatMap((a) => a ?? [])];
  for (const c of allContents) for (const b of c.significant) sig.add(b);
  const partitions = [...new Set([...allContents.flatMap((c) => (c.classOf ? [c.classOf] : [])), ...extraPartitions])];
  const classMap = new Uint8Array(256);
  const reps: number[] = [];
  const classOfKey = new Map<string, number>();
  for (let b = 0; b < 256; b++) {
    const key = sig.has(b) ? `b${b}` : `o${partitions.map((p) => p[b]).join(",")}`;
    let c = classOfKey.get(key);
    if (c === undefined) { c = reps.length; classOfKey.set(key, c); reps.push(b); }
    classMap[b] = c;
  }
  const nClasses = reps.length;
  if (nClasses > 256) throw new SpecLimitError("byteClasses", nClasses, 256);

  /** Text of scan events (what an Entry's tail is made of). */
  const textOf = (events: ScanEvent[], from: number): string =>
    events.slice(from).map((ev) => ("free" in ev ? ev.free : sc.markers[ev.marker]!)).join("");
  /**
   * Applies scan events to a tuple; null = rejected. The first `skip` bytes of the buffer were
   * content already (a stack content ended there, Phase.Trail): they are not fed again, and a
   * marker starting among them is not this tuple's.
   */
  const apply = (t: Tuple, events: ScanEvent[], rest: string, skip = 0): Tuple | Entry | null => {
    let { q, s, phase, c, tool, tc } = t;
    let pos = 0;
    for (let e = 0; e < events.length; e++) {
      const ev = events[e]!;
      if (phase === Phase.Yield) return null; // nothing may follow an env-input marker
      const cd = contentIn(s, phase, tool);
      if ("free" in ev) {
        for (let i = Math.max(0, skip - pos); i < ev.free.length && c >= 0; i++) c = cd.step(c, ev.free.charCodeAt(i));
        if (c < 0) return null;
        pos += ev.free.length;
      } else {
        if (pos < skip || !cd.accepting(c)) return null;
        pos += sc.markers[ev.marker]!.length;
        if (s >= 0 && phase === Phase.Llm && choosesTool[s]) {
          const r = call(s, c, tc);
          if (!r) return null;
          [tool, tc] = r;
        }
        q = dfa.delta[q * dfa.nSyms + ev.marker]!;
        if (q < 0) return null;
        s = ev.marker;
        phase = ir.states[s]!.env ? Phase.Yield : Phase.Llm;
        c = contents[s]!.start;
        if (phase === Phase.Llm && pushdown(s)) return { tuple: { q, s, phase, c: 0, r: "", tool, tc }, tail: textOf(events, e + 1) + rest };
      }
    }
    if (phase === Phase.Yield && rest !== "") return null;
    if (rest !== "" && s >= 0 && skip <= pos) {
      // The pending text either completes a marker here (the content must be complete) or its
      // first byte turns out to be content: otherwise this tuple is a dead end, drop it now.
      const cd = contentIn(s, phase, tool);
      if (!cd.accepting(c) && cd.step(c, rest.charCodeAt(0)) < 0) return null;
    }
    return { q, s, phase, c, r: rest, tool, tc };
  };
  /** Acceptance of a tuple's final state, after the pending text was scanned as the end (Entries: `onEntry`). */
  const finalOk = (f: Tuple | Entry | null, onEntry: (e: Entry) => boolean): boolean => {
    if (f !== null && "tail" in f) return onEntry(f);
    if (f === null || f.phase === Phase.Yield || f.s < 0 || !dfa.accepting[f.q]! || !contentOf(f).accepting(f.c)) return false;
    // The run ends inside a tool-choosing state: that last call must be allowed too.
    return !(f.phase === Phase.Llm && choosesTool[f.s] && call(f.s, f.c, f.tc) === null);
  };
  /** Does the text end well in tuple `t` (its pending text scanned as the end, from byte `skip`)? */
  const isAccepting = (t: Tuple, skip = 0, onEntry: (e: Entry) => boolean = () => false): boolean => {
    if (t.phase === Phase.Yield) return dfa.accepting[t.q]!;
    const { events, rest } = scan(sc, t.r, true);
    return finalOk(apply({ ...t, r: "" }, events, rest, skip), onEntry);
  };
  // Bytes that can neither start nor complete a marker: with nothing pending they are content.
  const markerByte = new Uint8Array(256);
  for (const m of sc.markers) if (m.length) markerByte[m.charCodeAt(0)] = 1;
  return { sc, tools, toolSteps, contentOf, classMap, reps, nClasses, apply, isAccepting, markerByte };
}

export function buildByteDfa(ir: SpecIR, dfa: StateDfa, opts: ByteAutomatonOptions = {}): ByteDfa {
  const maxStates = opts.maxStates ?? DEFAULT_MAX_BYTE_STATES;
  const { sc, tools, toolSteps, contentOf, classMap, reps, nClasses, apply, isAccepting, markerByte } = byteSemantics(ir, dfa, opts);
  const nSyms = dfa.nSyms;
  const lazy = (x: Tuple | Entry | null): Tuple | null => x as Tuple | null; // no state runs on a stack here

  const tuples: Tuple[] = [];
  const trans: number[] = [];
  const envNext: number[] = [];
  // Tuples are interned by a number: (residual, q, s, phase) packed into a context, times the
  // content state. Residuals (pending marker prefixes) are numbered as they appear.
  const rIds = new Map<string, number>([["", 0]]);
  const ridOf = (r: string): number => {
    let id = rIds.get(r);
    if (id === undefined) { id = rIds.size; rIds.set(r, id); }
    return id;
  };
  const nResiduals = sc.alive.size + 1;
  const C_MAX = 2 ** 21;
  const nSpec1 = ir.states.length + 1;
  const nTool1 = tools.length + 1;
  const nTc = toolSteps.size;
  if (nResiduals * dfa.nStates * nSpec1 * 3 * nTool1 * nTc * C_MAX > Number.MAX_SAFE_INTEGER) {
    throw new SpecLimitError("maxByteStates", nResiduals * dfa.nStates * nSpec1 * 3 * nTool1 * nTc, Math.floor(Number.MAX_SAFE_INTEGER / C_MAX));
  }
  const ids = new Map<number, number>();
  const tupleRid: number[] = [];
  const intern = (t: Tuple): number => {
    if (t.c >= C_MAX) throw new SpecLimitError("contentStates", t.c + 1, C_MAX);
    const rid = ridOf(t.r);
    const k = (((((rid * dfa.nStates + t.q) * nSpec1 + t.s + 1) * 3 + t.phase) * nTool1 + t.tool + 1) * nTc + t.tc) * C_MAX + t.c;
    let id = ids.get(k);
    if (id === undefined) {
      if (tuples.length >= maxStates) throw byteLimit(ir, tuples.length + 1, maxStates);
      id = tuples.length;
      ids.set(k, id);
      tuples.push(t);
      tupleRid.push(rid);
    }
    return id;
  };
  /** scan(residual + byte) by residual id and byte. */
  const stepMemo = new Map<number, { events: ScanEvent[]; rest: string }>();
  const scanStep = (rid: number, r: string, b: number) => {
    const key = rid * 256 + b;
    let hit = stepMemo.get(key);
    if (!hit) { hit = scan(sc, r + String.fromCharCode(b), false); stepMemo.set(key, hit); }
    return hit;
  };
  intern({ q: dfa.initial, s: -1, phase: Phase.Llm, c: wsContent.start, r: "", tool: -1, tc: 0 });
  for (let i = 0; i < tuples.length; i++) {
    const t = tuples[i]!;
    const cd = contentOf(t);
    for (let k = 0; k < nClasses; k++) {
      let next: Tuple | null = null;
      if (t.phase !== Phase.Yield) {
        const b = reps[k]!;
        if (t.r === "" && !markerByte[b]) {
          // Nothing pending and no marker can start: the byte is content.
          const c = cd.step(t.c, b);
          next = c < 0 ? null : { ...t, c };
        } else {
          const { events, rest } = scanStep(tupleRid[i]!, t.r, b);
          next = lazy(apply(t, events, rest));
        }
      }
      trans[i * nClasses + k] = next ? intern(next) : -1;
    }
    envNext[i] = t.phase === Phase.Yield ? intern({ ...t, phase: Phase.AfterEnv, c: wsContent.start, r: "" }) : -1;
  }

  // Trim to live states (env edges count as an extra symbol).
  const n = tuples.length;
  const next = (s: number, a: number) => (a < nClasses ? trans[s * nClasses + a]! : envNext[s]!);
  const accepting = tuples.map((t) => isAccepting(t));
  const { coreach } = liveness(n, nClasses + 1, 0, next, (s) => accepting[s]!);
  if (!coreach[0]) {
    throw new SpecError("E0402", "empty language: no text conforms to this spec (check the content constraints against the markers)", ir.behavior.span);
  }
  const entered = new Set<number>();
  for (let s = 0; s < n; s++) if (coreach[s] && tuples[s]!.s >= 0) entered.add(tuples[s]!.s);
  for (const st of ir.states) {
    if (!entered.has(st.id)) {
      throw new SpecError("E0403", `state ${st.name} can never be completed: no conforming text passes through it`, st.span,
        st.content.kind === "oneOf" ? "its content constraint can never be satisfied (does an option contain a marker?)"
          : st.content.kind === "grammar" ? "no sentence of its grammar (within the nesting depth) avoids every marker text" : undefined);
    }
  }
  const newId = new Int32Array(n).fill(-1);
  let live = 0;
  for (let s = 0; s < n; s++) if (coreach[s]) newId[s] = live++;
  const out: ByteDfa = {
    nStates: live, nClasses, classMap, initial: 0,
    trans: new Int32Array(live * nClasses), flags: new Uint8Array(live),
    specState: new Int32Array(live), envNext: new Int32Array(live), nextMarkers: [],
  };
  for (let s = 0; s < n; s++) {
    const id = newId[s]!;
    if (id < 0) continue;
    const t = tuples[s]!;
    for (let k = 0; k < nClasses; k++) {
      const to = trans[s * nClasses + k]!;
      out.trans[id * nClasses + k] = to >= 0 ? newId[to]! : -1;
    }
    out.flags[id] = (accepting[s] ? ByteFlag.Accepting : 0) | (t.phase === Phase.Yield ? ByteFlag.Yield : 0) | (t.phase === Phase.AfterEnv ? ByteFlag.AfterEnv : 0);
    out.specState[id] = t.s;
    out.envNext[id] = envNext[s]! >= 0 ? newId[envNext[s]!]! : -1;
    const nm: number[] = [];
    for (let a = 0; a < nSyms; a++) if (dfa.delta[t.q * nSyms + a]! >= 0) nm.push(a);
    out.nextMarkers[id] = nm;
  }
  return out;
}

/**
 * The tool constraints as one small automaton over tool calls: its state is a number whose digits
 * are the `at-most` counters (0..n) and the `before` flags (has `first` been called). `step` gives
 * the state after a call of `tool`, or -1 when a constraint forbids that call. All of them are
 * safety properties, so every state accepts.
 */
export function toolConstraintStepper(ir: SpecIR): { size: number; step(tc: number, tool: number): number } {
  const cs = ir.constraints.filter((c) => c.kind === "toolAtMost" || c.kind === "toolBefore");
  const radix = cs.map((c) => (c.kind === "toolAtMost" ? c.n + 1 : 2));
  const size = radix.reduce((a, b) => a * b, 1);
  if (size > 1 << 20) {
    const e = new SpecLimitError("toolConstraintStates", size, 1 << 20, cs[0]!.span);
    (e as { hint?: string }).hint = "the tool constraints multiply (each at-most N keeps N + 1 counts, each before a flag): constrain fewer tools, or use smaller counts";
    throw e;
  }
  return {
    size,
    step(tc, tool) {
      let out = 0;
      let mul = 1;
      for (let i = 0; i < cs.length; i++) {
        const c = cs[i]!;
        const r = radix[i]!;
        let d = tc % r;
        tc = Math.floor(tc / r);
        if (c.kind === "toolAtMost") {
          if (c.tool === tool) { if (d === c.n) return -1; d++; }
        } else if (c.kind === "toolBefore") {
          if (c.then === tool && d === 0) return -1;
          if (c.first === tool) d = 1;
        }
        out += d * mul;
        mul *= r;
      }
      return out;
    },
  };
}

/**
 * The byte-state limit; with grammar or tool content (the usual causes) it points at that state
 * and says what to lower.
 */
function byteLimit(ir: SpecIR, value: number, max: number): SpecLimitError {
  const g = ir.states.find((s) => s.content.kind === "grammar" || s.content.kind === "toolArgs" || s.content.kind === "toolCall");
  const span = g && "span" in g.content ? g.content.span : null;
  const e = new SpecLimitError("maxByteStates", value, max, span);
  if (g?.content.kind === "grammar") {
    (e as { hint?: string }).hint = `grammar content multiplies the byte states: lower the nesting depth of ${g.name}'s grammar ` +
      "(:max-depth N in its (:grammar ...), or --max-depth N), or raise the limit (option maxByteStates)";
  } else if (g) {
    (e as { hint?: string }).hint = `tool arguments multiply the byte states (each tool's automaton, once per reachable state of the tool constraints): ` +
      `drop large maxLength/maxItems bounds (each bounded position is a state), constrain fewer tools, lower :max-depth on ${g.name}'s content, or raise the limit (option maxByteStates)`;
  }
  return e;
}

/** Minimizes a byte DFA; states keep their outputs (flags, spec state, valid next markers). */
export function minimizeByteDfa(d: ByteDfa): ByteDfa {
  const nSyms = d.nClasses + 1;
  const next = (s: number, a: number) => (a < d.nClasses ? d.trans[s * d.nClasses + a]! : d.envNext[s]!);
  const { blockOf, nBlocks } = minimize({
    nStates: d.nStates, nSyms, initial: d.initial, next,
    key: (s) => `${d.flags[s]}|${d.specState[s]}|${d.nextMarkers[s]!.join(",")}`,
  });
  const out: ByteDfa = {
    nStates: nBlocks, nClasses: d.nClasses, classMap: d.classMap, initial: blockOf[d.initial]!,
    trans: new Int32Array(nBlocks * d.nClasses), flags: new Uint8Array(nBlocks),
    specState: new Int32Array(nBlocks), envNext: new Int32Array(nBlocks), nextMarkers: new Array(nBlocks),
  };
  for (let s = 0; s < d.nStates; s++) {
    const b = blockOf[s]!;
    for (let k = 0; k < d.nClasses; k++) {
      const t = d.trans[s * d.nClasses + k]!;
      out.trans[b * d.nClasses + k] = t < 0 ? -1 : blockOf[t]!;
    }
    out.flags[b] = d.flags[s]!;
    out.specState[b] = d.specState[s]!;
    out.envNext[b] = d.envNext[s]! < 0 ? -1 : blockOf[d.envNext[s]!]!;
    out.nextMarkers[b] = d.nextMarkers[s]!;
  }
  return out;
}

/** Runs bytes from `state`; returns the final state or -(1 + index) of the first rejected byte. */
export function runBytes(d: ByteDfa, state: number, bytes: Uint8Array): number {
  let s = state;
  for (let i = 0; i < bytes.length; i++) {
    s = d.trans[s * d.nClasses + d.classMap[bytes[i]!]!]!;
    if (s < 0) return -(1 + i);
  }
  return s;
}
