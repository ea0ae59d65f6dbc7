/**
 * @fileoverview The state exports of docs/abi.md (part of specc's WebAssembly runtime; index.ts
 * lists the modules): a state is a DFA state, or in pushdown mode a configuration id (pushdown.ts),
 * for which the per-state fields (spec, env next, next markers) do not exist.
 */

import {
  F_ACCEPTING, H_CLASSMAP, H_INITIAL, H_NCLASSES, H_SETS, NONE16, TABLE_BASE, flagsOf, hdr, info,
  next, region, specOf, validState,
} from "./layout";
import { transBase } from "./tables";
import { cfAccepting, cfExternal, cfInternal, initialCfg, pdaMode, pdaStepExport } from "./pushdown";

export function initial_state(): i32 {
  return pdaMode ? cfExternal(initialCfg) : <i32>hdr(H_INITIAL);
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
