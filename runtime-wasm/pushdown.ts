/**
 * @fileoverview Pushdown mode: configurations, stack nodes, closure, and the matcher operations on
 * them (part of specc's WebAssembly runtime; index.ts lists the modules).
 *
 * Tables with a call table (a grammar compiled without a nesting bound, compiler/grammar/pda.ts)
 * run as a pushdown automaton whose configurations are hash-consed into ids; every "state" of the
 * matchers and exports is then a configuration id. Their masks are pushdown-masks.ts's. Tables
 * without calls never enter this code.
 */

import {
  F_ACCEPTING, F_YIELD, H_CLASSMAP, H_INITIAL, H_NCLASSES, H_NSTATES, NONE16, TABLE_BASE, flagsOf, hdr,
  info, region, specOf,
} from "./layout";
import { dropTables, transBase } from "./tables";
import { COUNT_MAX, HIST, REC, R_COUNT, R_DONE, R_HIST, R_RING, recBase, recCount } from "./records";
import { K_EOS, K_TEXT, allocZero, tokBytesPtr, tokOffPtr, wantHeights } from "./vocab";
import { hashPair, maskCacheBytes, maskCacheClear, mix } from "./pairs";

// =================================================================================================
// ---- Pushdown mode (table format 3 call table; docs/abi.md "Pushdown mode") ----------------------
// =================================================================================================
//
// A grammar compiled by compiler/grammar/pda.ts has call edges: `calls[q]` = (start, ret) pairs,
// and its Accepting flag means "this machine may end here" (pop the stack, or accept when the stack
// is empty). The semantics are PdaRunner's (the reference): a configuration is a closed set of
// (state, stack) pairs plus an accept flag. Here stacks are hash-consed nodes (ret, parent) — node
// 0 is the empty stack, node 1 (SYM_BASE) the unknown stack of the per-state summaries below — and
// configurations are hash-consed sorted pair lists, so a configuration is one u32 id: the matcher
// record's state field holds it, and snapshots, rollback and the mask cache work as in DFA mode.
//

// @ts-ignore: decorator
@inline const H_CALLS: usize = 52;
// @ts-ignore: decorator
@inline const H_NCALLS: usize = 56;
/** Most stack frames a configuration may hold (with need: see visitPair and pdaStep). */
// @ts-ignore: decorator
@inline export const PDA_MAX_STACK: u32 = 1024;
/** Most (state, stack) pairs one closure may visit (a byte whose closure is larger is not allowed). */
// @ts-ignore: decorator
@inline export const PDA_MAX_PAIRS: u32 = 256;
// @ts-ignore: decorator
@inline const EMPTY_STACK: u32 = 0;
// @ts-ignore: decorator
@inline export const SYM_BASE: u32 = 1;
/** Per-state kind bits: reads bytes, has call edges, accepting (= may end its machine). */
// @ts-ignore: decorator
@inline export const SK_READS: u32 = 1;
// @ts-ignore: decorator
@inline const SK_CALLS: u32 = 2;
// @ts-ignore: decorator
@inline const SK_ACC: u32 = 4;
/** Pair-set flags: the empty stack was popped (accept), SYM_BASE was popped (escape). */
// @ts-ignore: decorator
@inline const SF_ACCEPT: u32 = 1;
// @ts-ignore: decorator
@inline export const SF_ESCAPE: u32 = 2;
/** A pair set: u32 count, u32 flags, u64 pairs[PDA_MAX_PAIRS] (`state << 32 | node`, sorted). */
// @ts-ignore: decorator
@inline export const SET_BYTES: usize = 8 + (<usize>PDA_MAX_PAIRS << 3);
/** "Close these pairs" instead of "step them by a class" (pdaStep). */
// @ts-ignore: decorator
@inline const ALL_CLASSES: u32 = 0xffffffff;
// @ts-ignore: decorator
@inline const VIS_SIZE: u32 = 1024;
/** Stack node: u32 ret, u32 parent, u32 depth. */
// @ts-ignore: decorator
@inline const PN_REC: usize = 12;
/** Configuration: u32 first pair (index into the pair pool), u32 count | accept << 31, i32 mask, u32 hash. */
// @ts-ignore: decorator
@inline const CF_REC: usize = 16;
/** Configuration ids fit in 30 bits (the rollback ring keeps 2 flag bits next to them). */
// @ts-ignore: decorator
@inline const CF_MAX: u32 = 0x3fffffff;
/** `pdaCacheCheck` without an extra root. */
// @ts-ignore: decorator
@inline export const NO_ROOT: u32 = 0xffffffff;
/** Default cache limit in bytes (docs/abi.md "Cache limit"). */
// @ts-ignore: decorator
@inline const DEFAULT_LIMIT: usize = 64 << 20;
/** A generation is compacted once it holds this many configurations, whatever their bytes. */
// @ts-ignore: decorator
@inline const CF_GEN_MAX: u32 = 1 << 24;
/** External configuration ids are i32 ≥ 0: the generation base wraps to 0 before they could overflow. */
// @ts-ignore: decorator
@inline const ID_LIMIT: u32 = 0x7fffffff;
// @ts-ignore: decorator
@inline const UNMARKED: u32 = 0xffffffff;
// @ts-ignore: decorator
@inline const MARKED: u32 = 0xfffffffe;
export let pdaMode: bool = false;
let callIdx: usize = 0;
let callPairsAt: usize = 0;
/** u8 per state: SK_* bits. */
export let stKind: usize = 0;

