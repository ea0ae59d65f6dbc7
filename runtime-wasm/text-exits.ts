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
 * The same holds below any node whose byte is ASCII (a walk's pair may come to a string's inside
 * there: after the opening quote of a value, after the first letter of a name no property has),
 * for the text paths from it: below such an anchor, the exits of a node on a path of plain ASCII
 * from it are the anchor's exits in the node's subtree. Each list is made once per instance, on
 * first use, by a walk that skips the subtrees of text tokens (vocab.ts `textNode`). The root's, the
 * one most walks use (~7,500 nodes looked at on Llama 3), depends on the vocabulary alone: a host
 * keeps it from one instance for the next (`text_exits`, `text_exits_install`: docs/abi.md, "Text
 * exits"). Entry k (EXIT_BYTES, in trie order): u32 the exit's node; u32 the
 * characters of the text path above it (a started one counts, as in text-lengths.ts; at most 255)
 * | the bytes of a started character << 8 | the exit's own byte << 16; u32 those bytes (at most 3,
 * the first in the low byte); u32 a, b: the trie ids of its subtree, [a, b). A walk reads the
 * first step of an exit from the entry alone, without a visit to the node (most are newlines,
 * which a string's inside refuses).
 */

import { NODE, U8_STATES, nNodes, nodesPtr, textNext, textNode, vocabPhase } from "./vocab";

/** The bytes of an exit entry. */
// @ts-ignore: decorator
@inline export const EXIT_BYTES: usize = 20;

/** Exit lists by anchor node (key + 1, 0: free) and their addresses; 0 until the first. */
let mapKeys: usize = 0;
let mapVals: usize = 0;
let mapSlots: u32 = 0;
let mapCount: u32 = 0;
/** The list being made. */
let buf: usize = 0;
let bufN: u32 = 0;
let bufCap: u32 = 0;

/** The root's list as another instance of the vocabulary made it, not checked yet (`text_exits_install`), or 0. */
let installed: usize = 0;
let installedN: u32 = 0;

/** The address of the root's exit list (u32 n, then n entries), made by this instance or installed; 0 while there is none. */
export function text_exits(): i32 {
  if (installed != 0) rootChecked();
  return mapSlots == 0 ? 0 : <i32>mapGet(0);
}

/**
 * Room for the root's exit list of n entries another instance of the same vocabulary made
 * (`text_exits`), for the host to write u32 n and the entries before the next mask: its address, or
 * 0 (no vocabulary yet, this instance has the list already, or n is more than the trie has nodes).
 * The list is checked on first use (nodes in trie order and in the trie, trie ids in order and in
 * their node's subtree, at most 3 bytes of a started character) and made again when it fails: a list
 * that is not the vocabulary's gives wrong masks, never an access outside the module's memory.
 */
export function text_exits_install(n: i32): i32 {
  if (vocabPhase != 2 || installed != 0 || (mapSlots != 0 && mapGet(0) != 0) || n < 0 || <u32>n > nNodes) return 0;
  installed = heap.alloc(4 + <usize>n * EXIT_BYTES);
  installedN = <u32>n;
  return <i32>installed;
}

/** The list at `installed`, checked, as the root's, or made again. */
function rootChecked(): void {
  const list = installed;
  installed = 0;
  const n = load<u32>(list);
  const nodes = nodesPtr;
  let last: u32 = 0;
  let ok = n == installedN;
  for (let k: u32 = 0; k < n && ok; k++) {
    const e = list + 4 + <usize>k * EXIT_BYTES;
    const node = load<u32>(e);
    ok = node > last && node < nNodes && ((load<u32>(e, 4) >>> 8) & 0xff) <= 3 && (load<u32>(e, 4) >>> 24) == 0 &&
      load<u32>(e, 12) == load<u32>(nodes + <usize>node * NODE, 8) &&
      load<u32>(e, 16) == load<u32>(nodes + <usize>load<u32>(nodes + <usize>node * NODE, 4) * NODE, 8);
    last = node;
  }
  if (ok) mapPut(0, list); // else made again on first use
}

/**
 * The exits below node a, from the reader between characters after it (the root, or a node of an
 * ASCII byte): u32 n, then n entries (made on first use, kept).
 */
export function exitsOf(a: u32): usize {
  if (installed != 0) rootChecked();
  const got = mapGet(a);
  if (got != 0) return got;
  if (bufCap == 0) {
    bufCap = 1024;
    buf = heap.alloc(<usize>bufCap * EXIT_BYTES);
  }
  bufN = 0;
  exitsBelow(a, 0, 0, 0, 0);
  const list = heap.alloc(4 + <usize>bufN * EXIT_BYTES);
  store<u32>(list, bufN);
  memory.copy(list + 4, buf, <usize>bufN * EXIT_BYTES);
  mapPut(a, list);
  return list;
}

/** The slot of anchor a: its own, or the free one where it would go (the map is made on first use). */
function slotOf(a: u32): usize {
  if (mapSlots == 0) mapGrow(64);
  let pos = (a * 0x9e3779b1) & (mapSlots - 1);
  let k = load<u32>(mapKeys + (<usize>pos << 2));
  while (k != 0 && k != a + 1) {
    pos = (pos + 1) & (mapSlots - 1);
    k = load<u32>(mapKeys + (<usize>pos << 2));
  }
  return <usize>pos << 2;
}

/** The list of anchor a, or 0. */
function mapGet(a: u32): usize {
  const at = slotOf(a);
  return load<u32>(mapKeys + at) == 0 ? 0 : <usize>load<u32>(mapVals + at);
}

/** Note `list` as anchor a's (not in the map yet). */
function mapPut(a: u32, list: usize): void {
  const at = slotOf(a);
  store<u32>(mapKeys + at, a + 1);
  store<u32>(mapVals + at, <u32>list);
  if (++mapCount * 2 > mapSlots) mapGrow(mapSlots << 1);
}

/** The first entry of `list` whose node is at least `node` (entries are in trie order). */
export function exitFrom(list: usize, node: u32): u32 {
  let lo: u32 = 0;
  let hi = load<u32>(list);
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (load<u32>(list + 4 + <usize>mid * EXIT_BYTES) < node) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function mapGrow(slots: u32): void {
  const oldKeys = mapKeys;
  const oldVals = mapVals;
  const old = mapSlots;
  mapKeys = heap.alloc(<usize>slots << 2);
  memory.fill(mapKeys, 0, <usize>slots << 2);
  mapVals = heap.alloc(<usize>slots << 2);
  mapSlots = slots;
  for (let j: u32 = 0; j < old; j++) {
    const k = load<u32>(oldKeys + (<usize>j << 2));
    if (k == 0) continue;
    const at = slotOf(k - 1);
    store<u32>(mapKeys + at, k);
    store<u32>(mapVals + at, load<u32>(oldVals + (<usize>j << 2)));
  }
  if (old != 0) {
    heap.free(oldKeys);
    heap.free(oldVals);
  }
}

/**
 * Add the exits below node g, whose text path from the list's anchor has `count` characters and
 * leaves the UTF-8 reader in state u, after the `np` bytes `pb` of a started character.
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
  if (bufN == bufCap) {
    bufCap <<= 1;
    buf = heap.realloc(buf, <usize>bufCap * EXIT_BYTES);
  }
  const e = buf + <usize>bufN * EXIT_BYTES;
  const nodes = nodesPtr;
  store<u32>(e, node);
  store<u32>(e, info, 4);
  store<u32>(e, pb, 8);
  store<u32>(e, load<u32>(nodes + <usize>node * NODE, 8), 12);
  store<u32>(e, load<u32>(nodes + <usize>load<u32>(nodes + <usize>node * NODE, 4) * NODE, 8), 16);
  bufN++;
}
