/**
 * @fileoverview The table layout of docs/abi.md and its inline readers (part of specc's
 * WebAssembly runtime; index.ts lists the modules).
 *
 * `specc compile` appends one data segment holding a spec's tables at TABLE_BASE; everything here
 * is a constant or an @inline load from it, so every other module reads the tables the same way.
 * No state: the expanded transition table (`transBase`) is tables.ts's.
 */

// ---- Table layout (docs/abi.md) ----------------------------------------------------------------

// @ts-ignore: decorator
@inline export const TABLE_BASE: usize = 16;
// @ts-ignore: decorator
@inline export const MAGIC: u32 = 0x43435053; // "SPCC"
// @ts-ignore: decorator
@inline export const VERSION: u32 = 3; // table format version (the ABI version is abi_version())
// @ts-ignore: decorator
@inline export const BOM: u32 = 0xfeff;
// @ts-ignore: decorator
@inline export const NONE16: u32 = 0xffff;

// Header field offsets.
// @ts-ignore: decorator
@inline export const H_MAGIC: usize = 0;
// @ts-ignore: decorator
@inline export const H_VERSION: usize = 4;
// @ts-ignore: decorator
@inline export const H_BOM: usize = 6;
// @ts-ignore: decorator
@inline export const H_NSTATES: usize = 12;
// @ts-ignore: decorator
@inline export const H_NCLASSES: usize = 16;
// @ts-ignore: decorator
@inline export const H_INITIAL: usize = 20;
// @ts-ignore: decorator
@inline export const H_NSPEC: usize = 24;
// @ts-ignore: decorator
@inline export const H_CLASSMAP: usize = 28;
// @ts-ignore: decorator
@inline export const H_TRANS: usize = 32;
// @ts-ignore: decorator
@inline export const H_INFO: usize = 36;
// @ts-ignore: decorator
@inline export const H_SETS: usize = 40;
// @ts-ignore: decorator
@inline export const H_SPEC: usize = 48;

// State flags.
// @ts-ignore: decorator
@inline export const F_ACCEPTING: u32 = 1;
// @ts-ignore: decorator
@inline export const F_YIELD: u32 = 2;

// @ts-ignore: decorator
@inline export function hdr(field: usize): u32 {
  return load<u32>(TABLE_BASE + field);
}

/** Absolute address of a table region whose offset (relative to TABLE_BASE) is in header `field`. */
// @ts-ignore: decorator
@inline export function region(field: usize): usize {
  return TABLE_BASE + <usize>load<u32>(TABLE_BASE + field);
}

/** Absolute address of the 4 × u16 info record of state `s`. */
// @ts-ignore: decorator
@inline export function info(s: u32): usize {
  return region(H_INFO) + (<usize>s << 3);
}

// @ts-ignore: decorator
@inline export function flagsOf(s: u32): u32 {
  return <u32>load<u16>(info(s));
}

// @ts-ignore: decorator
@inline export function validState(s: i32): bool {
  return <u32>s < hdr(H_NSTATES);
}

/** One transition; `nClasses`, `trans` and `classmap` are absolute/hoisted by the caller. */
// @ts-ignore: decorator
@inline export function next(s: u32, b: u32, nClasses: u32, trans: usize, classmap: usize): u32 {
  const c = <u32>load<u8>(classmap + <usize>b);
  return <u32>load<u16>(trans + ((<usize>(s * nClasses + c)) << 1));
}

/** Raw spec state of a state (NONE16 = none). */
// @ts-ignore: decorator
@inline export function specOf(s: u32): u32 {
  return <u32>load<u16>(info(s), 2);
}
