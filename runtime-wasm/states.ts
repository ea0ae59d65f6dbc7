/**
 * @fileoverview The state exports of docs/abi.md (part of specc's WebAssembly runtime; index.ts
 * lists the modules): a state is a DFA state, or in pushdown mode a configuration id (pushdown.ts),
 * whose per-state fields (spec, env next, next markers) are those of its first pair's state
 * (`cfRep`: a grammar's states have none, an agent's pairs all agree).
 */

import {
  F_ACCEPTING, H_CLASSMAP, H_INITIAL, H_NCLASSES, H_SETS, NONE16, TABLE_BASE, flagsOf, hdr, info,
  next, region, specOf, validState,
} from "./layout";
import { transBase } from "./tables";
import { cfAccepting, cfExternal, cfInternal, cfRep, initialCfg, pdaMode, pdaStateCfg, pdaStepExport } from "./pushdown";

/** The state whose per-state fields stand for `state`: itself, or a configuration's first pair's; -1 if none. */
function perState(state: i32): i32 {
  if (!pdaMode) return validState(state) ? state : -1;
  const c = cfInternal(state);
  return c < 0 ? -1 : cfRep(<u32>c);
}

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
    if (c < 0) return 0;
    const q = cfRep(<u32>c);
    return (cfAccepting(<u32>c) ? <i32>F_ACCEPTING : 0) | (q < 0 ? 0 : <i32>(flagsOf(<u32>q) & ~F_ACCEPTING));
  }
  if (!validState(state)) return 0;
  return <i32>flagsOf(<u32>state);
}

export function state_spec(state: i32): i32 {
  const q = perState(state);
  if (q < 0) return -1;
  const v = specOf(<u32>q);
  return v == NONE16 ? -1 : <i32>v;
}

export function state_env_next(state: i32): i32 {
  const q = perState(state);
  if (q < 0) return -1;
  const v = <u32>load<u16>(info(<u32>q), 4);
  if (v == NONE16) return -1;
  if (!pdaMode) return <i32>v;
  const c = pdaStateCfg(v);
  return c < 0 ? -1 : cfExternal(<u32>c);
}

/** Absolute address of the nextMarkers set of `state` (`u16 count, u16 ids[count]`). */
// @ts-ignore: decorator
@inline function nextSet(state: u32): usize {
  const idx = <usize>load<u16>(info(state), 6);
  return TABLE_BASE + <usize>load<u32>(region(H_SETS) + (idx << 2));
}

export function next_count(state: i32): i32 {
  const q = perState(state);
  if (q < 0) return 0;
  return <i32>load<u16>(nextSet(<u32>q));
}

export function next_at(state: i32, i: i32): i32 {
  const q = perState(state);
  if (q < 0) return -1;
  const set = nextSet(<u32>q);
  if (<u32>i >= <u32>load<u16>(set)) return -1;
  return <i32>load<u16>(set + 2 + (<usize>i << 1));
}