let pnBase: usize = 0;
let pnCount: u32 = 0;
let pnCap: u32 = 0;
let pnHt: usize = 0;
let pnHtMask: u32 = 0;

let cfBase: usize = 0;
export let cfCount: u32 = 0;
let cfCap: u32 = 0;
let cfHt: usize = 0;
let cfHtMask: u32 = 0;
export let pairPool: usize = 0;
let pairUsed: u32 = 0;
let pairCap: u32 = 0;
export let initialCfg: u32 = 0;

/** Closure scratch: visited pairs (hash with generation stamps) and the work list. */
let visKeys: usize = 0;
let visStamp: usize = 0;
let visGen: u32 = 0;
let visCount: u32 = 0;
let workPtr: usize = 0;
let workTop: u32 = 0;
/** u32 per state: need(q) of pda.ts `pdaNeed`, the fewest frames above its own q needs to finish its machine. */
let needPtr: usize = 0;
/** Largest `depth + need` any stack-limit check saw since the last reset (summary walks). */
export let needSeen: u32 = 0;
/** The cache limit in bytes, and the effective one: never below twice what survived the last compaction. */
let cacheLimit: usize = DEFAULT_LIMIT;
let liveBytes: usize = 0;
let effLimit: usize = DEFAULT_LIMIT;
/** External id of internal configuration 0 in the current generation (ids of earlier ones are below it). */
let genBase: u32 = 0;
let nEvictions: u32 = 0;
let nCompactions: u32 = 0;
/** Two pair sets for feeding and committing. */
let setA: usize = 0;
let setB: usize = 0;
/** `pdaPopped`'s one-pair source set. */
let popSrc: usize = 0;

/** pdaSummarize's reset of `needSeen` (pushdown-masks.ts) before a summary walk. */
// @ts-ignore: decorator
@inline export function setNeedSeen(v: u32): void {
  needSeen = v;
}


// ---- Stack nodes ----

// @ts-ignore: decorator
@inline function pnRet(n: u32): u32 {
  return load<u32>(pnBase + <usize>n * PN_REC);
}

// @ts-ignore: decorator
@inline function pnParent(n: u32): u32 {
  return load<u32>(pnBase + <usize>n * PN_REC, 4);
}

// @ts-ignore: decorator
@inline export function pnDepth(n: u32): u32 {
  return load<u32>(pnBase + <usize>n * PN_REC, 8);
}

function pnInsert(id: u32): void {
  let pos = hashPair((<u64>pnRet(id) << 32) | <u64>pnParent(id)) & pnHtMask;
  while (load<u32>(pnHt + (<usize>pos << 2)) != 0) pos = (pos + 1) & pnHtMask;
  store<u32>(pnHt + (<usize>pos << 2), id);
}

/** The node for stack `parent` with `ret` pushed. */
function pnIntern(ret: u32, parent: u32): u32 {
  let pos = hashPair((<u64>ret << 32) | <u64>parent) & pnHtMask;
  for (;;) {
    const e = load<u32>(pnHt + (<usize>pos << 2));
    if (e == 0) break;
    const a = pnBase + <usize>e * PN_REC;
    if (load<u32>(a) == ret && load<u32>(a, 4) == parent) return e;
    pos = (pos + 1) & pnHtMask;
  }
  if (pnCount == pnCap) {
    pnCap <<= 1;
    pnBase = heap.realloc(pnBase, <usize>pnCap * PN_REC);
  }
  const id = pnCount++;
  const a = pnBase + <usize>id * PN_REC;
  store<u32>(a, ret);
  store<u32>(a, parent, 4);
  store<u32>(a, pnDepth(parent) + 1, 8);
  store<u32>(pnHt + (<usize>pos << 2), id);
  if (pnCount << 1 > pnHtMask + 1) {
    const size = (<usize>pnHtMask + 1) << 1;
    pnHt = allocZero(size << 2);
    pnHtMask = <u32>size - 1;
    for (let k: u32 = 2; k < pnCount; k++) pnInsert(k);
  }
  return id;
}

// ---- Configurations ----

// @ts-ignore: decorator
@inline export function cfRec(c: u32): usize {
  return cfBase + <usize>c * CF_REC;
}

// @ts-ignore: decorator
@inline export function cfAccepting(c: u32): bool {
  return (load<u32>(cfRec(c), 4) >>> 31) != 0;
}

function setHash(set: usize): u32 {
  const n = load<u32>(set);
  let h: u32 = mix(n ^ (load<u32>(set, 4) & SF_ACCEPT) << 31);
  for (let i: u32 = 0; i < n; i++) h = mix(h ^ hashPair(load<u64>(set + 8 + (<usize>i << 3))));
  return h;
}

function cfInsert(id: u32): void {
  let pos = load<u32>(cfRec(id), 12) & cfHtMask;
  while (load<u32>(cfHt + (<usize>pos << 2)) != 0) pos = (pos + 1) & cfHtMask;
  store<u32>(cfHt + (<usize>pos << 2), id + 1);
}

