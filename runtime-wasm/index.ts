/**
 * @fileoverview specc's WebAssembly runtime (AssemblyScript, built once into build/runtime.wasm).
 *
 * `specc compile` appends one active data segment holding a spec's tables at TABLE_BASE = 16 to
 * this module; the code below only reads them. It exports the numeric ABI of docs/abi.md (ABI
 * version 2, table format version 3) so that any host (JS, Python, Rust, ...) can run the
 * byte-level DFA for constrained decoding without JS glue: the module imports nothing. Tables are
 * trusted (the compiler wrote them and a host binding validates them once at load); the hot paths
 * (`step`, `m_feed`, `m_mask`, `m_commit`) are plain table loads with no allocation and no bounds
 * checks beyond the ones that keep reads inside the tables for arguments that come from the host.
 *
 * Token masks (ABI 2): the host attaches a vocabulary once (`vocab_alloc`, write the regions,
 * `vocab_ready`, which validates everything it was given). A state's mask is computed on first use
 * by one walk of the token trie (DFS order, dead subtrees skipped) and cached; identical masks are
 * stored once. `m_mask` is then one table load, and a mask is `ceil(V / 32)` i32 words, bit
 * `id & 31` of word `id >> 5` (XGrammar's layout).
 *
 * Pushdown mode (the last section): tables with a call table (a grammar compiled without a nesting
 * bound, compiler/grammar/pda.ts) run as a pushdown automaton whose configurations are hash-consed
 * into ids; every "state" of the matchers and exports is then a configuration id, and masks are
 * computed per configuration from per-state summaries. Tables without calls never enter that code.
 */

// ---- Table layout (docs/abi.md) ----------------------------------------------------------------

// @ts-ignore: decorator
@inline const TABLE_BASE: usize = 16;
// @ts-ignore: decorator
@inline const MAGIC: u32 = 0x43435053; // "SPCC"
// @ts-ignore: decorator
@inline const VERSION: u32 = 3; // table format version (the ABI version is abi_version())
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

/**
 * The dense transition table u16[nStates × nClasses], expanded on the heap at instantiation from
 * the compressed rows of table format 2 (a default target per state plus the classes that differ).
 * 0 when the tables are missing or a row is malformed (then `tables_ok()` is 0 too).
 */
let transBase: usize = 0;

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

/**
 * Matcher record, REC bytes (docs/abi.md): u32 state, u32 done (EOS committed), u32 tokens
 * committed in the current spec state (saturating at COUNT_MAX), u32 token budget (0 = none),
 * u32 history head (low 16 bits) | history length (high 16 bits), then a ring of HIST u32 entries
 * `state | count << 16 | done << 31`, one per committed token, for `m_rollback`.
 */
// @ts-ignore: decorator
@inline const REC: usize = 52; // 20 B of state + an 8-entry rollback ring
// @ts-ignore: decorator
@inline const R_DONE: usize = 4;
// @ts-ignore: decorator
@inline const R_COUNT: usize = 8;
// @ts-ignore: decorator
@inline const R_BUDGET: usize = 12;
// @ts-ignore: decorator
@inline const R_HIST: usize = 16;
// @ts-ignore: decorator
@inline const R_RING: usize = 20;
// @ts-ignore: decorator
@inline const HIST: u32 = 8;
// @ts-ignore: decorator
@inline const COUNT_MAX: u32 = 0x7fff;

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
  return 2;
}

function headerOk(): bool {
  return hdr(H_MAGIC) == MAGIC &&
    <u32>load<u16>(TABLE_BASE + H_VERSION) == VERSION &&
    <u32>load<u16>(TABLE_BASE + H_BOM) == BOM;
}

export function tables_ok(): i32 {
  return i32(headerOk() && transBase != 0);
}

