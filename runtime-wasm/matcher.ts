/**
 * @fileoverview Matchers: the `m_*` exports of docs/abi.md over the records of records.ts (part
 * of specc's WebAssembly runtime; index.ts lists the modules).
 *
 * A matcher is a REC-byte record (state, done, token counter, budget, rollback ring) in one
 * growable array; the hot paths (`m_feed`, `m_mask`, `m_commit`) are table loads with no
 * allocation. Pushdown tables take the pda* paths of pushdown.ts / pushdown-masks.ts.
 */

import {
  F_ACCEPTING, F_YIELD, H_CLASSMAP, H_INFO, H_INITIAL, H_NCLASSES, NONE16, flagsOf, hdr, info, next,
  region, specOf, validState,
} from "./layout";
import { COUNT_MAX, HIST, R_BUDGET, R_COUNT, R_DONE, R_HIST, R_RING, rec, recNew } from "./records";
import { tables_ok, transBase } from "./tables";
import { state_spec } from "./states";
import {
  K_EOS, K_TEXT, maskAddr, maskBytes, stateMaskPtr, tokBytesPtr, tokKindPtr, tokOffPtr, vocabPhase,
  vocabSize, zeroMask,
} from "./vocab";
import { RELEASED, distPtr, ensureDist, maskIndex } from "./masks";
import {
  NO_ROOT, cfAccepting, cfExternal, cfInternal, cfRep, cfYielding, initialCfg, pdaCacheCheck, pdaCommit,
  pdaFeed, pdaMode, pdaRollback, pdaStateCfg,
} from "./pushdown";
import { pdaMaskOf } from "./pushdown-masks";

// ---- Exports: matchers ----------------------------------------------------------------------------

/** A new matcher at the initial state; -1 when the module carries no (valid) tables. */
export function m_new(): i32 {
  if (!tables_ok()) return -1;
  const m = recNew();
  store<u32>(rec(m), pdaMode ? initialCfg : hdr(H_INITIAL));
  return m;
}

/** State, done flag, counter and history all cleared (the budget is kept). */
// @ts-ignore: decorator
@inline function setFresh(r: usize, s: u32): void {
  store<u32>(r, s);
  store<u32>(r, 0, R_DONE);
  store<u32>(r, 0, R_COUNT);
  store<u32>(r, 0, R_HIST);
}

export function m_reset(m: i32): void {
  setFresh(rec(m), pdaMode ? initialCfg : hdr(H_INITIAL));
}

export function m_state(m: i32): i32 {
  const s = load<u32>(rec(m));
  return pdaMode ? cfExternal(s) : <i32>s;
}

/** Restore a state snapshot; also clears the done flag, the token counter and the history. */
export function m_set_state(m: i32, s: i32): i32 {
  const r = rec(m);
  if (pdaMode) {
    const c = cfInternal(s); // an id of an earlier generation (before a compaction) is refused
    if (c < 0) return -1;
    setFresh(r, <u32>c);
    return 0;
  }
  if (!validState(s)) return -1;
  setFresh(r, <u32>s);
  return 0;
}

/**
 * Feed LLM output bytes. 0 = continue, 1 = yield (an env-input marker was completed: stop and feed
 * the environment's text with `m_feed_env`), `-(1 + i)` = byte `i` is not allowed; the matcher is
 * then left unchanged. A yield state has no byte transitions, so any byte after it is rejected.
 * A finished matcher (EOS committed) rejects every byte and answers 2 to an empty feed. Success
 * clears the rollback history; the token counter restarts when the spec state changes.
 */
export function m_feed(m: i32, ptr: i32, len: i32): i32 {
  const r = rec(m);
  if (load<u32>(r, R_DONE)) return len > 0 ? -1 : 2;
  if (pdaMode) return pdaFeed(r, <usize>ptr, <usize>(<u32>len));
  const nClasses = hdr(H_NCLASSES);
  const trans = transBase;
  const classmap = region(H_CLASSMAP);
  const infos = region(H_INFO);
  const s0 = load<u32>(r);
  let s = s0;
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
  store<u32>(r, 0, R_HIST);
  if (specOf(s) != specOf(s0)) store<u32>(r, 0, R_COUNT);
  return i32((<u32>load<u16>(infos + (<usize>s << 3)) & F_YIELD) != 0);
}

