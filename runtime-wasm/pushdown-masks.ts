/**
 * @fileoverview Token masks in pushdown mode (part of specc's WebAssembly runtime; index.ts lists
 * the modules).
 *
 * Masks are computed per configuration from per-state summaries and per-pair walks, and interned
 * in the same distinct-mask store as the DFA masks (vocab.ts); the scheme is described below.
 */

import { H_NSPEC, H_NSTATES, hdr } from "./layout";
import {
  NODE, allocZero, eosPtr, internCopy, maskAddr, maskBlocks, maskBytes, maskHashPtr, maskPtrsPtr,
  maxDepth, nEos, nMasks, nNodes, nodesPtr, setBit, setMaskStore, setRange,
} from "./vocab";
import { hashPair, pairCacheAdd, pairCacheFind, pairCacheInit } from "./pairs";
import {
  PDA_MAX_PAIRS, PDA_MAX_STACK, SET_BYTES, SF_ESCAPE, SK_READS, SYM_BASE, cfCount, cfLoad, cfRec,
  needOf, needSeen, pairPool, pdaAlive, pdaStep, pnDepth, setNeedSeen, stKind,
} from "./pushdown";

// Masks. A configuration's mask is the union of its pairs' masks (a byte step distributes over the
// pairs) as long as no closure can visit more than PDA_MAX_PAIRS pairs, which is checked with the
// per-pair maxima (else one exact walk of the whole configuration). A pair (q, n) is walked
// relative to a per-state summary of q, computed once: the trie walked from (q, SYM_BASE), where
// popping SYM_BASE is an "escape" (what happens next depends on the stack). Until a path escapes,
// the real walk from (q, n) is the summary walk with SYM_BASE replaced by n (same pairs, same
// counts, same verdicts), provided n is shallow enough that every stack-limit check the summary made
// passes on top of it too (depth(n) + the largest `depth + need` it checked ≤ PDA_MAX_STACK; a
// pair (q, stack) exists only if depth + need(q) ≤ PDA_MAX_STACK, as in pda.ts). So the summary
// stores the tokens accepted without escaping (`base`) and the trie nodes where a path first
// escapes (`frontier`, in DFS order); a pair's mask is `base` plus an exact walk of the frontier
// subtrees only (the nodes on the way to them are stepped to get the real pair sets): XGrammar's
// context-independent / context-dependent split. Pair masks and configuration masks are cached and
// interned with the DFA masks.
//
// Shared with the DFA mask code: the trie node layout (NODE, `setRange`), the distinct-mask arrays
// and `intern` (whose index pdaGrowMasks re-allocates: pushdown masks are not bounded by nStates).

/** Mask state (allocated on the first pushdown mask). */
let pdaVocabReady: bool = false;
let walkSets: usize = 0;
let symBasePtr: usize = 0;
let symFrontPtr: usize = 0;
let symStatsPtr: usize = 0;
let frontScratch: usize = 0;
let frontCap: u32 = 0;
let pairScratch: usize = 0;
let cfgScratch: usize = 0;
let maskCap: u32 = 0;
let lastPairMax: u32 = 0;

// ---- Pushdown masks ----

/** Allocate the mask-side state (after vocab_ready): walk sets, summaries, caches. */
function pdaVocabInit(): void {
  if (pdaVocabReady) return;
  const ns = <usize>hdr(H_NSTATES);
  walkSets = heap.alloc((<usize>maxDepth + 1) * SET_BYTES);
  symBasePtr = allocZero(ns << 2);
  symFrontPtr = allocZero(ns << 2);
  symStatsPtr = allocZero(ns << 3);
  frontCap = 256;
  frontScratch = heap.alloc(<usize>frontCap << 2);
  pairScratch = heap.alloc(maskBytes);
  cfgScratch = heap.alloc(maskBytes);
  pairCacheInit();
  memoOn = hdr(H_NSPEC) > 0;
  // The DFA path sizes the distinct-mask index for 2 × nStates + 1 masks; configurations and pairs
  // can need any number, so take it over with a growable copy.
  maskCap = 0;
  pdaGrowMasks(max<u32>(256, nMasks << 1));
  pdaVocabReady = true;
}

