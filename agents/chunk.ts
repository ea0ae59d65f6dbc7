/**
 * @fileoverview Chunk mode: seed 000's decoding monitor for models behind an OpenAI-compatible
 * completions API, where the host cannot mask logits. The model writes a chunk (up to
 * `chunkTokens`, stopped early at the env-input markers); the monitor validates it with the
 * spec's matcher, cuts it at the first violation and corrects it by valid-state prefixing (the
 * longest common prefix of the valid next markers), then asks for the next chunk.
 *
 * ```ts
 * const run = await runChunked({
 *   spec: compileSource(readFileSync("examples/react-tools.agent", "utf8")),
 *   complete: httpCompletions("http://127.0.0.1:8000", "llama-3-8b"),
 *   tools: { observation: (ctx) => search(ctx.last("action-input") ?? "") },
 *   prompt: "Question: Where is the dog?\n", chunkTokens: 64, maxRetries: 3,
 * });
 * ```
 *
 * How a chunk is judged (`DecodingMonitor.validate`), byte by byte through the matcher, keeping the
 * matcher state before every byte of the current LLM segment so that any cut restores a state the
 * matcher really was in:
 * - A marker violation (the chunk writes "[Thought]" where "[Action]" must come, or text where
 *   only whitespace and a marker may come) is cut back to where the failed marker attempt began:
 *   inside a state's content, to the start of the longest tail that, with the rejected byte, spells
 *   the beginning of some marker ("…\n[Thought" + "]" is cut before "[Thought", even when "[Tho"
 *   came in the previous chunk); at the start and right after environment text, to the first
 *   non-whitespace byte. The correction is the longest common prefix (by code points) of the valid
 *   next markers' texts: "[Action" for "[Action]" / "[Action Input]", "[" for "[Thought]" /
 *   "[Final Thought]". When it is empty ("Thought:" / "Final Thought:") a prefix cannot steer the
 *   model, so one valid marker is appended whole, chosen by `choose` (default "progress": the one
 *   closest to an accepting state, so forced runs terminate; "first": declaration order). The
 *   same happens when a violation is cut back to exactly where the previous correction was made:
 *   the prefix did not steer the model (a greedy model would write the same chunk forever). A
 *   newline goes before the correction when the state's content does not end in whitespace.
 * - A content violation (a state with `:output-constrs`) is corrected like the reference
 *   implementation does: the content (trimmed) is compared with the allowed strings — equal, equal
 *   ignoring case, equal ignoring case and spaces, then contains an allowed string in the same three
 *   ways — and, as specc's addition, a non-empty prefix of an allowed string ignoring case (a chunk
 *   may end mid-word). The first match replaces the content (" Search\n"); the rest of the chunk,
 *   from its next marker on, is validated in turn. No match: `ChunkModeError` ("content"), or with
 *   `contentFallback: "first"` the first allowed string (the reference's non-strict mode).
 * - The API drops a stop sequence from the text, so a chunk that stopped at one is completed with
 *   the env marker it stopped at (`stopSequence`, from vLLM's `stop_reason` or llama.cpp's
 *   `stopping_word`); when the server does not say which, with the only env marker valid there, or
 *   when several are, by a short probe request.
 * - A model that stays in one state for `maxChunksPerState` clean chunks is moved on by appending a
 *   whole valid next marker (the token budget of token mode, in chunks).
 * Marker corrections count as retries; more than `maxRetries` in a row is a `ChunkModeError`.
 */
import type { Compiled } from "../compiler/ir.js";
import { decodeBytes } from "../compiler/tokens.js";
import { byteDfaEngine, firstMarker, runTrace, type Segment, type Trace, type Verdict } from "../compiler/trace.js";
import { answerEnv, checkTools, nextMarker, recordedCalls, transcriptSteps, type CallRecord, type LogprobScorer, type ParallelRecord, type Step, type Tools } from "./runner.js";
import { STATE_ACCEPTING, STATE_YIELD, type Matcher, type Spec } from "../bindings/spec.js";

const isWs = (b: number): boolean => b === 0x20 || b === 0x0a || b === 0x09 || b === 0x0d;

