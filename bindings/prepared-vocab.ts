/**
 * @fileoverview The prepared vocabulary file (`specc vocab tokenizer.json -o llama3.vocab`): a
 * Vocabulary's flat layout plus the sorted text-token order of its trie, so loading one is copying
 * arrays (no JSON, no UTF-8 conversion, no sort). Versioned and validated on load like the tables
 * (compiler/tables.ts): magic, byte-order mark, version, exact lengths, monotone offsets, kinds,
 * EOS ids and a checksum over the payload.
 * Layout (little-endian, every array 4-byte aligned):
 *
 *   u32 magic 0x56505053 ("SPPV") · u16 version 4 · u16 byte-order mark 0xFEFF · u32 size ·
 *   u32 nEos · u32 nText · u32 byteCount · u8 family (0 bytes, 1 byte-bpe, 2 sentencepiece) ·
 *   u8 addsPrefixSpace · u16 0 · u32 checksum (FNV-1a's step, each followed by `h ^= h >>> 15`,
 *   on little-endian 32-bit words over the header but this word, then everything after it, then
 *   the last 0–3 bytes; versions 1 and 2 stepped bytewise over what follows the header only, so a
 *   flipped family or prefix flag there went unnoticed; version 3 had no `h >>> 15`, so damage to
 *   a word's high bits reached only the hash's top bits: both found by `npm run fuzz`) · u32 0 ·
 *   u32 eos[nEos] · u32 offsets[size + 1] · u32 order[nText] · u8 special[size] · u8 bytes[byteCount] ·
 *   u32 addedLen · u8 added[addedLen] (version 2: the tokenizer's added tokens as UTF-8 JSON
 *   `[[content, id], …]`, special ones included, so `(:token "<|im_end|>")` markers can be bound)
 * Version 1 files (no added tokens) and version 2 files (bytewise checksum) are still read;
 * version 3 files (a word checksum that misses some damage) are refused with a request to
 * prepare them again.
 *
 * The trie order is not checked here: the runtime builds the trie from it and refuses an order
 * that is not every text token once, sorted (docs/abi.md, "Attaching a vocabulary", -6 to -8), in
 * the one pass it makes anyway; checking it here as well cost more than everything else together
 * (22 ms of 39 on Gemma 3). Version 4's checksum and the per-token checks run in a small
 * WebAssembly module (prepared-check.ts): loading is the first thing a decoder does, before
 * JavaScript's JIT has warmed up.
 *
 * Independent of vocab.ts (which imports it), so there is no import cycle.
 */

import { checkPrepared } from "./prepared-check.js";

export const PREPARED_MAGIC = 0x56505053;
export const PREPARED_VERSION = 4;
const HEADER = 36;
const FAMILIES = ["bytes", "byte-bpe", "sentencepiece"] as const;

export interface PreparedVocabulary {
  bytes: Uint8Array;
  offsets: Uint32Array;
  special: Uint8Array;
  eos: number[];
  order: Uint32Array;
  family: (typeof FAMILIES)[number];
  addsPrefixSpace: boolean;
  /** The tokenizer's added tokens, content → id (version 2); read back, a function that reads them (and throws where they are malformed). */
  added?: [string, number][] | (() => [string, number][]);
}

/** Whether `data` starts like a prepared vocabulary file. */
export function isPreparedVocabulary(data: Uint8Array): boolean {
  return data.length >= 4 && data[0] === 0x53 && data[1] === 0x50 && data[2] === 0x50 && data[3] === 0x56;
}

/**
 * The checksum: FNV-1a bytewise over the payload (versions 1, 2), or (4) on 32-bit words over the
 * header but its checksum word, then the payload, then its last 0–3 bytes bytewise.
 */
function checksum(data: Uint8Array, from: number, version: number): number {
  if (version < 3) return bytesHash(data, from, 0x811c9dc5);
  const n = (data.length - from) >>> 2;
  let h = headerHash(data);
  const aligned = (data.byteOffset + from) % 4 === 0 && LITTLE_ENDIAN;
  const words = aligned ? new Uint32Array(data.buffer, data.byteOffset + from, n) : undefined;
  const dv = new DataView(data.buffer, data.byteOffset, data.byteLength);
  for (let k = 0; k < n; k++) {
    h = Math.imul(h ^ (words ? words[k]! : dv.getUint32(from + 4 * k, true)), 0x01000193);
    h ^= h >>> 15;
  }
  return bytesHash(data, from + 4 * n, h);
}

