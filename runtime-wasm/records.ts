/**
 * @fileoverview The memory the host and the matchers share: the scratch buffer (`buf_ptr`) and the
 * matcher records (part of specc's WebAssembly runtime; index.ts lists the modules). matcher.ts
 * runs the records; pushdown.ts reads and rewrites them too (rollback entries, compaction), which
 * is why they live below both.
 */

// ---- Scratch buffer and matcher records ---------------------------------------------------------

// @ts-ignore: decorator
@inline export const BUF_CAP: i32 = 65536;

/**
 * Matcher record, REC bytes (docs/abi.md): u32 state, u32 done (EOS committed), u32 tokens
 * committed in the current spec state (saturating at COUNT_MAX), u32 token budget (0 = none),
 * u32 history head (low 16 bits) | history length (high 16 bits), then a ring of HIST u32 entries
 * `state | count << 16 | done << 31`, one per committed token, for `m_rollback`.
 */
// @ts-ignore: decorator
@inline export const REC: usize = 52; // 20 B of state + an 8-entry rollback ring
// @ts-ignore: decorator
@inline export const R_DONE: usize = 4;
// @ts-ignore: decorator
@inline export const R_COUNT: usize = 8;
// @ts-ignore: decorator
@inline export const R_BUDGET: usize = 12;
// @ts-ignore: decorator
@inline export const R_HIST: usize = 16;
// @ts-ignore: decorator
@inline export const R_RING: usize = 20;
// @ts-ignore: decorator
@inline export const HIST: u32 = 8;
// @ts-ignore: decorator
@inline export const COUNT_MAX: u32 = 0x7fff;

export const bufPtr: usize = heap.alloc(<usize>BUF_CAP);
/** The record array (read by pushdown.ts's compaction, which rewrites configuration ids in place). */
export let recBase: usize = heap.alloc(16 * REC);
let recCap: i32 = 16;
export let recCount: i32 = 0;

/** Address of matcher `m`'s record; traps on a handle `m_new` never returned (a host bug). */
// @ts-ignore: decorator
@inline export function rec(m: i32): usize {
  if (<u32>m >= <u32>recCount) unreachable();
  return recBase + <usize>m * REC;
}

/** A new record, zeroed; grows the array as needed. Returns its handle. */
export function recNew(): i32 {
  if (recCount == recCap) {
    recCap <<= 1;
    recBase = heap.realloc(recBase, <usize>recCap * REC);
  }
  const m = recCount++;
  memory.fill(recBase + <usize>m * REC, 0, REC);
  return m;
}

export function buf_ptr(): i32 {
  return <i32>bufPtr;
}

export function buf_cap(): i32 {
  return BUF_CAP;
}