// ---- Pieces ------------------------------------------------------------------------------------------

/** The longest common prefix of `texts`, by code points (never splits a character). */
export function longestCommonPrefix(texts: readonly string[]): string {
  if (!texts.length) return "";
  let p = Array.from(texts[0]!);
  for (const t of texts.slice(1)) {
    const a = Array.from(t);
    let i = 0;
    while (i < p.length && i < a.length && p[i] === a[i]) i++;
    p = p.slice(0, i);
  }
  return p.join("");
}

/**
 * The allowed string that `content` stands for, or null: the reference implementation's hard
 * matches in order (equal after trimming; equal ignoring case; equal ignoring case and spaces;
 * contains an allowed string, in the same three forms), then, with `prefix`, a non-empty prefix of
 * an allowed string ignoring case. The first allowed string wins within each rule.
 */
export function matchOption(content: string, options: readonly string[], prefix = true): string | null {
  const form = (s: string, f: number) => (f === 0 ? s.trim() : f === 1 ? s.trim().toLowerCase() : s.replace(/\s+/g, "").toLowerCase());
  for (const substr of [false, true]) {
    for (let f = 0; f < 3; f++) {
      const c = form(content, f);
      for (const o of options) {
        const x = form(o, f);
        if (substr ? x !== "" && c.includes(x) : x === c) return o;
      }
    }
  }
  if (prefix) {
    const c = form(content, 1);
    if (c) for (const o of options) if (form(o, 1).startsWith(c)) return o;
  }
  return null;
}

/** `:output-constrs` of a compiled spec, by state name. */
export function outputConstrsOf(c: Compiled): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const s of c.ir.states) if (s.content.kind === "oneOf") out[s.name] = [...s.content.options];
  return out;
}

const distCache = new WeakMap<Spec, Int32Array>();

/** Bytes in the order content completion tries them: letters, digits, other printable ASCII, whitespace, the rest. */
const BYTE_PREFERENCE: readonly number[] = (() => {
  const rank = (b: number) => (/[a-z0-9A-Z]/.test(String.fromCharCode(b)) ? 0 : b > 0x20 && b < 0x7f ? 1 : isWs(b) ? 2 : 3);
  return Array.from({ length: 256 }, (_, b) => b).sort((a, b) => rank(a) - rank(b) || a - b);
})();

/** Per byte-level state: the fewest bytes (env answers count 1) to an accepting state. */
function distances(spec: Spec): Int32Array {
  let d = distCache.get(spec);
  if (d) return d;
  const { nStates, nClasses, trans, flags, envNext } = spec.dfa;
  const rev: number[][] = Array.from({ length: nStates }, () => []);
  for (let s = 0; s < nStates; s++) {
    for (let c = 0; c < nClasses; c++) {
      const t = trans[s * nClasses + c]!;
      if (t >= 0) rev[t]!.push(s);
    }
    if (envNext[s]! >= 0) rev[envNext[s]!]!.push(s);
  }
  d = new Int32Array(nStates).fill(-1);
  const queue: number[] = [];
  for (let s = 0; s < nStates; s++) if (flags[s]! & STATE_ACCEPTING) { d[s] = 0; queue.push(s); }
  for (let h = 0; h < queue.length; h++) {
    const s = queue[h]!;
    for (const p of rev[s]!) if (d[p] === -1) { d[p] = d[s]! + 1; queue.push(p); }
  }
  distCache.set(spec, d);
  return d;
}

/** Which whole marker to append when the common prefix is empty or a transition is forced. */
export type MarkerChoice = "progress" | "first" | ((candidates: string[], state: string | null) => string);

/** Why a run in chunk mode gave up. */
export class ChunkModeError extends Error {
  constructor(
    readonly reason: "retries" | "chunks" | "content",
    message: string,
    readonly state: string | null,
    /** Marker texts that were valid next. */
    readonly expected: string[],
    /** The transcript up to the failure. */
    readonly transcript: Trace,
  ) {
    super(message);
    this.name = "ChunkModeError";
  }
}

