/**
 * @fileoverview The friendly TypeScript layer over a specc .wasm (docs/abi.md, ABI version 2):
 * `Spec` loads and validates a module (and attaches a token vocabulary), `Matcher` follows one LLM
 * output through the spec's byte-level DFA, token by token or text by text.
 *
 * The .wasm imports nothing; it is instantiated through one compiled runtime that every spec shares
 * (instantiate.ts), with the spec's tables written into a fresh memory. Its tables are validated once, with
 * `parseTables`, when the spec is loaded; a vocabulary is turned into a DFS-ordered token trie here
 * and copied into the module, which validates it again. After that every call is a thin wrapper
 * over an export: `fillMask` is one export call plus one 16 KB `Int32Array.set` from a cached view
 * of the module's memory, `commit` one export call. Offsets reported by `feed`/`feedText` are byte
 * offsets into the UTF-8 encoding of the input.
 *
 * A pushdown grammar's module (tables with call edges, docs/abi.md "Pushdown mode") works the same
 * way, except that its states are the runtime's configuration ids (a set of DFA states with their
 * stacks, created as runs go deeper): `Spec.pushdown` says so, `configCount` bounds the valid ids,
 * `forcedBytes` asks the runtime for each step instead of reading the DFA, and token budgets and
 * baked masks are not available.
 */

import { SpecError } from "../compiler/diagnostics.js";
import type { Engine } from "../compiler/trace.js";
import { HEADER_SIZE, parseTables, TABLE_BASE, type TableSpecState } from "../compiler/tables.js";
import type { ByteDfa } from "../compiler/ir.js";
import type { FlatVocabulary } from "./vocab.js";
import { readBytes, sourceName, type ByteSource } from "./source.js";
import { sortTextTokens } from "./token-order.js";
import { bindTokenMarkers, TokenMarkerError } from "./token-markers.js";
import { decodeBytes, encodeText, tokenMarkers, type TokenMarker } from "../compiler/tokens.js";
import { sealProblem } from "../compiler/seal.js";
import { instantiateSpec, zeroRange, type MemorySlot } from "./instantiate.js";
import { installSummaries, keepSummaries, summaryKeys, type Summary, type SummaryKeys } from "./summaries.js";

export const SUPPORTED_ABI_VERSION = 2;

/** The numeric exports of a specc .wasm (all i32). */
export interface SpecExports {
  memory: WebAssembly.Memory;
  abi_version(): number;
  tables_ok(): number;
  buf_ptr(): number;
  buf_cap(): number;
  state_count(): number;
  class_count(): number;
  initial_state(): number;
  spec_count(): number;
  step(state: number, byte: number): number;
  state_flags(state: number): number;
  state_spec(state: number): number;
  state_env_next(state: number): number;
  next_count(state: number): number;
  next_at(state: number, i: number): number;
  spec_marker_ptr(i: number): number;
  spec_marker_len(i: number): number;
  spec_name_ptr(i: number): number;
  spec_name_len(i: number): number;
  spec_flags(i: number): number;
  m_new(): number;
  m_reset(m: number): void;
  m_state(m: number): number;
  m_set_state(m: number, s: number): number;
  m_feed(m: number, ptr: number, len: number): number;
  m_feed_env(m: number, ptr: number, len: number): number;
  m_spec(m: number): number;
  m_accepting(m: number): number;
  m_yielding(m: number): number;
  // ABI 2: vocabulary, masks, tokens.
  vocab_alloc(size: number, nodes: number, trieTokens: number, bytes: number): number;
  vocab_region(k: number): number;
  vocab_ready(): number;
  /** `vocab_ready` for a trie a runtime has checked before (docs/abi.md); absent in older runtimes. */
  vocab_adopt?(): number;
  /** Reserve the nodes' derived bits for `vocab_adopt` to take as written (docs/abi.md); absent in older runtimes. */
  vocab_alloc_derived?(): number;
  /** `vocab_alloc` without zeroing, at addresses that depend on the sizes alone (docs/abi.md); absent in older runtimes. */
  vocab_reserve?(size: number, nodes: number, trieTokens: number, bytes: number): number;
  /** The heap's top before the vocabulary (0) and now (1) (docs/abi.md); absent in older runtimes. */
  heap_mark?(k: number): number;
  /** A pushdown state's summary, to keep (docs/abi.md, "Summaries"); absent in older runtimes. */
  sym_get?(q: number, k: number): number;
  /** Give a pushdown state a kept summary; absent in older runtimes. */
  sym_install?(q: number, src: number, deepest: number, pairs: number): number;
  /** The per-token text counts, to keep (docs/abi.md, "Text counts"); absent in older runtimes. */
  text_counts?(): number;
  /** Room for kept text counts; absent in older runtimes. */
  text_counts_install?(): number;
  /** The root's text exits, to keep (docs/abi.md, "Text exits"); absent in older runtimes. */
  text_exits?(): number;
  /** Room for kept text exits; absent in older runtimes. */
  text_exits_install?(n: number): number;
  vocab_size(): number;
  vocab_max_depth(): number;
  mask_words(): number;
  mask_id(state: number): number;
  mask_ptr(state: number): number;
  mask_at(idx: number): number;
  mask_count(): number;
  precompute_all(): number;
  /** Optional (older modules lack it): install a baked mask. */
  mask_install?(state: number, src: number): number;
  out_ptr(bytes: number): number;
  m_done(m: number): number;
  m_count(m: number): number;
  m_set_budget(m: number, k: number): number;
  m_budget(m: number): number;
  m_mask(m: number): number;
  m_mask_ptr(m: number): number;
  m_fill_mask(m: number, out: number): number;
  fill_masks(handles: number, n: number, out: number): number;
  m_commit(m: number, id: number): number;
  m_rollback(m: number, n: number): number;
  m_history(m: number): number;
  /** Pushdown mode (table format 3 with call edges): 1, else 0. Every state argument is then a configuration id. */
  pda_mode?(): number;
  /** Pushdown mode: one past the highest configuration id so far (valid ids are `[config_base(), config_count())`); 0 otherwise. */
  config_count?(): number;
  /** Pushdown mode: the lowest valid configuration id (ids below it are from before a cache compaction); 0 otherwise. */
  config_base?(): number;
  /** The pushdown cache limit in bytes (docs/abi.md "Cache limit"); `≤ 0` = the default, 64 MiB. Returns the previous one. */
  cache_set_limit?(bytes: number): number;
  cache_limit?(): number;
  /** Bytes the pushdown cache counts now (configurations, stack nodes, masks). */
  cache_bytes?(): number;
  /** Mask-cache clears so far (compactions included). */
  cache_evictions?(): number;
  /** Compactions of the configurations so far (each starts a new generation of configuration ids). */
  cache_compactions?(): number;
}

const FUNCTION_EXPORTS = [
  "abi_version", "tables_ok", "buf_ptr", "buf_cap", "state_count", "class_count", "initial_state",
  "spec_count", "step", "state_flags", "state_spec", "state_env_next", "next_count", "next_at",
  "spec_marker_ptr", "spec_marker_len", "spec_name_ptr", "spec_name_len", "spec_flags", "m_new",
  "m_reset", "m_state", "m_set_state", "m_feed", "m_feed_env", "m_spec", "m_accepting", "m_yielding",
] as const;

