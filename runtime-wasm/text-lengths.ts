/**
 * @fileoverview Text tokens by length (part of specc's WebAssembly runtime; index.ts lists the
 * modules), for the pushdown summaries of a length-bounded string's positions.
 *
 * Inside a string of at most N characters, with r characters left, every token made of text
 * characters (vocab.ts `textNext`: printable ASCII but the quote and the backslash, and whole or
 * started UTF-8 characters) is allowed when it has at most r characters and refused when it has
 * more. Walking the trie to find that out visits every node of depth ≤ r below a taller one: most of
 * the trie (0.3-2 ms a mask on Llama 3). Here, per vocabulary: each token's character count when it
 * is a text token (a started character counts: its first byte is read where the next character
 * would be), the text tokens sorted by count, and, per count C asked for, the mask of the text
 * tokens of at most C characters. The counts take one pass over the token bytes (~3.5 ms on
 * Llama 3), made on first use; a host keeps them from one instance for the next (`text_counts`,
 * `text_counts_install`: docs/abi.md, "Text counts").
 */

import {
  K_TEXT, U8_STATES, allocZero, maskBytes, setBit, textNext, tokBytesPtr, tokKindPtr, tokOffPtr,
  vocabPhase, vocabSize,
} from "./vocab";

/** Per token: its character count if it is a text token, else 0 (u8; MAX_COUNT: that many or more). 0 until made. */
let countPtr: usize = 0;
/** Text tokens by character count: the ids of count k at [start(k), start(k + 1)). 0 until sorted. */
let byCountStart: usize = 0;
let byCountIds: usize = 0;
/** Per count C: the mask of the text tokens of at most C characters, or 0 (not made yet). */
let countMasks: usize = 0;
/** Counts are kept up to this (a longer token counts as this many: more than any run, pushdown-masks.ts). */
// @ts-ignore: decorator
@inline const MAX_COUNT: u32 = 255;

/** The address of the per-token counts (vocabSize bytes), made by this instance or installed; 0 while there are none. */
export function text_counts(): i32 {
  return <i32>countPtr;
}

/**
 * Room for per-token counts another instance of the same vocabulary made (`text_counts`), for the
 * host to write before the next mask: its address, or 0 (no vocabulary yet, or this instance has
 * counts already). Counts that are not this vocabulary's give wrong masks, never an access outside
 * the module's memory.
 */
export function text_counts_install(): i32 {
  if (vocabPhase != 2 || countPtr != 0) return 0;
  countPtr = allocZero(<usize>vocabSize);
  return <i32>countPtr;
}

/** Where the text tokens of count k start in `byCountIds`. */
// @ts-ignore: decorator
@inline function start(k: u32): u32 {
  return load<u32>(byCountStart + (<usize>k << 2));
}

/** The counts (one pass over the token bytes, unless installed) and the text tokens sorted by count. */
export function textLengthsInit(): void {
  if (byCountStart != 0) return;
  const n = vocabSize;
  if (countPtr == 0) {
    countPtr = allocZero(<usize>n);
    for (let tok: u32 = 0; tok < n; tok++) {
      if (<u32>load<u8>(tokKindPtr + <usize>tok) != K_TEXT) continue;
      const off = <usize>load<u32>(tokOffPtr + (<usize>tok << 2));
      const len = <usize>load<u32>(tokOffPtr + (<usize>tok << 2), 4) - off;
      const bytes = tokBytesPtr + off;
      let u: u32 = 0, c: u32 = 0;
      let j: usize = 0;
      for (; j < len; j++) {
        const b = <u32>load<u8>(bytes + j);
        if (u == 0 && b < 0x80) {
          // ASCII between characters: text when printable, not the quote, not the backslash.
          if (b - 0x20 >= 0x5f || b == 0x22 || b == 0x5c) break;
          c++;
          continue;
        }
        u = textNext(u, b);
        if (u == U8_STATES) break;
        if (b - 0x80 >= 0x40) c++;
      }
      if (j == len && len > 0) store<u8>(countPtr + <usize>tok, <u8>min(c, MAX_COUNT));
    }
  }
  // Counting sort of the text tokens by count.
  const counts = countPtr;
  byCountStart = allocZero(<usize>(MAX_COUNT + 2) << 2);
  for (let tok: u32 = 0; tok < n; tok++) {
    const c = <u32>load<u8>(counts + <usize>tok);
    if (c == 0) continue;
    const a = byCountStart + (<usize>(c + 1) << 2);
    store<u32>(a, load<u32>(a) + 1);
  }
  for (let c: u32 = 1; c <= MAX_COUNT + 1; c++) {
    const a = byCountStart + (<usize>c << 2);
    store<u32>(a, load<u32>(a) + load<u32>(a - 4));
  }
  const fill = heap.alloc(<usize>(MAX_COUNT + 1) << 2);
  memory.copy(fill, byCountStart, <usize>(MAX_COUNT + 1) << 2);
  byCountIds = heap.alloc(max<usize>(<usize>start(MAX_COUNT + 1) << 2, 4));
  for (let tok: u32 = 0; tok < n; tok++) {
    const c = <u32>load<u8>(counts + <usize>tok);
    if (c == 0) continue;
    const a = fill + (<usize>c << 2);
    const at = load<u32>(a);
    store<u32>(byCountIds + (<usize>at << 2), tok);
    store<u32>(a, at + 1);
  }
  heap.free(fill);
  countMasks = allocZero(<usize>(MAX_COUNT + 1) << 2);
}

/** The mask of the text tokens of at most `c` characters, 1 ≤ c < MAX_COUNT (`textLengthsInit` first). */
export function textMaskUpTo(c: u32): usize {
  const slot = countMasks + (<usize>c << 2);
  if (load<u32>(slot) != 0) return <usize>load<u32>(slot);
  // From the nearest count made already (below: add the counts in between; above: take them
  // out), whichever has fewer tokens in between; from nothing when none is made.
  let lo: u32 = c - 1;
  while (lo > 0 && load<u32>(countMasks + (<usize>lo << 2)) == 0) lo--;
  let hi: u32 = c + 1;
  while (hi < MAX_COUNT && load<u32>(countMasks + (<usize>hi << 2)) == 0) hi++;
  const out = heap.alloc(maskBytes);
  if (hi < MAX_COUNT && (lo == 0 || start(hi + 1) - start(c + 1) < start(c + 1) - start(lo + 1))) {
    memory.copy(out, <usize>load<u32>(countMasks + (<usize>hi << 2)), maskBytes);
    for (let k = start(c + 1); k < start(hi + 1); k++) {
      const id = load<u32>(byCountIds + (<usize>k << 2));
      const w = out + (<usize>(id >>> 5) << 2);
      store<u32>(w, load<u32>(w) & ~(<u32>1 << (id & 31)));
    }
  } else {
    if (lo > 0) memory.copy(out, <usize>load<u32>(countMasks + (<usize>lo << 2)), maskBytes);
    else memory.fill(out, 0, maskBytes);
    for (let k = start(lo + 1); k < start(c + 1); k++) setBit(out, load<u32>(byCountIds + (<usize>k << 2)));
  }
  store<u32>(slot, <u32>out);
  return out;
}