/** One intervention of the monitor. */
export interface Correction {
  kind: "prefix" | "content" | "force" | "env-marker" | "end";
  /** The spec state the run was in when it happened. */
  state: string | null;
  /** Text cut away (the violating tail; it may reach back into an earlier chunk). */
  discarded: string;
  /** Text the monitor appended. */
  appended: string;
  /** Marker texts that were valid next. */
  expected: string[];
  /** For "content": the model's content and the allowed string put in its place. */
  from?: string;
  to?: string;
}

export interface ChunkOutcome {
  /** "yield": an env-input marker was completed; "done": the run is complete (nothing may follow). */
  status: "continue" | "yield" | "done";
  /** The chunk conformed as written (no cut, no substitution). */
  ok: boolean;
  /** Whether a marker violation was cut (a retry). */
  violated: boolean;
  /** Character offset in the chunk of the first byte the spec did not allow. */
  offset?: number;
  corrections: Correction[];
}

export interface MonitorOptions {
  /** Allowed strings per state (`outputConstrsOf(compiled)`); needed to correct content. */
  outputConstrs?: Record<string, string[]>;
  /** Content that matches no allowed string: "fail" (default) or use the first allowed string. */
  contentFallback?: "fail" | "first";
  /** Also accept a prefix of an allowed string as a match (default true). */
  prefixMatch?: boolean;
  choose?: MarkerChoice;
}

type Region = "start" | "after-env" | "content";

/**
 * The decoding monitor over one run: the prompt's marker part, then chunks, corrections and env
 * answers. `text` is everything after the prompt, ready to be appended to the next request.
 */
export class DecodingMonitor {
  readonly matcher: Matcher;
  readonly corrections: Correction[] = [];
  /** Changes whenever a marker is completed or env text is fed. */
  version = 0;
  finished = false;
  private readonly markerBytes = new Map<string, Uint8Array>();
  private readonly allMarkers: Uint8Array[];
  private prompt = "";
  private readonly done: Segment[] = [];
  private cur: number[] = [];
  private snap: number[];
  private markEnd = 0;
  private region: Region = "start";
  private lastCut: { version: number; at: number } | null = null;

  constructor(
    readonly spec: Spec,
    private readonly opts: MonitorOptions = {},
  ) {
    this.matcher = spec.matcher();
    for (const s of spec.states) this.markerBytes.set(s.name, this.spec.encode(s.marker));
    this.allMarkers = [...this.markerBytes.values()];
    this.snap = [this.matcher.state];
  }

  /** Bytes the matcher read → text (token markers as their text). */
  private bytesText(b: ArrayLike<number>): string {
    return decodeBytes(Uint8Array.from(b as ArrayLike<number>), this.spec.tokens);
  }

  /** Feeds the prompt from its first marker on (text before it is context). */
  start(prompt: string): void {
    this.prompt = prompt;
    const at = firstMarker(prompt, this.spec.states.map((s) => s.marker));
    if (at >= 0) {
      if (this.matcher.feedText(prompt.slice(at)) === "yield") throw new Error("the prompt ends with an env-input marker; leave the marker to the model");
      this.region = "content";
    }
    this.snap = [this.matcher.state];
  }

  /** Everything after the prompt: LLM text (with corrections) and env text. */
  get text(): string {
    return this.done.map((s) => s.text).join("") + this.bytesText(this.cur);
  }

  /** The transcript so far (DESIGN §4). */
  get transcript(): Trace {
    const segs: Segment[] = [{ by: "prompt", text: this.prompt }, ...this.done];
    if (this.cur.length) segs.push({ by: "llm", text: this.bytesText(this.cur) });
    return { segments: segs };
  }

  get specState(): string | null {
    return this.matcher.specState;
  }

  /** Marker texts of the states that may come next. */
  expected(): string[] {
    return this.matcher.validNext().map((n) => this.markerOf(n));
  }

