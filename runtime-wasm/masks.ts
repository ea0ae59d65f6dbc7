/**
 * @fileoverview Token masks of DFA states (part of specc's WebAssembly runtime; index.ts lists the
 * modules).
 *
 * A state's mask is computed on first use by one walk of the token trie (DFS order, dead subtrees
 * skipped) and cached; identical masks are stored once (vocab.ts `intern`). A mask is
 * `ceil(V / 32)` i32 words, bit `id & 31` of word `id >> 5` (XGrammar's layout). Budget-exhausted
 * masks (`m_set_budget`) come from a second walk along shortest paths to a new marker.
 */

import {
  F_ACCEPTING, F_YIELD, H_INFO, H_NCLASSES, H_NSTATES, NONE16, flagsOf, hdr, region, specOf,
  validState,
} from "./layout";
import { transBase } from "./tables";
import {
  NODE, nodeClass, allocZero, clearRange, eosPtr, intern, maskAddr, maskBytes, nEos, nMasks, nNodes, nTrie, nodesPtr, plainSuccessor,
  plainNode, trieMask, setBit, setRange, stackPtr, stateMaskPtr, tagPtr, trieIdsPtr, vocabPhase, walkTrans,
} from "./vocab";
import { cfInternal, pdaCacheCheck, pdaMode } from "./pushdown";
import { pdaMaskOf, pdaPrecompute } from "./pushdown-masks";

// ---- Token masks ----------------------------------------------------------------------------------

/** Budget-walk tag of a path that has already entered a new spec state. */
// @ts-ignore: decorator
@inline export const RELEASED: u32 = 0xffffffff;
// @ts-ignore: decorator
@inline const INF: u32 = 0xfffffffe;
/** i32[nStates]: vocab.ts `stateMaskPtr` for the budget-exhausted masks (allocated on first use). */
let budgetMaskPtr: usize = 0;
/** u32[nStates]: bytes to the nearest accepting state or new spec state (budget walks). */
export let distPtr: usize = 0;
let outPtr: usize = 0;
let outCap: usize = 0;

function setEos(out: usize, s: u32): void {
  if (flagsOf(s) & F_ACCEPTING) {
    for (let i: u32 = 0; i < nEos; i++) setBit(out, load<u32>(eosPtr + (<usize>i << 2)));
  }
}

/**
 * Scratch and caches of `walk`, allocated on the first walk (`walkInit`):
 * - `rejPtr`: the trie-id ranges [a, b) a walk found not allowed, u32 pairs in increasing order,
 *   adjacent ranges merged, empty ones dropped, room for REJ_RANGES of them (a sentinel pair whose end
 *   matches no id sits just before, so "the last range's end" can always be read). When it fills
 *   up (rare: a mask with many alternations), `flushRejected` sets the allowed ids before the buffered
 *   ranges in the output and empties it; that walk then builds its mask from the allowed side.
 * - `textMaskPtr`: the mask of every text token (all trie ids), which a walk that rejected only a
 *   few ids copies and then clears, instead of setting the bits of everything it allowed.
 * - Memo of subtree walks, per state `t` and root child number `k` (< 256): the subtree below child
 *   `k`, walked from `t` (the state its byte led to), depends only on `t` and `k`, and the same pairs
 *   come back in state after state (most states reach the same few states after one byte). `memoPtr`
 *   holds 64 bytes per state: 256 bits "all allowed", then 256 bits "rejections cached"; the cached
 *   rejections are entries `next, k, n, n × (a, b)` in `poolPtr` (POOL_WORDS u32), listed per state
 *   from `headPtr[t]` (0 = none). When the pool is full, further subtrees are simply walked again.
 */
let rejPtr: usize = 0;
let rejEnd: usize = 0;
let textMaskPtr: usize = 0;
let memoPtr: usize = 0;
let headPtr: usize = 0;
let poolPtr: usize = 0;
let poolUsed: u32 = 0;
// @ts-ignore: decorator
@inline const POOL_WORDS: u32 = 1 << 15;
// @ts-ignore: decorator
@inline const REJ_RANGES: usize = 8192;
/** The current walk's output, the first id not yet written to it, whether (and how often) it flushed. */
let walkOut: usize = 0;
let walkGapFrom: u32 = 0;
let walkFlushed: bool = false;
let walkFlushes: u32 = 0;
/** Per state: 0 not known yet, 1 every plain class (vocab.ts) keeps it in itself (its plain subtrees are allowed whole), 2 not. */
let loopPtr: usize = 0;

// @ts-ignore: decorator
@inline function loopsPlain(t: u32): bool {
  const v = <u32>load<u8>(loopPtr + <usize>t);
  return v == 1 || (v == 0 && plainLoopOf(t));
}

