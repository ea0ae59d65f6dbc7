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

/**
 * CRC-32 tables for slicing by 8 (8 × 256 entries): entry k·256 + n is the CRC of byte n followed
 * by k zero bytes, so eight bytes fold in with eight lookups and no data-dependent chain between
 * them. A load checks the whole module and keys the runtime by its CRC: ~80 µs for 40 KB a byte at
 * a time, ~21 µs this way.
 */
const T8 = (() => {
  const t = new Int32Array(8 * 256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c;
  }
  for (let n = 0; n < 256; n++) for (let k = 1; k < 8; k++) t[k * 256 + n] = t[t[(k - 1) * 256 + n]! & 0xff]! ^ (t[(k - 1) * 256 + n]! >>> 8);
  return t;
})();

/** CRC-32 (IEEE 802.3, as zlib's) of `data[0, end)`. */
export function crc32(data: Uint8Array, end = data.length): number {
  let c = ~0;
  let i = 0;
  for (; i + 8 <= end; i += 8) {
    const a = c ^ (data[i]! | (data[i + 1]! << 8) | (data[i + 2]! << 16) | (data[i + 3]! << 24));
    c = T8[1792 + (a & 0xff)]! ^ T8[1536 + ((a >>> 8) & 0xff)]! ^ T8[1280 + ((a >>> 16) & 0xff)]! ^ T8[1024 + (a >>> 24)]! ^
      T8[768 + data[i + 4]!]! ^ T8[512 + data[i + 5]!]! ^ T8[256 + data[i + 6]!]! ^ T8[data[i + 7]!]!;
  }
  for (; i < end; i++) c = T8[(c ^ data[i]!) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
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
