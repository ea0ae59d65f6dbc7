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
  textOrder?(): Uint32Array;
}

export class TokenMarkerError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TokenMarkerError";
  }
}

type BoundVocabulary = { size: number; eos: number[]; flat(): FlatVocabulary; ids: Map<number, number>; textOrder?(): Uint32Array };

/**
 * Bound vocabularies per vocabulary and marker set: the same object for every spec that binds the
 * same markers, so the binding's per-vocabulary caches (the trie, its derived bits, kept
 * summaries: bindings/spec.ts) hit from the second load on, as they do for a spec without markers.
 * A new object per load rebuilt the trie every time (qwen3-tools.agent: 25-35 ms a load on Qwen3).
 */
const bound = new WeakMap<BindableVocabulary, Map<string, BoundVocabulary>>();

/** The vocabulary as the spec's automaton sees it; `ids` maps each marker's byte to its token id. */
export function bindTokenMarkers(vocab: BindableVocabulary, markers: readonly TokenMarker[]): BoundVocabulary {
  const key = JSON.stringify(markers.map((m) => [m.byte, m.text]));
  let byMarkers = bound.get(vocab);
  if (!byMarkers) bound.set(vocab, (byMarkers = new Map()));
  let b = byMarkers.get(key);
  if (!b) byMarkers.set(key, (b = bindOnce(vocab, markers)));
  return b;
}

function bindOnce(vocab: BindableVocabulary, markers: readonly TokenMarker[]): BoundVocabulary {
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
  const eos = vocab.eos.filter((id) => !markerIds.has(id));
  // The trie order (text ids sorted by bytes, bindings/token-order.ts) follows from the
  // vocabulary's own: drop the ids that changed, and put each marker id (one byte, which no
  // remaining token contains) where that byte sorts. No re-sort of 100k+ tokens.
  const base = vocab.textOrder?.();
  if (!base) return { size, eos, flat: () => flat, ids };
  let order: Uint32Array | undefined;
  const textOrder = () => (order ??= derivedOrder(base, flat, markerIds, byteOf));
  return { size, eos, flat: () => flat, ids, textOrder };
}

function derivedOrder(base: Uint32Array, flat: FlatVocabulary, markerIds: Set<number>, byteOf: Map<number, number>): Uint32Array {
  const { bytes, offsets, special } = flat;
  const kept: number[] = [];
  for (const id of base) if (!special[id] && !markerIds.has(id)) kept.push(id);
  const first = (id: number) => (offsets[id + 1]! > offsets[id]! ? bytes[offsets[id]!]! : -1);
  // A marker token is the single byte b, and no kept token contains b: it sorts after every token
  // whose first byte is below b and before every token whose first byte is above it.
  const markers = [...markerIds].sort((a, b) => byteOf.get(a)! - byteOf.get(b)!);
  const out = new Uint32Array(kept.length + markers.length);
  let k = 0, m = 0;
  for (const id of kept) {
    while (m < markers.length && byteOf.get(markers[m]!)! < first(id)) out[k++] = markers[m++]!;
    out[k++] = id;
  }
  while (m < markers.length) out[k++] = markers[m++]!;
  return out;
}