/** Re-allocate the distinct-mask arrays and their hash index for `cap` masks. */
function pdaGrowMasks(cap: u32): void {
  const ptrs = allocZero(<usize>cap << 2);
  const hashes = allocZero(<usize>cap << 2);
  memory.copy(ptrs, maskPtrsPtr, <usize>maskBlocks << 2); // blocks past nMasks are reused later
  memory.copy(hashes, maskHashPtr, <usize>nMasks << 2);
  let ht: usize = 16;
  while (ht < (<usize>cap << 1)) ht <<= 1;
  const table = heap.alloc(ht << 2);
  memory.fill(table, 0xff, ht << 2);
  const m = <u32>ht - 1;
  for (let e: u32 = 0; e < nMasks; e++) {
    let pos = load<u32>(hashes + (<usize>e << 2)) & m;
    while (load<i32>(table + (<usize>pos << 2)) >= 0) pos = (pos + 1) & m;
    store<i32>(table + (<usize>pos << 2), <i32>e);
  }
  setMaskStore(ptrs, hashes, table, m);
  maskCap = cap;
}

/** Intern a copy of the mask at `src` (a scratch buffer); returns its distinct-mask index. */
function pdaInternCopy(src: usize): i32 {
  if (nMasks + 1 > maskCap) pdaGrowMasks(maskCap << 1);
  return internCopy(src);
}

function pdaSetEos(out: usize): void {
  for (let i: u32 = 0; i < nEos; i++) setBit(out, load<u32>(eosPtr + (<usize>i << 2)));
}

// ---- Subtree memo ----
//
// Below a root child of the trie, a walk whose set is then the single pair (t, SYM_BASE) (a
// summary) or (t, empty stack) (a pair's walk) gives the same result whatever state it came from:
// the same allowed trie-id ranges, the same frontier nodes, the same largest closure and stack-limit
// check. Most states reach the same few states after one byte (free text, a pending marker prefix),
// so those subtrees are walked once (the DFA walk in masks.ts memoizes the same way). Entries live
// in a hash table and a pool that start small (a first mask must not pay for megabytes) and double
// up to MEMO_SLOTS slots and MEMO_WORDS words; past that, subtrees are simply walked again.
// Entry (u32 words in the pool): nRanges, nFronts, most pairs, largest depth + need, then nRanges
// (a, b) trie-id ranges, then nFronts frontier node numbers.

// @ts-ignore: decorator
@inline const MEMO_SLOTS: u32 = 1 << 15;
// @ts-ignore: decorator
@inline const MEMO_WORDS: u32 = 1 << 20;
/** Memo key kinds: a summary's subtree (stack SYM_BASE), a pair walk's (empty stack). */
// @ts-ignore: decorator
@inline const MK_SUMMARY: u64 = 1;
// @ts-ignore: decorator
@inline const MK_EMPTY: u64 = 2;
/**
 * The memo is on for agents (tables with spec states) only. Their free-text states all walk the
 * same subtrees (tool-json: every state's summary in 0.12 s with it, 0.87 s without). A standalone
 * grammar's states seldom share a subtree: on the MaskBench sample the recording cost more than the
 * hits saved (TBM p99 8.5 ms with it, 6.4–6.8 ms without).
 */
let memoOn: bool = false;
let memoKeys: usize = 0;
let memoOffs: usize = 0;
let memoPool: usize = 0;
let memoSlots: u32 = 0;
let memoWords: u32 = 0;
let memoUsed: u32 = 0;
let memoCount: u32 = 0;
/** The subtree being recorded: its end node (0 = none), key, and where its ranges and fronts start. */
let recEnd: u32 = 0;
let recKey: u64 = 0;
let recMax: u32 = 0;
let recNeed0: u32 = 0;
let recRanges: usize = 0;
let recRangesCap: u32 = 0;
let recNRanges: u32 = 0;
let recFront0: u32 = 0;

// @ts-ignore: decorator
@inline function memoKey(kind: u64, t: u32, node: u32): u64 {
  return (kind << 60) | (<u64>t << 32) | <u64>node;
}

/** The table slot of `key`: its own, or the free one where it would go (there is one). */
function memoSlot(key: u64): u32 {
  let pos = hashPair(key) & (memoSlots - 1);
  let k = load<u64>(memoKeys + (<usize>pos << 3));
  while (k != 0 && k != key) {
    pos = (pos + 1) & (memoSlots - 1);
    k = load<u64>(memoKeys + (<usize>pos << 3));
  }
  return pos;
}