/** The id of the configuration held by pair set `set` (counts ≤ PDA_MAX_PAIRS, sorted); interned. */
function cfIntern(set: usize): u32 {
  const n = load<u32>(set);
  const word = n | ((load<u32>(set, 4) & SF_ACCEPT) << 31);
  const h = setHash(set);
  let pos = h & cfHtMask;
  for (;;) {
    const e = load<u32>(cfHt + (<usize>pos << 2));
    if (e == 0) break;
    const r = cfRec(e - 1);
    if (load<u32>(r, 12) == h && load<u32>(r, 4) == word &&
      memory.compare(pairPool + (<usize>load<u32>(r) << 3), set + 8, <usize>n << 3) == 0) return e - 1;
    pos = (pos + 1) & cfHtMask;
  }
  if (cfCount >= CF_MAX) unreachable(); // 2^30 configurations: far beyond any memory
  if (pairUsed + n > pairCap) {
    while (pairUsed + n > pairCap) pairCap <<= 1;
    pairPool = heap.realloc(pairPool, <usize>pairCap << 3);
  }
  memory.copy(pairPool + (<usize>pairUsed << 3), set + 8, <usize>n << 3);
  if (cfCount == cfCap) {
    cfCap <<= 1;
    cfBase = heap.realloc(cfBase, <usize>cfCap * CF_REC);
  }
  const id = cfCount++;
  const r = cfRec(id);
  store<u32>(r, pairUsed);
  store<u32>(r, word, 4);
  store<i32>(r, -1, 8);
  store<u32>(r, h, 12);
  pairUsed += n;
  store<u32>(cfHt + (<usize>pos << 2), id + 1);
  if (cfCount << 1 > cfHtMask + 1) {
    const size = (<usize>cfHtMask + 1) << 1;
    cfHt = allocZero(size << 2);
    cfHtMask = <u32>size - 1;
    for (let k: u32 = 0; k < cfCount; k++) cfInsert(k);
  }
  return id;
}

/**
 * The state of configuration `c`'s first pair, or -1 when it has none. An agent's configurations
 * (compiler/automata/pushdown-bytes.ts) agree on every per-state output in all their pairs (spec
 * state, flags, next markers, env edge), so the exports read them from this one.
 */
export function cfRep(c: u32): i32 {
  const r = cfRec(c);
  if ((load<u32>(r, 4) & 0x7fffffff) == 0) return -1;
  return <i32>(load<u64>(pairPool + (<usize>load<u32>(r) << 3)) >>> 32);
}

/** The configuration of state `q` with an empty stack (an agent's state after the environment's text), or -1. */
export function pdaStateCfg(q: u32): i32 {
  store<u32>(setA, 1);
  store<u32>(setA, 0, 4);
  store<u64>(setA, (<u64>q << 32) | <u64>EMPTY_STACK, 8);
  if (!pdaAlive(pdaStep(setA, ALL_CLASSES, setB), setB)) return -1;
  return <i32>cfIntern(setB);
}

/** Copy configuration `c` into pair set `set`. */
export function cfLoad(c: u32, set: usize): void {
  const r = cfRec(c);
  const word = load<u32>(r, 4);
  const n = word & 0x7fffffff;
  store<u32>(set, n);
  store<u32>(set, word >>> 31 ? SF_ACCEPT : 0, 4);
  memory.copy(set + 8, pairPool + (<usize>load<u32>(r) << 3), <usize>n << 3);
}

// ---- Generations: external ids, the cache limit, compaction ----
//
// Stack nodes, configurations and masks are counted in bytes (`pdaCacheBytes`). At a safe point —
// the start of an export that may intern or compute something, before it reads a configuration
// id, and never inside a token, a fed text or a mask walk — `pdaCacheCheck` compares them with the
// effective limit. Above it, the mask cache is cleared (masks can always be recomputed); if the
// configurations and stack nodes alone then take more than half the effective limit, they are
// compacted: only the configurations the matchers hold (their state and the entries of their
// rollback rings), the initial one and the export's own argument survive, with the stack nodes
// below them, renumbered in order into the same arrays, so the arrays, hash tables and mask blocks
// reach a high-water mark and then stop growing. Internal ids are indices; the ids the exports
// take and return are `genBase + index`, and each compaction starts a new generation whose base
// is above every id handed out before, so an id of an earlier generation is refused (-1) by
// every export instead of naming another configuration.

/** The external id of configuration `c`. */
// @ts-ignore: decorator
@inline export function cfExternal(c: u32): i32 {
  return <i32>(genBase + c);
}

/** The configuration of external id `x`, or -1 (not a configuration of the current generation). */
// @ts-ignore: decorator
@inline export function cfInternal(x: i32): i32 {
  const c = <u32>x - genBase;
  return c < cfCount ? <i32>c : -1;
}

/** Bytes held by stack nodes and configurations (records, pairs, hash slots). */
// @ts-ignore: decorator
@inline function pdaStructBytes(): usize {
  return <usize>pnCount * (PN_REC + 8) + <usize>cfCount * (CF_REC + 8) + (<usize>pairUsed << 3);
}

/** Bytes counted against the cache limit: stack nodes, configurations, masks, pair-mask cache. */
export function pdaCacheBytes(): usize {
  return pdaStructBytes() + maskCacheBytes();
}

/**
 * The safe-point check: collect when the cache is above its effective limit. `root` (an internal
 * id, or NO_ROOT) survives a compaction; returns its id afterwards.
 */
// @ts-ignore: decorator
@inline export function pdaCacheCheck(root: u32): u32 {
  if (pdaCacheBytes() > effLimit || cfCount >= CF_GEN_MAX) return pdaCollect(root);
  return root;
}