  /** Validates a chunk the model wrote; commits its valid prefix and the correction. */
  validate(chunk: string): ChunkOutcome {
    const bytes = this.spec.encode(chunk);
    for (let i = 0; i < bytes.length; i++) {
      if (!this.push(bytes[i]!)) return this.violation(bytes, i);
      if (this.matcher.yielding) {
        // The LLM's turn ends with the env marker; text after it (a missing stop sequence) is dropped.
        const rest = this.bytesText(bytes.subarray(i + 1));
        const corrections: Correction[] = rest ? [this.note("end", rest, "")] : [];
        return { status: "yield", ok: !rest, violated: false, corrections };
      }
    }
    return { status: "continue", ok: true, violated: false, corrections: [] };
  }

  /** Env text for the pending yield. */
  feedEnv(text: string): void {
    this.flush();
    this.matcher.feedEnv(text);
    this.done.push({ by: "env", text });
    this.snap = [this.matcher.state];
    this.markEnd = 0;
    this.region = "after-env";
    this.version++;
  }

  /**
   * Valid-state prefixing at the current position (the model stopped where it may not): appends
   * the common prefix of the valid next markers, or a whole chosen marker when it is empty.
   */
  correct(kind: Correction["kind"] = "prefix"): ChunkOutcome {
    const again = this.lastCut !== null && this.lastCut.version === this.version && this.lastCut.at === this.cur.length;
    this.lastCut = { version: this.version, at: this.cur.length };
    const c = this.appendPrefix(kind, "", again);
    return { status: this.status(), ok: false, violated: true, corrections: c ? [c] : [] };
  }

  /** Moves the run on (budget): completes constrained content, or appends a whole valid next marker. */
  force(): ChunkOutcome {
    const opts = this.constrained();
    if (opts) {
      const content = this.bytesText(this.cur.slice(this.markEnd));
      if (!opts.includes(content.trim())) return this.replaceContent(content, "", opts);
    }
    const c = this.appendPrefix("force", "", true);
    return { status: this.status(), ok: false, violated: false, corrections: c ? [c] : [] };
  }

  // ---- internals ----

  private markerOf(name: string): string {
    return this.spec.states.find((s) => s.name === name)!.marker;
  }

  private status(): ChunkOutcome["status"] {
    if (this.finished) return "done";
    return this.matcher.yielding ? "yield" : "continue";
  }

  private note(kind: Correction["kind"], discarded: string, appended: string, extra: Partial<Correction> = {}): Correction {
    const c: Correction = { kind, state: this.matcher.specState, discarded, appended, expected: this.expected(), ...extra };
    this.corrections.push(c);
    return c;
  }

  private flush(): void {
    if (this.cur.length) this.done.push({ by: "llm", text: this.bytesText(this.cur) });
    this.cur = [];
    this.snap = [this.matcher.state];
  }

  /** Feeds one byte; records the state and whether it completed a marker. */
  private push(b: number): boolean {
    const m = this.matcher;
    if (!m.feed(Uint8Array.of(b)).ok) return false;
    this.cur.push(b);
    this.snap.push(m.state);
    const st = m.specState;
    const mk = st === null ? undefined : this.markerBytes.get(st);
    if (mk && this.cur.length - mk.length >= this.markEnd && endsWith(this.cur, mk)) {
      this.markEnd = this.cur.length;
      this.region = "content";
      this.version++;
    }
    return true;
  }

  private truncate(at: number): void {
    this.cur.length = at;
    this.snap.length = at + 1;
    this.matcher.state = this.snap[at]!;
  }

  /** Appends host text (a correction) byte by byte; false (and nothing changed) if the spec refuses it. */
  private append(text: string): boolean {
    const at = this.cur.length;
    const { markEnd, region, version } = this;
    for (const b of this.spec.encode(text)) {
      if (!this.push(b)) {
        this.truncate(at);
        Object.assign(this, { markEnd, region, version });
        return false;
      }
    }
    return true;
  }

  private constrained(): string[] | undefined {
    const st = this.matcher.specState;
    return this.region === "content" && st !== null ? this.opts.outputConstrs?.[st] : undefined;
  }