/** Exports added by ABI version 2 (checked after the version, so an old module gets the version message). */
const FUNCTION_EXPORTS_V2 = [
  "vocab_alloc", "vocab_region", "vocab_ready", "vocab_size", "vocab_max_depth", "mask_words",
  "mask_id", "mask_ptr", "mask_at", "mask_count", "precompute_all", "out_ptr", "m_done", "m_count",
  "m_set_budget", "m_budget", "m_mask", "m_mask_ptr", "m_fill_mask", "fill_masks", "m_commit",
  "m_rollback", "m_history",
] as const;

/** Per-state flags (docs/abi.md). */
export const STATE_ACCEPTING = 1;
export const STATE_YIELD = 2;
export const STATE_AFTER_ENV = 4;

/** Token kinds in the module's `tok_kind` region (docs/abi.md). */
export const TOKEN_TEXT = 0;
export const TOKEN_SPECIAL = 1;
export const TOKEN_EOS = 2;

/** How many committed tokens `Matcher.rollback` can undo at most. */
export const MAX_ROLLBACK = 8;
/** Largest per-spec-state token budget. */
export const MAX_BUDGET = 0x7fff;

export type FeedResult = { ok: true; status: "continue" | "yield" } | { ok: false; offset: number };
export type CommitStatus = "continue" | "yield" | "done" | "rejected";
const COMMIT_STATUS: readonly CommitStatus[] = ["continue", "yield", "done", "rejected"];

/**
 * What a vocabulary must offer to be attached (`Vocabulary` of ./vocab.ts has it): the size, the
 * EOS ids and the flat layout (EOS ids are special there too).
 */
export interface VocabularySource {
  readonly size: number;
  readonly eos: readonly number[];
  flat(): FlatVocabulary;
  /** Optional: the text (non-special) ids sorted by bytes, as bindings/token-order.ts sorts them. */
  textOrder?(): Uint32Array;
  /** Optional: the id of the token that is exactly this text (binds `(:token ...)` markers). */
  tokenId?(text: string): number | undefined;
}

export interface LoadOptions {
  /** The token vocabulary masks and `commit` are about. Without it only text feeding works. */
  vocab?: VocabularySource;
  /**
   * Token ids the masks cover, e.g. the model's logits size when it is padded beyond the
   * tokenizer (Qwen3: 151,669 tokens, 151,936 logits); ids from `vocab.size` on are never allowed.
   * Default `vocab.size`.
   */
  vocabSize?: number;
  /** Compute the mask of every state at load time instead of on first use (default false). */
  precompute?: boolean;
  /**
   * Pushdown grammars: the byte limit of the runtime's cache of configurations, stack nodes and
   * masks (docs/abi.md "Cache limit"; default 64 MiB). Above it the masks are cleared and the
   * configurations no matcher holds are dropped, which renumbers the rest: `Matcher.state`
   * snapshots taken before that are refused.
   */
  cacheLimit?: number;
}

