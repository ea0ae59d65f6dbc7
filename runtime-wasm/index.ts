/**
 * @fileoverview specc's WebAssembly runtime (AssemblyScript, built once into build/runtime.wasm).
 *
 * `specc compile` appends one active data segment holding a spec's tables at TABLE_BASE = 16 to
 * this module; the code below only reads them. It exports the numeric ABI of docs/abi.md (format
 * version 1) so that any host (JS, Python, Rust, ...) can run the byte-level DFA for constrained
 * decoding without JS glue: the module imports nothing. Tables are trusted (the compiler wrote them
 * and a host binding validates them once at load); the hot paths (`step`, `m_feed`) are plain
 * table loads with no allocation and no bounds checks beyond the ones that keep reads inside the
 * tables for arguments that come from the host.
 */

// ---- Table layout (docs/abi.md) ----------------------------------------------------------------

// @ts-ignore: decorator
@inline const TABLE_BASE: usize = 16;
// @ts-ignore: decorator
@inline const MAGIC: u32 = 0x43435053; // "SPCC"
// @ts-ignore: decorator
@inline const VERSION: u32 = 1;
// @ts-ignore: decorator
@inline const BOM: u32 = 0xfeff;
// @ts-ignore: decorator
@inline const NONE16: u32 = 0xffff;

// Header field offsets.
// @ts-ignore: decorator
@inline const H_MAGIC: usize = 0;
// @ts-ignore: decorator
@inline const H_VERSION: usize = 4;
// @ts-ignore: decorator
@inline const H_BOM: usize = 6;
// @ts-ignore: decorator
@inline const H_NSTATES: usize = 12;
// @ts-ignore: decorator
@inline const H_NCLASSES: usize = 16;
// @ts-ignore: decorator
@inline const H_INITIAL: usize = 20;
// @ts-ignore: decorator
@inline const H_NSPEC: usize = 24;
// @ts-ignore: decorator
@inline const H_CLASSMAP: usize = 28;
// @ts-ignore: decorator
@inline const H_TRANS: usize = 32;
// @ts-ignore: decorator
@inline const H_INFO: usize = 36;
// @ts-ignore: decorator
@inline const H_SETS: usize = 40;
// @ts-ignore: decorator
@inline const H_SPEC: usize = 48;

// State flags.
// @ts-ignore: decorator
@inline const F_ACCEPTING: u32 = 1;
// @ts-ignore: decorator
@inline const F_YIELD: u32 = 2;

// @ts-ignore: decorator
@inline function hdr(field: usize): u32 {
  return load<u32>(TABLE_BASE + field);
}

/** Absolute address of a table region whose offset (relative to TABLE_BASE) is in header `field`. */
// @ts-ignore: decorator
@inline function region(field: usize): usize {
  return TABLE_BASE + <usize>load<u32>(TABLE_BASE + field);
}

/** Absolute address of the 4 × u16 info record of state `s`. */
// @ts-ignore: decorator
@inline function info(s: u32): usize {
  return region(H_INFO) + (<usize>s << 3);
}

// @ts-ignore: decorator
@inline function flagsOf(s: u32): u32 {
  return <u32>load<u16>(info(s));
}

// @ts-ignore: decorator
@inline function validState(s: i32): bool {
  return <u32>s < hdr(H_NSTATES);
}

// ---- Scratch buffer and matcher records ---------------------------------------------------------

// @ts-ignore: decorator
@inline const BUF_CAP: i32 = 65536;
/** Bytes per matcher record: u32 current byte-DFA state (room for a few more fields later). */
// @ts-ignore: decorator
@inline const REC: usize = 8;

const bufPtr: usize = heap.alloc(<usize>BUF_CAP);
let recBase: usize = heap.alloc(16 * REC);
let recCap: i32 = 16;
let recCount: i32 = 0;

/** Address of matcher `m`'s record; traps on a handle `m_new` never returned (a host bug). */
// @ts-ignore: decorator
@inline function rec(m: i32): usize {
  if (<u32>m >= <u32>recCount) unreachable();
  return recBase + <usize>m * REC;
}

// ---- Exports: tables ------------------------------------------------------------------------------

export function abi_version(): i32 {
  return 1;
}

export function tables_ok(): i32 {
  return i32(
    hdr(H_MAGIC) == MAGIC &&
    <u32>load<u16>(TABLE_BASE + H_VERSION) == VERSION &&
    <u32>load<u16>(TABLE_BASE + H_BOM) == BOM,
  );
}

export function buf_ptr(): i32 {
  return <i32>bufPtr;
}

export function buf_cap(): i32 {
  return BUF_CAP;
}

export function state_count(): i32 {
  return <i32>hdr(H_NSTATES);
}

export function class_count(): i32 {
  return <i32>hdr(H_NCLASSES);
}

export function initial_state(): i32 {
  return <i32>hdr(H_INITIAL);
}

export function spec_count(): i32 {
  return <i32>hdr(H_NSPEC);
}

/** One transition; `nClasses`, `trans` and `classmap` are absolute/hoisted by the caller. */
// @ts-ignore: decorator
@inline function next(s: u32, b: u32, nClasses: u32, trans: usize, classmap: usize): u32 {
  const c = <u32>load<u8>(classmap + <usize>b);
  return <u32>load<u16>(trans + ((<usize>(s * nClasses + c)) << 1));
}