/** The pool offset of the entry for `key`, -2 when it was only seen, or -1. */
function memoFind(key: u64): i32 {
  if (memoKeys == 0) return -1;
  const pos = memoSlot(key);
  if (load<u64>(memoKeys + (<usize>pos << 3)) == 0) return -1;
  const off = load<u32>(memoOffs + (<usize>pos << 2));
  return off == MEMO_SEEN ? -2 : <i32>off;
}

/** The offset of a key seen once and not recorded: a subtree is recorded the second time it comes. */
// @ts-ignore: decorator
@inline const MEMO_SEEN: u32 = 0xffffffff;

/** Whether the memo may take one more key (the table grows up to MEMO_SLOTS). */
function memoRoom(): bool {
  if (memoKeys == 0) {
    memoRehash(1024);
    memoWords = 1 << 13;
    memoPool = heap.alloc(<usize>memoWords << 2);
    recRangesCap = 256;
    recRanges = heap.alloc(<usize>recRangesCap << 3);
  }
  if (memoCount >= (memoSlots >>> 1)) {
    if (memoSlots == MEMO_SLOTS) return false;
    memoRehash(memoSlots << 1);
  }
  return true;
}

/**
 * Look `key` up for a subtree ending before `end`: the entry's offset (a hit), or -1 after
 * starting to record it (its second visit), or after noting the first visit (nothing recorded:
 * most subtrees of a JSON grammar's states are walked from one state only).
 */
function memoVisit(key: u64, end: u32, c: u32, nf: u32): i32 {
  if (!memoOn) return -1;
  const off = memoFind(key);
  if (off >= 0) return off;
  if (off == -2) recStart(key, end, c, nf);
  else if (memoRoom()) {
    memoInsert(key, MEMO_SEEN);
    memoCount++;
  }
  return -1;
}

/** Put `key` → `off` into the table: over its own slot, or into a free one. */
function memoInsert(key: u64, off: u32): void {
  const pos = memoSlot(key);
  store<u64>(memoKeys + (<usize>pos << 3), key);
  store<u32>(memoOffs + (<usize>pos << 2), off);
}

/** A table of `slots` slots holding the entries so far. */
function memoRehash(slots: u32): void {
  const oldKeys = memoKeys;
  const oldOffs = memoOffs;
  const oldSlots = memoSlots;
  memoKeys = allocZero(<usize>slots << 3);
  memoOffs = heap.alloc(<usize>slots << 2);
  memoSlots = slots;
  for (let j: u32 = 0; j < oldSlots; j++) {
    const k = load<u64>(oldKeys + (<usize>j << 3));
    if (k != 0) memoInsert(k, load<u32>(oldOffs + (<usize>j << 2)));
  }
  if (oldKeys != 0) {
    heap.free(oldKeys);
    heap.free(oldOffs);
  }
}

/** Start recording the subtree that ends before node `end` under `key`. */
function recStart(key: u64, end: u32, c: u32, nf: u32): void {
  recEnd = end;
  recKey = key;
  recMax = c;
  recNRanges = 0;
  recFront0 = nf;
}

/**
 * A subtree whose allowed ids fall into more ranges, or that has more frontier nodes, than this is
 * not memoized: storing and re-applying it costs about what walking it again does (inside a JSON
 * string most tokens are allowed, but the ones with a quote or a backslash cut the ranges up).
 */
// @ts-ignore: decorator
@inline const REC_MAX_PARTS: u32 = 512;

/** Stop recording (the subtree is not worth a memo); a summary's running `needSeen` goes on. */
function recAbort(): void {
  recEnd = 0;
  setNeedSeen(max(recNeed0, needSeen));
}

/** Note an allowed range [a, b) of the subtree being recorded (merged with the last when adjacent). */
function recRange(a: u32, b: u32): void {
  if (recNRanges > 0 && load<u32>(recRanges + (<usize>(recNRanges - 1) << 3), 4) == a) {
    store<u32>(recRanges + (<usize>(recNRanges - 1) << 3), b, 4);
    return;
  }
  if (recNRanges == REC_MAX_PARTS) {
    recAbort();
    return;
  }
  if (recNRanges == recRangesCap) {
    recRangesCap <<= 1;
    recRanges = heap.realloc(recRanges, <usize>recRangesCap << 3);
  }
  store<u32>(recRanges + (<usize>recNRanges << 3), a);
  store<u32>(recRanges + (<usize>recNRanges << 3), b, 4);
  recNRanges++;
}