/** Feed the environment's text (opaque) from a yield state: go to its envNext. */
export function m_feed_env(m: i32, ptr: i32, len: i32): i32 {
  const r = rec(m);
  const s = load<u32>(r);
  if (load<u32>(r, R_DONE)) return -1;
  if (pdaMode) {
    pdaCacheCheck(NO_ROOT); // may compact: read the configuration after it
    const q = cfRep(load<u32>(r));
    if (q < 0 || !(flagsOf(<u32>q) & F_YIELD)) return -1;
    const c = pdaStateCfg(<u32>load<u16>(info(<u32>q), 4));
    if (c < 0) return -1;
    store<u32>(r, <u32>c);
    store<u32>(r, 0, R_COUNT);
    store<u32>(r, 0, R_HIST);
    return 0;
  }
  if (!(flagsOf(s) & F_YIELD)) return -1;
  const nxt = <u32>load<u16>(info(s), 4);
  if (nxt == NONE16) return -1;
  store<u32>(r, nxt);
  store<u32>(r, 0, R_COUNT);
  store<u32>(r, 0, R_HIST);
  return 0;
}

export function m_spec(m: i32): i32 {
  return state_spec(<i32>load<u32>(rec(m)));
}

export function m_accepting(m: i32): i32 {
  const s = load<u32>(rec(m));
  if (pdaMode) return i32(cfAccepting(s));
  return i32((flagsOf(s) & F_ACCEPTING) != 0);
}

export function m_yielding(m: i32): i32 {
  const s = load<u32>(rec(m));
  return pdaMode ? i32(cfYielding(s)) : i32((flagsOf(s) & F_YIELD) != 0);
}

/** 1 once an EOS token was committed (every later commit or feed is rejected), else 0. */
export function m_done(m: i32): i32 {
  return <i32>load<u32>(rec(m), R_DONE);
}

/** Tokens committed since the current spec state was entered (saturates at 32767). */
export function m_count(m: i32): i32 {
  return <i32>load<u32>(rec(m), R_COUNT);
}

/**
 * Token budget per spec state: once `k` tokens were committed in one spec state, the mask and
 * `m_commit` only allow EOS (when accepting) and tokens on a shortest path to a new marker.
 * `k ≤ 0` removes the budget; `k` is capped at 32767. Returns 0.
 */
export function m_set_budget(m: i32, k: i32): i32 {
  const r = rec(m);
  if (pdaMode) return -1; // no budgets for pushdown grammars: the budget stays 0
  store<u32>(r, k <= 0 ? 0 : min(<u32>k, COUNT_MAX), R_BUDGET);
  return 0;
}

export function m_budget(m: i32): i32 {
  return <i32>load<u32>(rec(m), R_BUDGET);
}

// @ts-ignore: decorator
@inline function budgetExhausted(r: usize): bool {
  const b = load<u32>(r, R_BUDGET);
  return b != 0 && load<u32>(r, R_COUNT) >= b;
}

/** Distinct-mask index of matcher `m`'s current mask; -1 without vocabulary. */
export function m_mask(m: i32): i32 {
  const r = rec(m);
  if (vocabPhase != 2) return -1;
  if (load<u32>(r, R_DONE)) return zeroMask;
  if (pdaMode) {
    pdaCacheCheck(NO_ROOT); // may compact: read the configuration after it
    return pdaMaskOf(load<u32>(r));
  }
  const s = load<u32>(r);
  if (budgetExhausted(r)) return maskIndex(s, true);
  const idx = load<i32>(stateMaskPtr + (<usize>s << 2));
  return idx >= 0 ? idx : maskIndex(s, false);
}

/** Address of matcher `m`'s current mask (`mask_words()` i32 words, read-only); 0 without vocabulary. */
export function m_mask_ptr(m: i32): i32 {
  const idx = m_mask(m);
  return idx < 0 ? 0 : <i32>maskAddr(idx);
}

/** Copy matcher `m`'s mask to `out` (`mask_words()` words); returns its mask index, -1 without vocabulary. */
export function m_fill_mask(m: i32, out: i32): i32 {
  const idx = m_mask(m);
  if (idx >= 0) memory.copy(<usize>out, maskAddr(idx), maskBytes);
  return idx;
}

/**
 * Masks of `n` matchers (i32 handles at `handles`) into `out`, `mask_words()` words each, in order.
 * 0, or -1 without vocabulary.
 */
export function fill_masks(handles: i32, n: i32, out: i32): i32 {
  if (vocabPhase != 2) return -1;
  let o = <usize>out;
  for (let i = 0; i < n; i++) {
    const idx = m_mask(load<i32>(<usize>handles + (<usize>i << 2)));
    memory.copy(o, maskAddr(idx), maskBytes);
    o += maskBytes;
  }
  return 0;
}

