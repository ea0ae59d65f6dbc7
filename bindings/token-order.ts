/**
 * @fileoverview The text tokens of a vocabulary sorted by their bytes (shorter first on a common
 * prefix, then by id): the order of the token trie that `Spec.load` copies into the runtime
 * (docs/abi.md). It is the costly part of attaching a vocabulary (a comparison sort over 100k+
 * tokens), so it is done fast — a native Float64Array sort on a key packing each token's first
 * four bytes and its id, then a comparison sort only inside runs that share those four bytes —
 * computed once per Vocabulary and stored in prepared vocabulary files (prepared-vocab.ts).
 */

/** Ids of the tokens with `special[id] === 0`, sorted by bytes, then length, then id. */
export function sortTextTokens(bytes: Uint8Array, offsets: Uint32Array, special: Uint8Array): Uint32Array {
  const size = special.length;
  let nText = 0;
  for (let id = 0; id < size; id++) if (!special[id]) nText++;
  const order = new Uint32Array(nText);
  const cmp = (a: number, b: number, from: number) => {
    let i = offsets[a]! + from;
    let j = offsets[b]! + from;
    const ie = offsets[a + 1]!;
    const je = offsets[b + 1]!;
    for (; i < ie && j < je; i++, j++) {
      const d = bytes[i]! - bytes[j]!;
      if (d !== 0) return d;
    }
    return ie - i - (je - j) || a - b;
  };
  if (size > ID_LIMIT) {
    for (let id = 0, k = 0; id < size; id++) if (!special[id]) order[k++] = id;
    return order.sort((a, b) => cmp(a, b, 0));
  }
  // key = (b0+1, b1+1, b2+1, b3+1) in base 257 (0: the token ended), then the id: < 2^53, exact.
  const keys = new Float64Array(nText);
  for (let id = 0, k = 0; id < size; id++) {
    if (special[id]) continue;
    const o = offsets[id]!;
    const len = offsets[id + 1]! - o;
    let key = 0;
    for (let d = 0; d < 4; d++) key = key * 257 + (d < len ? bytes[o + d]! + 1 : 0);
    keys[k++] = key * ID_LIMIT + id;
  }
  keys.sort();
  for (let k = 0; k < nText; k++) order[k] = keys[k]! % ID_LIMIT;
  // Runs with the same first four bytes (all of them at least four bytes long, or they would
  // differ) are ordered by the rest.
  for (let k = 0; k < nText; ) {
    const head = Math.floor(keys[k]! / ID_LIMIT);
    let e = k + 1;
    while (e < nText && Math.floor(keys[e]! / ID_LIMIT) === head) e++;
    if (e - k > 1) order.subarray(k, e).sort((a, b) => cmp(a, b, 4));
    k = e;
  }
  return order;
}

const ID_LIMIT = 1 << 19;
