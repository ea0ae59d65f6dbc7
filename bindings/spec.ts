/**
 * @fileoverview The friendly TypeScript layer over a specc .wasm (docs/abi.md): `Spec` loads and
 * validates a module, `Matcher` follows one LLM output through the spec's byte-level DFA.
 *
 * The .wasm imports nothing, so it is instantiated with `{}`. Its tables are validated once, with
 * `parseTables`, when the spec is loaded; after that every call is a thin wrapper over an export.
 * Offsets reported by `feed` are byte offsets into the UTF-8 encoding of the input.
 */

import { readFile } from "node:fs/promises";
import { SpecError } from "../compiler/diagnostics.js";
import { HEADER_SIZE, parseTables, TABLE_BASE, type TableSpecState } from "../compiler/tables.js";

export const SUPPORTED_ABI_VERSION = 1;

/** The numeric exports of a specc .wasm (all i32). */
export interface SpecExports {
  memory: WebAssembly.Memory;
  abi_version(): number;
  tables_ok(): number;
  buf_ptr(): number;
  buf_cap(): number;
  state_count(): number;
  class_count(): number;
  initial_state(): number;
  spec_count(): number;
  step(state: number, byte: number): number;
  state_flags(state: number): number;
  state_spec(state: number): number;
  state_env_next(state: number): number;
  next_count(state: number): number;
  next_at(state: number, i: number): number;
  spec_marker_ptr(i: number): number;
  spec_marker_len(i: number): number;
  spec_name_ptr(i: number): number;
  spec_name_len(i: number): number;
  spec_flags(i: number): number;
  m_new(): number;
  m_reset(m: number): void;
  m_state(m: number): number;
  m_set_state(m: number, s: number): number;
  m_feed(m: number, ptr: number, len: number): number;
  m_feed_env(m: number, ptr: number, len: number): number;
  m_spec(m: number): number;
  m_accepting(m: number): number;
  m_yielding(m: number): number;
}

const FUNCTION_EXPORTS = [
  "abi_version", "tables_ok", "buf_ptr", "buf_cap", "state_count", "class_count", "initial_state",
  "spec_count", "step", "state_flags", "state_spec", "state_env_next", "next_count", "next_at",
  "spec_marker_ptr", "spec_marker_len", "spec_name_ptr", "spec_name_len", "spec_flags", "m_new",
  "m_reset", "m_state", "m_set_state", "m_feed", "m_feed_env", "m_spec", "m_accepting", "m_yielding",
] as const;

/** Per-state flags (docs/abi.md). */
export const STATE_ACCEPTING = 1;
export const STATE_YIELD = 2;
export const STATE_AFTER_ENV = 4;

export type FeedResult = { ok: true; status: "continue" | "yield" } | { ok: false; offset: number };

const encoder = new TextEncoder();
/** A .wasm that cannot be used: `E0602 bad wasm file`. */
const badWasm = (message: string): SpecError => new SpecError("E0602", message, null);
const toBytes = (text: string | Uint8Array): Uint8Array => (typeof text === "string" ? encoder.encode(text) : text);

/** A loaded specc .wasm. */
export class Spec {
  /** The spec states (markers), in id order. */
  readonly states: readonly Readonly<TableSpecState>[];
  /** The raw numeric exports (docs/abi.md), for hosts that drive the ABI directly. */
  readonly exports: SpecExports;

  private constructor(exports: SpecExports, states: TableSpecState[]) {
    this.exports = exports;
    this.states = Object.freeze(states.map((s) => Object.freeze({ ...s })));
  }

  /** Load a specc .wasm from a file path or its bytes. */
  static async load(wasm: string | Uint8Array | ArrayBuffer): Promise<Spec> {
    // A copy backed by a plain ArrayBuffer (what WebAssembly.instantiate accepts).
    const bytes = new Uint8Array(typeof wasm === "string" ? await readFile(wasm) : wasm instanceof Uint8Array ? wasm : new Uint8Array(wasm));
    const what = typeof wasm === "string" ? wasm : "the given module";
    let instance: WebAssembly.Instance;
    try {
      ({ instance } = await WebAssembly.instantiate(bytes, {}));
    } catch (e) {
      throw badWasm(`${what} is not a specc .wasm: ${(e as Error).message}`);
    }
    const ex = instance.exports as Record<string, unknown>;
    const missing: string[] = FUNCTION_EXPORTS.filter((n) => typeof ex[n] !== "function");
    if (!(ex.memory instanceof WebAssembly.Memory)) missing.unshift("memory");
    if (missing.length > 0) {
      throw badWasm(`${what} is not a specc .wasm: missing export${missing.length > 1 ? "s" : ""} ${missing.join(", ")}`);
    }
    const exports = ex as unknown as SpecExports;
    const abi = exports.abi_version();
    if (abi !== SUPPORTED_ABI_VERSION) {
      throw badWasm(`${what} uses specc ABI version ${abi}; this binding supports version ${SUPPORTED_ABI_VERSION}: recompile the spec with this specc`);
    }
    if (exports.memory.buffer.byteLength < TABLE_BASE + HEADER_SIZE || exports.tables_ok() !== 1) {
      throw badWasm(`${what} carries no valid specc tables (bad magic, byte order or format version; is it a bare runtime.wasm?)`);
    }
    const mem = new Uint8Array(exports.memory.buffer);
    const total = new DataView(exports.memory.buffer).getUint32(TABLE_BASE + 8, true);
    if (TABLE_BASE + total > mem.length) throw badWasm(`${what}: the tables' length ${total} runs past the end of memory`);
    let parsed: ReturnType<typeof parseTables>;
    try {
      parsed = parseTables(mem.slice(TABLE_BASE, TABLE_BASE + total));
    } catch (e) {
      throw badWasm(`${what}: ${(e as Error).message}`);
    }
    if (exports.state_count() !== parsed.dfa.nStates || exports.spec_count() !== parsed.states.length) {
      throw badWasm(`${what}: the runtime disagrees with its tables`);
    }
    return new Spec(exports, parsed.states);
  }

