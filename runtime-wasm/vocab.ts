/**
 * @fileoverview The vocabulary (ABI 2) and the distinct-mask store (part of specc's WebAssembly
 * runtime; index.ts lists the modules).
 *
 * The host attaches a vocabulary once (`vocab_alloc`, write the regions, `vocab_ready`, which
 * validates everything it was given): token offsets, bytes and kinds and a token trie in DFS order,
 * or, since the trie is the costly part to build and to check, only the sorted text ids, from which
 * `vocab_ready` builds the trie itself (one pass to check and count, one to fill).
 * `vocab_ready` also sizes the store of distinct masks (identical masks are stored once), so the
 * store and `intern` live here; masks.ts computes the masks that go into it.
 */

import { F_YIELD, H_CLASSMAP, H_NCLASSES, H_NSTATES, NONE16, flagsOf, hdr, region } from "./layout";
import { tables_ok, transBase } from "./tables";

// ---- Vocabulary (ABI 2) ---------------------------------------------------------------------------

/** Token kinds (`tok_kind` region). */
// @ts-ignore: decorator
@inline export const K_TEXT: u32 = 0;
// @ts-ignore: decorator
@inline const K_SPECIAL: u32 = 1;
// @ts-ignore: decorator
@inline export const K_EOS: u32 = 2;
/** Trie node record: u32 `byte | depth << 8`, u32 skip (index of the first node after the
 * subtree), u32 first index into `trie_ids`. The walks read a node's byte class through the
 * tables' class map (`nodeClass`): the records stay the vocabulary's alone, as the host wrote them. */
// @ts-ignore: decorator
@inline export const NODE: usize = 12;
/** The byte class of a node record's first word. */
// @ts-ignore: decorator
@inline export function nodeClass(w0: u32): u32 {
  return <u32>load<u8>(byteClassPtr + <usize>(w0 & 0xff));
}
/** Limits that keep every size computation inside 32 bits. */
// @ts-ignore: decorator
@inline const MAX_VOCAB: u32 = 1 << 24;
// @ts-ignore: decorator
@inline const MAX_NODES: u32 = 1 << 24;
// @ts-ignore: decorator
@inline const MAX_BYTES: u32 = 1 << 28;

/** 0 = no vocabulary, 1 = regions allocated (host writing), 2 = validated and in use. */
export let vocabPhase: i32 = 0;
export let vocabSize: u32 = 0;
export let nNodes: u32 = 0;
export let nTrie: u32 = 0;
/** Text tokens (kind K_TEXT), counted by `vocab_ready`. */
let nText: u32 = 0;
let nBytes: u32 = 0;
export let nodesPtr: usize = 0;
/** The tables' class map (256 bytes), set by `vocab_ready`. */
export let byteClassPtr: usize = 0;
export let trieIdsPtr: usize = 0;
export let tokOffPtr: usize = 0;
export let tokBytesPtr: usize = 0;
export let tokKindPtr: usize = 0;
let words: u32 = 0;
export let maskBytes: usize = 0;
export let maxDepth: u32 = 0;
/** Per-depth walk stack: u32 transition-row address (and, for budget walks, a u32 tag). */
export let stackPtr: usize = 0;
export let tagPtr: usize = 0;
export let eosPtr: usize = 0;
export let nEos: u32 = 0;
/** i32[nStates]: distinct-mask index of each state's mask, -1 = not computed yet. */
export let stateMaskPtr: usize = 0;
/** Distinct masks: pointers and hashes (room for 2 × nStates + 1), open-addressing index. */
export let maskPtrsPtr: usize = 0;
export let maskHashPtr: usize = 0;
export let nMasks: u32 = 0;
/**
 * Mask blocks allocated so far (≥ nMasks): block `i` is `maskAddr(i)`. Pushdown mode clears its
 * mask cache by truncating the store (`maskStoreTruncate`); the blocks stay allocated and index `i`
 * reuses block `i`, so a distinct mask's address depends only on its index.
 */
export let maskBlocks: u32 = 0;
let htPtr: usize = 0;
let htMask: u32 = 0;
export let zeroMask: i32 = -1;
/**
 * Transitions the trie walks read: the tables' own, or (only for tables whose yield states have
 * transitions, which specc never writes) a copy with those rows emptied, so that a walk needs no
 * per-node yield check.
 */
export let walkTrans: usize = 0;

/** Allocate a zeroed block (the stub allocator hands out fresh, but not necessarily zero, memory). */
export function allocZero(n: usize): usize {
  const p = heap.alloc(n > 0 ? n : 4);
  memory.fill(p, 0, n);
  return p;
}

/**
 * Reserve the vocabulary regions. `vocabSize` token ids, `nodes` trie nodes (the root included; 0:
 * the host writes no trie, `vocab_ready` builds it from `trie_ids`), `trieTokens` ids listed in the
 * trie, `bytes` token bytes in all. 0, or -1 (no valid tables, a vocabulary already attached, or
 * sizes out of range); the host then writes the regions given by `vocab_region` and calls
 * `vocab_ready`.
 */
