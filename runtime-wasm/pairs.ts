/**
 * @fileoverview Pairs (state, stack node) as u64 keys `state << 32 | node`: their hash, and the
 * per-pair mask cache with the byte count of the whole pushdown mask cache (part of specc's
 * WebAssembly runtime; index.ts lists the modules). Below both pushdown.ts, which hashes
 * configurations and clears the cache when it compacts, and pushdown-masks.ts, which fills it.
 */

import { maskBytes, maskStoreTruncate, nMasks, zeroMask } from "./vocab";

// @ts-ignore: decorator
@inline export function mix(h: u32): u32 {
  h ^= h >>> 16;
  h *= 0x85ebca6b;
  h ^= h >>> 13;
  h *= 0xc2b2ae35;
  return h ^ (h >>> 16);
}

// @ts-ignore: decorator
@inline export function hashPair(x: u64): u32 {
  return mix(<u32>x * 0x9e3779b1 + <u32>(x >>> 32));
}

// @ts-ignore: decorator
@inline const EMPTY_KEY: u64 = 0xffffffffffffffff;
/** Pair-mask cache entry: u64 pair, i32 mask index, u32 most pairs one closure of its walk visited. */
// @ts-ignore: decorator
@inline const PM_REC: usize = 16;

/** Set by the first pushdown mask (pushdown-masks.ts); until then there is no mask cache. */
let ready: bool = false;
let pmHt: usize = 0;
let pmHtMask: u32 = 0;
let pmCount: u32 = 0;

export function pairCacheInit(): void {
  pmHt = heap.alloc(1024 * PM_REC);
  for (let i: usize = 0; i < 1024; i++) store<u64>(pmHt + i * PM_REC, EMPTY_KEY);
  pmHtMask = 1023;
  pmCount = 0;
  ready = true;
}

/** The cache entry of pair `x` (read its mask index at +8, its most pairs at +12), or 0. */
export function pairCacheFind(x: u64): usize {
  let pos = hashPair(x) & pmHtMask;
  let e = pmHt + <usize>pos * PM_REC;
  let k = load<u64>(e);
  while (k != EMPTY_KEY) {
    if (k == x) return e;
    pos = (pos + 1) & pmHtMask;
    e = pmHt + <usize>pos * PM_REC;
    k = load<u64>(e);
  }
  return 0;
}

/** Cache pair `x`'s mask index and the most pairs one closure of its walk visited. */
export function pairCacheAdd(x: u64, idx: i32, maxc: u32): void {
  if ((pmCount + 1) << 1 > pmHtMask + 1) growPairCache();
  let pos = hashPair(x) & pmHtMask;
  while (load<u64>(pmHt + <usize>pos * PM_REC) != EMPTY_KEY) pos = (pos + 1) & pmHtMask;
  const e = pmHt + <usize>pos * PM_REC;
  store<u64>(e, x);
  store<i32>(e, idx, 8);
  store<u32>(e, maxc, 12);
  pmCount++;
}

function growPairCache(): void {
  const old = pmHt;
  const oldSize = <usize>pmHtMask + 1;
  const size = oldSize << 1;
  pmHt = heap.alloc(size * PM_REC);
  for (let i: usize = 0; i < size; i++) store<u64>(pmHt + i * PM_REC, EMPTY_KEY);
  pmHtMask = <u32>size - 1;
  for (let i: usize = 0; i < oldSize; i++) {
    const e = old + i * PM_REC;
    const k = load<u64>(e);
    if (k == EMPTY_KEY) continue;
    let pos = hashPair(k) & pmHtMask;
    while (load<u64>(pmHt + <usize>pos * PM_REC) != EMPTY_KEY) pos = (pos + 1) & pmHtMask;
    memory.copy(pmHt + <usize>pos * PM_REC, e, PM_REC);
  }
}

/**
 * Bytes the mask cache holds now (docs/abi.md "Cache limit"): every distinct mask but the
 * all-zero one (its words plus its pointer, hash and two index slots) and the pair-mask cache.
 */
export function maskCacheBytes(): usize {
  if (!ready) return 0;
  return <usize>(nMasks - 1) * (maskBytes + 16) + <usize>pmCount * (PM_REC << 1);
}

/**
 * Clear the mask cache: the pair-mask cache and every distinct mask but the all-zero one (their
 * blocks are reused). The caller resets the configurations' cached mask indices (pushdown.ts).
 * Per-state summaries stay: they hold no stack node and no mask index.
 */
export function maskCacheClear(): void {
  if (!ready) return;
  for (let i: usize = 0; i <= <usize>pmHtMask; i++) store<u64>(pmHt + i * PM_REC, EMPTY_KEY);
  pmCount = 0;
  maskStoreTruncate(<u32>zeroMask + 1);
}
