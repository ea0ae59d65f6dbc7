/**
 * @fileoverview The tables at instantiation and the table exports of docs/abi.md that do not
 * depend on the mode (part of specc's WebAssembly runtime; index.ts lists the modules).
 *
 * At instantiation the compressed transition rows are expanded into `transBase`; pushdown.ts then
 * sets up pushdown mode from the call table, if any (it imports this file, so its start code runs
 * after this file's). The state exports, which answer for configurations in pushdown mode, are
 * states.ts's.
 */

import {
  BOM, H_BOM, H_MAGIC, H_NCLASSES, H_NSPEC, H_NSTATES, H_SPEC, H_TRANS, H_VERSION, MAGIC, NONE16,
  TABLE_BASE, VERSION, hdr, region,
} from "./layout";

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

/** Marks the tables unusable (pushdown.ts, when the call table is malformed). */
export function dropTables(): void {
  transBase = 0;
}

export function state_count(): i32 {
  return <i32>hdr(H_NSTATES);
}

export function class_count(): i32 {
  return <i32>hdr(H_NCLASSES);
}

export function spec_count(): i32 {
  return <i32>hdr(H_NSPEC);
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
