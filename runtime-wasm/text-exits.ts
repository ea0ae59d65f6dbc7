/**
 * @fileoverview The trie's text exits (part of specc's WebAssembly runtime; index.ts lists the
 * modules), for the pushdown summaries of a JSON string's inside.
 *
 * From a state that reads any text character (vocab.ts `textNext`) into a state that does the same
 * (a string's inside, or a position of a length-bounded string), every path of text characters
 * stays one pair of a reading state. What a walk of the trie from such a state decides beyond the
 * length of a path is at the nodes where a path of text first meets a byte that is not text: a
 * quote, a backslash, a control character, a broken UTF-8 sequence. These are the root's exits: on
 * Llama 3, 1,543 of them, below about 8,000 nodes on text paths whose subtrees are not all text. A
 * summary walked those 8,000 nodes again for each position of a length-bounded string (~290 µs);
 * with the list it walks only below the exits (pushdown-masks.ts `pdaSummarize`).
 *
 * The list is made once per instance, on first use, by a walk that skips the subtrees of text
 * tokens (vocab.ts `textNode`). Entry k (EXIT_BYTES, in trie order): u32 the exit's node; u32 the
 * characters of the text path above it (a started one counts, as in text-lengths.ts; at most 255)
 * | the bytes of a started character << 8 | the exit's own byte << 16; u32 those bytes (at most 3,
 * the first in the low byte); u32 a, b: the trie ids of its subtree, [a, b). A walk reads the
 * first step of an exit from the entry alone, without a visit to the node (most are newlines,
 * which a string's inside refuses).
 */

import { NODE, U8_STATES, nodesPtr, textNext, textNode } from "./vocab";

/** The bytes of an exit entry. */
// @ts-ignore: decorator
@inline export const EXIT_BYTES: usize = 20;

/** The root's exits: u32 n, then n entries (see above). 0 until made. */
let exitsPtr: usize = 0;
let exitsN: u32 = 0;
let exitsCap: u32 = 0;

/** The root's exit list (made on first use). */
export function rootExits(): usize {
  if (exitsPtr != 0) return exitsPtr;
  exitsCap = 1024;
  exitsPtr = heap.alloc(4 + <usize>exitsCap * EXIT_BYTES);
  exitsN = 0;
  exitsBelow(0, 0, 0, 0, 0);
  store<u32>(exitsPtr, exitsN);
  return exitsPtr;
}

/**
 * Add the exits below node g, whose text path from the root has `count` characters and leaves the
 * UTF-8 reader in state u, after the `np` bytes `pb` of a started character.
 */
function exitsBelow(g: u32, u: u32, count: u32, np: u32, pb: u32): void {
  const nodes = nodesPtr;
  const sk = load<u32>(nodes + <usize>g * NODE, 4);
  for (let c = g + 1; c < sk; c = load<u32>(nodes + <usize>c * NODE, 4)) {
    if (u == 0 && textNode(c)) continue; // text all the way down: no exit below
    const b = load<u32>(nodes + <usize>c * NODE) & 0xff;
    const v = textNext(u, b);
    if (v == U8_STATES) {
      exitAdd(c, min<u32>(count, 255) | (np << 8) | (b << 16), pb);
      continue;
    }
    const n = u == 0 ? count + 1 : count;
    if (v == 0) exitsBelow(c, 0, n, 0, 0);
    else exitsBelow(c, v, n, np + 1, pb | (b << (np << 3)));
  }
}

function exitAdd(node: u32, info: u32, pb: u32): void {
  if (exitsN == exitsCap) {
    exitsCap <<= 1;
    exitsPtr = heap.realloc(exitsPtr, 4 + <usize>exitsCap * EXIT_BYTES);
  }
  const e = exitsPtr + 4 + <usize>exitsN * EXIT_BYTES;
  const nodes = nodesPtr;
  store<u32>(e, node);
  store<u32>(e, info, 4);
  store<u32>(e, pb, 8);
  store<u32>(e, load<u32>(nodes + <usize>node * NODE, 8), 12);
  store<u32>(e, load<u32>(nodes + <usize>load<u32>(nodes + <usize>node * NODE, 4) * NODE, 8), 16);
  exitsN++;
}