/** Expands the compressed transition rows (see `transBase`); 0 if anything is out of range. */
function expandTrans(): usize {
  if (!headerOk()) return 0;
  const ns = <usize>hdr(H_NSTATES);
  const nc = <usize>hdr(H_NCLASSES);
  const total = <usize>load<u32>(TABLE_BASE + 8);
  const rows = <usize>load<u32>(TABLE_BASE + H_TRANS);
  if (ns == 0 || nc == 0 || nc > 256 || rows + (ns << 2) > total) return 0;
  const dense = heap.alloc((ns * nc) << 1);
  for (let st: usize = 0; st < ns; st++) {
    const ro = <usize>load<u32>(TABLE_BASE + rows + (st << 2));
    if (ro + 4 > total) return 0;
    const row = TABLE_BASE + ro;
    const def = <u32>load<u16>(row);
    const nExc = <usize>load<u16>(row + 2);
    if (ro + 4 + (nExc << 2) > total || (def != NONE16 && <usize>def >= ns)) return 0;
    const out = dense + ((st * nc) << 1);
    for (let c: usize = 0; c < nc; c++) store<u16>(out + (c << 1), <u16>def);
    for (let j: usize = 0; j < nExc; j++) {
      const c = <usize>load<u16>(row + 4 + (j << 2));
      const t = <u32>load<u16>(row + 6 + (j << 2));
      if (c >= nc || (t != NONE16 && <usize>t >= ns)) return 0;
      store<u16>(out + (c << 1), <u16>t);
    }
  }
  return dense;
}
transBase = expandTrans();

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
  return pdaMode ? <i32>initialCfg : <i32>hdr(H_INITIAL);
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
  if (pdaMode) return pdaStepExport(state, byte);
  if (!validState(state) || <u32>byte > 255) return -1;
  const n = next(<u32>state, <u32>byte, hdr(H_NCLASSES), transBase, region(H_CLASSMAP));
  return n == NONE16 ? -1 : <i32>n;
}

export function state_flags(state: i32): i32 {
  if (pdaMode) return <u32>state < cfCount && cfAccepting(<u32>state) ? <i32>F_ACCEPTING : 0;
  if (!validState(state)) return 0;
  return <i32>flagsOf(<u32>state);
}

/** Raw spec state of a state (NONE16 = none). */
// @ts-ignore: decorator
@inline function specOf(s: u32): u32 {
  return <u32>load<u16>(info(s), 2);
}

export function state_spec(state: i32): i32 {
  if (pdaMode) return -1;
  if (!validState(state)) return -1;
  const v = specOf(<u32>state);
  return v == NONE16 ? -1 : <i32>v;
}

export function state_env_next(state: i32): i32 {
  if (pdaMode) return -1;
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
  if (pdaMode) return 0;
  if (!validState(state)) return 0;
  return <i32>load<u16>(nextSet(<u32>state));
}