  private choose(valid: string[]): string {
    const how = this.opts.choose ?? "progress";
    if (typeof how === "function") {
      const pick = how(valid, this.matcher.specState);
      if (!valid.includes(pick)) throw new Error(`choose returned ${pick}, which is not one of ${valid.join(", ")}`);
      return pick;
    }
    if (how === "first" || valid.length === 1) return valid[0]!;
    const d = distances(this.spec);
    const { trans, classMap, nClasses, flags, envNext } = this.spec.dfa;
    let best = valid[0]!;
    let bestD = Infinity;
    for (const name of valid) {
      for (const sep of ["", "\n"]) {
        let s = this.matcher.state;
        for (const b of this.spec.encode(sep + this.markerOf(name))) {
          s = s < 0 ? -1 : trans[s * nClasses + classMap[b]!]!;
        }
        if (s < 0) continue;
        if (flags[s]! & STATE_YIELD) s = envNext[s]!;
        const ds = s >= 0 && d[s]! >= 0 ? d[s]! : Infinity;
        if (ds < bestD) { bestD = ds; best = name; }
        break;
      }
    }
    return best;
  }

  /** Whether the text of some valid next marker (after a newline or not) could be appended now. */
  private markerFits(): boolean {
    const { trans, classMap, nClasses } = this.spec.dfa;
    return this.matcher.validNext().some((name) => ["", "\n"].some((sep) => {
      let s = this.matcher.state;
      for (const b of this.spec.encode(sep + this.markerOf(name))) if ((s = trans[s * nClasses + classMap[b]!]!) < 0) return false;
      return true;
    }));
  }

  /**
   * Structured content the model left unfinished (JSON arguments, a grammar sentence, a tool
   * name) where no marker may come yet: appends the shortest completion the spec allows (bytes
   * along a shortest path to acceptance; letters and digits before other characters), so that a
   * marker can follow. Free text needs none. Returns the text appended.
   */
  private completeContent(): string {
    if (this.spec.pushdown) return "";
    const d = distances(this.spec);
    const { trans, classMap, nClasses } = this.spec.dfa;
    const start = this.cur.length;
    while (!this.markerFits()) {
      const s = this.matcher.state;
      const b = BYTE_PREFERENCE.find((x) => { const t = trans[s * nClasses + classMap[x]!]!; return t >= 0 && d[t] === d[s]! - 1; });
      if (b === undefined || !this.push(b)) break;
    }
    return this.bytesText(this.cur.slice(start));
  }

  /** Appends the valid-state prefix (or a whole marker) at the current position. */
  private appendPrefix(kind: Correction["kind"], discarded: string, whole: boolean): Correction | null {
    const m = this.matcher;
    const filled = this.region === "content" ? this.completeContent() : "";
    const valid = m.validNext();
    if (!valid.length) {
      if (m.isAccepting) {
        this.finished = true;
        return discarded ? this.note("end", discarded, "") : null;
      }
      throw new Error(`internal: no valid next marker in state ${m.specState} and the run is not complete`);
    }
    let p = whole ? "" : longestCommonPrefix(valid.map((n) => this.markerOf(n)));
    if (!p) p = this.markerOf(this.choose(valid));
    const content = this.cur.slice(this.markEnd);
    const sep = this.region === "content" && content.some((b) => !isWs(b)) && !isWs(this.cur[this.cur.length - 1]!) ? "\n" : "";
    const note = this.note(kind, discarded, "");
    for (const t of sep ? [sep + p, p] : [p]) {
      if (this.append(t)) {
        note.appended = filled + t;
        return note;
      }
    }
    throw new Error(`internal: the spec refused its own valid-state prefix ${JSON.stringify(p)} in state ${m.specState}`);
  }

  /** Whether `tail` + `b` spells the beginning of some marker. */
  private startsMarker(tail: number[], b: number): boolean {
    const n = tail.length + 1;
    return this.allMarkers.some((mk) => {
      if (mk.length < n) return false;
      for (let i = 0; i < tail.length; i++) if (mk[i] !== tail[i]) return false;
      return mk[tail.length] === b;
    });
  }