export interface CompileOptions extends LoadOptions {
  /** File name used in diagnostics. */
  file?: string;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();
/** A .wasm that cannot be used: `E0602 bad wasm file`. */
const badWasm = (message: string): SpecError => new SpecError("E0602", message, null);
const toBytes = (text: string | Uint8Array): Uint8Array => (typeof text === "string" ? encoder.encode(text) : text);

/** Text handed to `feedText` that the spec does not allow; `offset` is a UTF-8 byte offset. */
export class NonconformingTextError extends Error {
  constructor(
    readonly offset: number,
    message: string,
  ) {
    super(message);
    this.name = "NonconformingTextError";
  }
}

// ---- The token trie ------------------------------------------------------------------------------

/** The flat arrays of docs/abi.md's vocabulary regions. */
export interface TokenTrie {
  /** Trie nodes including the root (node 0). */
  nNodes: number;
  /** `3 × (nNodes + 1)` u32: `byte | depth << 8`, skip, first index into `trieIds` (last record: sentinel). */
  nodes: Uint32Array;
  /** Text-token ids in DFS order of their nodes (several ids can share a node). */
  trieIds: Uint32Array;
  /** `vocabSize + 1` byte offsets into `tokBytes`. */
  tokOff: Uint32Array;
  tokBytes: Uint8Array;
  /** Per id: 0 text, 1 special (never allowed), 2 EOS (allowed exactly when the state accepts). */
  tokKind: Uint8Array;
  /** Longest token in bytes. */
  maxDepth: number;
}

/** A vocabulary as the runtime takes it, without the trie nodes (the runtime can build those). */
export type TokenLayout = Omit<TokenTrie, "nNodes" | "nodes" | "maxDepth">;

/**
 * The regions of docs/abi.md but the trie nodes: token kinds, offsets (padded to `vocabSize`), bytes,
 * and the text ids sorted by bytes (the vocabulary's own order when it has one for this token set).
 * Ids from `vocab.size` to `vocabSize - 1` are special (never allowed).
 */
export function tokenLayout(vocab: VocabularySource, vocabSize = vocab.size): TokenLayout {
  const { bytes, offsets, special } = vocab.flat();
  const size = vocab.size;
  if (!Number.isInteger(vocabSize) || vocabSize < size) {
    throw new RangeError(`vocabSize ${vocabSize} is smaller than the vocabulary (${size} tokens)`);
  }
  // special[] is 0 or 1 (FlatVocabulary), which are TOKEN_TEXT and TOKEN_SPECIAL: the kinds are a
  // copy, made natively (a loop over every id is most of a cold attach's JavaScript time). The
  // runtime refuses kinds past TOKEN_EOS; a 2 would read as EOS, so it is refused here.
  if (special.length < size || special.subarray(0, size).indexOf(TOKEN_EOS) >= 0) {
    throw new TypeError("the vocabulary's special flags must be 0 or 1, one per token");
  }
  const tokKind = new Uint8Array(vocabSize).fill(TOKEN_SPECIAL, size);
  tokKind.set(special.subarray(0, size));
  let nText = size;
  for (let id = tokKind.indexOf(TOKEN_SPECIAL); id >= 0 && id < size; id = tokKind.indexOf(TOKEN_SPECIAL, id + 1)) nText--;
  for (const id of vocab.eos) {
    if (!Number.isInteger(id) || id < 0 || id >= size) throw new RangeError(`EOS id ${id} is outside the vocabulary (${size} tokens)`);
    if (tokKind[id] === TOKEN_TEXT) nText--;
    tokKind[id] = TOKEN_EOS;
  }
  const cached = vocab.textOrder?.();
  const order = cached && cached.length === nText ? cached : sortTextTokens(bytes, offsets, tokKind.subarray(0, size));
  let tokOff = offsets.subarray(0, size + 1);
  if (vocabSize > size) {
    tokOff = new Uint32Array(vocabSize + 1).fill(offsets[size]!, size + 1);
    tokOff.set(offsets.subarray(0, size + 1));
  }
  return { trieIds: order, tokOff, tokBytes: bytes, tokKind };
}

/**
 * Builds the DFS-ordered token trie of docs/abi.md: text tokens sorted by bytes, one node per
 * distinct prefix, `skip` = the index after the node's subtree. `Spec.load` leaves this to the
 * runtime (it builds the same trie from the sorted ids); this is for runtimes older than that.
 */
export function buildTokenTrie(vocab: VocabularySource, vocabSize = vocab.size): TokenTrie {
  return trieOver(tokenLayout(vocab, vocabSize));
}

function trieOver(layout: TokenLayout): TokenTrie {
  const { trieIds: order, tokOff: offsets, tokBytes: bytes } = layout;
  let textBytes = 0;
  for (let k = 0; k < order.length; k++) textBytes += offsets[order[k]! + 1]! - offsets[order[k]!]!;
  // At most one node per text byte, plus the root and the sentinel.
  const nodes = new Uint32Array(3 * (textBytes + 2));
  const path: number[] = [0]; // path[d] = node at depth d on the current branch
  let n = 1;
  let depth = 0;
  let maxDepth = 0;
  let prev = -1;
  for (let k = 0; k < order.length; k++) {
    const id = order[k]!;
    const o = offsets[id]!;
    const len = offsets[id + 1]! - o;
    let l = 0;
    if (prev >= 0) {
      const po = offsets[prev]!;
      const pl = Math.min(len, offsets[prev + 1]! - po);
      while (l < pl && bytes[o + l] === bytes[po + l]) l++;
    }
    for (; depth > l; depth--) nodes[3 * path[depth]! + 1] = n;
    for (let d = l + 1; d <= len; d++) {
      nodes[3 * n] = bytes[o + d - 1]! | (d << 8);
      nodes[3 * n + 2] = k;
      path[d] = n++;
    }
    depth = len;
    if (len > maxDepth) maxDepth = len;
    prev = id;
  }
  for (; depth > 0; depth--) nodes[3 * path[depth]! + 1] = n;
  nodes[1] = n; // root: its subtree is everything
  nodes[3 * n + 2] = order.length; // sentinel
  return { ...layout, nNodes: n, nodes: nodes.slice(0, 3 * (n + 1)), maxDepth };
}

const VOCAB_ERRORS: Record<number, string> = {
  [-1]: "the module refused the vocabulary (no tables, or one is already attached)",
  [-2]: "token byte offsets are not non-decreasing from 0 to the byte count",
  [-3]: "a token kind is not 0 (text), 1 (special) or 2 (EOS)",
  [-4]: "the trie is not in DFS order (depths or skips)",
  [-5]: "the trie's token ranges are not non-decreasing",
  [-6]: "a trie entry is not a text token spelled by its node's path, or is listed twice",
  [-7]: "a text token is missing from the trie",
  [-8]: "the text-token ids are not sorted by their bytes",
  [-9]: "the token trie would have more than 2^24 nodes",
};

/**
 * Per vocabulary and vocabSize: how many specs have attached it, and from the second on, the trie
 * built here and whether a runtime's `vocab_ready` has checked it. A checked trie is written as it
 * is into later specs and adopted unchecked (`vocab_adopt`), which saves most of an attach (the
 * check, like the runtime's own build, reads every token's bytes in trie order). With it, the
 * nodes' derived bits a runtime computed for that trie (plain, text; heights in pushdown mode),
 * which depend on the tokens alone: written into later specs, they leave the runtime only the
 * nodes' bytes to turn into classes (1.7 ms a load on Llama 3, most of what an attach had left).
 */
interface TrieCache {
  uses: number;
  trie?: TokenTrie;
  checked: boolean;
  derived?: { plain: Uint8Array; text: Uint8Array; heights?: Uint8Array };
  /** Pushdown summaries kept from disposed specs, by state key (bindings/summaries.ts). */
  summaries?: Map<string, Summary>;
  /** Per-token text counts a disposed spec made (runtime-wasm/text-lengths.ts: one pass over every token's bytes). */
  textCounts?: Uint8Array;
  /** The root's text exits a disposed spec made (runtime-wasm/text-exits.ts: u32 n, then n entries of 20 bytes). */
  textExits?: Uint8Array;
}
const tries = new WeakMap<VocabularySource, Map<number, TrieCache>>();
/** The bytes of one entry of a text-exit list (docs/abi.md, "Text exits"). */
const EXIT_ENTRY_BYTES = 20;

function trieCache(vocab: VocabularySource, vocabSize: number): TrieCache {
  let byVocab = tries.get(vocab);
  if (!byVocab) tries.set(vocab, (byVocab = new Map()));
  let c = byVocab.get(vocabSize);
  if (!c) byVocab.set(vocabSize, (c = { uses: 0, checked: false }));
  return c;
}

/**
 * Copies a vocabulary into the module (docs/abi.md, "Vocabulary"). The first time, the sorted token
 * ids, from which the runtime builds the trie (or, for a runtime that predates that, the trie);
 * from the second spec with the same vocabulary on, the trie built here once, which the runtime
 * checks once and then adopts. From the third on, everything is written from the cache (derived
 * bits included), in a memory reused from a disposed spec (`slot`) often onto the very bytes that
 * spec left there, which are then kept as they are (bindings/instantiate.ts).
 */
function attachVocabulary(ex: SpecExports, vocab: VocabularySource, vocabSize: number, slot?: MemorySlot): void {
  const cache = ex.vocab_adopt ? trieCache(vocab, vocabSize) : undefined;
  let trie: TokenTrie | undefined;
  let layout: TokenLayout;
  if (cache && cache.uses++ > 0) {
    trie = cache.trie ??= trieOver(tokenLayout(vocab, vocabSize));
    layout = trie;
  } else layout = tokenLayout(vocab, vocabSize);
  const heights = ex.pda_mode?.() === 1;
  const mine = cache !== undefined && trie !== undefined && trie === cache.trie;
  // The derived bits, where this runtime can take them and the cache has them for its mode.
  const derived = mine && cache.checked && cache.derived && (cache.derived.heights !== undefined || !heights) ? cache.derived : undefined;
  // Every region written from the cache: what a later spec of this memory may keep in place.
  const whole = derived !== undefined && slot !== undefined && ex.vocab_reserve !== undefined && ex.heap_mark !== undefined && ex.vocab_alloc_derived !== undefined;
  const kept = slot?.kept;
  if (kept && !(whole && kept.key === cache && kept.heights === heights)) {
    zeroRange(ex.memory, kept.start, kept.end); // another vocabulary's: the memory is all zero again
    slot!.kept = undefined;
  }
  const tooLarge = (t: TokenTrie) => new Error(`cannot attach the vocabulary: ${VOCAB_ERRORS[-1]} (or it is too large: ${vocabSize} tokens, ${t.nNodes} trie nodes, ${t.tokBytes.length} bytes)`);
  if (trie) {
    const alloc = whole ? ex.vocab_reserve! : ex.vocab_alloc;
    if (alloc(vocabSize, trie.nNodes, trie.trieIds.length, trie.tokBytes.length) !== 0) throw tooLarge(trie);
  } else if (ex.vocab_alloc(vocabSize, 0, layout.trieIds.length, layout.tokBytes.length) !== 0) {
    trie = trieOver(layout); // a runtime that does not build the trie
    if (ex.vocab_alloc(vocabSize, trie.nNodes, trie.trieIds.length, trie.tokBytes.length) !== 0) throw tooLarge(trie);
  }
  const withDerived = derived !== undefined && ex.vocab_alloc_derived?.() === 0;
  // Where the regions are: the same as the kept ones' (the same sizes, the same heap below), or
  // written now.
  const regions: number[] = [];
  for (let k = 0; k < 8; k++) regions.push(ex.vocab_region(k));
  const end = whole && withDerived ? ex.heap_mark!(1) - 4 : 0;
  const inPlace = slot?.kept !== undefined && slot.kept.end === end && slot.kept.regions.every((a, k) => a === regions[k]);
  if (slot?.kept && !inPlace) {
    zeroRange(ex.memory, slot.kept.start, slot.kept.end);
    slot.kept = undefined;
  }
  if (!inPlace) {
    const buf = ex.memory.buffer; // after vocab_alloc, which may have grown the memory
    if (trie) new Uint32Array(buf, regions[0]!, trie.nodes.length).set(trie.nodes);
    new Uint32Array(buf, regions[1]!, layout.trieIds.length).set(layout.trieIds);
    new Uint32Array(buf, regions[2]!, layout.tokOff.length).set(layout.tokOff);
    new Uint8Array(buf, regions[3]!, layout.tokBytes.length).set(layout.tokBytes);
    new Uint8Array(buf, regions[4]!, layout.tokKind.length).set(layout.tokKind);
    if (withDerived) {
      new Uint8Array(buf, regions[5]!, derived.plain.length).set(derived.plain);
      new Uint8Array(buf, regions[6]!, derived.text.length).set(derived.text);
      if (heights) new Uint8Array(buf, regions[7]!, derived.heights!.length).set(derived.heights!);
    }
  }
  const r = mine && cache.checked ? ex.vocab_adopt!() : ex.vocab_ready();
  if (r !== 0) throw new Error(`cannot attach the vocabulary: ${VOCAB_ERRORS[r] ?? `error ${r}`}`);
  if (whole && withDerived) {
    let start = end;
    for (const a of regions) if (a > 0 && a < start) start = a;
    slot!.attached = { key: cache!, heights, regions, start: start - 4, end }; // (from the first block's header)
  }
  if (!mine || !trie) return;
  cache.checked = true;
  if (!withDerived && ex.vocab_alloc_derived) {
    const b = ex.memory.buffer;
    const bits = ((trie.nNodes + 31) >>> 5) << 2;
    const h = ex.vocab_region(7);
    cache.derived = {
      plain: new Uint8Array(b, ex.vocab_region(5), bits).slice(),
      text: new Uint8Array(b, ex.vocab_region(6), bits).slice(),
      heights: heights && h !== 0 ? new Uint8Array(b, h, trie.nNodes).slice() : cache.derived?.heights,
    };
  }
}

// ---- Spec --------------------------------------------------------------------------------------------

/** The exports of a disposed spec: any use throws. */
const DISPOSED = new Proxy({} as SpecExports, {
  get(_, name) {
    throw new Error(`specc: this Spec was disposed (Spec.dispose), so ${String(name)} cannot run; load the .wasm again to use it`);
  },
});

/** A loaded specc .wasm. */
export class Spec {
  /** The spec states (markers), in id order. */
  readonly states: readonly Readonly<TableSpecState>[];
  /** The raw numeric exports (docs/abi.md), for hosts that drive the ABI directly. */
  get exports(): SpecExports {
    return this.ex;
  }
  private ex: SpecExports;
  /** Gives the memory back to the pool of bindings/instantiate.ts (a spec loaded through the shared runtime). */
  private release: (() => void) | undefined;
  /** The byte-level DFA, as parsed from the module's tables (with `calls` for a pushdown grammar). */
  readonly dfa: Readonly<ByteDfa>;
  /**
   * A pushdown grammar (docs/abi.md, "Pushdown mode"): matcher states, `step`, `stateFlags`,
   * `stateMask` and `initialState` are configuration ids of the runtime (a set of DFA states with
   * their stacks, numbered in order of first appearance), not DFA states; `stateCount` is still the
   * number of DFA states.
   */
  readonly pushdown: boolean;
  /** Token ids covered by masks (0 without a vocabulary). */
  readonly vocabSize: number;
  /** @internal the attached vocabulary (for forcedTokens), as bound to the token markers */
  vocab: VocabularySource | undefined;
  /** The token markers (`(:token ...)`) of the spec: their text and the byte the automaton reads. */
  readonly tokens: readonly TokenMarker[];