export function next_at(state: i32, i: i32): i32 {
  if (pdaMode) return -1;
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

// ---- Vocabulary (ABI 2) ---------------------------------------------------------------------------

/** Token kinds (`tok_kind` region). */
// @ts-ignore: decorator
@inline const K_TEXT: u32 = 0;
// @ts-ignore: decorator
@inline const K_SPECIAL: u32 = 1;
// @ts-ignore: decorator
@inline const K_EOS: u32 = 2;
/** Trie node record: u32 `byte | depth << 8` (a class instead of the byte after `vocab_ready`),
 * u32 skip (index of the first node after the subtree), u32 first index into `trie_ids`. */
// @ts-ignore: decorator
@inline const NODE: usize = 12;
/** Limits that keep every size computation inside 32 bits. */
// @ts-ignore: decorator
@inline const MAX_VOCAB: u32 = 1 << 24;
// @ts-ignore: decorator
@inline const MAX_NODES: u32 = 1 << 24;
// @ts-ignore: decorator
@inline const MAX_BYTES: u32 = 1 << 28;
/** Budget-walk tag of a path that has already entered a new spec state. */
// @ts-ignore: decorator
@inline const RELEASED: u32 = 0xffffffff;
// @ts-ignore: decorator
@inline const INF: u32 = 0xfffffffe;

/** 0 = no vocabulary, 1 = regions allocated (host writing), 2 = validated and in use. */
let vocabPhase: i32 = 0;
let vocabSize: u32 = 0;
let nNodes: u32 = 0;
let nTrie: u32 = 0;
let nBytes: u32 = 0;
let nodesPtr: usize = 0;
let trieIdsPtr: usize = 0;
let tokOffPtr: usize = 0;
let tokBytesPtr: usize = 0;
let tokKindPtr: usize = 0;
let words: u32 = 0;
let maskBytes: usize = 0;
let maxDepth: u32 = 0;
/** Per-depth walk stack: u32 transition-row address (and, for budget walks, a u32 tag). */
let stackPtr: usize = 0;
let tagPtr: usize = 0;
let eosPtr: usize = 0;
let nEos: u32 = 0;
/** i32[nStates]: distinct-mask index of each state's mask, -1 = not computed yet. */
let stateMaskPtr: usize = 0;
/** i32[nStates]: the same for the budget-exhausted masks (allocated on first use). */
let budgetMaskPtr: usize = 0;
/** u32[nStates]: bytes to the nearest accepting state or new spec state (budget walks). */
let distPtr: usize = 0;
/** Distinct masks: pointers and hashes (room for 2 × nStates + 1), open-addressing index. */
let maskPtrsPtr: usize = 0;
let maskHashPtr: usize = 0;
let nMasks: u32 = 0;
let htPtr: usize = 0;
let htMask: u32 = 0;
let zeroMask: i32 = -1;
let outPtr: usize = 0;
let outCap: usize = 0;
/**
 * Transitions the trie walks read: the tables' own, or (only for tables whose yield states have
 * transitions, which specc never writes) a copy with those rows emptied, so that a walk needs no
 * per-node yield check.
 */
let walkTrans: usize = 0;

/** Allocate a zeroed block (the stub allocator hands out fresh, but not necessarily zero, memory). */
function allocZero(n: usize): usize {
  const p = heap.alloc(n > 0 ? n : 4);
  memory.fill(p, 0, n);
  return p;
}

/**
 * Reserve the vocabulary regions. `vocabSize` token ids, `nodes` trie nodes (the root included),
 * `trieTokens` ids listed in the trie, `bytes` token bytes in all. 0, or -1 (no valid tables, a
 * vocabulary already attached, or sizes out of range); the host then writes the regions given by
 * `vocab_region` and calls `vocab_ready`.
 */
export function vocab_alloc(size: i32, nodes: i32, trieTokens: i32, bytes: i32): i32 {
  if (!tables_ok() || vocabPhase != 0) return -1;
  if (size < 1 || <u32>size > MAX_VOCAB || nodes < 1 || <u32>nodes > MAX_NODES) return -1;
  if (trieTokens < 0 || trieTokens > size || bytes < 0 || <u32>bytes > MAX_BYTES) return -1;
  vocabSize = <u32>size;
  nNodes = <u32>nodes;
  nTrie = <u32>trieTokens;
  nBytes = <u32>bytes;
  nodesPtr = allocZero((<usize>nNodes + 1) * NODE);
  trieIdsPtr = allocZero(<usize>nTrie << 2);
  tokOffPtr = allocZero((<usize>vocabSize + 1) << 2);
  tokBytesPtr = allocZero(<usize>nBytes);
  tokKindPtr = allocZero(<usize>vocabSize);
  vocabPhase = 1;
  return 0;
}

/** Address of vocabulary region `k` (0 nodes, 1 trie_ids, 2 tok_off, 3 tok_bytes, 4 tok_kind), 0 if none. */
export function vocab_region(k: i32): i32 {
  if (vocabPhase == 0) return 0;
  switch (k) {
    case 0: return <i32>nodesPtr;
    case 1: return <i32>trieIdsPtr;
    case 2: return <i32>tokOffPtr;
    case 3: return <i32>tokBytesPtr;
    case 4: return <i32>tokKindPtr;
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

/**
 * Validate what the host wrote and make the vocabulary usable. 0, or a negative code (docs/abi.md):
 * -1 not allocated or already ready, -2 token offsets, -3 token kinds, -4 trie shape (depths,
 * skips), -5 trie token ranges, -6 a trie entry (id out of range, not a text token, listed twice,
 * or bytes that differ from the node's path), -7 a text token missing from the trie.
 */
export function vocab_ready(): i32 {
  if (vocabPhase != 1) return -1;
  const V = vocabSize;
  const n = nNodes;
  // Token offsets and kinds.
  if (load<u32>(tokOffPtr) != 0 || load<u32>(tokOffPtr + (<usize>V << 2)) != nBytes) return -2;
  for (let id: u32 = 0; id < V; id++) {
    if (load<u32>(tokOffPtr + (<usize>id << 2)) > load<u32>(tokOffPtr + (<usize>(id + 1) << 2))) return -2;
  }
  nEos = 0;
  for (let id: u32 = 0; id < V; id++) {
    const k = <u32>load<u8>(tokKindPtr + id);
    if (k > K_EOS) return -3;
    if (k == K_EOS) nEos++;
  }
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
      if (id >= V || <u32>load<u8>(tokKindPtr + id) != K_TEXT) { bad = true; break; }
      const w = seen + (<usize>(id >>> 5) << 2);
      const bit: u32 = 1 << (id & 31);
      if (load<u32>(w) & bit) { bad = true; break; }
      store<u32>(w, load<u32>(w) | bit);
      const off = load<u32>(tokOffPtr + (<usize>id << 2));
      const len = load<u32>(tokOffPtr + (<usize>(id + 1) << 2)) - off;
      if (len != d || (d > 0 && memory.compare(tokBytesPtr + off, path, <usize>d) != 0)) { bad = true; break; }
    }
  }
  if (bad) return -6;
  for (let id: u32 = 0; id < V; id++) {
    if (<u32>load<u8>(tokKindPtr + id) == K_TEXT && !(load<u32>(seen + (<usize>(id >>> 5) << 2)) & (<u32>1 << (id & 31)))) return -7;
  }
  // Ready: bytes become classes, bookkeeping for the mask cache.
  const classmap = region(H_CLASSMAP);
  for (let i: u32 = 1; i < n; i++) {
    const p = nodesPtr + <usize>i * NODE;
    const w0 = load<u32>(p);
    store<u32>(p, (w0 & 0xffffff00) | <u32>load<u8>(classmap + (w0 & 0xff)));
  }
  eosPtr = allocZero(<usize>nEos << 2);
  let e: usize = 0;
  for (let id: u32 = 0; id < V; id++) {
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

// ---- Token masks ----------------------------------------------------------------------------------

// @ts-ignore: decorator
@inline function setBit(out: usize, id: u32): void {
  const w = out + (<usize>(id >>> 5) << 2);
  store<u32>(w, load<u32>(w) | (<u32>1 << (id & 31)));
}

/** Set the bits of trie entries [a, b). */
// @ts-ignore: decorator
@inline function setRange(out: usize, a: u32, b: u32): void {
  const ids = trieIdsPtr;
  for (; a < b; a++) setBit(out, load<u32>(ids + (<usize>a << 2)));
}

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

function walkInit(): void {
  rejPtr = heap.alloc((REJ_RANGES + 1) << 3) + 8;
  rejEnd = rejPtr + (REJ_RANGES << 3);
  store<u32>(rejPtr - 4, 0xffffffff);
  textMaskPtr = allocZero(maskBytes);
  setRange(textMaskPtr, 0, nTrie);
  const ns = <usize>hdr(H_NSTATES);
  memoPtr = allocZero(ns << 6);
  headPtr = allocZero(ns << 2);
  poolPtr = heap.alloc(<usize>POOL_WORDS << 2);
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
    const t = <u32>load<u16>(row0 + (<usize>(load<u32>(q) & 0xff) << 1));
    if (t == NONE16) {
      r = rejectRange(r, load<u32>(q, 8), load<u32>(nodes + <usize>sk * NODE, 8));
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
          const t2 = <u32>load<u16>(row + (<usize>(w0 & 0xff) << 1));
          if (t2 == NONE16) {
            const nx = nodes + <usize>load<u32>(p, 4) * NODE;
            r = rejectRange(r, load<u32>(p, 8), load<u32>(nx, 8));
            p = nx;
            continue;
          }
          store<u32>(stack + (d << 2), <u32>trans + t2 * rowBytes);
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
    const ids = trieIdsPtr;
    for (let x = rej; x < r; x += 8) {
      const b = load<u32>(x, 4);
      for (let a = load<u32>(x); a < b; a++) {
        const id = load<u32>(ids + (<usize>a << 2));
        const w = out + (<usize>(id >>> 5) << 2);
        store<u32>(w, load<u32>(w) & ~(<u32>1 << (id & 31)));
      }
    }
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
function ensureDist(): void {
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
    const t = <u32>load<u16>(row + (<usize>(w0 & 0xff) << 1));
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
function intern(p: usize): i32 {
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
  store<u32>(maskPtrsPtr + (<usize>idx << 2), <u32>p);
  store<u32>(maskHashPtr + (<usize>idx << 2), h);
  store<i32>(htPtr + (<usize>pos << 2), <i32>idx);
  return <i32>idx;
}

/** Distinct-mask index of state `s` (normal or budget-exhausted), computed on first use. */
function maskIndex(s: u32, budget: bool): i32 {
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

// @ts-ignore: decorator
@inline function maskAddr(idx: i32): usize {
  return <usize>load<u32>(maskPtrsPtr + (<usize>idx << 2));
}

/** Distinct-mask index of state `state`'s mask (computed on first use); -1 without vocabulary or for an invalid state. */
export function mask_id(state: i32): i32 {
  if (pdaMode) return vocabPhase == 2 && <u32>state < cfCount ? pdaMaskOf(<u32>state) : -1;
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
  memory.fill(r, 0, REC);
  store<u32>(r, pdaMode ? initialCfg : hdr(H_INITIAL));
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
  return <i32>load<u32>(rec(m));
}

/** Restore a state snapshot; also clears the done flag, the token counter and the history. */
export function m_set_state(m: i32, s: i32): i32 {
  const r = rec(m);
  if (pdaMode ? <u32>s >= cfCount : !validState(s)) return -1;
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
  if (pdaMode || load<u32>(r, R_DONE) || !(flagsOf(s) & F_YIELD)) return -1;
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
  return pdaMode ? 0 : i32((flagsOf(s) & F_YIELD) != 0);
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
  const s = load<u32>(r);
  if (pdaMode) return pdaMaskOf(s);
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


// @ts-ignore: decorator
@inline const H_CALLS: usize = 52;
// @ts-ignore: decorator
@inline const H_NCALLS: usize = 56;
/** Most stack frames a configuration may hold (with need: see visitPair and pdaStep). */
// @ts-ignore: decorator
@inline const PDA_MAX_STACK: u32 = 1024;
/** Most (state, stack) pairs one closure may visit (a byte whose closure is larger is not allowed). */
// @ts-ignore: decorator
@inline const PDA_MAX_PAIRS: u32 = 256;
// @ts-ignore: decorator
@inline const EMPTY_STACK: u32 = 0;
// @ts-ignore: decorator
@inline const SYM_BASE: u32 = 1;
/** Per-state kind bits: reads bytes, has call edges, accepting (= may end its machine). */
// @ts-ignore: decorator
@inline const SK_READS: u32 = 1;
// @ts-ignore: decorator
@inline const SK_CALLS: u32 = 2;
// @ts-ignore: decorator
@inline const SK_ACC: u32 = 4;
/** Pair-set flags: the empty stack was popped (accept), SYM_BASE was popped (escape). */
// @ts-ignore: decorator
@inline const SF_ACCEPT: u32 = 1;
// @ts-ignore: decorator
@inline const SF_ESCAPE: u32 = 2;
/** A pair set: u32 count, u32 flags, u64 pairs[PDA_MAX_PAIRS] (`state << 32 | node`, sorted). */
// @ts-ignore: decorator
@inline const SET_BYTES: usize = 8 + (<usize>PDA_MAX_PAIRS << 3);
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
// @ts-ignore: decorator
@inline const EMPTY_KEY: u64 = 0xffffffffffffffff;
/** Pair-mask cache entry: u64 pair, i32 mask index, u32 most pairs one closure of its walk visited. */
// @ts-ignore: decorator
@inline const PM_REC: usize = 16;

let pdaMode: bool = false;
let callIdx: usize = 0;
let callPairsAt: usize = 0;
/** u8 per state: SK_* bits. */
let stKind: usize = 0;

let pnBase: usize = 0;
let pnCount: u32 = 0;
let pnCap: u32 = 0;
let pnHt: usize = 0;
let pnHtMask: u32 = 0;

let cfBase: usize = 0;
let cfCount: u32 = 0;
let cfCap: u32 = 0;
let cfHt: usize = 0;
let cfHtMask: u32 = 0;
let pairPool: usize = 0;
let pairUsed: u32 = 0;
let pairCap: u32 = 0;
let initialCfg: u32 = 0;

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
let needSeen: u32 = 0;
/** Two pair sets for feeding and committing. */
let setA: usize = 0;
let setB: usize = 0;

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
let pmHt: usize = 0;
let pmHtMask: u32 = 0;
let pmCount: u32 = 0;
let lastPairMax: u32 = 0;

// @ts-ignore: decorator
@inline function mix(h: u32): u32 {
  h ^= h >>> 16;
  h *= 0x85ebca6b;
  h ^= h >>> 13;
  h *= 0xc2b2ae35;
  return h ^ (h >>> 16);
}

// @ts-ignore: decorator
@inline function hashPair(x: u64): u32 {
  return mix(<u32>x * 0x9e3779b1 + <u32>(x >>> 32));
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
@inline function pnDepth(n: u32): u32 {
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
@inline function cfRec(c: u32): usize {
  return cfBase + <usize>c * CF_REC;
}

// @ts-ignore: decorator
@inline function cfAccepting(c: u32): bool {
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

/** Copy configuration `c` into pair set `set`. */
function cfLoad(c: u32, set: usize): void {
  const r = cfRec(c);
  const word = load<u32>(r, 4);
  const n = word & 0x7fffffff;
  store<u32>(set, n);
  store<u32>(set, word >>> 31 ? SF_ACCEPT : 0, 4);
  memory.copy(set + 8, pairPool + (<usize>load<u32>(r) << 3), <usize>n << 3);
}

// ---- Closure ----

// @ts-ignore: decorator
@inline function needOf(q: u32): u32 {
  return load<u32>(needPtr + (<usize>q << 2));
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
function pdaStep(src: usize, cls: u32, dst: usize): u32 {
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
    if (<u32>load<u8>(kinds + <usize>t) == SK_READS && needOf(t) <= needOf(q)) {
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

/** A step result that is a configuration: within the pair limit, and some pair or accept. */
// @ts-ignore: decorator
@inline function pdaAlive(c: u32, set: usize): bool {
  return c - 1 < PDA_MAX_PAIRS && (load<u32>(set) != 0 || (load<u32>(set, 4) & SF_ACCEPT) != 0);
}

/**
 * Set up pushdown mode when the tables carry a call table: validate it, classify the states, and
 * intern the initial configuration (id 0). Returns false for a malformed call table.
 */
function pdaInit(): bool {
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
  store<u32>(setA, 1);
  store<u32>(setA, 0, 4);
  store<u64>(setA, (<u64>hdr(H_INITIAL) << 32) | <u64>EMPTY_STACK, 8);
  if (!pdaAlive(pdaStep(setA, ALL_CLASSES, setB), setB)) return false;
  initialCfg = cfIntern(setB);
  pdaMode = true;
  return true;
}

/**
 * need(q) for every state, as pda.ts `pdaNeed`: 0 at an end state, a byte edge costs nothing, a
 * call edge [start, ret] costs max(1 + need(start), need(ret)); a fixpoint from "unknown".
 */
function computeNeed(): void {
  const ns = hdr(H_NSTATES);
  const nc = hdr(H_NCLASSES);
  const INF_NEED: u32 = 0x3fffffff;
  for (let q: u32 = 0; q < ns; q++) store<u32>(needPtr + (<usize>q << 2), INF_NEED);
  let changed = true;
  while (changed) {
    changed = false;
    for (let q: u32 = 0; q < ns; q++) {
      let best: u32 = flagsOf(q) & F_ACCEPTING ? 0 : needOf(q);
      for (let c: u32 = 0; c < nc && best > 0; c++) {
        const t = <u32>load<u16>(transBase + (<usize>(q * nc + c) << 1));
        if (t != NONE16 && needOf(t) < best) best = needOf(t);
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
  }
}

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
  pmHt = heap.alloc(1024 * PM_REC);
  for (let i: usize = 0; i < 1024; i++) store<u64>(pmHt + i * PM_REC, EMPTY_KEY);
  pmHtMask = 1023;
  pmCount = 0;
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
  memory.copy(ptrs, maskPtrsPtr, <usize>nMasks << 2);
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
  maskPtrsPtr = ptrs;
  maskHashPtr = hashes;
  htPtr = table;
  htMask = m;
  maskCap = cap;
}

/** Intern a copy of the mask at `src` (a scratch buffer); returns its distinct-mask index. */
function pdaInternCopy(src: usize): i32 {
  if (nMasks + 1 > maskCap) pdaGrowMasks(maskCap << 1);
  const p = heap.alloc(maskBytes); // the last allocation: `intern` frees it again if it is a copy
  memory.copy(p, src, maskBytes);
  return intern(p);
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
  needSeen = needOf(q);
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
  let pos = hashPair(x) & pmHtMask;
  for (;;) {
    const e = pmHt + <usize>pos * PM_REC;
    const k = load<u64>(e);
    if (k == EMPTY_KEY) break;
    if (k == x) {
      lastPairMax = load<u32>(e, 12);
      return load<i32>(e, 8);
    }
    pos = (pos + 1) & pmHtMask;
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
  if ((pmCount + 1) << 1 > pmHtMask + 1) pdaGrowPairCache();
  pos = hashPair(x) & pmHtMask;
  while (load<u64>(pmHt + <usize>pos * PM_REC) != EMPTY_KEY) pos = (pos + 1) & pmHtMask;
  const e = pmHt + <usize>pos * PM_REC;
  store<u64>(e, x);
  store<i32>(e, idx, 8);
  store<u32>(e, maxc, 12);
  pmCount++;
  lastPairMax = maxc;
  return idx;
}

function pdaGrowPairCache(): void {
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

/** Distinct-mask index of configuration `c` (computed on first use). Needs a vocabulary. */
function pdaMaskOf(c: u32): i32 {
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
function pdaCommit(r: usize, id: i32, kind: u32): i32 {
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
  const count = load<u32>(r, R_COUNT);
  pdaHistPush(r, count < COUNT_MAX);
  store<u32>(r, <u32>t);
  store<u32>(r, min(count + 1, COUNT_MAX), R_COUNT);
  return 0;
}

/** m_rollback in pushdown mode (`0 < n ≤` the history length). */
function pdaRollback(r: usize, n: u32): void {
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
function pdaStepExport(state: i32, byte: i32): i32 {
  if (<u32>state >= cfCount || <u32>byte > 255) return -1;
  cfLoad(<u32>state, setA);
  const n = pdaStep(setA, <u32>load<u8>(region(H_CLASSMAP) + <usize>byte), setB);
  return pdaAlive(n, setB) ? <i32>cfIntern(setB) : -1;
}

/** `m_feed` in pushdown mode (the matcher is not done): 0, or -(1 + i) with the matcher unchanged. */
function pdaFeed(r: usize, p: usize, len: usize): i32 {
  const t = pdaRun(load<u32>(r), p, len);
  if (t < 0) return t;
  store<u32>(r, <u32>t);
  store<u32>(r, 0, R_HIST);
  return 0;
}

/** `precompute_all` in pushdown mode: every state's summary and the masks of the configurations known so far. */
function pdaPrecompute(): i32 {
  pdaVocabInit();
  const ns = hdr(H_NSTATES);
  for (let q: u32 = 0; q < ns; q++) {
    if ((<u32>load<u8>(stKind + <usize>q) & SK_READS) && load<u32>(symBasePtr + (<usize>q << 2)) == 0) pdaSummarize(q);
  }
  const nc = cfCount;
  for (let c: u32 = 0; c < nc; c++) pdaMaskOf(c);
  return <i32>nMasks;
}

// ---- Pushdown exports ----

/** 1 when the tables carry call edges (pushdown mode: states are configuration ids), else 0. */
export function pda_mode(): i32 {
  return i32(pdaMode);
}

/** Configurations interned so far (pushdown mode; valid ids are `[0, config_count())`), 0 otherwise. */
export function config_count(): i32 {
  return pdaMode ? <i32>cfCount : 0;
}

if (transBase != 0 && !pdaInit()) transBase = 0;