export function vocab_alloc(size: i32, nodes: i32, trieTokens: i32, bytes: i32): i32 {
  return reserve(size, nodes, trieTokens, bytes, true);
}

/**
 * `vocab_alloc` without zeroing the regions: for a host that writes all of them, or that left them
 * in this memory from an earlier instance of this runtime (a memory reused after a spec is done
 * with it) and finds them at the same addresses, which it then need not write again. The regions
 * start at VOCAB_BASE whenever the heap is below it (both calls), so the same sizes get the same
 * addresses in every such instance.
 */
export function vocab_reserve(size: i32, nodes: i32, trieTokens: i32, bytes: i32): i32 {
  return reserve(size, nodes, trieTokens, bytes, false);
}

/**
 * Where the vocabulary's regions start when the heap is below it at `vocab_alloc` (the runtime's
 * data and the start function's blocks take less than 2 MiB but for the largest grammars, 1% of
 * MaskBench's): the gap is a block never written, so it costs address space, not pages.
 */
// @ts-ignore: decorator
@inline const VOCAB_BASE: usize = 4 << 20;
/** The heap's top before the vocabulary's regions (and the gap below VOCAB_BASE); 0 before `vocab_alloc`. */
let preVocabTop: usize = 0;

function reserve(size: i32, nodes: i32, trieTokens: i32, bytes: i32, zero: bool): i32 {
  if (!tables_ok() || vocabPhase != 0) return -1;
  if (size < 1 || <u32>size > MAX_VOCAB || nodes < 0 || <u32>nodes > MAX_NODES) return -1;
  if (trieTokens < 0 || trieTokens > size || bytes < 0 || <u32>bytes > MAX_BYTES) return -1;
  vocabSize = <u32>size;
  nNodes = <u32>nodes;
  nTrie = <u32>trieTokens;
  nBytes = <u32>bytes;
  const top = heapTop();
  preVocabTop = top;
  // A block up to VOCAB_BASE: the stub heap's next block then starts there (both are 16-aligned,
  // and a block of n bytes moves the next one by n + 4 rounded up to 16).
  if (top < VOCAB_BASE) heap.alloc(VOCAB_BASE - top - 4);
  nodesPtr = nodes ? vocabBlock((<usize>nNodes + 1) * NODE, zero) : 0; // 0 nodes: vocab_ready builds them
  trieIdsPtr = vocabBlock(<usize>nTrie << 2, zero);
  tokOffPtr = vocabBlock((<usize>vocabSize + 1) << 2, zero);
  tokBytesPtr = vocabBlock(<usize>nBytes, zero);
  tokKindPtr = vocabBlock(<usize>vocabSize, zero);
  vocabPhase = 1;
  return 0;
}

// @ts-ignore: decorator
@inline function vocabBlock(n: usize, zero: bool): usize {
  return zero ? allocZero(n) : heap.alloc(n > 0 ? n : 4);
}

/** Where the heap's next block starts (a probe allocated and freed: the stub heap hands it out again). */
function heapTop(): usize {
  const p = heap.alloc(0);
  heap.free(p);
  return p;
}

/**
 * For a host that reuses this memory for another instance: k = 0, the heap's top before the
 * vocabulary (0 without one); k = 1, its top now. The runtime never writes at or above its top,
 * nor into the gap between the first and the vocabulary's regions, nor below 2 MiB but the tables.
 */
export function heap_mark(k: i32): i32 {
  return <i32>(k == 0 ? preVocabTop : heapTop());
}

/**
 * Address of vocabulary region `k` (0 nodes, 1 trie_ids, 2 tok_off, 3 tok_bytes, 4 tok_kind; the
 * nodes' derived bits: 5 plain, 6 text, 7 heights, once ready or reserved), 0 if none.
 */
export function vocab_region(k: i32): i32 {
  if (vocabPhase == 0) return 0;
  switch (k) {
    case 0: return <i32>nodesPtr;
    case 1: return <i32>trieIdsPtr;
    case 2: return <i32>tokOffPtr;
    case 3: return <i32>tokBytesPtr;
    case 4: return <i32>tokKindPtr;
    case 5: return <i32>plainBitsPtr;
    case 6: return <i32>textBitsPtr;
    case 7: return <i32>heightsPtr;
  }
  return 0;
}

// @ts-ignore: decorator
@inline function nodeW0(i: u32): u32 {
  return load<u32>(nodesPtr + <usize>i * NODE);
}

// @ts-ignore: decorator
@inline function nodeSkip(i: u32): u32 {
  return load<u32>(nodesPtr + <usize>i * NODE, 4);
}

// @ts-ignore: decorator
@inline function nodeTok(i: u32): u32 {
  return load<u32>(nodesPtr + <usize>i * NODE, 8);
}