/** Store the recorded subtree (fronts are frontScratch[recFront0, nf)); `need` its largest depth + need. */
function recFinish(nf: u32, need: u32): void {
  recEnd = 0;
  const nFront = nf - recFront0;
  const words = 4 + (recNRanges << 1) + nFront;
  if (memoUsed + words > memoWords) {
    let cap = memoWords;
    while (memoUsed + words > cap && cap < MEMO_WORDS) cap <<= 1;
    if (memoUsed + words > cap) return;
    memoPool = heap.realloc(memoPool, <usize>cap << 2);
    memoWords = cap;
  }
  const e = memoPool + (<usize>memoUsed << 2);
  store<u32>(e, recNRanges);
  store<u32>(e, nFront, 4);
  store<u32>(e, recMax, 8);
  store<u32>(e, need, 12);
  memory.copy(e + 16, recRanges, <usize>recNRanges << 3);
  memory.copy(e + 16 + (<usize>recNRanges << 3), frontScratch + (<usize>recFront0 << 2), <usize>nFront << 2);
  memoInsert(recKey, memoUsed); // over the key's MEMO_SEEN slot
  memoUsed += words;
}

/** Set an entry's ranges in `out`; returns the entry's address (fronts and stats are read by the caller). */
function memoApply(off: i32, out: usize): usize {
  const e = memoPool + (<usize>off << 2);
  const n = load<u32>(e);
  for (let j: u32 = 0; j < n; j++) setRange(out, load<u32>(e + 16 + (<usize>j << 3)), load<u32>(e + 20 + (<usize>j << 3)));
  return e;
}

/** Grow the frontier scratch to hold `n` nodes. */
function frontReserve(n: u32): void {
  if (n <= frontCap) return;
  while (frontCap < n) frontCap <<= 1;
  frontScratch = heap.realloc(frontScratch, <usize>frontCap << 2);
}

/** End a summary's recording: the subtree's largest depth + need is what `needSeen` holds since its root child. */
function finishSummaryRec(nf: u32): void {
  const need = needSeen;
  recFinish(nf, need);
  setNeedSeen(max(recNeed0, need));
}

/**
 * The summary of state `q`: the trie walked from the single pair (q, SYM_BASE). `base` gets the
 * tokens accepted on paths that never pop SYM_BASE (and the empty tokens); a node whose step pops
 * it goes to the frontier list and its subtree is left to the per-pair walks. Also records the
 * largest `depth + need` a stack-limit check saw and the most pairs one closure visited.
 */