  private violation(bytes: Uint8Array, i: number): ChunkOutcome {
    const offset = this.bytesText(bytes.subarray(0, i)).length;
    const rest = bytes.subarray(i);
    const opts = this.constrained();
    if (opts) {
      const regionText = this.bytesText(this.cur.slice(this.markEnd)) + this.bytesText(rest);
      const hit = nextMarker(regionText, 0, this.spec.states);
      const content = hit ? regionText.slice(0, hit.at) : regionText;
      if (!opts.includes(content.trim())) {
        const out = this.replaceContent(content, hit ? regionText.slice(hit.at) : "", opts);
        return { ...out, offset };
      }
    }
    let cut = this.cur.length;
    if (this.region !== "content") {
      cut = this.markEnd;
      while (cut < this.cur.length && isWs(this.cur[cut]!)) cut++;
    } else {
      for (let s = this.markEnd; s < this.cur.length; s++) {
        if (this.startsMarker(this.cur.slice(s), rest[0]!)) { cut = s; break; }
      }
    }
    const discarded = this.bytesText(this.cur.slice(cut)) + this.bytesText(rest);
    this.truncate(cut);
    // The same cut as the last correction: the prefix did not steer the model (a greedy model
    // writes the same again), so this time a whole marker goes in.
    const again = this.lastCut !== null && this.lastCut.version === this.version && this.lastCut.at === cut;
    this.lastCut = { version: this.version, at: cut };
    const c = this.appendPrefix("prefix", discarded, again);
    return { status: this.status(), ok: false, violated: true, offset, corrections: c ? [c] : [] };
  }

  /** Puts the allowed string in place of the state's content, then validates `after` (from the next marker on). */
  private replaceContent(content: string, after: string, opts: string[]): ChunkOutcome {
    const st = this.matcher.specState;
    let to = matchOption(content, opts, this.opts.prefixMatch ?? true);
    if (to === null) {
      if (this.opts.contentFallback === "first") to = opts[0]!;
      else {
        throw new ChunkModeError("content", `chunk mode: the content of ${st} is ${JSON.stringify(content.trim())}, which matches none of ${opts.map((o) => JSON.stringify(o)).join(", ")} (exactly, ignoring case or spaces, as a substring or as a prefix)`, st, this.expected(), this.transcript);
      }
    }
    this.truncate(this.markEnd);
    const text = ` ${to}\n`;
    if (!this.append(text)) throw new Error(`internal: the spec refused ${JSON.stringify(text)} as the content of ${st}`);
    const corr = this.note("content", content, text, { from: content.trim(), to, state: st });
    const sub = after ? this.validate(after) : { status: this.status(), ok: true, violated: false, corrections: [] };
    return { status: sub.status, ok: false, violated: sub.violated, corrections: [corr, ...sub.corrections] };
  }
}

function endsWith(a: number[], b: Uint8Array): boolean {
  if (a.length < b.length) return false;
  const o = a.length - b.length;
  for (let i = 0; i < b.length; i++) if (a[o + i] !== b[i]) return false;
  return true;
}

// ---- The loop -------------------------------------------------------------------------------------

/** One completion: OpenAI's `choices[0]`. */
export interface CompletionResult {
  text: string;
  /** Per-token log-probabilities, when the server returns them. */
  logprobs?: number[];
  /** "stop" (EOS or a stop sequence; the default), "length" (max tokens). */
  finishReason?: string;
  /** The stop sequence that ended the text, when the server says (vLLM `stop_reason`, llama.cpp `stopping_word`). */
  stopSequence?: string | null;
}

export type Complete = (prompt: string, o: { stop: string[]; maxTokens: number }) => Promise<CompletionResult>;

export interface ChunkedOptions extends MonitorOptions {
  /** A loaded spec (then pass `outputConstrs` to correct content) or a compiled one. */
  spec: Spec | Compiled;
  complete: Complete;
  tools: Tools;
  /** The run's own text: context up to its first marker, from there fed to the monitor. */
  prompt?: string;
  /** Model-only text before the prompt (instructions, few-shot examples); not in the transcript. */
  context?: string;
  /** Marker corrections in a row before giving up (default 3). */
  maxRetries?: number;
  /** max_tokens per chunk (default 64). */
  chunkTokens?: number;
  /** Requests in all before giving up (default 64). */
  maxChunks?: number;
  /** Clean chunks in one state before a transition is forced (default 4). */
  maxChunksPerState?: number;
  /** Extra stop sequences while the run may end (default ["\n"]: the answer is one line). */
  endStops?: string[];
  /** Scores continuations for PASS's summary-or-raw choice. */
  logprobs?: LogprobScorer;
}