/** Sets `id`'s bit in the bitset `seen`; false when it was set already (an id listed twice). */
// @ts-ignore: decorator
@inline function markOnce(seen: usize, id: u32): bool {
  const w = seen + (<usize>(id >>> 5) << 2);
  const bit: u32 = 1 << (id & 31);
  const had = load<u32>(w);
  store<u32>(w, had | bit);
  return (had & bit) == 0;
}

/** Validates a trie the host wrote (`vocab_alloc` with nodes ≥ 1): shape, ranges, spellings. */
function checkTrie(): i32 {
  const V = vocabSize;
  const n = nNodes;
  // Trie shape: DFS pre-order, root first.
  if (nodeW0(0) != 0 || nodeSkip(0) != n) return -4;
  let md: u32 = 0;
  let prev: u32 = 0;
  for (let i: u32 = 1; i < n; i++) {
    const d = nodeW0(i) >>> 8;
    if (d < 1 || d > prev + 1) return -4;
    if (d > md) md = d;
    prev = d;
  }
  maxDepth = md;
  stackPtr = allocZero((<usize>md + 1) << 2);
  tagPtr = allocZero((<usize>md + 1) << 2);
  // Skips: a node's subtree ends at the first later node that is not deeper (or at n).
  const open = stackPtr; // open[d] = the node at depth d on the current path
  let top: u32 = 0;
  for (let j: u32 = 1; j <= n; j++) {
    const d = j < n ? nodeW0(j) >>> 8 : 1;
    while (top >= d) {
      if (nodeSkip(load<u32>(open + (<usize>top << 2))) != j) return -4;
      top--;
    }
    if (j < n) {
      store<u32>(open + (<usize>d << 2), j);
      top = d;
    }
  }
  // Token ranges: non-decreasing from 0 to nTrie (the sentinel record after the last node).
  if (nodeTok(0) != 0 || nodeTok(n) != nTrie) return -5;
  for (let i: u32 = 0; i < n; i++) if (nodeTok(i) > nodeTok(i + 1)) return -5;
  // Every trie entry is a text token whose bytes spell the node's path, each listed once.
  const seen = allocZero(((<usize>V + 31) >>> 5) << 2);
  const path = allocZero(<usize>md + 1);
  let bad = false;
  for (let i: u32 = 0; i < n && !bad; i++) {
    const d = nodeW0(i) >>> 8;
    if (i > 0) store<u8>(path + <usize>d - 1, <u8>(nodeW0(i) & 0xff));
    const end = nodeTok(i + 1);
    for (let a = nodeTok(i); a < end; a++) {
      const id = load<u32>(trieIdsPtr + (<usize>a << 2));
      if (id >= V || <u32>load<u8>(tokKindPtr + id) != K_TEXT || !markOnce(seen, id)) { bad = true; break; }
      const off = load<u32>(tokOffPtr + (<usize>id << 2));
      const len = load<u32>(tokOffPtr + (<usize>(id + 1) << 2)) - off;
      if (len != d || (d > 0 && memory.compare(tokBytesPtr + off, path, <usize>d) != 0)) { bad = true; break; }
    }
  }
  if (bad) return -6;
  // Every entry is a distinct text token, so none is missing exactly when the counts agree.
  return nTrie == nText ? 0 : -7;
}

/**
 * Builds the trie from `trie_ids` (`vocab_alloc` with nodes = 0): one node per distinct prefix, in
 * DFS pre-order, as docs/abi.md describes it. The ids must be the text tokens, each once, sorted by
 * bytes (a token before every longer token it is a prefix of), which is what makes every entry end
 * at its own node. One pass over the tokens in trie order (random in id order, which is what
 * costs) checks and fills at once. The nodes are written where the heap's next block starts, the
 * memory grown a megabyte at a time as they go, and become that block when they are all written:
 * the region has exactly its size, and the memory is not doubled (the heap grows it by at least
 * its size), which a block reserved for the most nodes the text bytes allow would have done.
 * `md` is the longest text token.
 */
