/**
 * @fileoverview Binding a spec's token markers (`(:token "<tool_call>")`, compiler/tokens.ts) to a
 * vocabulary: the marker's token id decodes, for this spec's automaton, to the one byte the
 * automaton reads for the marker; ordinary tokens whose bytes contain such a byte (invalid UTF-8:
 * byte-fallback `<0xF8>`, byte-level single bytes) are never allowed, so no sequence of ordinary
 * tokens can spell a marker; a marker token that is also an EOS id (Qwen3's `<|im_end|>`) is the
 * marker, no longer EOS. The result is a new vocabulary view; the vocabulary itself is unchanged.
 */
import type { TokenMarker } from "../compiler/tokens.js";
import type { FlatVocabulary } from "./vocab.js";

/** What binding needs from a vocabulary (`Vocabulary` has it). */
export interface BindableVocabulary {
  readonly size: number;
  readonly eos: readonly number[];
  flat(): FlatVocabulary;
  tokenId?(text: string): number | undefined;
}

export class TokenMarkerError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TokenMarkerError";
  }
}

/** The vocabulary as the spec's automaton sees it; `ids` maps each marker's byte to its token id. */
export function bindTokenMarkers(vocab: BindableVocabulary, markers: readonly TokenMarker[]): {
  size: number; eos: number[]; flat(): FlatVocabulary; ids: Map<number, number>;
} {
  const ids = new Map<number, number>();
  for (const m of markers) {
    const id = vocab.tokenId?.(m.text);
    if (id === undefined) {
      throw new TokenMarkerError(`the spec's token marker ${JSON.stringify(m.text)} is not a token of this vocabulary` +
        (vocab.tokenId ? "" : " (this vocabulary cannot look tokens up by text)") +
        `: load the tokenizer.json of the model the spec was written for, or write the marker as (:text ${JSON.stringify(m.text)})`);
    }
    ids.set(m.byte, id);
  }
  const { bytes, offsets, special } = vocab.flat();
  const reserved = new Uint8Array(256);
  for (const m of markers) reserved[m.byte] = 1;
  const markerIds = new Set(ids.values());
  const sp = special.slice();
  const size = vocab.size;
  const outOff = new Uint32Array(size + 1);
  const out = new Uint8Array(bytes.length + markers.length);
  let p = 0;
  const byteOf = new Map([...ids].map(([b, id]) => [id, b]));
  for (let id = 0; id < size; id++) {
    outOff[id] = p;
    const b = byteOf.get(id);
    if (b !== undefined) { sp[id] = 0; out[p++] = b; continue; }
    if (sp[id]) continue;
    const o = offsets[id]!, e = offsets[id + 1]!;
    let bad = false;
    for (let k = o; k < e && !bad; k++) bad = reserved[bytes[k]!] === 1;
    if (bad) { sp[id] = 1; continue; }
    out.set(bytes.subarray(o, e), p);
    p += e - o;
  }
  outOff[size] = p;
  const flat: FlatVocabulary = { bytes: out.subarray(0, p), offsets: outOff, special: sp };
  return { size, eos: vocab.eos.filter((id) => !markerIds.has(id)), flat: () => flat, ids };
}
