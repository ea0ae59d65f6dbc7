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
 * section). The modules, one responsibility each (runtime-wasm/README.md):
 * - layout.ts: the table layout (header fields, flags) and @inline table readers.
 * - tables.ts: instantiation (expand the transition rows, set up pushdown mode) and the table exports.
 * - matcher.ts: the scratch buffer, matcher records and the `m_*` exports.
 * - vocab.ts: the vocabulary (ABI 2) and the distinct-mask store (`intern`).
 * - masks.ts: token masks of DFA states (trie walks, budget walks) and the mask exports.
 * - pushdown.ts: pushdown mode (configurations, stack nodes, closure) for tables with a call table.
 * - pushdown-masks.ts: token masks in pushdown mode (per-state summaries, per-pair walks).
 *
 * tables.ts comes first: the start function then runs matcher.ts's allocations, then tables.ts's
 * expansion and pushdown set-up, in the order of the single-file runtime.
 */

export {
  abi_version,
  tables_ok,
  buf_ptr,
  buf_cap,
  state_count,
  class_count,
  initial_state,
  spec_count,
  step,
  state_flags,
  state_spec,
  state_env_next,
  next_count,
  next_at,
  spec_marker_ptr,
  spec_marker_len,
  spec_name_ptr,
  spec_name_len,
  spec_flags,
} from "./tables";

export {
  vocab_alloc,
  vocab_region,
  vocab_ready,
  vocab_size,
  mask_words,
  vocab_max_depth,
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