function buildTrie(md: u32): i32 {
  // The region addresses in locals: the loop runs once, in V8's baseline compiler (no tier-up
  // inside a running call), which reloads a global on every use.
  const V = vocabSize, ids = trieIdsPtr, off = tokOffPtr, bytes = tokBytesPtr, kinds = tokKindPtr, nt = nTrie;
  const seen = allocZero(((<usize>V + 31) >>> 5) << 2);
  maxDepth = md;
  stackPtr = allocZero((<usize>md + 1) << 2);
  tagPtr = allocZero((<usize>md + 1) << 2);
  const nodes = heapTop(); // where the next block will start
  // The memory's end: nodes are written below it (the root and the sentinel at least).
  let limit = growTo(nodes + 2 * NODE, <usize>memory.size() << 16);
  const path = stackPtr; // path[d] = the node at depth d on the current branch
  let n: u32 = 1;
  let depth: u32 = 0;
  let po: u32 = 0;
  let pl: u32 = 0;
  for (let a: u32 = 0; a < nt; a++) {
    const id = load<u32>(ids + (<usize>a << 2));
    if (id >= V || <u32>load<u8>(kinds + id) != K_TEXT || !markOnce(seen, id)) return -6;
    const o = load<u32>(off + (<usize>id << 2));
    const len = load<u32>(off + (<usize>(id + 1) << 2)) - o;
    const l = commonPrefix(bytes, po, pl, o, len);
    if (a > 0 && (l < len ? l < pl && load<u8>(bytes + o + l) < load<u8>(bytes + po + l) : len < pl)) return -8;
    if (n + (len - l) > MAX_NODES) return -9;
    limit = growTo(nodes + (<usize>(n + (len - l)) + 1) * NODE, limit); // + the sentinel
    for (; depth > l; depth--) store<u32>(nodes + <usize>load<u32>(path + (<usize>depth << 2)) * NODE, n, 4);
    for (let d = l + 1; d <= len; d++) {
      const p = nodes + <usize>n * NODE;
      store<u32>(p, <u32>load<u8>(bytes + o + d - 1) | (d << 8)); // its byte (a class after finishNodes)
      store<u32>(p, a, 8);
      store<u32>(path + (<usize>d << 2), n);
      n++;
    }
    depth = len;
    po = o;
    pl = len;
  }
  // Every entry is a distinct text token, so none is missing exactly when the counts agree.
  if (nt != nText) return -7;
  for (; depth > 0; depth--) store<u32>(nodes + <usize>load<u32>(path + (<usize>depth << 2)) * NODE, n, 4);
  store<u32>(nodes, 0); // the root: no byte, depth 0,
  store<u32>(nodes, n, 4); // its subtree is everything,
  store<u32>(nodes, 0, 8); // from the first entry
  const s = nodes + <usize>n * NODE; // the sentinel
  store<u32>(s, 0);
  store<u32>(s, 0, 4);
  store<u32>(s, nt, 8);
  nNodes = n;
  // The nodes become the heap's next block (nothing was allocated since the probe); were the heap
  // to place it elsewhere, they are moved there.
  nodesPtr = heap.alloc((<usize>n + 1) * NODE);
  if (nodesPtr != nodes) memory.copy(nodesPtr, nodes, (<usize>n + 1) * NODE);
  return 0;
}

/** The memory's end after growing it, if `end` is past `limit` (its end now), by ≥ 1 MB. */
// @ts-ignore: decorator
@inline function growTo(end: usize, limit: usize): usize {
  if (end <= limit) return limit;
  if (memory.grow(max<i32>(<i32>((end - limit + 0xffff) >>> 16), 16)) < 0) unreachable(); // out of memory, as in the heap
  return <usize>memory.size() << 16;
}

/** Length of the common prefix of the token bytes at `a` (length `al`) and `b` (length `bl`). */
// @ts-ignore: decorator
@inline function commonPrefix(bytes: usize, a: u32, al: u32, b: u32, bl: u32): u32 {
  const m = al < bl ? al : bl;
  let l: u32 = 0;
  // Four bytes at a time (unaligned loads are fine in wasm), then the rest.
  while (l + 4 <= m && load<u32>(bytes + a + l) == load<u32>(bytes + b + l)) l += 4;
  while (l < m && load<u8>(bytes + a + l) == load<u8>(bytes + b + l)) l++;
  return l;
}

/**
 * Validate what the host wrote and make the vocabulary usable. 0, or a negative code (docs/abi.md):
 * -1 not allocated or already ready, -2 token offsets, -3 token kinds, -4 trie shape (depths,
 * skips), -5 trie token ranges, -6 a trie entry (id out of range, not a text token, listed twice,
 * or bytes that differ from the node's path), -7 a text token missing from the trie.
 */
export function vocab_ready(): i32 {
  return ready(false);
}

/**
 * `vocab_ready` for a trie this runtime has already validated (written by the host with
 * `vocab_alloc` nodes ≥ 1, the same bytes a `vocab_ready` accepted before, in another instance):
 * the trie's shape and spellings are not checked again, which is most of an attach's time
 * (every token's bytes read in trie order, random in memory). Offsets and kinds are still checked.
 * A host that cannot vouch for the bytes calls `vocab_ready`: a malformed trie given here gives
 * wrong masks or a trap, never an access outside this module's memory. -1 without a host trie.
 */
export function vocab_adopt(): i32 {
  if (nNodes == 0) return -1;
  return ready(true);
}

/**
 * Reserve the nodes' derived bits, for a host that has them from an earlier instance (read at
 * `vocab_region` 5, 6, 7 after its `vocab_ready`): between `vocab_alloc` (nodes ≥ 1) and
 * `vocab_adopt`, which then takes them as written and only turns the nodes' bytes into classes.
 * They depend on the token bytes alone, not on the tables. 0, or -1 (no host trie, or not between
 * those calls). Region 7 (the heights) is 0 in DFA mode, which has none: the host writes no heights.
 */
