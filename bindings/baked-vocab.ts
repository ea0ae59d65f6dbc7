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
export const MASKS_SECTION = "specc.masks";
const MAGIC = 0x56435053;
const MASKS_MAGIC = 0x4d435053; // "SPCM"

/**
 * Precomputed masks (custom section `specc.masks`): u32 magic "SPCM" · u16 version 1 · u16 0xFEFF ·
 * u32 nStates · u32 nMasks · u32 words · u32 stateMask[nStates] · i32 masks[nMasks × words].
 */
export interface BakedMasks { words: number; stateMask: Uint32Array; masks: Int32Array }

export function serializeMasks(m: BakedMasks): Uint8Array {
  const nMasks = m.masks.length / m.words;
  const out = new Uint8Array(20 + 4 * m.stateMask.length + 4 * m.masks.length);
  const dv = new DataView(out.buffer);
  dv.setUint32(0, MASKS_MAGIC, true);
  dv.setUint16(4, 1, true);
  dv.setUint16(6, 0xfeff, true);
  dv.setUint32(8, m.stateMask.length, true);
  dv.setUint32(12, nMasks, true);
  dv.setUint32(16, m.words, true);
  m.stateMask.forEach((k, i) => dv.setUint32(20 + 4 * i, k, true));
  const at = 20 + 4 * m.stateMask.length;
  for (let i = 0; i < m.masks.length; i++) dv.setInt32(at + 4 * i, m.masks[i]!, true);
  return out;
}

export function bakedMaskTable(module: WebAssembly.Module): BakedMasks | undefined {
  const sections = WebAssembly.Module.customSections(module, MASKS_SECTION);
  if (!sections.length) return undefined;
  const data = new Uint8Array(sections[0]!);
  const bad = (why: string) => new Error(`the .wasm's baked masks (custom section ${MASKS_SECTION}) are invalid: ${why}`);
  if (data.length < 20) throw bad("too short");
  const dv = new DataView(data.buffer, data.byteOffset, data.byteLength);
  if (dv.getUint32(0, true) !== MASKS_MAGIC || dv.getUint16(6, true) !== 0xfeff) throw bad("bad magic or byte order");
  if (dv.getUint16(4, true) !== 1) throw bad(`unsupported version ${dv.getUint16(4, true)}`);
  const nStates = dv.getUint32(8, true), nMasks = dv.getUint32(12, true), words = dv.getUint32(16, true);
  const at = 20 + 4 * nStates;
  if (at + 4 * nMasks * words !== data.length) throw bad("truncated");
  const stateMask = new Uint32Array(nStates);
  for (let i = 0; i < nStates; i++) {
    stateMask[i] = dv.getUint32(20 + 4 * i, true);
    if (stateMask[i]! >= nMasks) throw bad(`state ${i} names mask ${stateMask[i]} of ${nMasks}`);
  }
  const masks = new Int32Array(nMasks * words);
  for (let i = 0; i < masks.length; i++) masks[i] = dv.getInt32(at + 4 * i, true);
  return { words, stateMask, masks };
}

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
