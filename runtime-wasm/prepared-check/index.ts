/**
 * @fileoverview The prepared vocabulary's whole-file checks (bindings/prepared-vocab.ts), as a
 * module of its own, apart from the runtime: the word checksum, and the token offsets and kinds.
 * (The trie order is left to the runtime, which refuses it when it builds the trie from it unless
 * it lists every text token once, in order.) A decoder loads a prepared file once, in a process
 * that has just started, where the same loops in JavaScript run mostly before the JIT has warmed up
 * (about 30 ms on Gemma 3's 4.4 MB file); compiled here they take a few (issue 15).
 * bindings/prepared-check.ts streams the file through this module's small memory in chunks (a
 * copy of the whole file would cost page faults and leave megabytes of garbage for the collector)
 * and words the errors: a count that does not match sends it to the JavaScript checks, which say
 * what is wrong.
 */

/** FNV-1a's step on `n` little-endian 32-bit words at `from`, each followed by `h ^= h >>> 15`. */
export function wordSum(from: usize, n: u32, h: u32): u32 {
  const end = from + (<usize>n << 2);
  for (let p = from; p < end; p += 4) {
    h = (h ^ load<u32>(p)) * 0x01000193;
    h ^= h >>> 15;
  }
  return h;
}

/**
 * The number of text tokens (kind 0) among `n` tokens, or -1 where an offset decreases
 * (`offsets` holds n + 1 of them) or a kind is neither 0 nor 1.
 */
export function textTokens(offsets: usize, kinds: usize, n: u32): i32 {
  let text: i32 = 0;
  let prev = load<u32>(offsets);
  for (let i: u32 = 0; i < n; i++) {
    const next = load<u32>(offsets + 4 + (<usize>i << 2));
    const kind = load<u8>(kinds + i);
    if (next < prev || kind > 1) return -1;
    prev = next;
    text += 1 - <i32>kind;
  }
  return text;
}
