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
import {
  concat, encodeModule, parseSections as parseModule, readU32Leb, SEC_CUSTOM, SEC_DATA, SEC_DATACOUNT, SECTION_ORDER, u32Leb, type Section,
} from "./wasm-binary.js";

/** The sections of `wasm`; a malformed module is an error that names emitWasm. */
function parseSections(wasm: Uint8Array): Section[] {
  try {
    return parseModule(wasm);
  } catch (e) {
    throw new Error(`emitWasm: ${(e as Error).message}`);
  }
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
  return seal(encodeModule(out));
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