export function vocab_alloc_derived(): i32 {
  if (vocabPhase != 1 || nNodes == 0 || derivedGiven) return -1;
  const bits = ((<usize>nNodes + 31) >>> 5) << 2;
  plainBitsPtr = heap.alloc(bits);
  textBitsPtr = heap.alloc(bits);
  if (heightsWanted) heightsPtr = heap.alloc(<usize>nNodes);
  derivedGiven = true;
  return 0;
}

function ready(trusted: bool): i32 {
  if (vocabPhase != 1) return -1;
  const V = vocabSize;
  // Token offsets and kinds (and, for the trie build, the text tokens' count and the longest),
  // in one pass: offsets non-decreasing from 0 to nBytes, kinds at most K_EOS.
  if (load<u32>(tokOffPtr) != 0 || load<u32>(tokOffPtr + (<usize>V << 2)) != nBytes) return -2;
  const off = tokOffPtr, kinds = tokKindPtr;
  let eos: u32 = 0, text: u32 = 0, md: u32 = 0;
  let firstEos: u32 = V;
  let o0: u32 = 0;
  for (let id: u32 = 0; id < V; id++) {
    const o1 = load<u32>(off + (<usize>(id + 1) << 2));
    if (o0 > o1) return -2;
    const k = <u32>load<u8>(kinds + id);
    if (k > K_EOS) return -3;
    if (k == K_TEXT) {
      const len = o1 - o0;
      text++;
      if (len > md) md = len;
    } else if (k == K_EOS) {
      if (eos == 0) firstEos = id;
      eos++;
    }
    o0 = o1;
  }
  nEos = eos;
  nText = text;
  if (nNodes) {
    if (trusted) {
      // The longest text token is the deepest node (each token ends at its own node).
      maxDepth = md;
      stackPtr = allocZero((<usize>md + 1) << 2);
      tagPtr = allocZero((<usize>md + 1) << 2);
    } else {
      const t = checkTrie();
      if (t != 0) return t;
    }
  } else {
    const t = buildTrie(md);
    if (t != 0) return t;
  }
  byteClassPtr = region(H_CLASSMAP);
  plainClassTable();
  if (!trusted || !derivedGiven) finishNodes(); // else the derived bits are the host's (`vocab_alloc_derived`)
  // Bookkeeping for the mask cache.
  eosPtr = allocZero(<usize>nEos << 2);
  let e: usize = 0;
  for (let id: u32 = firstEos; e < <usize>nEos; id++) { // the EOS ids, from the first one the pass above saw
    if (<u32>load<u8>(tokKindPtr + id) == K_EOS) {
      store<u32>(eosPtr + (e << 2), id);
      e++;
    }
  }
  words = (V + 31) >>> 5;
  maskBytes = <usize>words << 2;
  const ns = <usize>hdr(H_NSTATES);
  walkTrans = transBase;
  const nc = <usize>hdr(H_NCLASSES);
  for (let st: usize = 0; st < ns; st++) {
    if (!(flagsOf(<u32>st) & F_YIELD)) continue;
    for (let c: usize = 0; c < nc; c++) {
      if (<u32>load<u16>(walkTrans + ((st * nc + c) << 1)) != NONE16) {
        const copy = heap.alloc((ns * nc) << 1);
        memory.copy(copy, walkTrans, (ns * nc) << 1);
        for (let y: usize = 0; y < ns; y++) {
          if (flagsOf(<u32>y) & F_YIELD) memory.fill(copy + ((y * nc) << 1), 0xff, nc << 1);
        }
        walkTrans = copy;
        break;
      }
    }
    if (walkTrans != transBase) break;
  }
  stateMaskPtr = heap.alloc(ns << 2);
  memory.fill(stateMaskPtr, 0xff, ns << 2);
  const cap: usize = ns * 2 + 1;
  maskPtrsPtr = allocZero(cap << 2);
  maskHashPtr = allocZero(cap << 2);
  let ht: usize = 16;
  while (ht < cap * 2) ht <<= 1;
  htPtr = heap.alloc(ht << 2);
  memory.fill(htPtr, 0xff, ht << 2);
  htMask = <u32>ht - 1;
  vocabPhase = 2;
  const z = heap.alloc(maskBytes);
  memory.fill(z, 0, maskBytes);
  zeroMask = intern(z);
  return 0;
}

export function vocab_size(): i32 {
  return vocabPhase == 2 ? <i32>vocabSize : 0;
}

export function mask_words(): i32 {
  return vocabPhase == 2 ? <i32>words : 0;
}

/** Deepest trie node (= longest token in bytes); 0 before `vocab_ready`. */
export function vocab_max_depth(): i32 {
  return vocabPhase == 2 ? <i32>maxDepth : 0;
}

// ---- Mask words: bit `id & 31` of word `id >> 5` ----

// @ts-ignore: decorator
@inline export function setBit(out: usize, id: u32): void {
  const w = out + (<usize>(id >>> 5) << 2);
  store<u32>(w, load<u32>(w) | (<u32>1 << (id & 31)));
}

let trieMaskPtr: usize = 0;

