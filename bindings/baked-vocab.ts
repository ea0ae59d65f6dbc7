/**
 * @fileoverview A vocabulary baked into a .wasm (`specc compile --vocab tokenizer.json`): stored in
 * a custom section named `specc.vocab`, so the module stays instantiable by any host, and
 * `Spec.load` attaches it when no vocabulary is passed. Layout (little-endian):
 *
 *   u32 magic 0x56435053 ("SPCV") · u16 version 1 · u16 byte-order mark 0xFEFF · u32 size ·
 *   u32 nEos · u32 eos[nEos] · u8 kind[size] (0 text, 1 special) · u32 offsets[size + 1] · bytes
 *
 * A non-JS host reads the same section to attach the vocabulary through the numeric ABI.
 */
import { Vocabulary, type FlatVocabulary } from "./vocab.js";

export const VOCAB_SECTION = "specc.vocab";
const MAGIC = 0x56435053;

export function serializeVocabulary(flat: FlatVocabulary, eos: readonly number[]): Uint8Array {
  const size = flat.offsets.length - 1;
  const head = 16 + 4 * eos.length;
  const total = head + size + 4 * (size + 1) + flat.bytes.length;
  const out = new Uint8Array(total);
  const dv = new DataView(out.buffer);
  dv.setUint32(0, MAGIC, true);
  dv.setUint16(4, 1, true);
  dv.setUint16(6, 0xfeff, true);
  dv.setUint32(8, size, true);
  dv.setUint32(12, eos.length, true);
  eos.forEach((id, i) => dv.setUint32(16 + 4 * i, id, true));
  out.set(flat.special.subarray(0, size), head);
  const offAt = head + size;
  for (let i = 0; i <= size; i++) dv.setUint32(offAt + 4 * i, flat.offsets[i]!, true);
  out.set(flat.bytes, offAt + 4 * (size + 1));
  return out;
}

export function deserializeVocabulary(data: Uint8Array): Vocabulary {
  const bad = (why: string) => new Error(`the .wasm's baked vocabulary (custom section ${VOCAB_SECTION}) is invalid: ${why}`);
  if (data.length < 16) throw bad("too short");
  const dv = new DataView(data.buffer, data.byteOffset, data.byteLength);
  if (dv.getUint32(0, true) !== MAGIC) throw bad("bad magic");
  if (dv.getUint16(6, true) !== 0xfeff) throw bad("wrong byte order");
  if (dv.getUint16(4, true) !== 1) throw bad(`unsupported version ${dv.getUint16(4, true)}`);
  const size = dv.getUint32(8, true);
  const nEos = dv.getUint32(12, true);
  const head = 16 + 4 * nEos;
  const offAt = head + size;
  const bytesAt = offAt + 4 * (size + 1);
  if (size === 0 || bytesAt > data.length) throw bad("truncated");
  const eos = Array.from({ length: nEos }, (_, i) => dv.getUint32(16 + 4 * i, true));
  const tokens: (Uint8Array | null)[] = new Array(size);
  for (let id = 0; id < size; id++) {
    const a = dv.getUint32(offAt + 4 * id, true), b = dv.getUint32(offAt + 4 * id + 4, true);
    if (b < a || bytesAt + b > data.length) throw bad(`token ${id} runs past the end`);
    tokens[id] = data[head + id] ? null : data.subarray(bytesAt + a, bytesAt + b);
  }
  return Vocabulary.fromTokenBytes(tokens, { eos });
}

/** The baked vocabulary of a module, if it has one. */
export function bakedVocabulary(module: WebAssembly.Module): Vocabulary | undefined {
  const sections = WebAssembly.Module.customSections(module, VOCAB_SECTION);
  return sections.length ? deserializeVocabulary(new Uint8Array(sections[0]!)) : undefined;
}