function plainLoopOf(t: u32): bool {
  const yes = plainSuccessor(walkTrans, t) == t;
  store<u8>(loopPtr + <usize>t, yes ? 1 : 2);
  return yes;
}

function walkInit(): void {
  rejPtr = heap.alloc((REJ_RANGES + 1) << 3) + 8;
  rejEnd = rejPtr + (REJ_RANGES << 3);
  store<u32>(rejPtr - 4, 0xffffffff);
  textMaskPtr = trieMask();
  const ns = <usize>hdr(H_NSTATES);
  memoPtr = allocZero(ns << 6);
  headPtr = allocZero(ns << 2);
  poolPtr = heap.alloc(<usize>POOL_WORDS << 2);
  loopPtr = allocZero(ns);
}

/**
 * Remember the walk of child `k`'s subtree from `t`: the rejected ranges it added are those at
 * [r0, r), and the part by which it extended the range before them (whose end was `end0`).
 */
function memoize(t: u32, k: u32, r0: usize, end0: u32, r: usize): void {
  const bits = memoPtr + (<usize>t << 6) + (<usize>(k >>> 5) << 2);
  const bit: u32 = 1 << (k & 31);
  const ext = load<u32>(r0 - 4) != end0;
  if (r == r0 && !ext) {
    store<u32>(bits, load<u32>(bits) | bit); // all allowed
    return;
  }
  const n = <u32>((r - r0) >>> 3) + u32(ext);
  if (poolUsed + 3 + 2 * n > POOL_WORDS) return;
  let e = poolPtr + (<usize>poolUsed << 2);
  const hp = headPtr + (<usize>t << 2);
  store<u32>(e, load<u32>(hp));
  store<u32>(e, k, 4);
  store<u32>(e, n, 8);
  store<u32>(hp, <u32>e);
  e += 12;
  if (ext) {
    store<u32>(e, end0);
    store<u32>(e, load<u32>(r0 - 4), 4);
    e += 8;
  }
  memory.copy(e, r0, r - r0);
  poolUsed += 3 + 2 * n;
  store<u32>(bits, load<u32>(bits, 32) | bit, 32);
}

/** Append the rejected trie-id range [a, b) at `r` (merged with the last one when adjacent); the new end. */
// @ts-ignore: decorator
@inline function rejectRange(r: usize, a: u32, b: u32): usize {
  if (load<u32>(r - 4) == a) store<u32>(r - 4, b);
  else if (a < b) {
    store<u32>(r, a);
    store<u32>(r, b, 4);
    r += 8;
    if (r == rejEnd) r = flushRejected(r);
  }
  return r;
}

/**
 * Set the allowed ids from `walkGapFrom` up to the end of the buffered ranges [rejPtr, r) in the
 * walk's output (zeroed on the first flush) and empty the buffer; returns its new end, rejPtr.
 */
function flushRejected(r: usize): usize {
  const out = walkOut;
  if (!walkFlushed) {
    memory.fill(out, 0, maskBytes);
    walkFlushed = true;
  }
  let a = walkGapFrom;
  for (let x = rejPtr; x < r; x += 8) {
    setRange(out, a, load<u32>(x));
    a = load<u32>(x, 4);
  }
  walkGapFrom = a;
  walkFlushes++;
  return rejPtr;
}

/**
 * The mask of state `s` into `out` (maskBytes): one walk of the trie, dead subtrees skipped. A
 * yield state's row is empty in `walkTrans`, so nothing is allowed past an env-input marker.
 * The walk only records what it rejects (`rejPtr`); the mask is then built from whichever side is
 * smaller: the allowed ids (the gaps between rejected ranges) or the text mask minus the rejected.
 */