/** The mask of every trie token (every text token), built on first use: walks that reject few ids copy it. */
export function trieMask(): usize {
  if (trieMaskPtr == 0) {
    trieMaskPtr = allocZero(maskBytes);
    setRange(trieMaskPtr, 0, nTrie);
  }
  return trieMaskPtr;
}

// ---- Plain subtrees ----

/**
 * Plain and text subtrees. Plain: the byte classes of the printable ASCII bytes but the quote and
 * the backslash (u8 per class, 1 = plain), and a bit per trie node set when its subtree (the node
 * included) has those bytes only (so plain classes only). Text: a bit per node set when every
 * token of its subtree, from the node's byte on, is the start of UTF-8 text of characters that are
 * neither controls (nor DEL) nor the quote or the backslash, the node's byte starting a character.
 * Both bits (and the heights below) depend on the tokens alone: a host may keep them for its next
 * instance (`vocab_alloc_derived`). A walk that reaches such a
 * node in a state that keeps itself on every plain class (plain), or that also reads any such text
 * back to itself (text: the inside of a JSON string), allows the whole subtree without stepping
 * it. On Llama 3, 77% of the 274,520 nodes lie in 15,384 plain subtrees.
 */
let plainClassPtr: usize = 0;
let plainBitsPtr: usize = 0;
let textBitsPtr: usize = 0;
/**
 * Per trie node (pushdown mode only), the bytes of the longest token of its subtree counted from
 * the node's own byte (254: 254 or more). A plain (text) subtree is also allowed whole from a state
 * whose run of plain (text) steps is as long (pushdown-masks.ts: a bounded string's positions).
 */
let heightsPtr: usize = 0;
let heightsWanted: bool = false;
/** The host wrote the derived bits (`vocab_alloc_derived`). */
let derivedGiven: bool = false;

/** The bytes a plain subtree is made of: printable ASCII but the quote and the backslash. */
// @ts-ignore: decorator
@inline function plainByte(b: u32): bool {
  return b - 0x20 < 0x5f && b != 0x22 && b != 0x5c;
}

/** Have `vocab_ready` record the nodes' heights (pushdown.ts, when it sets pushdown mode up). */
export function wantHeights(): void {
  heightsWanted = true;
}

/** Per byte class, whether it is a plain class (printable ASCII but `"` and `\`), for `plainSuccessor`. */
function plainClassTable(): void {
  plainClassPtr = allocZero(<usize>hdr(H_NCLASSES) + 1);
  for (let b: u32 = 0x20; b < 0x7f; b++) {
    if (b != 0x22 && b != 0x5c) store<u8>(plainClassPtr + <usize>load<u8>(byteClassPtr + b), 1);
  }
}

/** Per byte class of the tables, 1 when it is plain (`plainClassTable`). */
// @ts-ignore: decorator
@inline export function plainClasses(): usize {
  return plainClassPtr;
}

/** The state every plain class takes q to in `trans`, or NONE16 when they do not all go to one state. */
export function plainSuccessor(trans: usize, q: u32): u32 {
  const plain = plainClassPtr;
  const nc = hdr(H_NCLASSES);
  const row = trans + (<usize>(q * nc) << 1);
  let t: u32 = 0x10000; // none seen yet
  for (let c: u32 = 0; c < nc; c++) {
    if (load<u8>(plain + <usize>c) == 0) continue;
    const x = <u32>load<u16>(row + (<usize>c << 1));
    if (x == NONE16 || (t != 0x10000 && x != t)) return NONE16;
    t = x;
  }
  return t == 0x10000 ? NONE16 : t;
}

/**
 * The states of a UTF-8 reader of text characters (`textNext`): 0 between characters, 1..3 that many
 * continuation bytes to go, 4..7 the second byte of E0 (A0-BF), ED (80-9F), F0 (90-BF), F4 (80-8F).
 */
// @ts-ignore: decorator
@inline export const U8_STATES: u32 = 8;

/** The reader's next state after byte b in state u, or U8_STATES when b cannot come there. */
export function textNext(u: u32, b: u32): u32 {
  if (u == 0) {
    if (b < 0x80) return b >= 0x20 && b != 0x22 && b != 0x5c && b != 0x7f ? 0 : U8_STATES;
    if (b >= 0xc2 && b <= 0xdf) return 1;
    if (b == 0xe0) return 4;
    if (b == 0xed) return 5;
    if (b >= 0xe1 && b <= 0xef) return 2;
    if (b == 0xf0) return 6;
    if (b == 0xf4) return 7;
    if (b >= 0xf1 && b <= 0xf3) return 3;
    return U8_STATES;
  }
  if (b < 0x80 || b > 0xbf) return U8_STATES;
  if (u <= 3) return u - 1;
  if (u == 4) return b >= 0xa0 ? 1 : U8_STATES;
  if (u == 5) return b <= 0x9f ? 1 : U8_STATES;
  if (u == 6) return b >= 0x90 ? 2 : U8_STATES;
  return b <= 0x8f ? 2 : U8_STATES;
}