function pdaSummarize(q: u32): void {
  const base = heap.alloc(maskBytes);
  memory.fill(base, 0, maskBytes);
  const nodes = nodesPtr;
  setRange(base, 0, load<u32>(nodes + NODE, 8));
  const sets = walkSets;
  store<u32>(sets, 1);
  store<u32>(sets, 0, 4);
  store<u64>(sets, (<u64>q << 32) | <u64>SYM_BASE, 8);
  setNeedSeen(needOf(q));
  let maxc: u32 = 1;
  let nf: u32 = 0;
  const n = nNodes;
  let i: u32 = 1;
  while (i < n) {
    if (recEnd != 0 && i >= recEnd) finishSummaryRec(nf);
    const p = nodes + <usize>i * NODE;
    const w0 = load<u32>(p);
    const d = <usize>(w0 >>> 8);
    const dst = sets + d * SET_BYTES;
    const ns0 = needSeen;
    if (d == 1) setNeedSeen(0);
    const c = pdaStep(sets + (d - 1) * SET_BYTES, w0 & 0xff, dst);
    if (c > maxc) maxc = c;
    if (recEnd != 0 && c > recMax) recMax = c;
    if (d == 1) {
      // A root child: its subtree from a single (t, SYM_BASE) pair is memoized.
      const sk = load<u32>(p, 4);
      if (c == 1 && load<u32>(dst) == 1 && load<u32>(dst, 4) == 0 && <u32>load<u64>(dst, 8) == SYM_BASE) {
        const key = memoKey(MK_SUMMARY, <u32>(load<u64>(dst, 8) >>> 32), i);
        recNeed0 = ns0;
        const off = memoVisit(key, sk, c, nf);
        if (off >= 0) {
          const e = memoApply(off, base);
          const nF = load<u32>(e, 4);
          frontReserve(nf + nF);
          memory.copy(frontScratch + (<usize>nf << 2), e + 16 + (<usize>load<u32>(e) << 3), <usize>nF << 2);
          nf += nF;
          if (load<u32>(e, 8) > maxc) maxc = load<u32>(e, 8);
          setNeedSeen(max(ns0, load<u32>(e, 12)));
          i = sk;
          continue;
        }
        if (recEnd == 0) setNeedSeen(max(ns0, needSeen));
      } else setNeedSeen(max(ns0, needSeen));
    }
    if (c == 0 || c > PDA_MAX_PAIRS) {
      i = load<u32>(p, 4);
      continue;
    }
    if (load<u32>(dst, 4) & SF_ESCAPE) {
      if (recEnd != 0 && nf - recFront0 == REC_MAX_PARTS) recAbort();
      frontReserve(nf + 1);
      store<u32>(frontScratch + (<usize>nf << 2), i);
      nf++;
      i = load<u32>(p, 4);
      continue;
    }
    if (load<u32>(dst) == 0) {
      i = load<u32>(p, 4);
      continue;
    }
    setRange(base, load<u32>(p, 8), load<u32>(p, 8 + NODE));
    if (recEnd != 0) recRange(load<u32>(p, 8), load<u32>(p, 8 + NODE));
    i++;
  }
  if (recEnd != 0) finishSummaryRec(nf);
  const front = heap.alloc((<usize>nf + 1) << 2);
  store<u32>(front, nf);
  memory.copy(front + 4, frontScratch, <usize>nf << 2);
  store<u32>(symFrontPtr + (<usize>q << 2), <u32>front);
  store<u32>(symStatsPtr + (<usize>q << 3), needSeen);
  store<u32>(symStatsPtr + (<usize>q << 3), maxc, 4);
  store<u32>(symBasePtr + (<usize>q << 2), <u32>base);
}

/**
 * Walk the trie from the pair set in walk set 0, OR-ing allowed tokens into `out`. `front` = 0:
 * every node; otherwise a frontier list (u32 n, u32 nodes[n], increasing): only the frontier nodes'
 * subtrees get bits, and only they and the nodes on the way to them are stepped. Returns the most
 * pairs one closure visited.
 */
function pdaWalk(out: usize, front: usize): u32 {
  const nodes = nodesPtr;
  const sets = walkSets;
  const n = nNodes;
  let maxc: u32 = 0;
  let fullEnd: u32 = front == 0 ? n : 0;
  let fi: u32 = 0;
  const nf: u32 = front == 0 ? 0 : load<u32>(front);
  let i: u32 = 1;
  while (i < n) {
    if (recEnd != 0 && i >= recEnd) recFinish(0, 0);
    const p = nodes + <usize>i * NODE;
    const w0 = load<u32>(p);
    const sk = load<u32>(p, 4);
    let mark = true;
    if (i >= fullEnd) {
      while (fi < nf && load<u32>(front + 4 + (<usize>fi << 2)) < i) fi++;
      if (fi == nf) break;
      const f = load<u32>(front + 4 + (<usize>fi << 2));
      if (f >= sk) {
        i = sk;
        continue;
      }
      if (f == i) fullEnd = sk;
      else mark = false; // on the way to a frontier node: its tokens are in the summary's base
    }
    const d = <usize>(w0 >>> 8);
    const dst = sets + d * SET_BYTES;
    const c = pdaStep(sets + (d - 1) * SET_BYTES, w0 & 0xff, dst);
    if (c > maxc) maxc = c;
    if (recEnd != 0 && c > recMax) recMax = c;
    if (!pdaAlive(c, dst)) {
      i = sk;
      continue;
    }
    if (mark && d == 1 && c == 1 && load<u32>(dst) == 1 && <u32>load<u64>(dst, 8) == 0) {
      // A whole root child's subtree from a single (t, empty stack) pair: memoized.
      const off = memoVisit(memoKey(MK_EMPTY, <u32>(load<u64>(dst, 8) >>> 32), i), sk, c, 0);
      if (off >= 0) {
        const e = memoApply(off, out);
        if (load<u32>(e, 8) > maxc) maxc = load<u32>(e, 8);
        i = sk;
        continue;
      }
    }
    if (mark) {
      setRange(out, load<u32>(p, 8), load<u32>(p, 8 + NODE));
      if (recEnd != 0) recRange(load<u32>(p, 8), load<u32>(p, 8 + NODE));
    }
    i++;
  }
  if (recEnd != 0) recFinish(0, 0);
  return maxc;
}