function pdaCollect(root: u32): u32 {
  maskCacheClear();
  for (let c: u32 = 0; c < cfCount; c++) store<i32>(cfRec(c), -1, 8);
  nEvictions++;
  if (pdaStructBytes() > effLimit >> 1 || cfCount >= CF_GEN_MAX) {
    root = pdaCompact(root);
    liveBytes = pdaStructBytes();
    effLimit = max(cacheLimit, liveBytes << 1);
  }
  return root;
}

// @ts-ignore: decorator
@inline function markAt(map: usize, id: u32): void {
  store<u32>(map + (<usize>id << 2), MARKED);
}

/** Keep only the live configurations and their stack nodes (see above); returns `root`'s new id. */
function pdaCompact(root: u32): u32 {
  const oldCount = cfCount;
  // 1. Live configurations. cfHt (at least 2 × cfCount slots, rebuilt below) maps old → new ids.
  const cmap = cfHt;
  memory.fill(cmap, 0xff, <usize>cfCount << 2);
  markAt(cmap, initialCfg);
  if (root != NO_ROOT) markAt(cmap, root);
  const nr = recCount;
  for (let m: i32 = 0; m < nr; m++) {
    const r = recBase + <usize>m * REC;
    markAt(cmap, load<u32>(r));
    const h = load<u32>(r, R_HIST);
    let head = h & 0xffff;
    for (let k: u32 = 0; k < h >>> 16; k++) {
      head = (head - 1) & (HIST - 1);
      markAt(cmap, load<u32>(r + R_RING + (<usize>head << 2)) & CF_MAX);
    }
  }
  // 2. Live stack nodes: every node under a live configuration's pairs. pnHt maps old → new ids.
  const nmap = pnHt;
  memory.fill(nmap, 0xff, <usize>pnCount << 2);
  markAt(nmap, EMPTY_STACK);
  markAt(nmap, SYM_BASE);
  for (let c: u32 = 0; c < cfCount; c++) {
    if (load<u32>(cmap + (<usize>c << 2)) == UNMARKED) continue;
    const r = cfRec(c);
    const first = <usize>load<u32>(r);
    const n = <usize>(load<u32>(r, 4) & 0x7fffffff);
    for (let i: usize = 0; i < n; i++) {
      let node = <u32>load<u64>(pairPool + ((first + i) << 3));
      while (load<u32>(nmap + (<usize>node << 2)) == UNMARKED) {
        markAt(nmap, node);
        node = pnParent(node);
      }
    }
  }
  // 3. Renumber the live nodes in order: a parent is older than its children, so it is renumbered
  // first, and records only move down.
  let nn: u32 = 0;
  for (let k: u32 = 0; k < pnCount; k++) {
    if (load<u32>(nmap + (<usize>k << 2)) == UNMARKED) continue;
    const a = pnBase + <usize>k * PN_REC;
    const b = pnBase + <usize>nn * PN_REC;
    const ret = load<u32>(a);
    const parent = k < 2 ? 0 : load<u32>(nmap + (<usize>load<u32>(a, 4) << 2));
    const depth = load<u32>(a, 8);
    store<u32>(b, ret);
    store<u32>(b, parent, 4);
    store<u32>(b, depth, 8);
    store<u32>(nmap + (<usize>k << 2), nn);
    nn++;
  }
  // 4. Renumber the live configurations in order; their pairs move down in the pool with the new
  // node ids (an order-preserving renumbering keeps them sorted); hashes recomputed, masks unknown.
  let nc: u32 = 0;
  let used: u32 = 0;
  for (let c: u32 = 0; c < cfCount; c++) {
    if (load<u32>(cmap + (<usize>c << 2)) == UNMARKED) continue;
    const r = cfRec(c);
    const first = <usize>load<u32>(r);
    const word = load<u32>(r, 4);
    const n = word & 0x7fffffff;
    const dst = pairPool + (<usize>used << 3);
    let h: u32 = mix(n ^ (word >>> 31) << 31);
    for (let i: u32 = 0; i < n; i++) {
      const x = load<u64>(pairPool + ((first + <usize>i) << 3));
      const y = (x & 0xffffffff00000000) | <u64>load<u32>(nmap + (<usize><u32>x << 2));
      store<u64>(dst + (<usize>i << 3), y);
      h = mix(h ^ hashPair(y));
    }
    const d = cfRec(nc);
    store<u32>(d, used);
    store<u32>(d, word, 4);
    store<i32>(d, -1, 8);
    store<u32>(d, h, 12);
    store<u32>(cmap + (<usize>c << 2), nc);
    nc++;
    used += n;
  }
  // 5. The matchers' states and rollback entries, the initial configuration and `root` renumbered.
  for (let m: i32 = 0; m < nr; m++) {
    const r = recBase + <usize>m * REC;
    store<u32>(r, load<u32>(cmap + (<usize>load<u32>(r) << 2)));
    const h = load<u32>(r, R_HIST);
    let head = h & 0xffff;
    for (let k: u32 = 0; k < h >>> 16; k++) {
      head = (head - 1) & (HIST - 1);
      const e = r + R_RING + (<usize>head << 2);
      const v = load<u32>(e);
      store<u32>(e, (v & ~CF_MAX) | load<u32>(cmap + (<usize>(v & CF_MAX) << 2)));
    }
  }
  initialCfg = load<u32>(cmap + (<usize>initialCfg << 2));
  if (root != NO_ROOT) root = load<u32>(cmap + (<usize>root << 2));
  // 6. Hash tables rebuilt (same sizes), a new generation.
  pnCount = nn;
  cfCount = nc;
  pairUsed = used;
  memory.fill(pnHt, 0, (<usize>pnHtMask + 1) << 2);
  for (let k: u32 = 2; k < pnCount; k++) pnInsert(k);
  memory.fill(cfHt, 0, (<usize>cfHtMask + 1) << 2);
  for (let k: u32 = 0; k < cfCount; k++) cfInsert(k);
  const next = genBase + oldCount;
  genBase = next > ID_LIMIT - (CF_GEN_MAX << 1) ? 0 : next;
  nCompactions++;
  return root;
}

