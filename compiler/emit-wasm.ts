/**
 * @fileoverview Produces a spec's .wasm: the prebuilt runtime (build/runtime.wasm) plus one active
 * data segment that places the tables at TABLE_BASE (docs/abi.md).
 *
 * A minimal section walker is enough: the runtime is never relinked, only its data section (id 11)
 * gets one more segment and the data-count section (id 12), if any, one more count. Everything else
 * is copied byte for byte, so the output is deterministic. The result is sealed (seal.ts: a
 * last custom section with the CRC-32 of the rest, checked by Spec.load).
 */

import { runtimeWasmBytes } from "./host.js";
import { seal, unseal } from "./seal.js";
import { TABLE_BASE } from "./tables.js";

const WASM_MAGIC = [0x00, 0x61, 0x73, 0x6d];
const WASM_VERSION = [0x01, 0x00, 0x00, 0x00];
const SEC_CUSTOM = 0;
const SEC_DATA = 11;
const SEC_DATACOUNT = 12;
/** Canonical order of the non-custom sections (tag = 13 sits between memory and global). */
const SECTION_ORDER = [1, 2, 3, 4, 5, 13, 6, 7, 8, 9, 12, 10, 11];

interface Section {
  id: number;
  /** The section's payload (without id and size). */
  body: Uint8Array;
}

function readU32Leb(bytes: Uint8Array, pos: number, what: string): { value: number; next: number } {
  let value = 0;
  let shift = 0;
  for (let i = 0; i < 5; i++) {
    if (pos >= bytes.length) throw new Error(`emitWasm: truncated LEB128 (${what})`);
    const b = bytes[pos++]!;
    value += (b & 0x7f) * 2 ** shift;
    if (!(b & 0x80)) {
      if (value > 0xffffffff) throw new Error(`emitWasm: LEB128 out of u32 range (${what})`);
      return { value, next: pos };
    }
    shift += 7;
  }
  throw new Error(`emitWasm: LEB128 longer than 5 bytes (${what})`);
}

function u32Leb(n: number): number[] {
  const out: number[] = [];
  do {
    let b = n & 0x7f;
    n = Math.floor(n / 128);
    if (n !== 0) b |= 0x80;
    out.push(b);
  } while (n !== 0);
  return out;
}

function concat(parts: (Uint8Array | number[])[]): Uint8Array {
  const total = parts.reduce((n, p) => n + p.length, 0);
  const out = new Uint8Array(total);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

function parseSections(wasm: Uint8Array): Section[] {
  if (wasm.length < 8 || WASM_MAGIC.some((b, i) => wasm[i] !== b)) {
    throw new Error("emitWasm: the runtime is not a WebAssembly binary (bad magic)");
  }
  if (WASM_VERSION.some((b, i) => wasm[4 + i] !== b)) {
    throw new Error("emitWasm: unsupported WebAssembly binary version (expected 1)");
  }
  const sections: Section[] = [];
  let pos = 8;
  while (pos < wasm.length) {
    const id = wasm[pos++]!;
    const size = readU32Leb(wasm, pos, `size of section ${id}`);
    pos = size.next;
    if (pos + size.value > wasm.length) throw new Error(`emitWasm: section ${id} runs past the end of the module`);
    sections.push({ id, body: wasm.subarray(pos, pos + size.value) });
    pos += size.value;
  }
  return sections;
}

/** An active data segment for memory 0 at `i32.const offset`. */
function dataSegment(offset: number, data: Uint8Array): Uint8Array {
  // flags 0 = active, memory 0; offset expression: i32.const <sleb128 offset> end.
  if (offset < 0 || offset > 63) throw new Error("emitWasm: offset needs a longer SLEB128 encoding");
  return concat([[0x00, 0x41, offset, 0x0b], u32Leb(data.length), data]);
}

/** A vector section body with one more element appended. */
function appendToVector(body: Uint8Array, element: Uint8Array, what: string): Uint8Array {
  const count = readU32Leb(body, 0, `${what} count`);
  return concat([u32Leb(count.value + 1), body.subarray(count.next), element]);
}

/**
 * The runtime with the tables added as an active data segment at TABLE_BASE. The data section is
 * created (after the last non-custom section, before any trailing custom sections such as "name")
 * if the runtime has none, and the data-count section, if present, is incremented.
 */
export function emitWasm(runtime: Uint8Array, tables: Uint8Array): Uint8Array {
  const sections = parseSections(unseal(runtime));
  const segment = dataSegment(TABLE_BASE, tables);
  let sawData = false;
  const out: Section[] = sections.map((s) => {
    if (s.id === SEC_DATA) {
      if (sawData) throw new Error("emitWasm: the runtime has two data sections");
      sawData = true;
      return { id: s.id, body: appendToVector(s.body, segment, "data segment") };
    }
    if (s.id === SEC_DATACOUNT) {
      const count = readU32Leb(s.body, 0, "data count");
      if (count.next !== s.body.length) throw new Error("emitWasm: malformed data-count section");
      return { id: s.id, body: Uint8Array.from(u32Leb(count.value + 1)) };
    }
    return s;
  });
  if (!sawData) {
    const rank = (id: number): number => SECTION_ORDER.indexOf(id);
    let at = 0; // insert after the last non-custom section that must precede data
    out.forEach((s, i) => {
      if (s.id !== SEC_CUSTOM && rank(s.id) >= 0 && rank(s.id) < rank(SEC_DATA)) at = i + 1;
    });
    out.splice(at, 0, { id: SEC_DATA, body: concat([u32Leb(1), segment]) });
  }
  return seal(concat([
    WASM_MAGIC,
    WASM_VERSION,
    ...out.flatMap((s) => [[s.id, ...u32Leb(s.body.length)], s.body]),
  ]));
}

/**
 * The prebuilt runtime (build/runtime.wasm), embedded in the compiler at build time
 * (scripts/embed-runtime.mjs) so that compiling needs no file system, in Node or in a browser.
 */
export function loadRuntimeWasm(): Uint8Array {
  return runtimeWasmBytes();
}

/**
 * The module with a custom section appended (custom sections may come last; hosts ignore them),
 * sealed again (compiler/seal.ts: the seal stays the last section).
 */
export function appendCustomSection(wasm: Uint8Array, name: string, payload: Uint8Array): Uint8Array {
  const bare = unseal(wasm);
  parseSections(bare); // validates the module
  const nameBytes = new TextEncoder().encode(name);
  const body = concat([u32Leb(nameBytes.length), nameBytes, payload]);
  return seal(concat([bare, [SEC_CUSTOM, ...u32Leb(body.length)], body]));
}