function walk(s: u32, out: usize): void {
  const nodes = nodesPtr;
  const trans = walkTrans;
  const rowBytes = hdr(H_NCLASSES) << 1;
  const stack = stackPtr;
  const rej = rejPtr;
  const n = nNodes;
  let r = rej; // end of the rejected ranges
  walkOut = out;
  walkGapFrom = 0;
  walkFlushed = false;
  const row0 = <usize>trans + <usize>(s * rowBytes);
  // Root children one by one (k = their number), then the subtree below each child.
  let c: u32 = 1;
  let k: u32 = 0;
  while (c < n) {
    const q = nodes + <usize>c * NODE;
    const sk = load<u32>(q, 4);
    const t = <u32>load<u16>(row0 + (<usize>nodeClass(load<u32>(q)) << 1));
    if (t == NONE16) {
      r = rejectRange(r, load<u32>(q, 8), load<u32>(nodes + <usize>sk * NODE, 8));
    } else if (t == s && loopsPlain(t) && plainNode(c)) {
      // all allowed
    } else {
      const bits = memoPtr + (<usize>t << 6) + (<usize>((k & 255) >>> 5) << 2);
      const bit: u32 = k < 256 ? 1 << (k & 31) : 0; // no memo past 256 children (only odd tries)
      if (load<u32>(bits) & bit) {
        // all allowed
      } else if (load<u32>(bits, 32) & bit) {
        // the cached rejections of this subtree from t
        let e = <usize>load<u32>(headPtr + (<usize>t << 2));
        while (load<u32>(e, 4) != k) e = <usize>load<u32>(e);
        const x1 = e + 12 + (<usize>load<u32>(e, 8) << 3);
        for (let x = e + 12; x < x1; x += 8) r = rejectRange(r, load<u32>(x), load<u32>(x, 4));
      } else {
        const r0 = r;
        const end0 = load<u32>(r - 4);
        const f0 = walkFlushes;
        store<u32>(stack + 4, <u32>trans + t * rowBytes);
        const e = nodes + <usize>sk * NODE;
        let p = q + NODE;
        while (p < e) {
          const w0 = load<u32>(p);
          const d = <usize>(w0 >>> 8);
          const row = <usize>load<u32>(stack + ((d - 1) << 2));
          const t2 = <u32>load<u16>(row + (<usize>nodeClass(w0) << 1));
          if (t2 == NONE16) {
            const nx = nodes + <usize>load<u32>(p, 4) * NODE;
            r = rejectRange(r, load<u32>(p, 8), load<u32>(nx, 8));
            p = nx;
            continue;
          }
          const nrow = <u32>trans + t2 * rowBytes;
          if (nrow == row && loopsPlain(t2) && plainNode(<u32>((p - nodes) / NODE))) {
            p = nodes + <usize>load<u32>(p, 4) * NODE; // all allowed
            continue;
          }
          store<u32>(stack + (d << 2), nrow);
          p += NODE;
        }
        if (k < 256 && walkFlushes == f0) memoize(t, k, r0, end0, r);
      }
    }
    c = sk;
    k++;
  }
  // The mask from the smaller side (from the allowed side once the buffer was flushed).
  let rejected: u32 = 0;
  for (let x = rej; x < r; x += 8) rejected += load<u32>(x, 4) - load<u32>(x);
  if (!walkFlushed && rejected < nTrie - rejected) {
    memory.copy(out, textMaskPtr, maskBytes);
    for (let x = rej; x < r; x += 8) clearRange(out, load<u32>(x), load<u32>(x, 4));
  } else {
    flushRejected(r);
    setRange(out, walkGapFrom, nTrie);
  }
  setEos(out, s);
}

/**
 * Per state: the fewest bytes to an accepting state or to a state of another spec state (a new
 * marker committed). Used by budget walks; every live state has a finite distance.
 */
export function ensureDist(): void {
  if (distPtr != 0) return;
  const ns = hdr(H_NSTATES);
  const nc = hdr(H_NCLASSES);
  const trans = transBase;
  const dist = heap.alloc(<usize>ns << 2);
  for (let s: u32 = 0; s < ns; s++) store<u32>(dist + (<usize>s << 2), flagsOf(s) & F_ACCEPTING ? 0 : INF);
  let changed = true;
  while (changed) {
    changed = false;
    for (let s: u32 = 0; s < ns; s++) {
      let best = load<u32>(dist + (<usize>s << 2));
      if (best == 0 || flagsOf(s) & F_YIELD) continue;
      const p = specOf(s);
      for (let c: u32 = 0; c < nc; c++) {
        const t = <u32>load<u16>(trans + (<usize>(s * nc + c) << 1));
        if (t == NONE16) continue;
        const dt: u32 = specOf(t) != p ? <u32>0 : load<u32>(dist + (<usize>t << 2));
        if (dt != INF && dt + 1 < best) best = dt + 1;
      }
      if (best < load<u32>(dist + (<usize>s << 2))) {
        store<u32>(dist + (<usize>s << 2), best);
        changed = true;
      }
    }
  }
  const ms = heap.alloc(<usize>ns << 2);
  memory.fill(ms, 0xff, <usize>ns << 2);
  budgetMaskPtr = ms;
  distPtr = dist;
}

/**
 * The budget-exhausted mask of `s`: EOS when accepting, and the tokens whose bytes take a shortest
 * path towards a new marker (every byte lowers the distance of `ensureDist` by one) until a new
 * spec state is entered; after that the rest of the token is only checked against the DFA.
 */