// ---- Closure ----

// @ts-ignore: decorator
@inline export function needOf(q: u32): u32 {
  return load<u32>(needPtr + (<usize>q << 2));
}

/**
 * Whether a pair of state q that reads into state t stays one pair: t only reads bytes (no call,
 * no end) and needs no more frames than q (which passed the stack-limit check). pdaStep's one-pair
 * case, and the mask walks' (pushdown-masks.ts `walkFast`).
 */
// @ts-ignore: decorator
@inline export function readsOn(q: u32, t: u32): bool {
  return <u32>load<u8>(stKind + <usize>t) == SK_READS && needOf(t) <= needOf(q);
}

/**
 * Mark pair `x` visited; a new one is counted and, within the limit, put on the work list. A pair
 * whose stack cannot finish within PDA_MAX_STACK frames (depth + need > the limit) does not exist.
 */
function visitPair(x: u64): void {
  const v = pnDepth(<u32>x) + needOf(<u32>(x >>> 32));
  if (v > needSeen) needSeen = v;
  if (v > PDA_MAX_STACK) return;
  let pos = hashPair(x) & (VIS_SIZE - 1);
  for (;;) {
    const sp = visStamp + (<usize>pos << 2);
    if (load<u32>(sp) != visGen) {
      store<u32>(sp, visGen);
      store<u64>(visKeys + (<usize>pos << 3), x);
      break;
    }
    if (load<u64>(visKeys + (<usize>pos << 3)) == x) return;
    pos = (pos + 1) & (VIS_SIZE - 1);
  }
  if (++visCount <= PDA_MAX_PAIRS) {
    store<u64>(workPtr + (<usize>workTop << 3), x);
    workTop++;
  }
}

/**
 * Step the pairs of set `src` by byte class `cls` (or, with ALL_CLASSES, take them as they are) and
 * close the result into `dst` (kept pairs sorted, SF_ACCEPT / SF_ESCAPE). Returns the number of
 * distinct pairs the closure visited: 0 when no pair reads the class, above PDA_MAX_PAIRS when the
 * closure is too large (`dst` is then not valid). `dst` may hold no pair with SF_ACCEPT set.
 */
export function pdaStep(src: usize, cls: u32, dst: usize): u32 {
  const n = load<u32>(src);
  const nc = hdr(H_NCLASSES);
  const trans = transBase;
  const kinds = stKind;
  if (n == 1 && cls != ALL_CLASSES) {
    // The common case: one pair into a state that only reads bytes (no call, no end) and needs
    // no more frames than the pair's own state (which passed the stack-limit check).
    const p = load<u64>(src, 8);
    const q = <u32>(p >>> 32);
    const t = <u32>load<u16>(trans + ((<usize>(q * nc + cls)) << 1));
    if (t == NONE16) return 0;
    if (readsOn(q, t)) {
      store<u32>(dst, 1);
      store<u32>(dst, 0, 4);
      store<u64>(dst, (<u64>t << 32) | (p & 0xffffffff), 8);
      return 1;
    }
  }
  if (++visGen == 0) {
    memory.fill(visStamp, 0, <usize>VIS_SIZE << 2);
    visGen = 1;
  }
  visCount = 0;
  workTop = 0;
  for (let i: u32 = 0; i < n; i++) {
    const p = load<u64>(src + 8 + (<usize>i << 3));
    if (cls == ALL_CLASSES) visitPair(p);
    else {
      const t = <u32>load<u16>(trans + ((<usize>(<u32>(p >>> 32) * nc + cls)) << 1));
      if (t != NONE16) visitPair((<u64>t << 32) | (p & 0xffffffff));
    }
    if (visCount > PDA_MAX_PAIRS) return visCount;
  }
  if (visCount == 0) return 0;
  let kept: u32 = 0;
  let flags: u32 = 0;
  const out = dst + 8;
  while (workTop > 0) {
    workTop--;
    const x = load<u64>(workPtr + (<usize>workTop << 3));
    const q = <u32>(x >>> 32);
    const node = <u32>x;
    const k = <u32>load<u8>(kinds + <usize>q);
    if (k & SK_READS) {
      store<u64>(out + (<usize>kept << 3), x);
      kept++;
    }
    if (k & SK_CALLS) {
      // A call pushes only if the return state can still finish at this level; the new pair
      // (start, node + ret) is then checked by visitPair like any other.
      const depth = pnDepth(node);
      const a = load<u32>(callIdx + (<usize>q << 2));
      const b = load<u32>(callIdx + (<usize>q << 2), 4);
      for (let j = a; j < b; j++) {
        const e = load<u32>(callPairsAt + (<usize>j << 2));
        const ret = e >>> 16;
        const v = depth + needOf(ret);
        if (v > needSeen) needSeen = v;
        if (v > PDA_MAX_STACK) continue;
        const start = e & 0xffff;
        const w = depth + 1 + needOf(start);
        if (w > PDA_MAX_STACK) {
          if (w > needSeen) needSeen = w;
          continue;
        }
        visitPair((<u64>start << 32) | <u64>pnIntern(ret, node));
        if (visCount > PDA_MAX_PAIRS) return visCount;
      }
    }
    if (k & SK_ACC) {
      if (node == EMPTY_STACK) flags |= SF_ACCEPT;
      else if (node == SYM_BASE) flags |= SF_ESCAPE;
      else {
        visitPair((<u64>pnRet(node) << 32) | <u64>pnParent(node));
        if (visCount > PDA_MAX_PAIRS) return visCount;
      }
    }
  }
  // Insertion sort (sets are small).
  for (let i: u32 = 1; i < kept; i++) {
    const x = load<u64>(out + (<usize>i << 3));
    let j = i;
    while (j > 0 && load<u64>(out + (<usize>(j - 1) << 3)) > x) {
      store<u64>(out + (<usize>j << 3), load<u64>(out + (<usize>(j - 1) << 3)));
      j--;
    }
    store<u64>(out + (<usize>j << 3), x);
  }
  store<u32>(dst, kept);
  store<u32>(dst, flags, 4);
  return visCount;
}