  /**
   * Text as the bytes the automaton reads: UTF-8, with each token marker's text read as that
   * marker (compiler/tokens.ts). Bytes are taken as they are.
   */
  encode(text: string | Uint8Array): Uint8Array {
    if (typeof text !== "string") return text;
    return this.tokens.length ? encodeText(text, this.tokens).bytes : encoder.encode(text);
  }
  private index: { byBytes: Map<string, number>; maxLen: number } | undefined;

  /** @internal token bytes → id (first non-special id), built on first use. */
  tokenIndex(): { byBytes: Map<string, number>; maxLen: number } | undefined {
    if (this.index || !this.vocab) return this.index;
    const byBytes = new Map<string, number>();
    let maxLen = 0;
    const { bytes, offsets, special } = this.vocab.flat();
    for (let id = 0; id < this.vocab.size; id++) {
      if (special[id]) continue;
      const b = bytes.subarray(offsets[id]!, offsets[id + 1]!);
      if (!b.length) continue;
      const k = String.fromCharCode(...b);
      if (!byBytes.has(k)) byBytes.set(k, id);
      if (b.length > maxLen) maxLen = b.length;
    }
    return (this.index = { byBytes, maxLen });
  }
  /** i32 words per mask: `ceil(vocabSize / 32)` (0 without a vocabulary). */
  readonly maskWords: number;

  /** Zero-copy views of the distinct masks, by index; re-created when the memory grows. */
  private readonly views: (Int32Array | undefined)[] = [];
  /** Per state: the only byte allowed next (when exactly one is, and the state neither accepts nor yields), -1 otherwise, -2 unknown. */
  private forcedByte: Int16Array;
  /** The same per configuration id (pushdown mode; configurations are created as the run goes), for ids from `forcedBase` on. */
  private readonly forcedByteCfg = new Map<number, number>();
  private forcedBase = 0;
  private readonly classSize: Uint16Array;
  private readonly classRep: Int16Array;

  private constructor(exports: SpecExports, states: TableSpecState[], dfa: ByteDfa) {
    this.ex = exports;
    this.states = Object.freeze(states.map((s) => Object.freeze({ ...s })));
    this.tokens = Object.freeze(tokenMarkers(states));
    this.dfa = dfa;
    this.pushdown = dfa.calls !== undefined;
    this.vocabSize = exports.vocab_size();
    this.maskWords = exports.mask_words();
    this.forcedByte = new Int16Array(dfa.nStates).fill(-2);
    this.classSize = new Uint16Array(dfa.nClasses);
    this.classRep = new Int16Array(dfa.nClasses).fill(-1);
    for (let b = 255; b >= 0; b--) {
      const c = dfa.classMap[b]!;
      this.classSize[c] = this.classSize[c]! + 1;
      this.classRep[c] = b;
    }
  }

