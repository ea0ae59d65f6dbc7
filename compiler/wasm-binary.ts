/**
 * @fileoverview The few pieces of the WebAssembly binary format that specc reads and writes:
 * LEB128 integers, the section list, and modules put back together from sections. emit-wasm.ts
 * uses them to add the tables to the runtime; the binding (bindings/instantiate.ts) uses them to
 * take the tables back out, so that every spec shares one compiled runtime.
 */

export const WASM_MAGIC = [0x00, 0x61, 0x73, 0x6d];
export const WASM_VERSION = [0x01, 0x00, 0x00, 0x00];
export const SEC_CUSTOM = 0;
export const SEC_IMPORT = 2;
export const SEC_MEMORY = 5;
export const SEC_DATA = 11;
export const SEC_DATACOUNT = 12;
/** Canonical order of the non-custom sections (tag = 13 sits between memory and global). */
export const SECTION_ORDER = [1, 2, 3, 4, 5, 13, 6, 7, 8, 9, 12, 10, 11];

export interface Section {
  id: number;
  /** The section's payload (without id and size). */
  body: Uint8Array;
}

export function readU32Leb(bytes: Uint8Array, pos: number, what: string): { value: number; next: number } {
  let value = 0;
  let shift = 0;
  for (let i = 0; i < 5; i++) {
    if (pos >= bytes.length) throw new Error(`truncated LEB128 (${what})`);
    const b = bytes[pos++]!;
    value += (b & 0x7f) * 2 ** shift;
    if (!(b & 0x80)) {
      if (value > 0xffffffff) throw new Error(`LEB128 out of u32 range (${what})`);
      return { value, next: pos };
    }
    shift += 7;
  }
  throw new Error(`LEB128 longer than 5 bytes (${what})`);
}

export function u32Leb(n: number): number[] {
  const out: number[] = [];
  do {
    let b = n & 0x7f;
    n = Math.floor(n / 128);
    if (n !== 0) b |= 0x80;
    out.push(b);
  } while (n !== 0);
  return out;
}

export function concat(parts: (Uint8Array | number[])[]): Uint8Array<ArrayBuffer> {
  const total = parts.reduce((n, p) => n + p.length, 0);
  const out = new Uint8Array(total);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/** The sections of a module, in order (bodies are views into `wasm`). */
export function parseSections(wasm: Uint8Array): Section[] {
  if (wasm.length < 8 || WASM_MAGIC.some((b, i) => wasm[i] !== b)) {
    throw new Error("not a WebAssembly binary (bad magic)");
  }
  if (WASM_VERSION.some((b, i) => wasm[4 + i] !== b)) {
    throw new Error("unsupported WebAssembly binary version (expected 1)");
  }
  const sections: Section[] = [];
  let pos = 8;
  while (pos < wasm.length) {
    const id = wasm[pos++]!;
    const size = readU32Leb(wasm, pos, `size of section ${id}`);
    pos = size.next;
    if (pos + size.value > wasm.length) throw new Error(`section ${id} runs past the end of the module`);
    sections.push({ id, body: wasm.subarray(pos, pos + size.value) });
    pos += size.value;
  }
  return sections;
}

/** A module made of `sections`, in the order given. */
export function encodeModule(sections: readonly Section[]): Uint8Array<ArrayBuffer> {
  return concat([WASM_MAGIC, WASM_VERSION, ...sections.flatMap((s) => [[s.id, ...u32Leb(s.body.length)], s.body])]);
}