/**
 * Into `dst`, what popping stack node `node` gives, as a step's pop of it does (pdaStep's SK_ACC
 * case): the empty stack accepts; another node goes on at its return state over its parent, closed.
 * Returns pdaStep's count (1 for the empty stack). Not for SYM_BASE.
 */
export function pdaPopped(node: u32, dst: usize): u32 {
  if (node == EMPTY_STACK) {
    store<u32>(dst, 0);
    store<u32>(dst, SF_ACCEPT, 4);
    return 1;
  }
  store<u32>(popSrc, 1);
  store<u32>(popSrc, 0, 4);
  store<u64>(popSrc, (<u64>pnRet(node) << 32) | <u64>pnParent(node), 8);
  return pdaStep(popSrc, ALL_CLASSES, dst);
}

/** A step result that is a configuration: within the pair limit, and some pair or accept. */
// @ts-ignore: decorator
@inline export function pdaAlive(c: u32, set: usize): bool {
  return c - 1 < PDA_MAX_PAIRS && (load<u32>(set) != 0 || (load<u32>(set, 4) & SF_ACCEPT) != 0);
}

/**
 * Set up pushdown mode when the tables carry a call table: validate it, classify the states, and
 * intern the initial configuration (id 0). Returns false for a malformed call table.
 */
export function pdaInit(): bool {
  const off = <usize>hdr(H_CALLS);
  const nPairs = <usize>hdr(H_NCALLS);
  if (off == 0 && nPairs == 0) return true;
  const ns = <usize>hdr(H_NSTATES);
  const total = <usize>load<u32>(TABLE_BASE + 8);
  if (off == 0 || nPairs == 0 || off + ((ns + 1) << 2) + (nPairs << 2) > total) return false;
  callIdx = TABLE_BASE + off;
  callPairsAt = callIdx + ((ns + 1) << 2);
  if (load<u32>(callIdx) != 0 || <usize>load<u32>(callIdx + (ns << 2)) != nPairs) return false;
  for (let s: usize = 0; s < ns; s++) {
    if (load<u32>(callIdx + (s << 2)) > load<u32>(callIdx + (s << 2), 4)) return false;
  }
  for (let j: usize = 0; j < nPairs; j++) {
    const e = load<u32>(callPairsAt + (j << 2));
    if (<usize>(e & 0xffff) >= ns || <usize>(e >>> 16) >= ns) return false;
  }
  const nc = <usize>hdr(H_NCLASSES);
  stKind = allocZero(ns);
  for (let s: usize = 0; s < ns; s++) {
    let k: u32 = 0;
    for (let c: usize = 0; c < nc; c++) {
      if (<u32>load<u16>(transBase + ((s * nc + c) << 1)) != NONE16) {
        k = SK_READS;
        break;
      }
    }
    if (load<u32>(callIdx + (s << 2), 4) > load<u32>(callIdx + (s << 2))) k |= SK_CALLS;
    if (flagsOf(<u32>s) & F_ACCEPTING) k |= SK_ACC;
    // A Yield state reads no byte but waits for the environment's text: configurations keep it.
    if (flagsOf(<u32>s) & F_YIELD) k |= SK_READS;
    store<u8>(stKind + s, <u8>k);
  }
  needPtr = heap.alloc(ns << 2);
  computeNeed();
  pnCap = 256;
  pnBase = heap.alloc(<usize>pnCap * PN_REC);
  memory.fill(pnBase, 0, PN_REC << 1); // node 0 (empty) and node 1 (SYM_BASE): depth 0
  pnCount = 2;
  pnHt = allocZero(1024 << 2);
  pnHtMask = 1023;
  cfCap = 256;
  cfBase = heap.alloc(<usize>cfCap * CF_REC);
  cfHt = allocZero(1024 << 2);
  cfHtMask = 1023;
  pairCap = 1024;
  pairPool = heap.alloc(<usize>pairCap << 3);
  visKeys = heap.alloc(<usize>VIS_SIZE << 3);
  visStamp = allocZero(<usize>VIS_SIZE << 2);
  workPtr = heap.alloc((<usize>PDA_MAX_PAIRS + 1) << 3);
  setA = heap.alloc(SET_BYTES);
  setB = heap.alloc(SET_BYTES);
  popSrc = heap.alloc(16);
  store<u32>(setA, 1);
  store<u32>(setA, 0, 4);
  store<u64>(setA, (<u64>hdr(H_INITIAL) << 32) | <u64>EMPTY_STACK, 8);
  if (!pdaAlive(pdaStep(setA, ALL_CLASSES, setB), setB)) return false;
  initialCfg = cfIntern(setB);
  pdaMode = true;
  wantHeights(); // for the runs of pushdown-masks.ts
  return true;
}