  /**
   * Load a specc .wasm from its bytes, a fetch `Response`, a URL, or a string (a file path in Node,
   * a URL in a browser); with `vocab`, attach the vocabulary so that `fillMask` and `commit` work.
   */
  static async load(wasm: ByteSource, opts: LoadOptions = {}): Promise<Spec> {
    // A copy backed by a plain ArrayBuffer (what WebAssembly.instantiate accepts).
    const bytes = await readBytes(wasm);
    const what = wasm instanceof Uint8Array || wasm instanceof ArrayBuffer ? "the given module" : sourceName(wasm);
    // Only bytes specc wrote run: a damaged or foreign file is refused before it is instantiated.
    const damaged = sealProblem(bytes);
    if (damaged) throw badWasm(`${what} cannot be used: ${damaged}`);
    let instance: WebAssembly.Instance;
    let module: WebAssembly.Module;
    let release: (() => void) | undefined;
    let slot: MemorySlot | undefined;
    try {
      ({ instance, module, release, slot } = await instantiateSpec(bytes));
    } catch (e) {
      throw badWasm(`${what} is not a specc .wasm: ${(e as Error).message}`);
    }
    const ex = instance.exports as Record<string, unknown>;
    const missing: string[] = FUNCTION_EXPORTS.filter((n) => typeof ex[n] !== "function");
    if (!(ex.memory instanceof WebAssembly.Memory)) missing.unshift("memory");
    if (missing.length > 0) {
      throw badWasm(`${what} is not a specc .wasm: missing export${missing.length > 1 ? "s" : ""} ${missing.join(", ")}`);
    }
    const exports = ex as unknown as SpecExports;
    const abi = exports.abi_version();
    if (abi !== SUPPORTED_ABI_VERSION) {
      throw badWasm(`${what} uses specc ABI version ${abi}; this binding supports version ${SUPPORTED_ABI_VERSION}: recompile the spec with this specc`);
    }
    const missing2 = FUNCTION_EXPORTS_V2.filter((n) => typeof ex[n] !== "function");
    if (missing2.length > 0) {
      throw badWasm(`${what} claims ABI version ${abi} but lacks export${missing2.length > 1 ? "s" : ""} ${missing2.join(", ")}`);
    }
    if (exports.memory.buffer.byteLength < TABLE_BASE + HEADER_SIZE || exports.tables_ok() !== 1) {
      throw badWasm(`${what} carries no valid specc tables (bad magic, byte order or format version; is it a bare runtime.wasm?)`);
    }
    const mem = new Uint8Array(exports.memory.buffer);
    const total = new DataView(exports.memory.buffer).getUint32(TABLE_BASE + 8, true);
    if (TABLE_BASE + total > mem.length) throw badWasm(`${what}: the tables' length ${total} runs past the end of memory`);
    let parsed: ReturnType<typeof parseTables>;
    try {
      parsed = parseTables(mem.slice(TABLE_BASE, TABLE_BASE + total));
    } catch (e) {
      throw badWasm(`${what}: ${(e as Error).message}`);
    }
    if (exports.state_count() !== parsed.dfa.nStates || exports.spec_count() !== parsed.states.length) {
      throw badWasm(`${what}: the runtime disagrees with its tables`);
    }
    const pushdown = parsed.dfa.calls !== undefined;
    if (pushdown !== (typeof exports.pda_mode === "function" && exports.pda_mode() === 1)) {
      throw badWasm(pushdown
        ? `${what}: its tables have call edges (a pushdown grammar) but its runtime has no pushdown mode: recompile it with this specc`
        : `${what}: the runtime disagrees with its tables (pushdown mode without call edges)`);
    }
    let vocab = opts.vocab;
    let baked = false;
    let bakedMasks: import("./baked-vocab.js").BakedMasks | undefined;
    if (!vocab) {
      // A vocabulary (and its masks) baked in at compile time (`specc compile --vocab`) is used
      // when none is given.
      const { bakedVocabulary, bakedMaskTable } = await import("./baked-vocab.js");
      try {
        vocab = bakedVocabulary(module);
        baked = vocab !== undefined;
        // Baked masks are per DFA state; a pushdown grammar's masks are per configuration and
        // computed on first use, so any baked ones are ignored.
        if (vocab && !pushdown) bakedMasks = bakedMaskTable(module);
      } catch (e) { throw badWasm(`${what}: ${(e as Error).message}`); }
    }
    const tokens = tokenMarkers(parsed.states);
    if (vocab && tokens.length && !baked) {
      // Token markers: the marker ids read as the automaton's marker bytes (bindings/token-markers.ts).
      // A baked vocabulary was bound when it was baked (cli/compile.ts), with its masks.
      try {
        vocab = bindTokenMarkers(vocab, tokens);
      } catch (e) {
        if (e instanceof TokenMarkerError) throw badWasm(`${what}: ${e.message}`);
        throw e;
      }
    }
    if (vocab) attachVocabulary(exports, vocab, opts.vocabSize ?? vocab.size, slot);
    else if (opts.vocabSize !== undefined) throw new TypeError("Spec.load: vocabSize needs a vocab");
    if (bakedMasks && exports.mask_install) installMasks(exports, bakedMasks, what);
    if (opts.cacheLimit !== undefined) {
      if (!Number.isInteger(opts.cacheLimit) || opts.cacheLimit < 1 || opts.cacheLimit > 0x7fffffff) {
        throw new RangeError(`Spec.load: cacheLimit must be an integer number of bytes in 1..2^31-1, not ${opts.cacheLimit}`);
      }
      if (!exports.cache_set_limit) throw badWasm(`${what}: its runtime has no cache limit: recompile it with this specc`);
      exports.cache_set_limit(opts.cacheLimit);
    }
    const spec = new Spec(exports, parsed.states, parsed.dfa);
    spec.vocab = vocab;
    spec.release = release;
    // Summaries a disposed spec of the same vocabulary computed for the same called machines.
    if (vocab && pushdown && exports.sym_install) {
      const c = trieCache(vocab, spec.vocabSize);
      if (c.summaries && c.summaries.size > 0) installSummaries(exports, spec.summaryKeys(), c.summaries);
      // The text counts another spec of the vocabulary made (its length-bounded strings' masks).
      const at = c.textCounts && exports.text_counts_install ? exports.text_counts_install() : 0;
      if (at !== 0) new Uint8Array(exports.memory.buffer, at, c.textCounts!.length).set(c.textCounts!);
      // And the root's text exits (what a string's inside walks below).
      const ex = c.textExits && exports.text_exits_install ? exports.text_exits_install((c.textExits.length - 4) / EXIT_ENTRY_BYTES) : 0;
      if (ex !== 0) new Uint8Array(exports.memory.buffer, ex, c.textExits!.length).set(c.textExits!);
    }
    if (vocab && opts.precompute) spec.precompute();
    return spec;
  }

  /**
   * Done with this spec: its memory goes back to be reused by the next `Spec.load`, which then
   * skips most of a fresh memory's cost (and, with the same vocabulary, finds it already in place:
   * bindings/instantiate.ts; only what the runtime wrote is zeroed, so a host that wrote into
   * `exports.memory` itself outside what the runtime handed it should not dispose the spec, just
   * drop it), and a pushdown spec's summaries of its called machines are
   * kept for the next specs of its vocabulary (bindings/summaries.ts; a server that loads a grammar
   * per request should call this). Afterwards every call on the spec, its matchers and its engines
   * throws, and a mask view taken from them reads another spec's memory: drop them first. Calling
   * it again does nothing.
   */
  dispose(): void {
    if (this.disposed) return;
    if (this.vocab && this.pushdown && this.ex.sym_get) {
      const c = trieCache(this.vocab, this.vocabSize);
      keepSummaries(this.ex, () => this.summaryKeys(), (c.summaries ??= new Map()));
      const at = c.textCounts ? 0 : (this.ex.text_counts?.() ?? 0);
      if (at !== 0) c.textCounts = new Uint8Array(this.ex.memory.buffer, at, this.vocabSize).slice();
      const ex = c.textExits ? 0 : (this.ex.text_exits?.() ?? 0);
      if (ex !== 0) c.textExits = new Uint8Array(this.ex.memory.buffer, ex, 4 + EXIT_ENTRY_BYTES * new Uint32Array(this.ex.memory.buffer, ex, 1)[0]!).slice();
    }
    this.ex = DISPOSED;
    this.views.length = 0;
    this.release?.();
    this.release = undefined;
  }