export function step(state: i32, byte: i32): i32 {
  if (!validState(state) || <u32>byte > 255) return -1;
  const n = next(<u32>state, <u32>byte, hdr(H_NCLASSES), region(H_TRANS), region(H_CLASSMAP));
  return n == NONE16 ? -1 : <i32>n;
}

export function state_flags(state: i32): i32 {
  if (!validState(state)) return 0;
  return <i32>flagsOf(<u32>state);
}

export function state_spec(state: i32): i32 {
  if (!validState(state)) return -1;
  const v = <u32>load<u16>(info(<u32>state), 2);
  return v == NONE16 ? -1 : <i32>v;
}

export function state_env_next(state: i32): i32 {
  if (!validState(state)) return -1;
  const v = <u32>load<u16>(info(<u32>state), 4);
  return v == NONE16 ? -1 : <i32>v;
}

/** Absolute address of the nextMarkers set of `state` (`u16 count, u16 ids[count]`). */
// @ts-ignore: decorator
@inline function nextSet(state: u32): usize {
  const idx = <usize>load<u16>(info(state), 6);
  return TABLE_BASE + <usize>load<u32>(region(H_SETS) + (idx << 2));
}

export function next_count(state: i32): i32 {
  if (!validState(state)) return 0;
  return <i32>load<u16>(nextSet(<u32>state));
}

export function next_at(state: i32, i: i32): i32 {
  if (!validState(state)) return -1;
  const set = nextSet(<u32>state);
  if (<u32>i >= <u32>load<u16>(set)) return -1;
  return <i32>load<u16>(set + 2 + (<usize>i << 1));
}

/** Field `k` (0..4) of spec state `i`'s record, or `dflt` for an out-of-range `i`. */
// @ts-ignore: decorator
@inline function specField(i: i32, k: usize, dflt: i32): i32 {
  if (<u32>i >= hdr(H_NSPEC)) return dflt;
  return <i32>load<u32>(region(H_SPEC) + <usize>i * 20 + (k << 2));
}

export function spec_marker_ptr(i: i32): i32 {
  const off = specField(i, 0, -1);
  return off < 0 ? 0 : <i32>TABLE_BASE + off;
}

export function spec_marker_len(i: i32): i32 {
  return specField(i, 1, 0);
}

export function spec_name_ptr(i: i32): i32 {
  const off = specField(i, 2, -1);
  return off < 0 ? 0 : <i32>TABLE_BASE + off;
}

export function spec_name_len(i: i32): i32 {
  return specField(i, 3, 0);
}

export function spec_flags(i: i32): i32 {
  return specField(i, 4, 0);
}

// ---- Exports: matchers ----------------------------------------------------------------------------

/** A new matcher at the initial state; -1 when the module carries no (valid) tables. */
export function m_new(): i32 {
  if (!tables_ok()) return -1;
  if (recCount == recCap) {
    recCap <<= 1;
    recBase = heap.realloc(recBase, <usize>recCap * REC);
  }
  const m = recCount++;
  const r = recBase + <usize>m * REC;
  store<u32>(r, hdr(H_INITIAL));
  store<u32>(r, 0, 4);
  return m;
}

export function m_reset(m: i32): void {
  store<u32>(rec(m), hdr(H_INITIAL));
}

export function m_state(m: i32): i32 {
  return <i32>load<u32>(rec(m));
}

export function m_set_state(m: i32, s: i32): i32 {
  const r = rec(m);
  if (!validState(s)) return -1;
  store<u32>(r, <u32>s);
  return 0;
}

/**
 * Feed LLM output bytes. 0 = continue, 1 = yield (an env-input marker was completed: stop and feed
 * the environment's text with `m_feed_env`), `-(1 + i)` = byte `i` is not allowed; the matcher is
 * then left unchanged. A yield state has no byte transitions, so any byte after it is rejected.
 */
export function m_feed(m: i32, ptr: i32, len: i32): i32 {
  const r = rec(m);
  const nClasses = hdr(H_NCLASSES);
  const trans = region(H_TRANS);
  const classmap = region(H_CLASSMAP);
  const infos = region(H_INFO);
  let s = load<u32>(r);
  const p = <usize>ptr;
  const n = <usize>(<u32>len);
  for (let i: usize = 0; i < n; ++i) {
    // Trans is 0xFFFF in yield states; the explicit check keeps "yield stops consuming" true even
    // for tables that were written by another tool.
    if (<u32>load<u16>(infos + (<usize>s << 3)) & F_YIELD) return -1 - <i32>i;
    const t = next(s, <u32>load<u8>(p + i), nClasses, trans, classmap);
    if (t == NONE16) return -1 - <i32>i;
    s = t;
  }
  store<u32>(r, s);
  return i32((<u32>load<u16>(infos + (<usize>s << 3)) & F_YIELD) != 0);
}

/** Feed the environment's text (opaque) from a yield state: go to its envNext. */
export function m_feed_env(m: i32, ptr: i32, len: i32): i32 {
  const r = rec(m);
  const s = load<u32>(r);
  if (!(flagsOf(s) & F_YIELD)) return -1;
  const nxt = <u32>load<u16>(info(s), 4);
  if (nxt == NONE16) return -1;
  store<u32>(r, nxt);
  return 0;
}

export function m_spec(m: i32): i32 {
  return state_spec(<i32>load<u32>(rec(m)));
}

export function m_accepting(m: i32): i32 {
  return i32((flagsOf(load<u32>(rec(m))) & F_ACCEPTING) != 0);
}

export function m_yielding(m: i32): i32 {
  return i32((flagsOf(load<u32>(rec(m))) & F_YIELD) != 0);
}