/**
 * The word checksum's start: its step on the header's words but the checksum's own. Each step's
 * high bits are shifted down into the low ones: with the multiply alone (version 3, now refused
 * before its checksum is read) a change in a word's high bits only ever reached the hash's top
 * bits, so a flipped bit there and one in the stored checksum matched 1 time in 8 (`npm run fuzz`).
 */
function headerHash(data: Uint8Array): number {
  const head = new DataView(data.buffer, data.byteOffset, HEADER);
  let h = 0x811c9dc5;
  for (let k = 0; k < HEADER; k += 4) {
    if (k === 28) continue;
    h = Math.imul(h ^ head.getUint32(k, true), 0x01000193);
    h ^= h >>> 15;
  }
  return h;
}

/** FNV-1a bytewise on `data` from `from`, starting at `h`. */
function bytesHash(data: Uint8Array, from: number, h: number): number {
  for (let i = from; i < data.length; i++) h = Math.imul(h ^ data[i]!, 0x01000193);
  return h >>> 0;
}

/**
 * `data` (a prepared file, edited in place) with its checksum recomputed for the version it
 * states: how the fuzzer and the tests make damaged files that only the deeper checks can catch.
 */
export function resealPrepared(data: Uint8Array): Uint8Array {
  if (data.length < HEADER) return data;
  const dv = new DataView(data.buffer, data.byteOffset, data.byteLength);
  dv.setUint32(28, checksum(data, HEADER, dv.getUint16(4, true)), true);
  return data;
}

const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

export function serializePrepared(v: PreparedVocabulary): Uint8Array {
  const size = v.special.length;
  const nEos = v.eos.length, nText = v.order.length, byteCount = v.offsets[size]!;
  const added = new TextEncoder().encode(JSON.stringify((typeof v.added === "function" ? v.added() : v.added) ?? []));
  const total = HEADER + 4 * (nEos + size + 1 + nText) + size + byteCount + 4 + added.length;
  const out = new Uint8Array(total);
  const dv = new DataView(out.buffer);
  dv.setUint32(0, PREPARED_MAGIC, true);
  dv.setUint16(4, PREPARED_VERSION, true);
  dv.setUint16(6, 0xfeff, true);
  dv.setUint32(8, size, true);
  dv.setUint32(12, nEos, true);
  dv.setUint32(16, nText, true);
  dv.setUint32(20, byteCount, true);
  out[24] = FAMILIES.indexOf(v.family);
  out[25] = v.addsPrefixSpace ? 1 : 0;
  let at = HEADER;
  const u32 = (a: ArrayLike<number>) => { for (let i = 0; i < a.length; i++, at += 4) dv.setUint32(at, a[i]!, true); };
  u32(v.eos);
  u32(v.offsets);
  u32(v.order);
  out.set(v.special, at);
  at += size;
  out.set(v.bytes.subarray(0, byteCount), at);
  at += byteCount;
  dv.setUint32(at, added.length, true);
  out.set(added, at + 4);
  dv.setUint32(28, checksum(out, HEADER, PREPARED_VERSION), true);
  return out;
}