/** The mask of the single pair `x` (cached); sets `lastPairMax` to the most pairs one of its closures visited. */
function pdaPairMask(x: u64): i32 {
  const hit = pairCacheFind(x);
  if (hit != 0) {
    lastPairMax = load<u32>(hit, 12);
    return load<i32>(hit, 8);
  }
  const q = <u32>(x >>> 32);
  const node = <u32>x;
  if (load<u32>(symBasePtr + (<usize>q << 2)) == 0) pdaSummarize(q);
  const out = pairScratch;
  const sets = walkSets;
  store<u32>(sets, 1);
  store<u32>(sets, 0, 4);
  store<u64>(sets, x, 8);
  let maxc: u32;
  const stats = symStatsPtr + (<usize>q << 3);
  if (pnDepth(node) + load<u32>(stats) <= PDA_MAX_STACK) {
    memory.copy(out, <usize>load<u32>(symBasePtr + (<usize>q << 2)), maskBytes);
    maxc = pdaWalk(out, <usize>load<u32>(symFrontPtr + (<usize>q << 2)));
    if (load<u32>(stats, 4) > maxc) maxc = load<u32>(stats, 4);
  } else {
    // Near the stack limit a pair or push of the summary may not exist: walk everything exactly.
    memory.fill(out, 0, maskBytes);
    setRange(out, 0, load<u32>(nodesPtr + NODE, 8));
    maxc = pdaWalk(out, 0);
  }
  const idx = pdaInternCopy(out);
  pairCacheAdd(x, idx, maxc);
  lastPairMax = maxc;
  return idx;
}

/** Distinct-mask index of configuration `c` (computed on first use). Needs a vocabulary. */
export function pdaMaskOf(c: u32): i32 {
  let idx = load<i32>(cfRec(c), 8);
  if (idx >= 0) return idx;
  pdaVocabInit();
  const word = load<u32>(cfRec(c), 4);
  const n = word & 0x7fffffff;
  const acc = (word >>> 31) != 0;
  if (n == 1 && !acc) idx = pdaPairMask(load<u64>(pairPool + (<usize>load<u32>(cfRec(c)) << 3)));
  else {
    const out = cfgScratch;
    memory.fill(out, 0, maskBytes);
    setRange(out, 0, load<u32>(nodesPtr + NODE, 8));
    let sum: u32 = 0;
    for (let i: u32 = 0; i < n; i++) {
      const src = maskAddr(pdaPairMask(load<u64>(pairPool + ((<usize>load<u32>(cfRec(c)) + <usize>i) << 3))));
      sum += lastPairMax;
      for (let w: usize = 0; w < maskBytes; w += 4) store<u32>(out + w, load<u32>(out + w) | load<u32>(src + w));
    }
    if (sum > PDA_MAX_PAIRS) {
      // Some closure of the whole configuration might exceed the limit although each pair's
      // does not: walk the configuration itself.
      memory.fill(out, 0, maskBytes);
      setRange(out, 0, load<u32>(nodesPtr + NODE, 8));
      cfLoad(c, walkSets);
      pdaWalk(out, 0);
    }
    if (acc) pdaSetEos(out);
    idx = pdaInternCopy(out);
  }
  store<i32>(cfRec(c), idx, 8);
  return idx;
}

/** `precompute_all` in pushdown mode: every state's summary and the masks of the configurations known so far. */
export function pdaPrecompute(): i32 {
  pdaVocabInit();
  const ns = hdr(H_NSTATES);
  for (let q: u32 = 0; q < ns; q++) {
    if ((<u32>load<u8>(stKind + <usize>q) & SK_READS) && load<u32>(symBasePtr + (<usize>q << 2)) == 0) pdaSummarize(q);
  }
  const nc = cfCount;
  for (let c: u32 = 0; c < nc; c++) pdaMaskOf(c);
  return <i32>nMasks;
}