/**
 * need(q) for every state, as pda.ts `pdaNeed`: 0 at an end state, a byte edge costs nothing, a
 * call edge [start, ret] costs max(1 + need(start), need(ret)), an env edge (an agent's Yield
 * state) what a byte edge does; a fixpoint from "unknown". The
 * sweeps alternate direction, last state first: states are numbered from the initial one on, so a
 * sweep in one direction only can take a pass per state of a long chain (2,477 passes on a
 * 4,942-state schema, 2 s; 9 this way). A sweep reads each state's distinct byte and env
 * successors, listed once beforehand, not its row of classes: 8 sweeps at the median of the
 * MaskBench sample, 18 at most, over a handful of successors where a row has dozens of classes.
 */
function computeNeed(): void {
  const ns = hdr(H_NSTATES);
  const nc = hdr(H_NCLASSES);
  const INF_NEED: u32 = 0x3fffffff;
  // Successor lists (CSR, u16), deduplicated with a stamp per target: q + 1 while counting,
  // ns + q + 1 while writing.
  const stamp = allocZero(<usize>ns << 2);
  const start = heap.alloc((<usize>ns + 1) << 2);
  let m: u32 = 0;
  for (let pass: u32 = 0; pass < 2; pass++) {
    const edges: usize = pass == 0 ? 0 : heap.alloc((<usize>m << 1) + 2);
    if (pass == 1) succPtr = edges;
    m = 0;
    for (let q: u32 = 0; q < ns; q++) {
      if (pass == 1) store<u32>(start + (<usize>q << 2), m);
      const mark = pass * ns + q + 1;
      for (let c: u32 = 0; c <= nc; c++) {
        // Class nc stands for the env edge.
        const t = c < nc ? <u32>load<u16>(transBase + (<usize>(q * nc + c) << 1)) : <u32>load<u16>(info(q), 4);
        if (t == NONE16 || load<u32>(stamp + (<usize>t << 2)) == mark) continue;
        store<u32>(stamp + (<usize>t << 2), mark);
        if (pass == 1) store<u16>(edges + (<usize>m << 1), <u16>t);
        m++;
      }
    }
  }
  store<u32>(start + (<usize>ns << 2), m);
  for (let q: u32 = 0; q < ns; q++) store<u32>(needPtr + (<usize>q << 2), INF_NEED);
  let changed = true;
  let backward = true;
  while (changed) {
    changed = false;
    for (let k: u32 = 0; k < ns; k++) {
      const q = backward ? ns - 1 - k : k;
      let best: u32 = flagsOf(q) & F_ACCEPTING ? 0 : needOf(q);
      const e1 = load<u32>(start + (<usize>q << 2), 4);
      for (let j = load<u32>(start + (<usize>q << 2)); j < e1 && best > 0; j++) {
        const v = needOf(<u32>load<u16>(succPtr + (<usize>j << 1)));
        if (v < best) best = v;
      }
      const a = load<u32>(callIdx + (<usize>q << 2));
      const b = load<u32>(callIdx + (<usize>q << 2), 4);
      for (let j = a; j < b; j++) {
        const e = load<u32>(callPairsAt + (<usize>j << 2));
        const v = max(needOf(e & 0xffff) + 1, needOf(e >>> 16));
        if (v < best) best = v;
      }
      if (best < needOf(q)) {
        store<u32>(needPtr + (<usize>q << 2), best);
        changed = true;
      }
    }
    backward = !backward;
  }
}
/** computeNeed's successor lists (u16 states). */
let succPtr: usize = 0;

/** The configuration after `len` bytes at `p` from `c`, or -(1 + i) for the first byte `i` not allowed. */
function pdaRun(c: u32, p: usize, len: usize): i32 {
  if (len == 0) return <i32>c;
  let a = setA;
  let b = setB;
  cfLoad(c, a);
  const classmap = region(H_CLASSMAP);
  for (let i: usize = 0; i < len; i++) {
    const n = pdaStep(a, <u32>load<u8>(classmap + <usize>load<u8>(p + i)), b);
    if (!pdaAlive(n, b)) return -1 - <i32>i;
    const t = a;
    a = b;
    b = t;
  }
  return <i32>cfIntern(a);
}

/** Rollback ring entry in pushdown mode: configuration | counted << 30 | done << 31. */
function pdaHistPush(r: usize, counted: bool): void {
  const h = load<u32>(r, R_HIST);
  const head = h & 0xffff;
  let len = h >>> 16;
  const entry = load<u32>(r) | (counted ? <u32>1 << 30 : 0) | (load<u32>(r, R_DONE) << 31);
  store<u32>(r + R_RING + (<usize>head << 2), entry);
  if (len < HIST) len++;
  store<u32>(r, ((head + 1) & (HIST - 1)) | (len << 16), R_HIST);
}

