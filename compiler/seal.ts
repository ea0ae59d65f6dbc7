/**
 * @fileoverview The seal of a compiled .wasm: a last custom section `specc.seal` holding the CRC-32
 * of every byte before it. A .wasm is input too (someone else may have built or damaged it); the
 * tables are validated on load (tables.ts), but a flipped bit in the runtime's code would not be,
 * and could compute masks wrongly or trap. `Spec.load` checks the seal first, so a damaged file is
 * a clean refusal that says so, and only bytes specc wrote ever run. CRC-32 catches every error
 * burst of up to 32 bits and every odd number of flipped bits.
 */

export const SEAL_SECTION = "specc.seal";
const SEAL_NAME = new TextEncoder().encode(SEAL_SECTION);
/** The whole seal section: id 0, size 15, name length 10, "specc.seal", u32 CRC. */
export const SEAL_BYTES = 2 + 1 + SEAL_NAME.length + 4;

const TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

export function crc32(data: Uint8Array, end = data.length): number {
  let c = 0xffffffff;
  for (let i = 0; i < end; i++) c = TABLE[(c ^ data[i]!) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** Whether `wasm` ends with a seal section (right or wrong). */
export function hasSeal(wasm: Uint8Array): boolean {
  const at = wasm.length - SEAL_BYTES;
  if (at < 8 || wasm[at] !== 0 || wasm[at + 1] !== SEAL_BYTES - 2 || wasm[at + 2] !== SEAL_NAME.length) return false;
  for (let i = 0; i < SEAL_NAME.length; i++) if (wasm[at + 3 + i] !== SEAL_NAME[i]) return false;
  return true;
}

/** `wasm` without its seal (as it is when it has none). */
export function unseal(wasm: Uint8Array): Uint8Array {
  return hasSeal(wasm) ? wasm.subarray(0, wasm.length - SEAL_BYTES) : wasm;
}

/** `wasm` (without a seal) with its seal appended. */
export function seal(wasm: Uint8Array): Uint8Array {
  const out = new Uint8Array(wasm.length + SEAL_BYTES);
  out.set(wasm);
  let at = wasm.length;
  out[at++] = 0;
  out[at++] = SEAL_BYTES - 2;
  out[at++] = SEAL_NAME.length;
  out.set(SEAL_NAME, at);
  at += SEAL_NAME.length;
  new DataView(out.buffer).setUint32(at, crc32(wasm), true);
  return out;
}

/** Why `wasm` cannot be trusted, or null when its seal is intact. */
export function sealProblem(wasm: Uint8Array): string | null {
  if (!hasSeal(wasm)) {
    return "it has no specc seal (it is truncated, was not written by specc compile, or was written by an older specc: recompile it)";
  }
  const at = wasm.length - 4;
  const want = new DataView(wasm.buffer, wasm.byteOffset + at, 4).getUint32(0, true);
  if (crc32(wasm, wasm.length - SEAL_BYTES) !== want) return "its content does not match its seal (the file is damaged or was modified after specc compile wrote it)";
  return null;
}