export interface ChunkedResult {
  transcript: Trace;
  /** Typed tool calls (handlers made by `typedTools`), in order, with their results. */
  toolCalls: CallRecord[];
  steps: Step[];
  verdict: Verdict["verdict"];
  requests: number;
  corrections: Correction[];
  parallel: ParallelRecord[];
}

async function loadSpec(s: Spec | Compiled): Promise<{ spec: Spec; outputConstrs?: Record<string, string[]> }> {
  if ("ir" in s && "byteDfa" in s) {
    const { compileToWasm } = await import("../compiler/compile.js");
    const { Spec } = await import("../bindings/spec.js");
    return { spec: await Spec.load(compileToWasm(s)), outputConstrs: outputConstrsOf(s) };
  }
  return { spec: s };
}

/** Runs a spec in chunk mode (see the file overview). */
export async function runChunked(o: ChunkedOptions): Promise<ChunkedResult> {
  const loaded = await loadSpec(o.spec);
  const spec = loaded.spec;
  checkTools(spec.states, o.tools);
  const mon = new DecodingMonitor(spec, { ...o, outputConstrs: o.outputConstrs ?? loaded.outputConstrs ?? {} });
  const prompt = o.prompt ?? "";
  const context = o.context ?? "";
  mon.start(prompt);
  const m = mon.matcher;
  const envStates = spec.states.filter((s) => s.env);
  const envMarkers = envStates.map((s) => s.marker);
  const endStops = o.endStops ?? ["\n"];
  const maxRetries = o.maxRetries ?? 3;
  const maxChunks = o.maxChunks ?? 64;
  const perState = o.maxChunksPerState ?? 4;
  const chunkTokens = o.chunkTokens ?? 64;
  const parallel: ParallelRecord[] = [];
  let requests = 0;
  let retries = 0;
  let inState = 0;
  let version = mon.version;

  const fail = (reason: "retries" | "chunks", msg: string): never => {
    throw new ChunkModeError(reason, msg, m.specState, mon.expected(), mon.transcript);
  };
  const ask = (stop: string[], maxTokens: number) => {
    if (requests >= maxChunks) fail("chunks", `chunk mode: gave up after ${requests} requests (maxChunks) in state ${m.specState ?? "(start)"}; the run is not complete`);
    requests++;
    return o.complete(context + prompt + mon.text, { stop, maxTokens });
  };
  const retry = (out: ChunkOutcome, chunk: string) => {
    if (!out.violated) { retries = 0; return; }
    if (++retries > maxRetries) {
      const c = out.corrections[out.corrections.length - 1];
      fail("retries", `chunk mode: ${retries} chunks in a row violated the spec (maxRetries ${maxRetries}); last in state ${c?.state ?? "(start)"}, valid next markers ${(c?.expected ?? []).map((x) => JSON.stringify(x)).join(", ") || "none"}; last chunk ${JSON.stringify(chunk.slice(0, 80))}`);
    }
  };

  while (!mon.finished) {
    if (m.yielding) {
      const env = await answerEnv(m.specState!, o.tools, spec.states, mon.transcript.segments, context + prompt + mon.text, o.logprobs, parallel);
      mon.feedEnv(env);
      continue;
    }
    const res = await ask(m.isAccepting ? [...envMarkers, ...endStops] : envMarkers, chunkTokens);
    let out = mon.validate(res.text);
    retry(out, res.text);
    if (out.status !== "continue" || out.violated) continue;
    if ((res.finishReason ?? "stop") === "length") {
      if (mon.version !== version) { version = mon.version; inState = 0; }
      if (++inState >= perState) { mon.force(); inState = 0; }
      continue;
    }
    // The model stopped: at a stop sequence (which the API leaves out of the text), or by itself.
    const sq = res.stopSequence ?? null;
    const envNow = m.validNext().filter((n) => envStates.some((s) => s.name === n)).map((n) => spec.states.find((s) => s.name === n)!.marker);
    if (sq !== null && envMarkers.includes(sq)) out = mon.validate(sq);
    else if (m.isAccepting && (sq === null || endStops.includes(sq))) {
      mon.finished = true;
      break;
    } else if (envNow.length === 1) out = mon.validate(envNow[0]!);
    else if (envNow.length > 1) {
      const probe = (await ask([], 8)).text.trimStart();
      const hit = envNow.find((mk) => probe.startsWith(mk));
      out = hit ? mon.validate(hit) : mon.correct();
    } else out = mon.correct();
    retry(out, res.text);
  }
  const toolCalls = recordedCalls(o.tools);
  const transcript: Trace = { ...mon.transcript, ...(toolCalls.length ? { toolCalls } : {}) };
  return {
    toolCalls,
    transcript,
    steps: transcriptSteps(transcript.segments, spec.states),
    verdict: runTrace(byteDfaEngine(spec.dfa), transcript, spec.states.map((s) => s.marker), spec.tokens).verdict,
    requests,
    corrections: mon.corrections,
    parallel,
  };
}

