/**
 * @fileoverview Code point sets and their UTF-8 byte-range sequences.
 *
 * A character class of the grammar is a set of Unicode scalar values (code points minus the
 * surrogates U+D800–U+DFFF, up to U+10FFFF). The CFG runs on bytes (cfg.ts says why), so each
 * class is compiled into a union of byte-range sequences, e.g. U+0080–U+10FFFF becomes
 *
 *   [C2-DF][80-BF] | E0[A0-BF][80-BF] | [E1-EC][80-BF][80-BF] | ED[80-9F][80-BF]
 *   | [EE-EF][80-BF][80-BF] | F0[90-BF][80-BF][80-BF] | [F1-F3][80-BF][80-BF][80-BF]
 *   | F4[80-8F][80-BF][80-BF]
 *
 * The splitting is the classic one (RE2, regex-automata's Utf8Sequences): split a range until both
 * ends encode to the same length and every continuation position but the ones fixed by a common
 * prefix spans the full 80–BF; then each byte position is one range and every byte string in the
 * product is a valid encoding of a code point in the range (and nothing else). print.ts inverts it.
 */
import { sortByFirst } from "./small-sort.js";

/** An inclusive code point range. */
export type CpRange = readonly [number, number];

export const MAX_CODE_POINT = 0x10ffff;
const SURROGATE_LO = 0xd800;
const SURROGATE_HI = 0xdfff;

/** Sorted, merged, surrogate-free, clipped to [0, U+10FFFF]. */
export function normalizeCodePoints(ranges: readonly CpRange[]): CpRange[] {
  const pieces: [number, number][] = [];
  for (const [lo0, hi0] of ranges) {
    const lo = Math.max(0, lo0);
    const hi = Math.min(MAX_CODE_POINT, hi0);
    if (lo > hi) continue;
    // Surrogates are not characters: UTF-8 text cannot contain them, so a class never matches them.
    if (hi < SURROGATE_LO || lo > SURROGATE_HI) pieces.push([lo, hi]);
    else {
      if (lo < SURROGATE_LO) pieces.push([lo, SURROGATE_LO - 1]);
      if (hi > SURROGATE_HI) pieces.push([SURROGATE_HI + 1, hi]);
    }
  }
  sortByFirst(pieces);
  const out: [number, number][] = [];
  for (const [lo, hi] of pieces) {
    const last = out[out.length - 1];
    // Ranges that touch across the surrogate gap stay separate: that keeps "merged" canonical.
    if (last && lo <= last[1] + 1) last[1] = Math.max(last[1], hi);
    else out.push([lo, hi]);
  }
  return out;
}

/** Every scalar value not in `ranges`. */
export function complementCodePoints(ranges: readonly CpRange[]): CpRange[] {
  const norm = normalizeCodePoints(ranges);
  const out: [number, number][] = [];
  let next = 0;
  for (const [lo, hi] of norm) {
    if (lo > next) out.push([next, lo - 1]);
    next = hi + 1;
  }
  if (next <= MAX_CODE_POINT) out.push([next, MAX_CODE_POINT]);
  return normalizeCodePoints(out);
}

export function codePointCount(ranges: readonly CpRange[]): number {
  let n = 0;
  for (const [lo, hi] of normalizeCodePoints(ranges)) n += hi - lo + 1;
  return n;
}

export function encodeUtf8(cp: number): number[] {
  if (cp < 0x80) return [cp];
  if (cp < 0x800) return [0xc0 | (cp >> 6), 0x80 | (cp & 0x3f)];
  if (cp < 0x10000) return [0xe0 | (cp >> 12), 0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f)];
  return [0xf0 | (cp >> 18), 0x80 | ((cp >> 12) & 0x3f), 0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f)];
}

