/**
 * @fileoverview The tables at instantiation and the table exports of docs/abi.md (part of specc's
 * WebAssembly runtime; index.ts lists the modules).
 *
 * At instantiation the compressed transition rows are expanded into `transBase` and the call table
 * (if any) sets up pushdown mode; the exports read the header, the per-state info and the spec
 * records. In pushdown mode a "state" is a configuration id, so some exports defer to pushdown.ts.
 *
 * Start order: the top-level statements below run after matcher.ts's (the scratch buffer and the
 * record array, allocated first as in the single-file runtime) because this file imports matcher.ts
 * and index.ts re-exports this file first.
 */

import {
  BOM, F_ACCEPTING, H_BOM, H_CLASSMAP, H_INITIAL, H_MAGIC, H_NCLASSES, H_NSPEC, H_NSTATES, H_SETS,
  H_SPEC, H_TRANS, H_VERSION, MAGIC, NONE16, TABLE_BASE, VERSION, flagsOf, hdr, info, next, region,
  specOf, validState,
} from "./layout";
import { BUF_CAP, bufPtr } from "./matcher";
import { cfAccepting, cfExternal, cfInternal, initialCfg, pdaInit, pdaMode, pdaStepExport } from "./pushdown";

/**
 * The dense transition table u16[nStates × nClasses], expanded on the heap at instantiation from
 * the compressed rows of table format 2 (a default target per state plus the classes that differ).
 * 0 when the tables are missing or a row is malformed (then `tables_ok()` is 0 too).
 */
export let transBase: usize = 0;

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
if (transBase != 0 && !pdaInit()) transBase = 0;

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
  return pdaMode ? cfExternal(initialCfg) : <i32>hdr(H_INITIAL);
}

export function spec_count(): i32 {
  return <i32>hdr(H_NSPEC);
}

export function step(state: i32, byte: i32): i32 {
  if (pdaMode) return pdaStepExport(state, byte);
  if (!validState(state) || <u32>byte > 255) return -1;
  const n = next(<u32>state, <u32>byte, hdr(H_NCLASSES), transBase, region(H_CLASSMAP));
  return n == NONE16 ? -1 : <i32>n;
}

export function state_flags(state: i32): i32 {
  if (pdaMode) {
    const c = cfInternal(state);
    return c >= 0 && cfAccepting(<u32>c) ? <i32>F_ACCEPTING : 0;
  }
  if (!validState(state)) return 0;
  return <i32>flagsOf(<u32>state);
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