// ---- HTTP -----------------------------------------------------------------------------------------

export interface HttpCompletionsOptions {
  /** Sampling temperature (default 0: greedy, so runs are reproducible). */
  temperature?: number;
  /** Ask for this many log-probabilities per token (OpenAI's legacy `logprobs`); off by default. */
  logprobs?: number;
  apiKey?: string;
  /** Per-request timeout (default 60 s). */
  timeoutMs?: number;
}

/**
 * A `Complete` over an OpenAI-compatible server: POST {baseUrl}/v1/completions with
 * {model, prompt, max_tokens, stop, temperature, logprobs}. `baseUrl` may end in "/v1". Note that
 * OpenAI itself accepts at most 4 stop sequences.
 */
export function httpCompletions(baseUrl: string, model: string, opts: HttpCompletionsOptions = {}): Complete {
  const base = baseUrl.replace(/\/+$/, "").replace(/\/v1$/, "");
  return async (prompt, { stop, maxTokens }) => {
    const body: Record<string, unknown> = { model, prompt, max_tokens: maxTokens, temperature: opts.temperature ?? 0 };
    if (stop.length) body.stop = stop;
    if (opts.logprobs !== undefined) body.logprobs = opts.logprobs;
    const r = await fetch(`${base}/v1/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", ...(opts.apiKey ? { authorization: `Bearer ${opts.apiKey}` } : {}) },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(opts.timeoutMs ?? 60_000),
    });
    const raw = await r.text();
    if (!r.ok) throw new Error(`POST ${base}/v1/completions: HTTP ${r.status}: ${raw.slice(0, 300)}`);
    let j: { choices?: { text?: unknown; finish_reason?: unknown; stop_reason?: unknown; stopping_word?: unknown; logprobs?: { token_logprobs?: unknown } }[] };
    try { j = JSON.parse(raw); } catch { throw new Error(`POST ${base}/v1/completions: the reply is not JSON: ${raw.slice(0, 200)}`); }
    const c = j.choices?.[0];
    if (!c || typeof c.text !== "string") throw new Error(`POST ${base}/v1/completions: the reply has no choices[0].text: ${raw.slice(0, 200)}`);
    const stopSeq = typeof c.stop_reason === "string" ? c.stop_reason : typeof c.stopping_word === "string" && c.stopping_word ? c.stopping_word : null;
    const lp = c.logprobs?.token_logprobs;
    return {
      text: c.text,
      ...(typeof c.finish_reason === "string" ? { finishReason: c.finish_reason } : {}),
      stopSequence: stopSeq,
      ...(Array.isArray(lp) ? { logprobs: lp.map(Number) } : {}),
    };
  };
}