  private keys: SummaryKeys | undefined;
  /** @internal per state, its summary key (bindings/summaries.ts), computed once */
  summaryKeys(): SummaryKeys {
    return (this.keys ??= summaryKeys(this.dfa));
  }

  /** Whether `dispose` was called. */
  get disposed(): boolean {
    return this.ex === DISPOSED;
  }

  /**
   * Compile spec source text (Node only: it reads the prebuilt runtime from build/runtime.wasm)
   * and load it. Throws the compiler's `SpecError` for a bad spec.
   */
  static async compile(source: string, opts: CompileOptions = {}): Promise<Spec> {
    const { compileSource, compileToWasm } = await import("../compiler/compile.js");
    const { file, ...load } = opts;
    return Spec.load(compileToWasm(compileSource(source, file ?? "<input>")), load);
  }

  /** A new matcher at the initial state. */
  matcher(): Matcher {
    return new Matcher(this);
  }

  /** Number of byte-level DFA states (of the tables; in pushdown mode states are configurations, see `configCount`). */
  get stateCount(): number {
    return this.exports.state_count();
  }

  /** Pushdown mode: the number of configuration ids so far (they grow as runs go deeper); else `stateCount`. */
  get configCount(): number {
    return this.pushdown ? this.exports.config_count!() : this.exports.state_count();
  }

  /** The initial state (pushdown mode: the initial configuration). */
  get initialState(): number {
    return this.exports.initial_state();
  }

  /** Next state from `state` on `byte`, or -1 when the byte is not allowed (pushdown mode: configurations). */
  step(state: number, byte: number): number {
    return this.exports.step(state, byte);
  }

  /** The flags of a state (`STATE_ACCEPTING | STATE_YIELD | STATE_AFTER_ENV`; pushdown mode: of a configuration). */
  stateFlags(state: number): number {
    return this.exports.state_flags(state);
  }

  /** Whether a vocabulary is attached. */
  get hasVocabulary(): boolean {
    return this.maskWords > 0;
  }

  /** Compute the mask of every state now; returns the number of distinct masks. */
  precompute(): number {
    this.needVocab("precompute");
    return this.exports.precompute_all();
  }

  /** Distinct masks computed so far (including the all-zero mask of a finished matcher). */
  get distinctMasks(): number {
    return this.exports.mask_count();
  }

  /**
   * The mask of a byte-level state (pushdown mode: of a configuration id), as a zero-copy, read-only
   * view of the module's memory (valid until the module's memory grows, and for a pushdown grammar
   * until its mask cache is cleared, which any later mask or commit may do: copy it to keep it).
   */
  stateMask(state: number): Int32Array {
    this.needVocab("stateMask");
    const n = this.configCount;
    const idx = Number.isInteger(state) && state >= 0 && state < n ? this.exports.mask_id(state) : -1;
    if (idx < 0) {
      throw new RangeError(`invalid state ${state} (the spec has ${n} ${this.pushdown ? "configurations so far" : "states"}${this.staleNote(state)})`);
    }
    return this.maskAt(idx);
  }

  /** @internal ", … before a cache compaction" when `state` is a configuration id of an earlier generation. */
  staleNote(state: number): string {
    const base = this.pushdown ? this.exports.config_base?.() ?? 0 : 0;
    return Number.isInteger(state) && state >= 0 && state < base
      ? `; ${state} is from before a cache compaction, which renumbered the configurations (valid ids are ${base}..${this.configCount - 1})`
      : "";
  }

  /**
   * One decode step of a batch: the masks of `matchers` (all of this spec) into `out`, matcher `i`
   * at words `[i × maskWords, (i + 1) × maskWords)`.
   */
  fillMasks(matchers: readonly Matcher[], out: Int32Array): void {
    this.needVocab("fillMasks");
    const w = this.maskWords;
    if (out.length < matchers.length * w) {
      throw new RangeError(`fillMasks: out has ${out.length} words, ${matchers.length} masks need ${matchers.length * w}`);
    }
    const ex = this.exports;
    for (let i = 0; i < matchers.length; i++) {
      const m = matchers[i]!;
      if (m.spec !== this) throw new Error(`fillMasks: matcher ${i} belongs to another spec`);
      out.set(this.maskAt(ex.m_mask(m.handle)), i * w);
    }
  }

  /** @internal the view of distinct mask `idx`. */
  maskAt(idx: number): Int32Array {
    let v = this.views[idx];
    if (v === undefined || v.length === 0) {
      v = new Int32Array(this.exports.memory.buffer, this.exports.mask_at(idx), this.maskWords);
      this.views[idx] = v;
    }
    return v;
  }

  /** @internal */
  needVocab(what: string): void {
    if (this.maskWords === 0) throw new Error(`${what}: no vocabulary attached (load the spec with { vocab })`);
  }

  /** @internal the forced byte of `state` (see `Matcher.forced`), -1 if none. */
  forcedByteOf(state: number): number {
    if (this.pushdown) return this.forcedByteOfConfig(state);
    let b = this.forcedByte[state]!;
    if (b !== -2) return b;
    const { trans, nClasses, flags } = this.dfa;
    b = -1;
    if (!(flags[state]! & (STATE_ACCEPTING | STATE_YIELD))) {
      let count = 0;
      for (let c = 0; c < nClasses && count <= 1; c++) {
        if (trans[state * nClasses + c]! >= 0) {
          count += this.classSize[c]!;
          b = this.classRep[c]!;
        }
      }
      if (count !== 1) b = -1;
    }
    this.forcedByte[state] = b;
    return b;
  }

  /** The same for a configuration: one byte class of one byte steps (through the runtime), and the configuration does not accept. */
  private forcedByteOfConfig(cfg: number): number {
    // A cache compaction renumbers the configurations (a new base): forget the old ids.
    const base = this.exports.config_base?.() ?? 0;
    if (base !== this.forcedBase) {
      this.forcedByteCfg.clear();
      this.forcedBase = base;
    }
    let b = this.forcedByteCfg.get(cfg);
    if (b !== undefined) return b;
    b = -1;
    if (!(this.exports.state_flags(cfg) & STATE_ACCEPTING)) {
      let count = 0;
      for (let c = 0; c < this.dfa.nClasses && count <= 1; c++) {
        const rep = this.classRep[c]!;
        if (rep >= 0 && this.exports.step(cfg, rep) >= 0) {
          count += this.classSize[c]!;
          b = rep;
        }
      }
      if (count !== 1) b = -1;
    }
    this.forcedByteCfg.set(cfg, b);
    return b;
  }
}

// ---- Matcher -------------------------------------------------------------------------------------

/** Follows one LLM output (and the environment's replies) through a spec. */
export class Matcher {
  readonly spec: Spec;
  /** @internal the module's matcher handle */
  readonly handle: number;
  /** The spec's exports, read on each call: a disposed spec's throw. */
  private get ex(): SpecExports {
    return this.spec.exports;
  }

