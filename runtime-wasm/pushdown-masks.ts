/**
 * @fileoverview Token masks in pushdown mode (part of specc's WebAssembly runtime; index.ts lists
 * the modules).
 *
 * Masks are computed per configuration from per-state summaries and per-pair walks, and interned
 * in the same distinct-mask store as the DFA masks (vocab.ts); the scheme is described below.
 */

import { H_NSTATES, hdr } from "./layout";
import {
  NODE, allocZero, eosPtr, internCopy, maskAddr, maskBlocks, maskBytes, maskHashPtr, maskPtrsPtr,
  maxDepth, nEos, nMasks, nNodes, nodesPtr, setBit, setMaskStore, setRange,
} from "./vocab";
import { pairCacheAdd, pairCacheFind, pairCacheInit } from "./pairs";
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
    const p = nodes + <usize>i * NODE;
    const w0 = load<u32>(p);
    const d = <usize>(w0 >>> 8);
    const dst = sets + d * SET_BYTES;
    const c = pdaStep(sets + (d - 1) * SET_BYTES, w0 & 0xff, dst);
    if (c > maxc) maxc = c;
    if (c == 0 || c > PDA_MAX_PAIRS) {
      i = load<u32>(p, 4);
      continue;
    }
    if (load<u32>(dst, 4) & SF_ESCAPE) {
      if (nf == frontCap) {
        frontCap <<= 1;
        frontScratch = heap.realloc(frontScratch, <usize>frontCap << 2);
      }
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
    i++;
  }
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
    if (!pdaAlive(c, dst)) {
      i = sk;
      continue;
    }
    if (mark) setRange(out, load<u32>(p, 8), load<u32>(p, 8 + NODE));
    i++;
  }
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