  /** A new matcher at the initial state. */
  matcher(): Matcher {
    return new Matcher(this);
  }

  /** Number of byte-level DFA states. */
  get stateCount(): number {
    return this.exports.state_count();
  }

  get initialState(): number {
    return this.exports.initial_state();
  }

  /** Next byte-level state from `state` on `byte`, or -1 when the byte is not allowed. */
  step(state: number, byte: number): number {
    return this.exports.step(state, byte);
  }

  /** The flags of a byte-level state (`STATE_ACCEPTING | STATE_YIELD | STATE_AFTER_ENV`). */
  stateFlags(state: number): number {
    return this.exports.state_flags(state);
  }
}

/** Follows one LLM output (and the environment's replies) through a spec. */
export class Matcher {
  readonly spec: Spec;
  private readonly ex: SpecExports;
  private readonly handle: number;

  /** @internal use `Spec.matcher()` */
  constructor(spec: Spec) {
    this.spec = spec;
    this.ex = spec.exports;
    this.handle = this.ex.m_new();
    if (this.handle < 0) throw new Error("specc runtime: cannot create a matcher (no valid tables)");
  }

  /**
   * Feed LLM output. On a byte that is not allowed, returns its offset in the (UTF-8) input and
   * leaves the matcher as it was before the call. `"yield"` means an env-input marker was just
   * completed: stop generating and call `feedEnv` with the environment's text.
   */
  feed(text: string | Uint8Array): FeedResult {
    const bytes = toBytes(text);
    const { ex, handle } = this;
    const ptr = ex.buf_ptr();
    const cap = ex.buf_cap();
    const snapshot = ex.m_state(handle);
    let r = 0;
    let pos = 0;
    do {
      const n = Math.min(cap, bytes.length - pos);
      new Uint8Array(ex.memory.buffer, ptr, n).set(bytes.subarray(pos, pos + n));
      r = ex.m_feed(handle, ptr, n);
      if (r < 0) {
        ex.m_set_state(handle, snapshot);
        return { ok: false, offset: pos + (-r - 1) };
      }
      pos += n;
    } while (pos < bytes.length);
    return { ok: true, status: r === 1 ? "yield" : "continue" };
  }

  /** Feed the environment's reply (opaque text). Only valid while `yielding`. */
  feedEnv(text: string | Uint8Array): void {
    const { ex, handle } = this;
    if (!ex.m_yielding(handle)) {
      throw new Error("feedEnv: the matcher is not yielding (environment text is only accepted right after an env-input marker)");
    }
    const bytes = toBytes(text);
    const ptr = ex.buf_ptr();
    const n = Math.min(ex.buf_cap(), bytes.length); // the runtime does not look at the text
    new Uint8Array(ex.memory.buffer, ptr, n).set(bytes.subarray(0, n));
    if (ex.m_feed_env(handle, ptr, n) !== 0) throw new Error("feedEnv: the runtime refused the environment text");
  }

  /** Back to the initial state. */
  reset(): void {
    this.ex.m_reset(this.handle);
  }

  /** The byte-level DFA state: a snapshot that can be restored by assigning it back. */
  get state(): number {
    return this.ex.m_state(this.handle);
  }

  set state(s: number) {
    if (!Number.isInteger(s) || this.ex.m_set_state(this.handle, s) !== 0) {
      throw new RangeError(`invalid matcher state ${s} (the spec has ${this.ex.state_count()} states)`);
    }
  }

  /** The name of the spec state whose marker was committed last, or null before the first one. */
  get specState(): string | null {
    const i = this.ex.m_spec(this.handle);
    return i < 0 ? null : this.spec.states[i]!.name;
  }

  /** Whether the output so far is a complete, valid run of the spec. */
  get accepting(): boolean {
    return this.ex.m_accepting(this.handle) !== 0;
  }

  /** Whether the LLM must stop here and the environment's text be fed with `feedEnv`. */
  get yielding(): boolean {
    return this.ex.m_yielding(this.handle) !== 0;
  }

  /** The names of the spec states whose markers may come next. */
  validNext(): string[] {
    const s = this.state;
    const n = this.ex.next_count(s);
    const out: string[] = [];
    for (let i = 0; i < n; i++) out.push(this.spec.states[this.ex.next_at(s, i)]!.name);
    return out;
  }
}