function histPush(r: usize): void {
  const h = load<u32>(r, R_HIST);
  const head = h & 0xffff;
  let len = h >>> 16;
  const entry = load<u32>(r) | (min(load<u32>(r, R_COUNT), COUNT_MAX) << 16) | (load<u32>(r, R_DONE) << 31);
  store<u32>(r + R_RING + (<usize>head << 2), entry);
  if (len < HIST) len++;
  store<u32>(r, ((head + 1) & (HIST - 1)) | (len << 16), R_HIST);
}

/**
 * Commit token `id`: 0 continue, 1 yield (an env-input marker was completed), 2 done (EOS in an
 * accepting state), 3 rejected (the matcher is unchanged): a token id out of range, a special
 * token, EOS in a state that does not accept, bytes the spec does not allow here, a token outside
 * an exhausted budget, or any token after done. -1 without vocabulary.
 */
export function m_commit(m: i32, id: i32): i32 {
  const r = rec(m);
  if (vocabPhase != 2) return -1;
  if (load<u32>(r, R_DONE) || <u32>id >= vocabSize) return 3;
  const s0 = load<u32>(r);
  const kind = <u32>load<u8>(tokKindPtr + <usize>id);
  if (pdaMode) return pdaCommit(r, id, kind);
  if (kind == K_EOS) {
    if (!(flagsOf(s0) & F_ACCEPTING)) return 3;
    histPush(r);
    store<u32>(r, 1, R_DONE);
    return 2;
  }
  if (kind != K_TEXT) return 3;
  const nClasses = hdr(H_NCLASSES);
  const trans = transBase;
  const classmap = region(H_CLASSMAP);
  const infos = region(H_INFO);
  let p = tokBytesPtr + <usize>load<u32>(tokOffPtr + (<usize>id << 2));
  const end = tokBytesPtr + <usize>load<u32>(tokOffPtr + (<usize>(id + 1) << 2));
  const budget = budgetExhausted(r);
  let s = s0;
  if (!budget) {
    for (; p < end; p++) {
      if (<u32>load<u16>(infos + (<usize>s << 3)) & F_YIELD) return 3;
      const t = next(s, <u32>load<u8>(p), nClasses, trans, classmap);
      if (t == NONE16) return 3;
      s = t;
    }
  } else {
    if (p == end) return 3; // an empty token makes no progress
    ensureDist();
    const spec0 = specOf(s0);
    let tag = load<u32>(distPtr + (<usize>s0 << 2));
    for (; p < end; p++) {
      if (<u32>load<u16>(infos + (<usize>s << 3)) & F_YIELD) return 3;
      const t = next(s, <u32>load<u8>(p), nClasses, trans, classmap);
      if (t == NONE16) return 3;
      if (tag != RELEASED) {
        if (specOf(t) != spec0) tag = RELEASED;
        else {
          const dt = load<u32>(distPtr + (<usize>t << 2));
          if (dt + 1 != tag) return 3;
          tag = dt;
        }
      }
      s = t;
    }
  }
  histPush(r);
  store<u32>(r, s);
  store<u32>(r, specOf(s) != specOf(s0) ? 0 : min(load<u32>(r, R_COUNT) + 1, COUNT_MAX), R_COUNT);
  return i32((<u32>load<u16>(infos + (<usize>s << 3)) & F_YIELD) != 0);
}

/** Undo the last `n` committed tokens: 0, or -1 (unchanged) when fewer than `n` are remembered. */
export function m_rollback(m: i32, n: i32): i32 {
  const r = rec(m);
  const h = load<u32>(r, R_HIST);
  const len = h >>> 16;
  if (n < 0 || <u32>n > len) return -1;
  if (n == 0) return 0;
  if (pdaMode) {
    pdaRollback(r, <u32>n);
    return 0;
  }
  const head = ((h & 0xffff) - <u32>n) & (HIST - 1);
  const entry = load<u32>(r + R_RING + (<usize>head << 2));
  store<u32>(r, entry & 0xffff);
  store<u32>(r, (entry >>> 16) & COUNT_MAX, R_COUNT);
  store<u32>(r, entry >>> 31, R_DONE);
  store<u32>(r, head | ((len - <u32>n) << 16), R_HIST);
  return 0;
}

/** How many committed tokens `m_rollback` can undo (at most 16; cleared by feed, feed_env, set_state, reset). */
export function m_history(m: i32): i32 {
  return <i32>(load<u32>(rec(m), R_HIST) >>> 16);
}