  /** @internal use `Spec.matcher()` */
  constructor(spec: Spec) {
    this.spec = spec;
    this.handle = this.ex.m_new();
    if (this.handle < 0) throw new Error("specc runtime: cannot create a matcher (no valid tables)");
  }

  /**
   * Write the allowed-token bitmask of the current state into `bitmask` (at least
   * `spec.maskWords` words; bit `id & 31` of word `id >> 5` = token `id` allowed). Special tokens are
   * never allowed, EOS exactly when the output so far is a complete run.
   */
  fillMask(bitmask: Int32Array): void {
    const idx = this.ex.m_mask(this.handle);
    if (idx < 0) this.spec.needVocab("fillMask");
    if (bitmask.length < this.spec.maskWords) {
      throw new RangeError(`fillMask: the bitmask has ${bitmask.length} words, the vocabulary needs ${this.spec.maskWords}`);
    }
    bitmask.set(this.spec.maskAt(idx));
  }

  /**
   * The current mask without copying: a read-only view of the module's memory, shared with every
   * matcher in the same state. Valid until the module's memory grows or, for a pushdown grammar, its
   * mask cache is cleared (any later mask or commit may do either; a new
   * matcher); do not write to it.
   */
  maskView(): Int32Array {
    const idx = this.ex.m_mask(this.handle);
    if (idx < 0) this.spec.needVocab("maskView");
    return this.spec.maskAt(idx);
  }

  /**
   * Advance by one token. `"yield"`: an env-input marker was completed (call `feedEnv`); `"done"`:
   * EOS in an accepting state (nothing more is accepted); `"rejected"`: the token is not allowed
   * here (a special token, EOS before the run is complete, bytes outside the spec, outside an
   * exhausted budget) and the matcher is unchanged. Throws for an id outside the vocabulary and
   * for a commit after `"done"`.
   */
  commit(tokenId: number): CommitStatus {
    // `>>> 0` also catches fractions, NaN and ids ≥ 2^32 (which the i32 ABI would wrap).
    if (tokenId >>> 0 !== tokenId || tokenId >= this.spec.vocabSize) {
      this.spec.needVocab("commit");
      throw new RangeError(`commit: token id ${tokenId} is out of range (vocabulary size ${this.spec.vocabSize})`);
    }
    const r = this.ex.m_commit(this.handle, tokenId);
    if (r === 3 && this.ex.m_done(this.handle)) {
      throw new Error("commit: the matcher is done (EOS was committed); reset it or roll back first");
    }
    return COMMIT_STATUS[r]!;
  }

  /**
   * Feed LLM output. On a byte that is not allowed, returns its offset in the (UTF-8) input and
   * leaves the matcher as it was before the call. `"yield"` means an env-input marker was just
   * completed: stop generating and call `feedEnv` with the environment's text.
   */
  feed(text: string | Uint8Array): FeedResult {
    const bytes = this.spec.encode(text);
    const { ex, handle } = this;
    // One call, so a rejection leaves everything (state, token counter) as it was: text longer than
    // the scratch buffer goes through the module's growable output area.
    const ptr = bytes.length <= ex.buf_cap() ? ex.buf_ptr() : ex.out_ptr(bytes.length);
    new Uint8Array(ex.memory.buffer, ptr, bytes.length).set(bytes);
    const r = ex.m_feed(handle, ptr, bytes.length);
    if (r < 0) return { ok: false, offset: -r - 1 };
    return { ok: true, status: r === 1 ? "yield" : "continue" };
  }

  /**
   * Feed host-provided text that must conform (a prompt's `[Question] …`, forced text). Throws a
   * `NonconformingTextError` with the byte offset of the first byte that is not allowed (the
   * matcher is then unchanged).
   */
  feedText(text: string | Uint8Array): "continue" | "yield" {
    if (this.ex.m_done(this.handle)) throw new Error("feedText: the matcher is done (EOS was committed)");
    const r = this.feed(text);
    if (r.ok) return r.status;
    const bytes = this.spec.encode(text);
    const lo = Math.max(0, r.offset - 20);
    const context = decoder.decode(bytes.subarray(lo, r.offset + 10));
    throw new NonconformingTextError(
      r.offset,
      `feedText: byte ${r.offset} is not allowed here (state ${this.specState ?? "(start)"}; valid next markers: ${this.validNext().map((n) => JSON.stringify(this.spec.states.find((s) => s.name === n)!.marker)).join(", ") || "none"}) near ${JSON.stringify(context)}`,
    );
  }

  /** Feed the environment's reply (opaque text). Only valid while `yielding`. */
  feedEnv(text: string | Uint8Array): void {
    const { ex, handle } = this;
    if (!ex.m_yielding(handle) || ex.m_done(handle)) {
      throw new Error("feedEnv: the matcher is not yielding (environment text is only accepted right after an env-input marker)");
    }
    const bytes = toBytes(text);
    const ptr = ex.buf_ptr();
    const n = Math.min(ex.buf_cap(), bytes.length); // the runtime does not look at the text
    new Uint8Array(ex.memory.buffer, ptr, n).set(bytes.subarray(0, n));
    if (ex.m_feed_env(handle, ptr, n) !== 0) throw new Error("feedEnv: the runtime refused the environment text");
  }

  /**
   * Jump-forward: the bytes every valid continuation starts with (the DFA allows exactly one byte,
   * and the state neither accepts nor yields, at each of them). Empty when the matcher is done.
   * Ignores the token budget.
   */
  forcedBytes(): Uint8Array {
    if (this.ex.m_done(this.handle)) return new Uint8Array(0);
    const out: number[] = [];
    const { trans, classMap, nClasses, nStates } = this.spec.dfa;
    const pushdown = this.spec.pushdown;
    // A DFA's forced path has no cycle (it would never accept), so nStates bounds it; a pushdown
    // grammar's forced text is at most what one stack can force, bounded the same way per frame.
    const limit = pushdown ? nStates * 1025 : nStates;
    let s = this.state;
    for (let b = this.spec.forcedByteOf(s); b >= 0 && out.length < limit; b = this.spec.forcedByteOf(s)) {
      out.push(b);
      s = pushdown ? this.spec.step(s, b) : trans[s * nClasses + classMap[b]!]!;
    }
    return Uint8Array.from(out);
  }

  /**
   * `forcedBytes()` as text: its longest prefix that is well-formed UTF-8 (so it stops before a
   * character cut off at the end, and is empty when the matcher is inside a multi-byte character:
   * use `forcedBytes` there). Feed it with `feedText` to append it without a forward pass.
   */
  forced(): string {
    const b = this.forcedBytes();
    const tokens = this.spec.tokens;
    if (!tokens.length) return decoder.decode(b.subarray(0, validUtf8Prefix(b)));
    // Token-marker bytes stand for their token's text (and feed back through `feedText` as such).
    const plain = b.map((x) => (tokens.some((t) => t.byte === x) ? 0x41 : x));
    return decodeBytes(b.subarray(0, validUtf8Prefix(plain)), tokens);
  }

