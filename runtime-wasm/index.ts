/**
 * @fileoverview specc's WebAssembly runtime (AssemblyScript, built once into build/runtime.wasm):
 * the exported ABI, and nothing else.
 *
 * `specc compile` appends one active data segment holding a spec's tables at TABLE_BASE = 16 to
 * this module; the code only reads them. It exports the numeric ABI of docs/abi.md (ABI version 2,
 * table format version 3) so that any host (JS, Python, Rust, ...) can run the byte-level DFA for
 * constrained decoding without JS glue: the module imports nothing. Tables are trusted (the
 * compiler wrote them and a host binding validates them once at load); the hot paths (`step`,
 * `m_feed`, `m_mask`, `m_commit`) are plain table loads with no allocation and no bounds checks
 * beyond the ones that keep reads inside the tables for arguments that come from the host.
 *
 * This file re-exports the entry points in docs/abi.md's order (the order of the wasm export
 * section). The modules, one responsibility each, import one way only (runtime-wasm/README.md):
 * - layout.ts: the table layout (header fields, flags) and @inline table readers.
 * - records.ts: the scratch buffer and the matcher records.
 * - tables.ts: instantiation (expand the transition rows) and the mode-independent table exports.
 * - vocab.ts: the vocabulary (ABI 2), mask words and the distinct-mask store (`intern`).
 * - text-lengths.ts: text tokens by length (a bounded string's summaries in pushdown mode).
 * - text-exits.ts: the trie's text exits (a string inside's summaries in pushdown mode).
 * - pairs.ts: (state, stack node) pairs: their hash and the pushdown mask cache's pair table.
 * - pushdown.ts: pushdown mode (configurations, stack nodes, closure, the cache limit) for tables
 *   with a call table; its start code sets the mode up after tables.ts's.
 * - pushdown-masks.ts: token masks in pushdown mode (per-state summaries, per-pair walks).
 * - states.ts: the state exports (a DFA state, or a configuration id in pushdown mode).
 * - masks.ts: token masks of DFA states (trie walks, budget walks) and the mask exports.
 * - matcher.ts: the `m_*` exports.
 * Each imports only files above it in this list.
 */

export { abi_version, tables_ok } from "./tables";
export { buf_ptr, buf_cap } from "./records";
export { state_count, class_count } from "./tables";
export { initial_state } from "./states";
export { spec_count } from "./tables";
export { step, state_flags, state_spec, state_env_next, next_count, next_at } from "./states";
export { spec_marker_ptr, spec_marker_len, spec_name_ptr, spec_name_len, spec_flags } from "./tables";

export {
  vocab_alloc,
  vocab_region,
  vocab_ready,
  vocab_adopt,
  vocab_alloc_derived,
  vocab_size,
  mask_words,
  vocab_max_depth,
  vocab_reserve,
  heap_mark,
} from "./vocab";

export {
  mask_id,
  mask_ptr,
  mask_at,
  mask_count,
  mask_install,
  precompute_all,
  out_ptr,
} from "./masks";

export {
  m_new,
  m_reset,
  m_state,
  m_set_state,
  m_feed,
  m_feed_env,
  m_spec,
  m_accepting,
  m_yielding,
  m_done,
  m_count,
  m_set_budget,
  m_budget,
  m_mask,
  m_mask_ptr,
  m_fill_mask,
  fill_masks,
  m_commit,
  m_rollback,
  m_history,
} from "./matcher";

export {
  pda_mode,
  config_count,
  config_base,
  cache_set_limit,
  cache_limit,
  cache_bytes,
  cache_evictions,
  cache_compactions,
} from "./pushdown";

export { sym_get, sym_install } from "./pushdown-masks";
export { text_counts, text_counts_install } from "./text-lengths";
export { text_exits, text_exits_install } from "./text-exits";