/** m_commit in pushdown mode (the matcher is not done, `id` is in range). */
export function pdaCommit(r: usize, id: i32, kind: u32): i32 {
  pdaCacheCheck(NO_ROOT); // may compact: read the configuration after it
  const c = load<u32>(r);
  if (kind == K_EOS) {
    if (!cfAccepting(c)) return 3;
    pdaHistPush(r, false);
    store<u32>(r, 1, R_DONE);
    return 2;
  }
  if (kind != K_TEXT) return 3;
  const off = load<u32>(tokOffPtr + (<usize>id << 2));
  const len = load<u32>(tokOffPtr + (<usize>(id + 1) << 2)) - off;
  const t = pdaRun(c, tokBytesPtr + <usize>off, <usize>len);
  if (t < 0) return 3;
  // The token counter restarts when an agent's spec state changes (a grammar has none); rollback
  // then gives back 0, not the count of the state before.
  const q0 = cfRep(c);
  const q1 = cfRep(<u32>t);
  const moved = q0 >= 0 && q1 >= 0 && specOf(<u32>q0) != specOf(<u32>q1);
  const count = load<u32>(r, R_COUNT);
  pdaHistPush(r, !moved && count < COUNT_MAX);
  store<u32>(r, <u32>t);
  store<u32>(r, moved ? 0 : min(count + 1, COUNT_MAX), R_COUNT);
  return i32(q1 >= 0 && (flagsOf(<u32>q1) & F_YIELD) != 0);
}

/** m_rollback in pushdown mode (`0 < n ≤` the history length). */
export function pdaRollback(r: usize, n: u32): void {
  const h = load<u32>(r, R_HIST);
  const len = h >>> 16;
  let count = load<u32>(r, R_COUNT);
  let entry: u32 = 0;
  let head = h & 0xffff;
  for (let k: u32 = 0; k < n; k++) {
    head = (head - 1) & (HIST - 1);
    entry = load<u32>(r + R_RING + (<usize>head << 2));
    if (entry & (1 << 30)) count--;
  }
  store<u32>(r, entry & CF_MAX);
  store<u32>(r, count, R_COUNT);
  store<u32>(r, entry >>> 31, R_DONE);
  store<u32>(r, head | ((len - n) << 16), R_HIST);
}

/** `step` in pushdown mode: the configuration after one byte (interned), or -1. */
export function pdaStepExport(state: i32, byte: i32): i32 {
  const c = cfInternal(state);
  if (c < 0 || <u32>byte > 255) return -1;
  cfLoad(pdaCacheCheck(<u32>c), setA); // `state` survives a compaction as an extra root
  const n = pdaStep(setA, <u32>load<u8>(region(H_CLASSMAP) + <usize>byte), setB);
  return pdaAlive(n, setB) ? cfExternal(cfIntern(setB)) : -1;
}

/** `m_feed` in pushdown mode (the matcher is not done): 0, 1 (yield), or -(1 + i) with the matcher unchanged. */
export function pdaFeed(r: usize, p: usize, len: usize): i32 {
  pdaCacheCheck(NO_ROOT); // may compact: read the configuration after it
  const t = pdaRun(load<u32>(r), p, len);
  if (t < 0) return t;
  store<u32>(r, <u32>t);
  store<u32>(r, 0, R_HIST);
  return i32(cfYielding(<u32>t));
}

/** Is configuration `c` waiting for the environment's text (an agent's Yield state)? */
export function cfYielding(c: u32): bool {
  const q = cfRep(c);
  return q >= 0 && (flagsOf(<u32>q) & F_YIELD) != 0;
}

// ---- Pushdown exports ----

/** 1 when the tables carry call edges (pushdown mode: states are configuration ids), else 0. */
export function pda_mode(): i32 {
  return i32(pdaMode);
}

/**
 * Pushdown mode: one past the highest configuration id so far (valid ids are
 * `[config_base(), config_count())`), 0 otherwise.
 */
export function config_count(): i32 {
  return pdaMode ? cfExternal(cfCount) : 0;
}

/** Pushdown mode: the lowest valid configuration id (ids below it are from before a compaction), 0 otherwise. */
export function config_base(): i32 {
  return pdaMode ? <i32>genBase : 0;
}

/**
 * Set the cache limit in bytes (docs/abi.md "Cache limit"); `bytes ≤ 0` restores the default
 * (64 MiB). Returns the previous limit. Only pushdown mode has a cache; the limit is kept anyway.
 */
export function cache_set_limit(bytes: i32): i32 {
  const old = cacheLimit;
  cacheLimit = bytes <= 0 ? DEFAULT_LIMIT : <usize>bytes;
  effLimit = max(cacheLimit, liveBytes << 1);
  return <i32>old;
}

export function cache_limit(): i32 {
  return <i32>cacheLimit;
}

/** Bytes the pushdown cache counts now (configurations, stack nodes, masks), 0 outside pushdown mode. */
export function cache_bytes(): i32 {
  return pdaMode ? <i32>pdaCacheBytes() : 0;
}

/** Times the mask cache was cleared (each compaction included). */
export function cache_evictions(): i32 {
  return <i32>nEvictions;
}

/** Times the configurations were compacted (each starts a new generation of ids). */
export function cache_compactions(): i32 {
  return <i32>nCompactions;
}

// Instantiation, second step (tables.ts expanded the rows first: this file imports it): pushdown
// mode from the call table; a malformed one makes the tables unusable.
if (transBase != 0 && !pdaInit()) dropTables();