  /**
   * Token ids that spell the forced bytes (greedy longest match over the vocabulary), so a decoder
   * can append them without a forward pass each. Every id is allowed when its turn comes. Empty
   * when nothing is forced or no vocabulary is attached.
   */
  forcedTokens(): number[] {
    const bytes = this.forcedBytes();
    const index = this.spec.tokenIndex();
    if (!bytes.length || !index) return [];
    const ids: number[] = [];
    for (let i = 0; i < bytes.length; ) {
      let found = -1, len = 0;
      for (let l = Math.min(index.maxLen, bytes.length - i); l > 0 && found < 0; l--) {
        const id = index.byBytes.get(String.fromCharCode(...bytes.subarray(i, i + l)));
        if (id !== undefined) { found = id; len = l; }
      }
      if (found < 0) break; // no token spells the rest (a vocabulary without byte tokens)
      ids.push(found);
      i += len;
    }
    return ids;
  }

  /** Undo the last `n` committed tokens (at most `MAX_ROLLBACK`, and not across feed/feedEnv/state changes). */
  rollback(n = 1): void {
    if (!Number.isInteger(n) || n < 0 || this.ex.m_rollback(this.handle, n) !== 0) {
      throw new RangeError(`rollback(${n}): only ${this.ex.m_history(this.handle)} committed token(s) can be undone`);
    }
  }

  /** How many committed tokens `rollback` can undo now. */
  get rollbackLimit(): number {
    return this.ex.m_history(this.handle);
  }

  /**
   * Token budget per spec state (0 = none): once this many tokens were committed in one spec state,
   * only EOS (when accepting) and tokens on a shortest path to a new marker are allowed.
   */
  get budget(): number {
    return this.ex.m_budget(this.handle);
  }

  set budget(k: number) {
    if (!Number.isInteger(k) || k < 0 || k > MAX_BUDGET) throw new RangeError(`budget must be an integer in 0..${MAX_BUDGET}, not ${k}`);
    if (this.spec.pushdown) {
      if (k === 0) return;
      throw new Error("budget: token budgets need a spec without call edges (a pushdown automaton has none): give the spec's grammar content a nesting bound, (:grammar ... :max-depth N)");
    }
    this.ex.m_set_budget(this.handle, k);
  }

  /** Tokens committed since the current spec state was entered. */
  get tokensInState(): number {
    return this.ex.m_count(this.handle);
  }

  /** Back to the initial state. */
  reset(): void {
    this.ex.m_reset(this.handle);
  }

  /**
   * The byte-level DFA state (pushdown mode: the configuration id): a snapshot that can be restored
   * by assigning it back (restoring also clears the done flag, the token counter and the rollback
   * history).
   */
  get state(): number {
    return this.ex.m_state(this.handle);
  }

  set state(s: number) {
    if (!Number.isInteger(s) || this.ex.m_set_state(this.handle, s) !== 0) {
      const n = this.spec.configCount;
      throw new RangeError(`invalid matcher state ${s} (the spec has ${n} ${this.spec.pushdown ? "configurations so far" : "states"}${this.spec.staleNote(s)})`);
    }
  }

  /** The name of the spec state whose marker was committed last, or null before the first one. */
  get specState(): string | null {
    const i = this.ex.m_spec(this.handle);
    return i < 0 ? null : this.spec.states[i]!.name;
  }

  /** Whether the output so far is a complete, valid run of the spec (EOS is allowed). */
  get isAccepting(): boolean {
    return this.ex.m_accepting(this.handle) !== 0;
  }

  /** Same as `isAccepting`. */
  get accepting(): boolean {
    return this.isAccepting;
  }

  /** Whether the LLM must stop here and the environment's text be fed with `feedEnv`. */
  get yielding(): boolean {
    return this.ex.m_yielding(this.handle) !== 0;
  }

  /** Whether EOS was committed. */
  get isDone(): boolean {
    return this.ex.m_done(this.handle) !== 0;
  }

  /** The names of the spec states whose markers may come next. */
  validNext(): string[] {
    const s = this.state;
    const n = this.ex.next_count(s);
    const out: string[] = [];
    for (let i = 0; i < n; i++) out.push(this.spec.states[this.ex.next_at(s, i)]!.name);
    return out;
  }
}

/**
 * Length of the longest prefix of `b` that is well-formed UTF-8 (stops at a continuation byte
 * without its lead, e.g. when the matcher is inside a character, and before a character cut off
 * at the end).
 */
function validUtf8Prefix(b: Uint8Array): number {
  const n = b.length;
  let i = 0;
  while (i < n) {
    const c = b[i]!;
    const need = c < 0x80 ? 1 : c >= 0xc2 && c < 0xe0 ? 2 : c >= 0xe0 && c < 0xf0 ? 3 : c >= 0xf0 && c < 0xf5 ? 4 : 0;
    if (need === 0 || i + need > n) break;
    let ok = true;
    for (let k = 1; k < need; k++) if ((b[i + k]! & 0xc0) !== 0x80) ok = false;
    // Overlong 3/4-byte forms, surrogates and code points above U+10FFFF.
    if (ok && need === 3) ok = !((c === 0xe0 && b[i + 1]! < 0xa0) || (c === 0xed && b[i + 1]! >= 0xa0));
    if (ok && need === 4) ok = !((c === 0xf0 && b[i + 1]! < 0x90) || (c === 0xf4 && b[i + 1]! >= 0x90));
    if (!ok) break;
    i += need;
  }
  return i;
}

/**
 * Set the logits of disallowed tokens to -Infinity (in place). Tokens beyond the mask are
 * disallowed too.
 */
export function applyMask(logits: Float32Array, mask: Int32Array): void {
  const n = logits.length;
  for (let w = 0, base = 0; base < n; w++, base += 32) {
    const bits = w < mask.length ? mask[w]! : 0;
    if (bits === -1) continue;
    const end = base + 32 < n ? base + 32 : n;
    for (let i = base; i < end; i++) if (!((bits >>> (i - base)) & 1)) logits[i] = -Infinity;
  }
}

/** An Engine over a loaded .wasm, driving one matcher through its snapshot/restore ABI. */
export function wasmEngine(spec: Spec): Engine {
  const m = spec.matcher();
  return {
    initial: () => spec.initialState,
    feed(s, bytes) {
      m.state = s;
      const r = m.feed(bytes);
      return r.ok ? m.state : -(1 + r.offset);
    },
    env: (s) => spec.exports.state_env_next(s),
    flags: (s) => spec.exports.state_flags(s),
    specState: (s) => spec.exports.state_spec(s),
    nextMarkers(s) {
      const ex = spec.exports;
      const n = ex.next_count(s);
      const out: number[] = [];
      for (let i = 0; i < n; i++) out.push(ex.next_at(s, i));
      return out;
    },
  };
}

/** Copies baked masks into the runtime's cache, so no state needs a trie walk at load. */
function installMasks(ex: SpecExports, b: import("./baked-vocab.js").BakedMasks, what: string): void {
  const words = ex.mask_words();
  if (b.words !== words || b.stateMask.length !== ex.state_count()) {
    throw badWasm(`${what}: its baked masks do not fit its tables and vocabulary (${b.stateMask.length} states × ${b.words} words)`);
  }
  const dst = ex.out_ptr(words * 4);
  for (let s = 0; s < b.stateMask.length; s++) {
    const k = b.stateMask[s]!;
    new Int32Array(ex.memory.buffer, dst, words).set(b.masks.subarray(k * words, (k + 1) * words));
    if (ex.mask_install!(s, dst) < 0) throw badWasm(`${what}: the runtime refused baked mask ${k} of state ${s}`);
  }
}