/**
 * The plain and text bits (and in pushdown mode the heights) are set, in one pass backwards (a
 * node's subtree comes after it). For text, each node gets the reader states from which its subtree
 * is valid (a bit each): its byte may come there and every child's subtree is valid from the state
 * after it; `acc[d]` gathers the children at depth d of the node to come.
 */
function finishNodes(): void {
  const bits = ((<usize>nNodes + 31) >>> 5) << 2;
  plainBitsPtr = allocZero(bits);
  textBitsPtr = allocZero(bits);
  // Heights only for the pushdown walks (pushdown-masks.ts), the ones that use them.
  const withHeights = heightsWanted;
  if (withHeights) heightsPtr = heap.alloc(<usize>nNodes);
  const acc = heap.alloc(<usize>maxDepth + 2 + 256);
  memory.fill(acc, 0xff, <usize>maxDepth + 2);
  const lead = acc + <usize>maxDepth + 2;
  const hacc = allocZero(<usize>maxDepth + 2); // per depth: the tallest child so far of the node to come
  const hts = heightsPtr;
  for (let b: u32 = 0; b < 256; b++) store<u8>(lead + b, <u8>(b - 0x80 < 0x40 ? U8_STATES : textNext(0, b)));
  // Locals only, bits gathered a word at a time: the pass runs once per load, mostly before V8 has
  // optimized it, where every global read and every call costs.
  const nodes = nodesPtr, pbits = plainBitsPtr, tbits = textBitsPtr;
  let bad = nNodes;
  let pw: u32 = 0, tw: u32 = 0;
  for (let i = nNodes - 1; i >= 1; i--) {
    const p = nodes + <usize>i * NODE;
    const w0 = load<u32>(p);
    const b = w0 & 0xff;
    const d = <usize>(w0 >>> 8);
    if (!plainByte(b)) bad = i;
    const kids = <u32>load<u8>(acc + d + 1);
    store<u8>(acc + d + 1, 0xff);
    if (withHeights) {
      const hk = <u32>load<u8>(hacc + d + 1);
      store<u8>(hacc + d + 1, 0);
      const h = hk < 254 ? hk + 1 : 254;
      store<u8>(hts + <usize>i, <u8>h);
      if (h > <u32>load<u8>(hacc + d)) store<u8>(hacc + d, <u8>h);
    }
    let v: u32;
    if (b - 0x80 < 0x40) {
      // A continuation byte (textNext spelled out): states 1..3 go down one, 4..7 take part of it.
      const k0 = kids & 1, k1 = (kids >>> 1) & 1, k2 = (kids >>> 2) & 1;
      v = (k0 << 1) | (k1 << 2) | (k2 << 3) | (b >= 0xa0 ? k1 << 4 : 0) | (b <= 0x9f ? k1 << 5 : 0) |
        (b >= 0x90 ? k2 << 6 : 0) | (b <= 0x8f ? k2 << 7 : 0);
    } else {
      v = (kids >>> <u32>load<u8>(lead + b)) & 1; // lead[b] = U8_STATES (bit 8 of kids is 0) when b cannot start a character
    }
    store<u8>(acc + d, <u8>(<u32>load<u8>(acc + d) & v));
    const bit: u32 = 1 << (i & 31);
    if (bad >= load<u32>(p, 4)) pw |= bit;
    if (v & 1) tw |= bit;
    if ((i & 31) == 0) {
      store<u32>(pbits + (<usize>(i >>> 5) << 2), pw);
      store<u32>(tbits + (<usize>(i >>> 5) << 2), tw);
      pw = 0;
      tw = 0;
    }
  }
  store<u32>(pbits, pw); // word 0 (node 0, the root, has no bit)
  store<u32>(tbits, tw);
  heap.free(hacc);
  heap.free(acc);
}

/** Whether node i's subtree is plain. */
// @ts-ignore: decorator
@inline export function plainNode(i: u32): bool {
  return (load<u32>(plainBitsPtr + (<usize>(i >>> 5) << 2)) & (<u32>1 << (i & 31))) != 0;
}

/** The bytes of the longest token under node i, from its byte on (254: 254 or more). */
// @ts-ignore: decorator
@inline export function nodeHeight(i: u32): u32 {
  return <u32>load<u8>(heightsPtr + <usize>i);
}

/** Whether node i's subtree is text. */
// @ts-ignore: decorator
@inline export function textNode(i: u32): bool {
  return (load<u32>(textBitsPtr + (<usize>(i >>> 5) << 2)) & (<u32>1 << (i & 31))) != 0;
}

/** Set the bits of trie entries [a, b) (their token ids, `trieIdsPtr`). */
// @ts-ignore: decorator
@inline export function setRange(out: usize, a: u32, b: u32): void {
  const ids = trieIdsPtr;
  for (; a < b; a++) setBit(out, load<u32>(ids + (<usize>a << 2)));
}