export function utf8Length(cp: number): number {
  return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

/** A byte range per position: the byte strings b0 b1 … with lo_i ≤ b_i ≤ hi_i. */
export type Utf8Sequence = Array<[number, number]>;

/**
 * The UTF-8 sequences of a set of scalar values, in ascending code point order. Their byte-string
 * languages are pairwise disjoint and their union is exactly the UTF-8 encodings of the set.
 */
export function utf8Sequences(ranges: readonly CpRange[]): Utf8Sequence[] {
  const out: Utf8Sequence[] = [];
  for (const [lo, hi] of normalizeCodePoints(ranges)) splitRange(lo, hi, out);
  return out;
}

function splitRange(lo0: number, hi0: number, out: Utf8Sequence[]): void {
  const stack: [number, number][] = [[lo0, hi0]];
  while (stack.length > 0) {
    let [lo, hi] = stack.pop()!;
    for (;;) {
      // 1. Both ends must encode to the same number of bytes.
      let split = false;
      for (const max of [0x7f, 0x7ff, 0xffff]) {
        if (lo <= max && max < hi) {
          stack.push([max + 1, hi]);
          hi = max;
          split = true;
          break;
        }
      }
      if (split) continue;
      if (hi <= 0x7f) {
        out.push([[lo, hi]]);
        break;
      }
      // 2. Below the longest common prefix, every continuation byte must span 80–BF.
      for (let i = 1; i < 4 && !split; i++) {
        const m = (1 << (6 * i)) - 1;
        if ((lo & ~m) !== (hi & ~m)) {
          if ((lo & m) !== 0) {
            stack.push([(lo | m) + 1, hi]);
            hi = lo | m;
            split = true;
          } else if ((hi & m) !== m) {
            stack.push([hi & ~m, hi]);
            hi = (hi & ~m) - 1;
            split = true;
          }
        }
      }
      if (split) continue;
      const a = encodeUtf8(lo);
      const b = encodeUtf8(hi);
      out.push(a.map((x, k) => [x, b[k]!]));
      break;
    }
  }
}

/**
 * The inverse of one sequence: the contiguous code point range it encodes, or undefined when the
 * byte strings of `seq` are not exactly the encodings of one contiguous range of scalar values.
 */
export function decodeUtf8Sequence(seq: readonly (readonly [number, number])[]): CpRange | undefined {
  const n = seq.length;
  if (n < 1 || n > 4) return undefined;
  const los = seq.map((r) => r[0]);
  const his = seq.map((r) => r[1]);
  const lo = decodeOne(los);
  const hi = decodeOne(his);
  if (lo === undefined || hi === undefined || lo > hi) return undefined;
  if (utf8Length(lo) !== n || utf8Length(hi) !== n) return undefined;
  for (let k = 1; k < n; k++) if (seq[k]![0] < 0x80 || seq[k]![1] > 0xbf) return undefined;
  if (lo <= SURROGATE_HI && hi >= SURROGATE_LO) return undefined;
  // Every byte string of the product is a valid encoding between lo and hi (the ends are valid and
  // the product is a lexicographic box); it is all of [lo, hi] exactly when the sizes agree.
  let size = 1;
  for (const [a, b] of seq) size *= b - a + 1;
  return size === hi - lo + 1 ? [lo, hi] : undefined;
}

/** Decodes one complete, valid, shortest-form UTF-8 encoding; undefined otherwise. */
export function decodeOne(bytes: readonly number[]): number | undefined {
  const b0 = bytes[0];
  if (b0 === undefined) return undefined;
  let n: number;
  let cp: number;
  if (b0 < 0x80) { n = 1; cp = b0; }
  else if (b0 >= 0xc2 && b0 <= 0xdf) { n = 2; cp = b0 & 0x1f; }
  else if (b0 >= 0xe0 && b0 <= 0xef) { n = 3; cp = b0 & 0x0f; }
  else if (b0 >= 0xf0 && b0 <= 0xf4) { n = 4; cp = b0 & 0x07; }
  else return undefined;
  if (bytes.length !== n) return undefined;
  for (let k = 1; k < n; k++) {
    const b = bytes[k]!;
    if (b < 0x80 || b > 0xbf) return undefined;
    cp = (cp << 6) | (b & 0x3f);
  }
  if (utf8Length(cp) !== n || cp > MAX_CODE_POINT || (cp >= SURROGATE_LO && cp <= SURROGATE_HI)) return undefined;
  return cp;
}