function walkBudget(s: u32, out: usize): void {
  memory.fill(out, 0, maskBytes);
  setEos(out, s);
  const infos = region(H_INFO);
  if (<u32>load<u16>(infos + (<usize>s << 3)) & F_YIELD) return;
  const trans = transBase;
  const rowBytes = hdr(H_NCLASSES) << 1;
  const nodes = nodesPtr;
  const stack = stackPtr;
  const tags = tagPtr;
  const dist = distPtr;
  const p = specOf(s);
  store<u32>(stack, <u32>trans + s * rowBytes);
  store<u32>(tags, load<u32>(dist + (<usize>s << 2)));
  const n = nNodes;
  let i: u32 = 1;
  while (i < n) {
    const q = nodes + <usize>i * NODE;
    const w0 = load<u32>(q);
    const d = <usize>(w0 >>> 8);
    const row = <usize>load<u32>(stack + ((d - 1) << 2));
    const t = <u32>load<u16>(row + (<usize>nodeClass(w0) << 1));
    let tag = load<u32>(tags + ((d - 1) << 2));
    if (t != NONE16 && tag != RELEASED) {
      if (specOf(t) != p) tag = RELEASED;
      else {
        const dt = load<u32>(dist + (<usize>t << 2));
        if (dt + 1 == tag) tag = dt;
        else tag = INF; // not on a shortest path: dead
      }
    }
    if (t == NONE16 || tag == INF) {
      i = load<u32>(q, 4);
      continue;
    }
    setRange(out, load<u32>(q, 8), load<u32>(q, 8 + NODE));
    if (<u32>load<u16>(infos + (<usize>t << 3)) & F_YIELD) {
      i = load<u32>(q, 4);
      continue;
    }
    store<u32>(stack + (d << 2), <u32>trans + t * rowBytes);
    store<u32>(tags + (d << 2), tag);
    i++;
  }
}

/** Distinct-mask index of state `s` (normal or budget-exhausted), computed on first use. */
export function maskIndex(s: u32, budget: bool): i32 {
  if (budget) ensureDist();
  const slot = (budget ? budgetMaskPtr : stateMaskPtr) + (<usize>s << 2);
  let idx = load<i32>(slot);
  if (idx >= 0) return idx;
  if (!budget && rejPtr == 0) walkInit(); // before the mask block, which `intern` may free
  const p = heap.alloc(maskBytes);
  if (budget) walkBudget(s, p);
  else walk(s, p);
  idx = intern(p);
  store<i32>(slot, idx);
  return idx;
}

/** Distinct-mask index of state `state`'s mask (computed on first use); -1 without vocabulary or for an invalid state. */
export function mask_id(state: i32): i32 {
  if (pdaMode) {
    let c = cfInternal(state);
    if (vocabPhase != 2 || c < 0) return -1;
    c = <i32>pdaCacheCheck(<u32>c); // may compact: `state` stays valid as an extra root
    return pdaMaskOf(<u32>c);
  }
  if (vocabPhase != 2 || !validState(state)) return -1;
  return maskIndex(<u32>state, false);
}

/** Address of state `state`'s mask (`mask_words()` i32 words); 0 without vocabulary or for an invalid state. */
export function mask_ptr(state: i32): i32 {
  const idx = mask_id(state);
  return idx < 0 ? 0 : <i32>maskAddr(idx);
}

/** Address of distinct mask `idx` (0 ≤ idx < mask_count()), else 0. */
export function mask_at(idx: i32): i32 {
  if (vocabPhase != 2 || <u32>idx >= nMasks) return 0;
  return <i32>maskAddr(idx);
}

/** Number of distinct masks computed so far (the all-zero mask of a finished matcher included). */
export function mask_count(): i32 {
  return vocabPhase == 2 ? <i32>nMasks : 0;
}

/**
 * Install a precomputed mask for `state` (a vocabulary and its masks baked into the .wasm by
 * `specc compile --vocab`): copies `mask_words()` words from `src` into the cache, sharing an equal
 * mask. Returns the distinct-mask index, or -1 without vocabulary or for an invalid state. A state
 * whose mask is already known keeps it.
 */
export function mask_install(state: i32, src: i32): i32 {
  if (vocabPhase != 2 || !validState(state) || pdaMode) return -1;
  const slot = stateMaskPtr + (<usize>state << 2);
  let idx = load<i32>(slot);
  if (idx >= 0) return idx;
  const p = heap.alloc(maskBytes);
  memory.copy(p, <usize>src, maskBytes);
  idx = intern(p);
  store<i32>(slot, idx);
  return idx;
}

/** Compute the mask of every state; returns mask_count(), or -1 without vocabulary. */
export function precompute_all(): i32 {
  if (vocabPhase != 2) return -1;
  if (pdaMode) return pdaPrecompute();
  const ns = hdr(H_NSTATES);
  for (let s: u32 = 0; s < ns; s++) maskIndex(s, false);
  return <i32>nMasks;
}

/** A host-writable area of at least `bytes` bytes (for `fill_masks`); it moves when it grows. */
export function out_ptr(bytes: i32): i32 {
  if (bytes < 0) return 0;
  if (<usize>bytes > outCap) {
    outPtr = heap.alloc(<usize>bytes);
    outCap = <usize>bytes;
  }
  return <i32>outPtr;
}