/** The vocabulary in a prepared file; throws an Error saying what is wrong with it. */
export function deserializePrepared(data: Uint8Array, name = "the prepared vocabulary"): PreparedVocabulary {
  const bad = (why: string): never => {
    throw new Error(`${name} is not a valid prepared vocabulary (specc vocab): ${why}`);
  };
  if (data.length < HEADER) bad(`${data.length} bytes, shorter than the ${HEADER}-byte header`);
  const dv = new DataView(data.buffer, data.byteOffset, data.byteLength);
  if (dv.getUint32(0, true) !== PREPARED_MAGIC) bad("bad magic (expected \"SPPV\")");
  if (dv.getUint16(6, true) !== 0xfeff) bad("wrong byte order");
  const version = dv.getUint16(4, true);
  if (version < 1 || version > PREPARED_VERSION) bad(`format version ${version}; this specc reads versions 1 to ${PREPARED_VERSION}: prepare it again with \`specc vocab\``);
  if (version === 3) bad("format version 3, whose checksum misses some damage: prepare it again with `specc vocab`");
  const size = dv.getUint32(8, true), nEos = dv.getUint32(12, true), nText = dv.getUint32(16, true), byteCount = dv.getUint32(20, true);
  const familyCode = data[24]!, prefix = data[25]!;
  if (size === 0) bad("no tokens");
  if (nText > size || nEos > size) bad("counts larger than the vocabulary");
  if (familyCode >= FAMILIES.length || prefix > 1 || dv.getUint16(26, true) !== 0 || dv.getUint32(32, true) !== 0) bad("bad header flags");
  const body = HEADER + 4 * (nEos + size + 1 + nText) + size + byteCount;
  if (data.length < body + (version === 1 ? 0 : 4)) bad(`${data.length} bytes where the header says ${body}${version === 1 ? "" : " and more"} (truncated)`);
  const addedLen = version === 1 ? 0 : dv.getUint32(body, true);
  const expected = version === 1 ? body : body + 4 + addedLen;
  if (data.length !== expected) bad(`${data.length} bytes where the header says ${expected} (truncated or padded)`);
  const offsetsAt = HEADER + 4 * nEos, orderAt = offsetsAt + 4 * (size + 1), kindsAt = orderAt + 4 * nText;
  // Version 4's checksum and the per-token checks in WebAssembly (prepared-check.ts); the
  // JavaScript below runs where that is not available, and words the error where it says no.
  const nWords = (data.length - HEADER) >>> 2;
  const fast = version >= 4
    ? checkPrepared(data, { words: HEADER, nWords, hash: headerHash(data), offsets: offsetsAt, kinds: kindsAt, size })
    : undefined;
  const sum = fast ? bytesHash(data, HEADER + 4 * nWords, fast.hash) : checksum(data, HEADER, version);
  if (sum !== dv.getUint32(28, true)) bad("checksum mismatch (the file is corrupted)");
  // Zero-copy views where the bytes are aligned and the host is little-endian (every host specc
  // runs on in practice), else copies.
  const u32 = (at: number, n: number) => {
    if (LITTLE_ENDIAN && (data.byteOffset + at) % 4 === 0) return new Uint32Array(data.buffer, data.byteOffset + at, n);
    const a = new Uint32Array(n);
    for (let i = 0; i < n; i++) a[i] = dv.getUint32(at + 4 * i, true);
    return a;
  };
  const eos = Array.from(u32(HEADER, nEos));
  const offsets = u32(offsetsAt, size + 1);
  const order = u32(orderAt, nText);
  const special = data.subarray(kindsAt, kindsAt + size);
  const bytes = data.subarray(kindsAt + size, kindsAt + size + byteCount);
  if (offsets[0] !== 0 || offsets[size] !== byteCount) bad("token offsets do not span the bytes");
  const passed = fast !== undefined && fast.text === nText;
  if (!passed) {
    let text = 0;
    for (let i = 0; i < size; i++) {
      if (offsets[i + 1]! < offsets[i]!) bad(`token ${i}'s offsets decrease`);
      const kind = special[i]!;
      if (kind > 1) bad(`token ${i} has kind ${kind}`);
      text += 1 - kind;
    }
    if (text !== nText) bad(`${nText} sorted text tokens, but ${text} text tokens`);
  }
  for (const id of eos) if (id >= size || !special[id]) bad(`EOS id ${id} is not a special token of the vocabulary`);
  if (!passed && fast) bad("its tokens failed the checks");
  // The added tokens are read when first asked for (Vocabulary.tokenId, addedContent): most
  // decoders never bind a marker by name, and Gemma 3's 6,415 of them cost 4 ms at load. The
  // checksum has covered their bytes; a list that is not what it should be (only a file made so on
  // purpose, then sealed again) is an error then, worded as here.
  const addedBytes = data.subarray(body + 4, body + 4 + addedLen);
  const added = () => {
    if (!addedLen) return [];
    let list: [string, number][] = [];
    try {
      list = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(addedBytes)) as [string, number][];
    } catch { bad("the added-token list is not UTF-8 JSON"); }
    if (!Array.isArray(list) || !list.every((a) => Array.isArray(a) && typeof a[0] === "string" && Number.isInteger(a[1]) && a[1] >= 0 && a[1] < size)) {
      bad("the added-token list is not [[content, id], …] with ids in the vocabulary");
    }
    return list;
  };
  return { bytes, offsets, special, eos, order, family: FAMILIES[familyCode]!, addsPrefixSpace: prefix === 1, added };
}