/** Clear the bits of trie entries [a, b). */
// @ts-ignore: decorator
@inline export function clearRange(out: usize, a: u32, b: u32): void {
  const ids = trieIdsPtr;
  for (; a < b; a++) {
    const id = load<u32>(ids + (<usize>a << 2));
    const w = out + (<usize>(id >>> 5) << 2);
    store<u32>(w, load<u32>(w) & ~(<u32>1 << (id & 31)));
  }
}

// ---- Distinct-mask store (sized by vocab_ready; filled by `intern`) ----

/**
 * Hash of a mask for `intern`: FNV-1a style over u64 words in two independent lanes (their multiplies
 * overlap; a mask is hashed once per state, so this is a visible part of a precompute), then the
 * tail words; the high half is folded in because the table index takes the low bits.
 */
function hashMask(p: usize): u32 {
  let a: u64 = 0xcbf29ce484222325;
  let b: u64 = 0x84222325cbf29ce4;
  const end = p + maskBytes;
  const end16 = p + (maskBytes & ~(<usize>15));
  for (; p < end16; p += 16) {
    a = (a ^ load<u64>(p)) * 0x100000001b3;
    b = (b ^ load<u64>(p, 8)) * 0x100000001b3;
  }
  for (; p < end; p += 4) a = (a ^ <u64>load<u32>(p)) * 0x100000001b3;
  const h = a ^ (b * 0x9e3779b97f4a7c15);
  return <u32>(h ^ (h >>> 32));
}

/** Index of the distinct mask equal to the fresh block `p` (the last allocation, freed if a copy). */
export function intern(p: usize): i32 {
  const h = hashMask(p);
  let pos = h & htMask;
  for (;;) {
    const e = load<i32>(htPtr + (<usize>pos << 2));
    if (e < 0) break;
    if (load<u32>(maskHashPtr + (<usize>e << 2)) == h && memory.compare(<usize>load<u32>(maskPtrsPtr + (<usize>e << 2)), p, maskBytes) == 0) {
      heap.free(p);
      return e;
    }
    pos = (pos + 1) & htMask;
  }
  const idx = nMasks++;
  if (nMasks > maskBlocks) maskBlocks = nMasks;
  store<u32>(maskPtrsPtr + (<usize>idx << 2), <u32>p);
  store<u32>(maskHashPtr + (<usize>idx << 2), h);
  store<i32>(htPtr + (<usize>pos << 2), <i32>idx);
  return <i32>idx;
}

/**
 * Index of the distinct mask equal to the `maskBytes` bytes at `src` (a scratch buffer, not
 * kept): a new mask is copied into block `nMasks` (a block left by `maskStoreTruncate`, else a new
 * one). The caller makes room in the index first (pushdown-masks.ts `pdaGrowMasks`).
 */
export function internCopy(src: usize): i32 {
  const h = hashMask(src);
  let pos = h & htMask;
  for (;;) {
    const e = load<i32>(htPtr + (<usize>pos << 2));
    if (e < 0) break;
    if (load<u32>(maskHashPtr + (<usize>e << 2)) == h && memory.compare(<usize>load<u32>(maskPtrsPtr + (<usize>e << 2)), src, maskBytes) == 0) return e;
    pos = (pos + 1) & htMask;
  }
  const idx = nMasks++;
  let p: usize;
  if (idx < maskBlocks) p = <usize>load<u32>(maskPtrsPtr + (<usize>idx << 2));
  else {
    p = heap.alloc(maskBytes);
    maskBlocks = nMasks;
    store<u32>(maskPtrsPtr + (<usize>idx << 2), <u32>p);
  }
  memory.copy(p, src, maskBytes);
  store<u32>(maskHashPtr + (<usize>idx << 2), h);
  store<i32>(htPtr + (<usize>pos << 2), <i32>idx);
  return <i32>idx;
}

/**
 * Forget every distinct mask from index `keep` on (pushdown mode's mask-cache clear): their blocks
 * stay allocated for the masks interned next. Masks below `keep` (the all-zero one) are kept.
 */
export function maskStoreTruncate(keep: u32): void {
  if (keep >= nMasks) return;
  nMasks = keep;
  memory.fill(htPtr, 0xff, (<usize>htMask + 1) << 2);
  for (let e: u32 = 0; e < keep; e++) {
    let pos = load<u32>(maskHashPtr + (<usize>e << 2)) & htMask;
    while (load<i32>(htPtr + (<usize>pos << 2)) >= 0) pos = (pos + 1) & htMask;
    store<i32>(htPtr + (<usize>pos << 2), <i32>e);
  }
}

// @ts-ignore: decorator
@inline export function maskAddr(idx: i32): usize {
  return <usize>load<u32>(maskPtrsPtr + (<usize>idx << 2));
}

/** The store re-allocated by pdaGrowMasks (pushdown masks are not bounded by nStates). */
// @ts-ignore: decorator
@inline export function setMaskStore(ptrs: usize, hashes: usize, table: usize, mask: u32): void {
  maskPtrsPtr = ptrs;
  maskHashPtr = hashes;
  htPtr = table;
  htMask = mask;
}
