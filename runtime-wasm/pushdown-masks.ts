/**
 * @fileoverview Token masks in pushdown mode (part of specc's WebAssembly runtime; index.ts lists
 * the modules).
 *
 * Masks are computed per configuration from per-state summaries and per-pair walks, and interned
 * in the same distinct-mask store as the DFA masks (vocab.ts); the scheme is described below.
 */

import { H_CLASSMAP, H_NCLASSES, H_NSTATES, NONE16, hdr, region } from "./layout";
import { transBase } from "./tables";
import {
  NODE, nodeClass, allocZero, eosPtr, internCopy, maskAddr, maskBlocks, maskBytes, maskHashPtr, maskPtrsPtr,
  clearRange, maxDepth, nEos, nMasks, nNodes, nTrie, nodesPtr, nodeHeight, plainClasses, plainNode, plainSuccessor, setBit, setMaskStore,
  setRange, textNext, textNode, trieMask, U8_STATES, vocabPhase,
} from "./vocab";
import { textLengthsInit, textMaskUpTo } from "./text-lengths";
import { EXIT_BYTES, exitFrom, exitsOf } from "./text-exits";
import { hashPair, pairCacheAdd, pairCacheFind, pairCacheInit } from "./pairs";
import {
  PDA_MAX_PAIRS, PDA_MAX_STACK, SET_BYTES, SF_ESCAPE, SK_READS, SYM_BASE, cfCount, cfLoad, cfRec,
  needOf, needSeen, pairPool, pdaAlive, pdaMode, pdaPopped, pdaStep, pnDepth, readsOn, setNeedSeen, stKind,
} from "./pushdown";

// Masks. A configuration's mask is the union of its pairs' masks (a byte step distributes over the
// pairs) as long as no closure can visit more than PDA_MAX_PAIRS pairs, which is checked with the
// per-pair maxima (else one exact walk of the whole configuration). A pair (q, n) is walked
// relative to a per-state summary of q, computed once: the trie walked from (q, SYM_BASE), where
// popping SYM_BASE is an "escape" (what happens next depends on the stack). Until a path escapes,
// the real walk from (q, n) is the summary walk with SYM_BASE replaced by n (same pairs, same
// counts, same verdicts), provided n is shallow enough that every stack-limit check the summary made
// passes on top of it too (depth(n) + the largest `depth + need` it checked ≤ PDA_MAX_STACK; a
// pair (q, stack) exists only if depth + need(q) ≤ PDA_MAX_STACK, as in pda.ts). So the summary
// stores the tokens accepted without escaping (`base`) and the trie nodes where a path escapes
// (`frontier`, in DFS order; the pairs that do not escape there go on below them). An escape pops
// n in the real walk, which gives the same pairs wherever it happens: what (ret(n), parent(n))
// closes to. So a pair's mask is `base`, plus, where those pairs are alive, each frontier node's
// own tokens and its subtree walked from them alone (`escapeWalks`): XGrammar's context-independent
// / context-dependent split. After whitespace, a value or a string's closing quote, that is a walk
// of the few children the pairs after the pop read, not of every path through the whitespace again.
// Pair masks and configuration masks are cached and interned with the DFA masks.
//
// Shared with the DFA mask code: the trie node layout (NODE, `setRange`), the distinct-mask arrays
// and `intern` (whose index pdaGrowMasks re-allocates: pushdown masks are not bounded by nStates).

/** Mask state (allocated on the first pushdown mask). */
let pdaVocabReady: bool = false;
let walkSets: usize = 0;
/** Per walk depth ≥ 1: the set's only pair, or NO_PAIR (then walkSets holds the set at that depth). */
let walkOne: usize = 0;
let symBasePtr: usize = 0;
let symFrontPtr: usize = 0;
let symStatsPtr: usize = 0;
/** Per state, its frontier's escape table (`escapeTable`), built on the first pair walk that needs it. */
let symEscPtr: usize = 0;
/** Per byte class, whether the pairs of an escape's pop read it (`escapeWalks`). */
let readsCls: usize = 0;
let frontScratch: usize = 0;
let frontCap: u32 = 0;
let pairScratch: usize = 0;
let cfgScratch: usize = 0;
/** What popping a pair's stack node gives (`escapeWalks`). */
let contSet: usize = 0;
let maskCap: u32 = 0;
let lastPairMax: u32 = 0;

// ---- Pushdown masks ----

// @ts-ignore: decorator
@inline const NO_PAIR: u64 = 0xffffffffffffffff;

/**
 * The walks' fast path (most trie nodes, as in a DFA walk): the set at depth d - 1 is one pair
 * (q, n) and byte class `cls` takes q to a state t that only reads bytes and needs no more frames
 * than q. Then the set at depth d is the pair (t, n) (what pdaStep's own one-pair case gives),
 * noted in `walkOne` without writing a set. Returns t, NONE16 when q has no transition on `cls`,
 * FAST_SKIP when node i is text and q reads text back to itself or has a text run as long as i's
 * height, or node i is plain and q keeps itself on every plain class or has a plain run that long
 * (one that never ends from a plain-closed state, `plainClosed`) (vocab.ts: every token of the
 * subtree of i is allowed and its pair stays one pair of a reading state; the caller skips it), or
 * FAST_NO (after writing the one pair into the set at d - 1): the caller calls pdaStep. When the
 * set at d - 1 is several pairs, FAST_SKIP for a text node that each pair's text run covers
 * (`setTextRuns`), else FAST_NO. FAST_EXITS (with the pair noted, as for t) where node i's subtree
 * is large, not all text, and within t's text run (`exitsFit`): the caller may walk only below its
 * text exits (`enterExits`), or go on as for t.
 */
// @ts-ignore: decorator
@inline function walkFast(i: u32, d: usize, cls: u32): u32 {
  const x = load<u64>(walkOne + ((d - 1) << 3));
  if (x == NO_PAIR) return textNode(i) && setTextRuns(walkSets + (d - 1) * SET_BYTES, nodeHeight(i)) ? FAST_SKIP : FAST_NO;
  const q = <u32>(x >>> 32);
  // The runs first: most states have none, and most nodes are text.
  const tr = textRun(q);
  if (tr != 0 && textNode(i) && tr >= nodeHeight(i)) return FAST_SKIP;
  const t = <u32>load<u16>(transBase + ((<usize>(q * hdr(H_NCLASSES) + cls)) << 1));
  if (t == NONE16) return t;
  const pr = plainRun(q);
  if (pr > tr && plainNode(i) && pr >= nodeHeight(i)) return FAST_SKIP;
  if (readsOn(q, t)) {
    store<u64>(walkOne + (d << 3), (<u64>t << 32) | (x & 0xffffffff));
    if (exitsFit(i, t)) return FAST_EXITS;
    return t;
  }
  const set = walkSets + (d - 1) * SET_BYTES;
  store<u32>(set, 1);
  store<u32>(set, 0, 4);
  store<u64>(set, x, 8);
  return FAST_NO;
}

/**
 * Whether every pair of the set at `set` (several pairs) has a text run of at least `h`: then a text
 * subtree that high is allowed whole, as for one pair (walkFast). Each pair stays one pair of a
 * reading state along any of its tokens, so the sets below hold at most these pairs and no closure
 * visits more than the set above did. The two pairs after a 64-character block of a long string
 * (the next block, the last one) are such a set: without this, the walks below a block's end
 * stepped every node of the trie (5-12 ms a mask on Github_medium---o82710).
 */
function setTextRuns(set: usize, h: u32): bool {
  const k = <usize>load<u32>(set);
  if (k == 0) return false;
  for (let j: usize = 0; j < k; j++) {
    if (textRun(<u32>(load<u64>(set + 8 + (j << 3)) >>> 32)) < h) return false;
  }
  return true;
}

// @ts-ignore: decorator
@inline const FAST_NO: u32 = 0xffffffff;
// @ts-ignore: decorator
@inline const FAST_SKIP: u32 = 0xfffffffe;
// @ts-ignore: decorator
@inline const FAST_EXITS: u32 = 0xfffffffd;
/** The smallest subtree (in nodes) walked below its text exits rather than node by node. */
// @ts-ignore: decorator
@inline const EXITS_MIN: u32 = 64;

/**
 * Whether a walk that comes to node i in one pair of state t may go on below i's text exits alone
 * (`enterExits`): i's subtree is large, holds some token that is not text, and each of its text
 * paths stays in t's text run (t reads every text character back to itself, or its run is as long
 * as the tallest token below i).
 */
// @ts-ignore: decorator
@inline function exitsFit(i: u32, t: u32): bool {
  if (textNode(i) || load<u32>(nodesPtr + <usize>i * NODE, 4) - i < EXITS_MIN) return false;
  const r = textRun(t);
  return r != 0 && (r + 1 >= nodeHeight(i) || textLoops(t));
}

/**
 * Per state: 0 not known yet, 1 not plain-closed, 2 plain-closed, 3 (while `plainClosed` runs) in
 * its search. A state is PLAIN-CLOSED when it only reads bytes and every plain class takes it, in
 * one pair (`readsOn`), to a plain-closed state: from it, every token of a plain subtree is allowed
 * and ends in one pair of a reading state, however long. Its plain run, and that of a run that
 * leads to it, is then taken as one that loops (`runOf`), although its plain classes go to several
 * states. The inside of a string with an unanchored pattern (any character goes on, some to a
 * partial match) and a key that may be any other name (a known name's prefix or not) are such
 * states; their walks visited every node of the trie (~270,000 on Llama 3, 3-5 ms a mask).
 */
let closedPtr: usize = 0;
/** The search's work list (`plainClosed`): per entry u32 state, u32 the entry it was reached from; room for closedCap, grown as a search needs. */
let closedWork: usize = 0;
let closedCap: u32 = 0;
/** Most states one search collects (past it, the state is taken as not plain-closed). */
// @ts-ignore: decorator
@inline const CLOSED_MAX: u32 = 4096;

/**
 * Whether q is plain-closed: the states q reaches through plain classes are collected; if each
 * only reads bytes and takes every plain class in one pair, all of them are plain-closed (their
 * set is closed under those steps), else q and the states on the search's path to the one that
 * failed are not (the others stay unknown).
 */
function plainClosed(q: u32): bool {
  const v = <u32>load<u8>(closedPtr + <usize>q);
  if (v != 0) return v == 2;
  const nc = hdr(H_NCLASSES);
  const plain = plainClasses();
  let work = closedWork;
  store<u32>(work, q);
  store<u32>(work, 0xffffffff, 4);
  store<u8>(closedPtr + <usize>q, 3);
  let n: u32 = 1;
  let bad: u32 = 0xffffffff; // the entry of a state found not plain-closed
  let full = false;
  for (let k: u32 = 0; k < n && bad == 0xffffffff && !full; k++) {
    const s = load<u32>(work + (<usize>k << 3));
    if (<u32>load<u8>(stKind + <usize>s) != SK_READS) {
      bad = k;
      break;
    }
    const row = transBase + (<usize>(s * nc) << 1);
    for (let c: u32 = 0; c < nc; c++) {
      if (load<u8>(plain + <usize>c) == 0) continue;
      const t = <u32>load<u16>(row + (<usize>c << 1));
      if (t == NONE16 || !readsOn(s, t)) {
        bad = k;
        break;
      }
      const tv = <u32>load<u8>(closedPtr + <usize>t);
      if (tv == 2 || tv == 3) continue;
      if (tv == 1) {
        bad = k;
        break;
      }
      if (n == CLOSED_MAX) {
        full = true;
        break;
      }
      if (n == closedCap) {
        closedCap <<= 1;
        closedWork = heap.realloc(closedWork, <usize>closedCap << 3);
        work = closedWork;
      }
      store<u8>(closedPtr + <usize>t, 3);
      store<u32>(work + (<usize>n << 3), t);
      store<u32>(work + (<usize>n << 3), k, 4);
      n++;
    }
  }
  const ok = bad == 0xffffffff && !full;
  for (let k: u32 = 0; k < n; k++) store<u8>(closedPtr + <usize>load<u32>(work + (<usize>k << 3)), ok ? 2 : 0);
  if (ok) return true;
  store<u8>(closedPtr + <usize>q, 1);
  // The bad state and every state on the search's path to it reach a state that is not plain-closed
  // (a bounded string's positions, each a search to the end of its run otherwise).
  for (let k = bad; k != 0xffffffff; k = load<u32>(work + (<usize>k << 3), 4)) store<u8>(closedPtr + <usize>load<u32>(work + (<usize>k << 3)), 1);
  return false;
}

/** Per state: 0 not known yet, 1 it does not read every text character back to itself, 2 it does. */
let loopsPtr: usize = 0;

/** Whether q reads every text character back to itself (a string's inside): its text run loops on q. */
function textLoops(q: u32): bool {
  const v = <u32>load<u8>(loopsPtr + <usize>q);
  if (v != 0) return v == 2;
  const yes = textRun(q) == RUN_LOOP && plainSuccessor(transBase, q) == q;
  store<u8>(loopsPtr + <usize>q, yes ? 2 : 1);
  return yes;
}

/** Per walk depth: the node the walk went down into there (`anchorOf`). */
let pathAt: usize = 0;

/**
 * The anchor of node i at walk depth d (text-exits.ts): the nearest of i and the nodes above it
 * whose byte is ASCII but not plain text, with only plain bytes after it (the root if none), or
 * NO_ANCHOR when a byte of 0x80 or more comes first. Its depth goes to `anchorDepth`.
 */
function anchorOf(i: u32, d: usize): u32 {
  let node = i;
  for (;;) {
    const b = load<u32>(nodesPtr + <usize>node * NODE) & 0xff;
    if (b - 0x20 < 0x5f && b != 0x22 && b != 0x5c) {
      if (--d == 0) {
        anchorDepth = 0;
        return 0;
      }
      node = load<u32>(pathAt + (d << 2));
      continue;
    }
    anchorDepth = <u32>d;
    return b < 0x80 ? node : NO_ANCHOR;
  }
}

/** The walk depth of the anchor `anchorOf` found. */
let anchorDepth: u32 = 0;

// @ts-ignore: decorator
@inline const NO_ANCHOR: u32 = 0xffffffff;

/**
 * Runs (a JSON string's inside; the positions of a length-bounded string). Per state: 0 not known
 * yet, else 1 + its run (`runOf`). The plain run of q: how many steps along which every plain
 * class (vocab.ts) takes the state to one next state, read as one pair (`readsOn`); RUN_LOOP when
 * they come back to a state of the run (q keeps itself on plain text). Its text run: how many of
 * those steps also read any text character (`readsTextTo`). A plain (text) subtree no taller than
 * q's plain (text) run is allowed whole: each of its tokens ends inside the run, in one pair of a
 * reading state.
 */
let plainRunPtr: usize = 0;
let textRunPtr: usize = 0;
/** The longest run stored (a longer one is stored as this: a lower bound, below RUN_LOOP). */
// @ts-ignore: decorator
@inline const RUN_MAX: u32 = 253;
/** A run that never ends: as long as any node is high (vocab.ts `nodeHeight`, at most 254). */
// @ts-ignore: decorator
@inline const RUN_LOOP: u32 = 254;

// @ts-ignore: decorator
@inline function plainRun(q: u32): u32 {
  const v = <u32>load<u8>(plainRunPtr + <usize>q);
  return v != 0 ? v - 1 : runOf(q, false);
}

// @ts-ignore: decorator
@inline function textRun(q: u32): u32 {
  const v = <u32>load<u8>(textRunPtr + <usize>q);
  return v != 0 ? v - 1 : runOf(q, true);
}

/**
 * q's plain or text run, and that of the states along it: followed until a step fails, comes to a
 * state whose run is known, or back to a state of the path (RUN_LOOP); then each state of the path
 * gets what is left of it after the state, at most RUN_MAX. The path is followed to its end however
 * long it is: a run cut short would be stored for states that the suffix of a longer string shares
 * with a shorter one (the minimized automaton merges them), and their summaries would walk from
 * that false end (`beyondFind`) what the run takes whole.
 */
function runOf(q: u32, text: bool): u32 {
  const runs = text ? textRunPtr : plainRunPtr;
  let n: u32 = 0;
  let s = q;
  let r: u32 = 0; // the run of the state after the path's last, plus one, as stored (0: no step)
  for (;;) {
    store<u8>(runs + <usize>s, <u8>(RUN_LOOP + 1)); // on the path: a step back to it closes a loop
    n++;
    const t = plainSuccessor(transBase, s);
    if (t == NONE16 || !readsOn(s, t) || (text && !readsTextTo(s, t))) {
      // Plain classes that go to several states from a plain-closed one: a plain run that never
      // ends all the same (`plainClosed`), for s and the path to it.
      if (!text && t == NONE16 && plainClosed(s)) r = RUN_LOOP + 1;
      break;
    }
    const v = <u32>load<u8>(runs + <usize>t);
    if (v != 0) {
      r = v;
      break;
    }
    s = t;
  }
  // 1 + the next state's run, at most RUN_MAX + 1; RUN_LOOP + 1 stays.
  s = q;
  for (let k: u32 = 0; k < n; k++) {
    store<u8>(runs + <usize>s, <u8>(r > RUN_MAX ? r : min<u32>(r + (n - k), RUN_MAX + 1)));
    s = plainSuccessor(transBase, s);
  }
  return <u32>load<u8>(runs + <usize>q) - 1;
}

/**
 * The text exits a walk goes below (text-exits.ts; `pdaSummarize`): entries [xk, xn) of the list
 * at xs (0: none), from the root, or below a node where the walk's pair comes to a string's inside
 * (`enterExits`), until node xAfter. Each exit's walk set is one pair: on stack xStack, in the
 * run's state at the exit's count less xBase (xRun; from runStates) or in xLoop, after the exit's
 * started character. xLen: a bounded string's positions from the root (exits past the run are
 * refused, and the text between exits is left to the text lengths). segStart is the exit whose
 * subtree is being walked, segEnd the end of that subtree.
 */
let xs: usize = 0;
let xk: u32 = 0;
let xn: u32 = 0;
let xAfter: u32 = 0;
let xLen: bool = false;
let xRun: bool = false;
let xBase: u32 = 0;
let xLoop: u32 = 0;
let xStack: u32 = 0;
let segStart: u32 = 0;
let segEnd: u32 = 0;

/**
 * Node i at walk depth d has one pair, and its text paths stay in the pair's text run
 * (`exitsFit`): along each, the pair is one pair of a reading state, so the walk goes on only below
 * the exits in i's subtree, those of its anchor (`anchorOf`), when it has one. The characters from
 * the anchor to i are plain ASCII, one each: an exit's count from the anchor, less them, is how far
 * along the run from i's state its path ends.
 */
function enterExits(i: u32, d: usize): void {
  const a = anchorOf(i, d);
  if (a == NO_ANCHOR) return;
  const base = <u32>d - anchorDepth;
  if (base + nodeHeight(i) >= 255) return; // counts are kept up to 255
  xs = exitsOf(a);
  const sk = load<u32>(nodesPtr + <usize>i * NODE, 4);
  xk = exitFrom(xs, i + 1);
  xn = exitFrom(xs, sk);
  xAfter = sk;
  xLen = false;
  beyondN = 0;
  const x = load<u64>(walkOne + (d << 3));
  const t = <u32>(x >>> 32);
  xRun = !textLoops(t);
  xLoop = t;
  xBase = base;
  if (xRun) {
    store<u32>(runStates, t);
    runStatesN = 1;
  }
  xStack = <u32>x;
  segStart = 0;
  segEnd = i + 1;
}

/** The states of the run being walked from its first (`pdaSummarize`): the first `runStatesN` are known. */
let runStates: usize = 0;
let runStatesN: u32 = 0;

/** The state k steps along the run from runStates[0] (k at most its text run). */
function runState(k: u32): u32 {
  while (runStatesN <= k) {
    store<u32>(runStates + (<usize>runStatesN << 2), plainSuccessor(transBase, load<u32>(runStates + (<usize>(runStatesN - 1) << 2))));
    runStatesN++;
  }
  return load<u32>(runStates + (<usize>k << 2));
}

/** State s's transition on byte b (NONE16: none). */
// @ts-ignore: decorator
@inline function byteStep(s: u32, b: u32): u32 {
  return <u32>load<u16>(transBase + ((<usize>(s * hdr(H_NCLASSES) + <u32>load<u8>(region(H_CLASSMAP) + <usize>b))) << 1));
}

/** The state after the started character of exit `e` (text-exits.ts) from s, between characters. */
function exitState(s: u32, e: usize): u32 {
  const np = (load<u32>(e, 4) >>> 8) & 0xff;
  const pb = load<u32>(e, 8);
  for (let j: u32 = 0; j < np; j++) s = byteStep(s, (pb >>> (j << 3)) & 0xff);
  return s;
}

/**
 * The shortest run that does not end dead whose summary walks below the text exits: below it, most
 * of the trie lies past the run (`beyondFind`).
 */
// @ts-ignore: decorator
@inline const BEYOND_MIN: u32 = 32;

/**
 * The nodes where a text path from the root starts its (tr + 1)-th character (`beyondFind`), in
 * trie order: the first `beyondN` of `beyondBuf`.
 */
let beyondBuf: usize = 0;
let beyondCap: u32 = 0;
let beyondN: u32 = 0;

/**
 * The nodes where a text path from the root starts its (tr + 1)-th character: a walk from a run of
 * tr characters goes on below them from the run's last state. Only the subtrees that hold a token
 * of more than tr bytes are looked into (none when tr is long: the heights, vocab.ts).
 */
function beyondFind(tr: u32): void {
  beyondN = 0;
  beyondBelow(0, 0, 0, tr);
}

function beyondBelow(g: u32, u: u32, count: u32, tr: u32): void {
  const nodes = nodesPtr;
  const sk = load<u32>(nodes + <usize>g * NODE, 4);
  for (let c = g + 1; c < sk; c = load<u32>(nodes + <usize>c * NODE, 4)) {
    const w0 = load<u32>(nodes + <usize>c * NODE);
    if ((w0 >>> 8) - 1 + nodeHeight(c) <= tr) continue; // no token below has more than tr bytes
    const v = textNext(u, w0 & 0xff);
    if (v == U8_STATES) continue; // an exit (text-exits.ts)
    const n = u == 0 ? count + 1 : count;
    if (n <= tr) {
      beyondBelow(c, v, n, tr);
      continue;
    }
    if (beyondN == beyondCap) {
      beyondCap = beyondCap == 0 ? 64 : beyondCap << 1;
      beyondBuf = beyondBuf == 0 ? heap.alloc(<usize>beyondCap << 2) : heap.realloc(beyondBuf, <usize>beyondCap << 2);
    }
    store<u32>(beyondBuf + (<usize>beyondN << 2), c);
    beyondN++;
  }
}

/** Per state: 0 not known yet, 1 its text run does not end dead, 2 it does (`runEndsDead`). */
let deadEndPtr: usize = 0;

/**
 * Whether q's text run (tr ≥ 1 characters, not a loop) ends in a state that reads no text
 * character: a length-bounded string with tr characters left. That state only reads (each step of
 * a run goes to a state that does nothing else, `readsOn`), so from q a token of text characters is
 * allowed exactly when it has at most tr of them (text-lengths.ts), whatever its path in the trie.
 */
function runEndsDead(q: u32, tr: u32): bool {
  const v = <u32>load<u8>(deadEndPtr + <usize>q);
  if (v != 0) return v == 2;
  let s = q;
  for (let k: u32 = 0; k < tr; k++) s = plainSuccessor(transBase, s);
  const classmap = region(H_CLASSMAP);
  const row = transBase + (<usize>(s * hdr(H_NCLASSES)) << 1);
  let dead = true;
  for (let b: u32 = 0; b < 256 && dead; b++) {
    if (textNext(0, b) == U8_STATES) continue; // cannot start a text character
    if (<u32>load<u16>(row + (<usize>load<u8>(classmap + b) << 1)) != NONE16) dead = false;
  }
  store<u8>(deadEndPtr + <usize>q, dead ? 2 : 1);
  return dead;
}

/** The states of a text reader (`readsTextTo`), one per UTF-8 reader state. */
let textMap: usize = 0;
/**
 * Per UTF-8 reader state u, what its non-ASCII bytes do, one entry per distinct (byte class, next
 * reader state): u32 count at textSteps + u * TEXT_STEPS_U, then the entries, u32 class << 8 | next
 * (`textStepsInit`, once per spec). Bytes of one class step the automaton alike, so
 * `readsTextTo` checks ~10 entries a reader state, not 128 bytes through `textNext` (that was 85%
 * of a cold key mask whose walk met ~15 new states: 460 µs on Snowplow---sp_103_Normalized).
 */
let textSteps: usize = 0;
// @ts-ignore: decorator
@inline const TEXT_STEPS_U: usize = 129 << 2;

function textStepsInit(): void {
  const classmap = region(H_CLASSMAP);
  textSteps = heap.alloc(<usize>U8_STATES * TEXT_STEPS_U);
  for (let u: u32 = 0; u < U8_STATES; u++) {
    const list = textSteps + <usize>u * TEXT_STEPS_U;
    let k: u32 = 0;
    for (let b: u32 = 0x80; b < 0x100; b++) {
      const n = textNext(u, b);
      if (n == U8_STATES) continue;
      const x = (<u32>load<u8>(classmap + b) << 8) | n;
      let j: u32 = 0;
      while (j < k && load<u32>(list + 4 + (<usize>j << 2)) != x) j++;
      if (j == k) {
        store<u32>(list + 4 + (<usize>k << 2), x);
        k++;
      }
    }
    store<u32>(list, k);
  }
}

/**
 * Whether the UTF-8 reader's states map to states of the automaton (s between characters before
 * one, e after it) so that every non-ASCII byte the reader takes is, from the mapped state, a
 * one-pair read (`readsOn`) into the state mapped to the reader's next. Then any character from s
 * ends in one pair of e, on the same stack (the ASCII ones are the caller's to check).
 */
function readsTextTo(s0: u32, e: u32): bool {
  const nc = hdr(H_NCLASSES);
  if (textSteps == 0) textStepsInit();
  memory.fill(textMap, 0xff, <usize>U8_STATES << 2);
  store<u32>(textMap, s0);
  // Between characters first: its lead bytes give every other reader state its automaton state.
  for (let u: u32 = 0; u < U8_STATES; u++) {
    const s = load<u32>(textMap + (<usize>u << 2));
    if (s == 0xffffffff) continue; // not reached: every reader state is some lead byte's next (or false came first)
    const list = textSteps + <usize>u * TEXT_STEPS_U;
    for (let j: u32 = 0, k = load<u32>(list); j < k; j++) {
      const x = load<u32>(list + 4 + (<usize>j << 2));
      const n = x & 0xff;
      const t = <u32>load<u16>(transBase + (<usize>(s * nc + (x >>> 8)) << 1));
      if (t == NONE16 || !readsOn(s, t)) return false;
      if (n == 0) {
        if (t != e) return false;
        continue;
      }
      const m = load<u32>(textMap + (<usize>n << 2));
      if (m == 0xffffffff) store<u32>(textMap + (<usize>n << 2), t);
      else if (m != t) return false;
    }
  }
  return true;
}

/** After pdaStep into the set at depth d (c pairs visited): note whether it is one pair. */
// @ts-ignore: decorator
@inline function walkNote(d: usize, c: u32, dst: usize): void {
  store<u64>(walkOne + (d << 3), c - 1 < PDA_MAX_PAIRS && load<u32>(dst) == 1 ? load<u64>(dst, 8) : NO_PAIR);
}

/** Allocate the mask-side state (after vocab_ready): walk sets, summaries, caches. */
function pdaVocabInit(): void {
  if (pdaVocabReady) return;
  const ns = <usize>hdr(H_NSTATES);
  walkSets = heap.alloc((<usize>maxDepth + 1) * SET_BYTES);
  walkOne = heap.alloc((<usize>maxDepth + 1) << 3);
  symBasePtr = allocZero(ns << 2);
  symFrontPtr = allocZero(ns << 2);
  symStatsPtr = allocZero(ns << 3);
  symEscPtr = allocZero(ns << 2);
  readsCls = heap.alloc(<usize>hdr(H_NCLASSES));
  plainRunPtr = allocZero(ns);
  textRunPtr = allocZero(ns);
  textMap = heap.alloc(<usize>U8_STATES << 2);
  runStates = heap.alloc(256 << 2);
  deadEndPtr = allocZero(ns);
  loopsPtr = allocZero(ns);
  closedPtr = allocZero(ns);
  closedCap = 64;
  closedWork = heap.alloc(<usize>closedCap << 3);
  pathAt = heap.alloc((<usize>maxDepth + 1) << 2);
  frontCap = 256;
  frontScratch = heap.alloc(<usize>frontCap << 2);
  pairScratch = heap.alloc(maskBytes);
  cfgScratch = heap.alloc(maskBytes);
  contSet = heap.alloc(SET_BYTES);
  pairCacheInit();
  // The DFA path sizes the distinct-mask index for 2 × nStates + 1 masks; configurations and pairs
  // can need any number, so take it over with a growable copy.
  maskCap = 0;
  pdaGrowMasks(max<u32>(256, nMasks << 1));
  pdaVocabReady = true;
}

/** Re-allocate the distinct-mask arrays and their hash index for `cap` masks. */
function pdaGrowMasks(cap: u32): void {
  const ptrs = allocZero(<usize>cap << 2);
  const hashes = allocZero(<usize>cap << 2);
  memory.copy(ptrs, maskPtrsPtr, <usize>maskBlocks << 2); // blocks past nMasks are reused later
  memory.copy(hashes, maskHashPtr, <usize>nMasks << 2);
  let ht: usize = 16;
  while (ht < (<usize>cap << 1)) ht <<= 1;
  const table = heap.alloc(ht << 2);
  memory.fill(table, 0xff, ht << 2);
  const m = <u32>ht - 1;
  for (let e: u32 = 0; e < nMasks; e++) {
    let pos = load<u32>(hashes + (<usize>e << 2)) & m;
    while (load<i32>(table + (<usize>pos << 2)) >= 0) pos = (pos + 1) & m;
    store<i32>(table + (<usize>pos << 2), <i32>e);
  }
  setMaskStore(ptrs, hashes, table, m);
  maskCap = cap;
}

/** Intern a copy of the mask at `src` (a scratch buffer); returns its distinct-mask index. */
function pdaInternCopy(src: usize): i32 {
  if (nMasks + 1 > maskCap) pdaGrowMasks(maskCap << 1);
  return internCopy(src);
}

function pdaSetEos(out: usize): void {
  for (let i: u32 = 0; i < nEos; i++) setBit(out, load<u32>(eosPtr + (<usize>i << 2)));
}

// ---- Subtree memo ----
//
// Below a root child of the trie (or a text exit, in a summary that walks below its exits), a walk
// whose set is then the single pair (t, SYM_BASE) (a summary) or (t, empty stack) (a pair's walk)
// gives the same result whatever state it came from:
// the same trie-id ranges, the same frontier nodes, the same largest closure and stack-limit check.
// Most states reach the same few states after one byte (free text, a pending marker prefix, the
// rest of a property name that is not listed), so those subtrees are walked once (the DFA walk in
// masks.ts memoizes the same way). On the MaskBench sample it halves the time of all masks (7.3 s
// instead of 12.7 s; before summaries noted rejected ranges, its recording cost more than it saved
// on standalone grammars and it was on for agents only). Entries live
// in a hash table and a pool that start small (a first mask must not pay for megabytes) and double
// up to MEMO_SLOTS slots and MEMO_WORDS words; past that, subtrees are simply walked again.
// Entry (u32 words in the pool): nRanges, nFronts, most pairs, largest depth + need, then nRanges
// (a, b) trie-id ranges (a summary's: rejected; a pair walk's: allowed), then nFronts frontier
// node numbers.

// @ts-ignore: decorator
@inline const MEMO_SLOTS: u32 = 1 << 15;
// @ts-ignore: decorator
@inline const MEMO_WORDS: u32 = 1 << 20;
/** Memo key kinds: a summary's subtree (stack SYM_BASE), a pair walk's (empty stack). */
// @ts-ignore: decorator
@inline const MK_SUMMARY: u64 = 1;
// @ts-ignore: decorator
@inline const MK_EMPTY: u64 = 2;
let memoKeys: usize = 0;
let memoOffs: usize = 0;
let memoPool: usize = 0;
let memoSlots: u32 = 0;
let memoWords: u32 = 0;
let memoUsed: u32 = 0;
let memoCount: u32 = 0;
/** The subtree being recorded: its end node (0 = none), key, and where its ranges and fronts start. */
let recEnd: u32 = 0;
let recKey: u64 = 0;
let recMax: u32 = 0;
let recNeed0: u32 = 0;
let recRanges: usize = 0;
let recRangesCap: u32 = 0;
let recNRanges: u32 = 0;
let recFront0: u32 = 0;
/** A summary's recording: the rejected ranges it starts at, and the end of the range before them then. */
let recRej0: u32 = 0;
let recRejEnd0: u32 = 0;

// @ts-ignore: decorator
@inline function memoKey(kind: u64, t: u32, node: u32): u64 {
  return (kind << 60) | (<u64>t << 32) | <u64>node;
}

/** The table slot of `key`: its own, or the free one where it would go (there is one). */
function memoSlot(key: u64): u32 {
  let pos = hashPair(key) & (memoSlots - 1);
  let k = load<u64>(memoKeys + (<usize>pos << 3));
  while (k != 0 && k != key) {
    pos = (pos + 1) & (memoSlots - 1);
    k = load<u64>(memoKeys + (<usize>pos << 3));
  }
  return pos;
}

/** The pool offset of the entry for `key`, -2 when it was only seen, or -1. */
function memoFind(key: u64): i32 {
  if (memoKeys == 0) return -1;
  const pos = memoSlot(key);
  if (load<u64>(memoKeys + (<usize>pos << 3)) == 0) return -1;
  const off = load<u32>(memoOffs + (<usize>pos << 2));
  return off == MEMO_SEEN ? -2 : <i32>off;
}

/** The offset of a key seen once and not recorded: a subtree is recorded the second time it comes. */
// @ts-ignore: decorator
@inline const MEMO_SEEN: u32 = 0xffffffff;

/** Whether the memo may take one more key (the table grows up to MEMO_SLOTS). */
function memoRoom(): bool {
  if (memoKeys == 0) {
    memoRehash(1024);
    memoWords = 1 << 13;
    memoPool = heap.alloc(<usize>memoWords << 2);
    recRangesCap = 256;
    recRanges = heap.alloc(<usize>recRangesCap << 3);
  }
  if (memoCount >= (memoSlots >>> 1)) {
    if (memoSlots == MEMO_SLOTS) return false;
    memoRehash(memoSlots << 1);
  }
  return true;
}

/**
 * Look `key` up for a subtree ending before `end`: the entry's offset (a hit), or -1 after
 * starting to record it, or after noting its first visit. A pair walk's subtree (`first` false)
 * is recorded on its second visit: its recording notes every allowed node, and most subtrees of a
 * JSON grammar's pair walks come once. A summary's (`first` true) is recorded on its first: its
 * ranges are the rejected ones it adds anyway, copied when it ends.
 */
function memoVisit(key: u64, end: u32, c: u32, nf: u32, first: bool): i32 {
  const off = memoFind(key);
  if (off >= 0) return off;
  if (off == -2) recStart(key, end, c, nf);
  else if (first && memoRoom()) {
    recStart(key, end, c, nf);
    memoCount++;
  } else if (memoRoom()) {
    memoInsert(key, MEMO_SEEN);
    memoCount++;
  }
  return -1;
}

/** Put `key` → `off` into the table: over its own slot, or into a free one. */
function memoInsert(key: u64, off: u32): void {
  const pos = memoSlot(key);
  store<u64>(memoKeys + (<usize>pos << 3), key);
  store<u32>(memoOffs + (<usize>pos << 2), off);
}

/** A table of `slots` slots holding the entries so far. */
function memoRehash(slots: u32): void {
  const oldKeys = memoKeys;
  const oldOffs = memoOffs;
  const oldSlots = memoSlots;
  memoKeys = allocZero(<usize>slots << 3);
  memoOffs = heap.alloc(<usize>slots << 2);
  memoSlots = slots;
  for (let j: u32 = 0; j < oldSlots; j++) {
    const k = load<u64>(oldKeys + (<usize>j << 3));
    if (k != 0) memoInsert(k, load<u32>(oldOffs + (<usize>j << 2)));
  }
  if (oldKeys != 0) {
    heap.free(oldKeys);
    heap.free(oldOffs);
  }
}

/** Start recording the subtree that ends before node `end` under `key`. */
function recStart(key: u64, end: u32, c: u32, nf: u32): void {
  recEnd = end;
  recKey = key;
  recMax = c;
  recNRanges = 0;
  recFront0 = nf;
}

/**
 * A subtree whose allowed ids fall into more ranges, or that has more frontier nodes, than this is
 * not memoized: storing and re-applying it costs about what walking it again does (inside a JSON
 * string most tokens are allowed, but the ones with a quote or a backslash cut the ranges up).
 */
// @ts-ignore: decorator
@inline const REC_MAX_PARTS: u32 = 512;

/** Stop recording (the subtree is not worth a memo); a summary's running `needSeen` goes on. */
function recAbort(): void {
  recEnd = 0;
  setNeedSeen(max(recNeed0, needSeen));
}

/** Note an allowed range [a, b) of the subtree being recorded (merged with the last when adjacent). */
function recRange(a: u32, b: u32): void {
  if (recNRanges > 0 && load<u32>(recRanges + (<usize>(recNRanges - 1) << 3), 4) == a) {
    store<u32>(recRanges + (<usize>(recNRanges - 1) << 3), b, 4);
    return;
  }
  if (recNRanges == REC_MAX_PARTS) {
    recAbort();
    return;
  }
  if (recNRanges == recRangesCap) {
    recRangesCap <<= 1;
    recRanges = heap.realloc(recRanges, <usize>recRangesCap << 3);
  }
  store<u32>(recRanges + (<usize>recNRanges << 3), a);
  store<u32>(recRanges + (<usize>recNRanges << 3), b, 4);
  recNRanges++;
}

/** Store the recorded subtree (fronts are frontScratch[recFront0, nf)); `need` its largest depth + need. */
function recFinish(nf: u32, need: u32): void {
  recEnd = 0;
  const nFront = nf - recFront0;
  const words = 4 + (recNRanges << 1) + nFront;
  if (memoUsed + words > memoWords) {
    let cap = memoWords;
    while (memoUsed + words > cap && cap < MEMO_WORDS) cap <<= 1;
    if (memoUsed + words > cap) return;
    memoPool = heap.realloc(memoPool, <usize>cap << 2);
    memoWords = cap;
  }
  const e = memoPool + (<usize>memoUsed << 2);
  store<u32>(e, recNRanges);
  store<u32>(e, nFront, 4);
  store<u32>(e, recMax, 8);
  store<u32>(e, need, 12);
  memory.copy(e + 16, recRanges, <usize>recNRanges << 3);
  memory.copy(e + 16 + (<usize>recNRanges << 3), frontScratch + (<usize>recFront0 << 2), <usize>nFront << 2);
  memoInsert(recKey, memoUsed); // over the key's MEMO_SEEN slot
  memoUsed += words;
}

/** Set an entry's ranges in `out`; returns the entry's address (fronts and stats are read by the caller). */
function memoApply(off: i32, out: usize): usize {
  const e = memoPool + (<usize>off << 2);
  const n = load<u32>(e);
  for (let j: u32 = 0; j < n; j++) setRange(out, load<u32>(e + 16 + (<usize>j << 3)), load<u32>(e + 20 + (<usize>j << 3)));
  return e;
}

/** Grow the frontier scratch to hold `n` nodes. */
function frontReserve(n: u32): void {
  if (n <= frontCap) return;
  while (frontCap < n) frontCap <<= 1;
  frontScratch = heap.realloc(frontScratch, <usize>frontCap << 2);
}

/**
 * End a summary's recording: its ranges are the rejected ones added since it started (the first
 * one also covers how far the range before it grew); its largest depth + need is what `needSeen`
 * holds since its root child.
 */
function finishSummaryRec(nf: u32): void {
  const need = needSeen;
  recNRanges = 0;
  if (recRej0 > 0 && load<u32>(rejBuf + (<usize>(recRej0 - 1) << 3), 4) != recRejEnd0) {
    recRange(recRejEnd0, load<u32>(rejBuf + (<usize>(recRej0 - 1) << 3), 4));
  }
  for (let j = recRej0; j < rejN && recEnd != 0; j++) recRange(load<u32>(rejBuf + (<usize>j << 3)), load<u32>(rejBuf + (<usize>j << 3), 4));
  if (recEnd != 0) recFinish(nf, need);
  setNeedSeen(max(recNeed0, need));
}

/**
 * The summary of state `q`: the trie walked from the single pair (q, SYM_BASE). `base` gets the
 * tokens accepted on paths that never pop SYM_BASE (and the empty tokens); a node whose step pops
 * it goes to the frontier list (what follows the pop is left to the per-pair walks), and the walk
 * goes on below it with the pairs that did not pop. Also records the largest `depth + need` a
 * stack-limit check saw and the most pairs one closure visited.
 *
 * Like the DFA walk (masks.ts), the walk notes only the subtrees it does not allow (dead, or over
 * the pair limit), as trie-id ranges: most states allow most of the trie, and setting the
 * bits of every allowed node was half the walk's time. `base` is then built from the smaller side.
 */
function pdaSummarize(q: u32): void {
  const nodes = nodesPtr;
  const sets = walkSets;
  store<u32>(sets, 1);
  store<u32>(sets, 0, 4);
  store<u64>(sets, (<u64>q << 32) | <u64>SYM_BASE, 8);
  setNeedSeen(needOf(q));
  rejN = 0;
  let maxc: u32 = 1;
  let nf: u32 = 0;
  // A text run of tr characters (a length-bounded string's position, tr characters left in it or
  // in its block): its text tokens of at most tr characters are allowed, all at once
  // (text-lengths.ts). The walk goes only below the root's text exits (text-exits.ts) whose text
  // path is no longer than tr, each from the run's state where the path ends, and, unless the run
  // ends in a state that reads no text (`runEndsDead`), below the nodes where a text path goes past
  // the run (`beyondFind`; a run shorter than BEYOND_MIN that does not end dead is walked the whole
  // way), from the run's last state; the rest is noted as rejected, and the allowed text tokens are
  // OR-ed in at the end. A run that loops (a string's inside) walks below its exits too, and allows the rest.
  // An exit's subtree is memoized as a root child's is (what a string's closing quote leads to is
  // walked once, not again for each position of the string).
  const tr = textRun(q);
  const dead = tr != 0 && tr < RUN_LOOP && runEndsDead(q, tr);
  const lengths = dead || (tr >= BEYOND_MIN && tr < RUN_LOOP);
  // (A run that loops through several states takes each exit's state from its count, kept up to
  // 255: only where no token is that long.)
  const loop = tr == RUN_LOOP && (textLoops(q) || maxDepth < 255);
  xs = 0;
  beyondN = 0;
  segStart = 0;
  segEnd = 1;
  if (lengths || loop) {
    xs = exitsOf(0);
    xn = load<u32>(xs);
    xk = 0;
    xAfter = nNodes;
    xLen = lengths;
    xRun = !textLoops(q);
    xBase = 0;
    xLoop = q;
    xStack = SYM_BASE;
    store<u32>(runStates, q);
    runStatesN = 1;
    if (lengths) {
      textLengthsInit();
      if (!dead) beyondFind(tr);
    }
  }
  let bk: u32 = 0; // the next of the nodes past the run
  let pend: usize = 0; // the next exit whose path is alive and whose byte its state takes, and that state
  let pendS: u32 = 0;
  const n = nNodes;
  const rootText = tr;
  const rootPlain = plainRun(q);
  let i: u32 = 1;
  for (;;) {
    if (xs != 0 && i >= segEnd) {
      // The next exit whose text path is alive and whose byte the state there takes (the others
      // are rejected: in the gaps, or by their ids), its walk set one pair at the depth above it.
      if (recEnd != 0 && i >= recEnd) finishSummaryRec(nf);
      while (pend == 0 && xk < xn) {
        const x = xs + 4 + <usize>xk * EXIT_BYTES;
        xk++;
        const info = load<u32>(x, 4);
        const count = info & 0xff;
        if (xLen && count > tr) continue; // past the run: below a node of beyondBuf
        const s = exitState(xRun ? runState(count - xBase - ((info & 0xff00) != 0 ? 1 : 0)) : xLoop, x);
        if (byteStep(s, info >>> 16) == NONE16) {
          if (!xLen) rejAdd(load<u32>(x, 12), load<u32>(x, 16));
          continue;
        }
        pend = x;
        pendS = s;
      }
      const en = pend != 0 ? load<u32>(pend) : 0xffffffff;
      const bn = bk < beyondN ? load<u32>(beyondBuf + (<usize>bk << 2)) : 0xffffffff;
      if (en == 0xffffffff && bn == 0xffffffff) {
        if (xLen) rejAdd(trieId(segEnd), trieId(xAfter));
        i = xAfter;
        xs = 0;
        segStart = 0;
        continue;
      }
      let s: u32;
      if (bn < en) {
        i = bn;
        bk++;
        s = runState(tr);
      } else {
        i = en;
        s = pendS;
        pend = 0;
      }
      if (xLen) rejAdd(trieId(segEnd), trieId(i));
      segStart = i;
      segEnd = load<u32>(nodes + <usize>i * NODE, 4);
      const de = <usize>(load<u32>(nodes + <usize>i * NODE) >>> 8) - 1;
      if (de > 0) {
        const set = sets + de * SET_BYTES;
        store<u32>(set, 1);
        store<u32>(set, 0, 4);
        store<u64>(set, (<u64>s << 32) | <u64>xStack, 8);
        store<u64>(walkOne + (de << 3), (<u64>s << 32) | <u64>xStack);
      }
    }
    if (i >= n) break;
    if (recEnd != 0 && i >= recEnd) finishSummaryRec(nf);
    const p = nodes + <usize>i * NODE;
    const w0 = load<u32>(p);
    const d = <usize>(w0 >>> 8);
    if (d > 1) {
      const t = walkFast(i, d, nodeClass(w0));
      if (t == NONE16) {
        i = rejSubtree(p);
        continue;
      }
      if (t == FAST_SKIP) {
        i = load<u32>(p, 4);
        continue;
      }
      if (t != FAST_NO) {
        store<u32>(pathAt + (d << 2), i);
        if (t == FAST_EXITS && xs == 0) enterExits(i, d);
        i++;
        continue;
      }
    } else if ((rootText != 0 && textNode(i) && rootText >= nodeHeight(i)) || (rootPlain > rootText && plainNode(i) && rootPlain >= nodeHeight(i))) {
      // A root child q's run takes whole (walkFast's FAST_SKIP with q on top): every token of it
      // is allowed in one pair of a reading state, as stepping it and then each child would find.
      i = load<u32>(p, 4);
      continue;
    }
    const dst = sets + d * SET_BYTES;
    const ns0 = needSeen;
    // A root child or an exit: its subtree from a single (t, SYM_BASE) pair is memoized (an exit's
    // not while a root child's subtree around it is being recorded).
    const memoHere = d == 1 || (i == segStart && recEnd == 0);
    if (memoHere) setNeedSeen(0);
    const c = pdaStep(sets + (d - 1) * SET_BYTES, nodeClass(w0), dst);
    walkNote(d, c, dst);
    if (c > maxc) maxc = c;
    if (recEnd != 0 && c > recMax) recMax = c;
    if (memoHere) {
      const sk = load<u32>(p, 4);
      if (c == 1 && load<u32>(dst) == 1 && load<u32>(dst, 4) == 0 && <u32>load<u64>(dst, 8) == SYM_BASE) {
        const key = memoKey(MK_SUMMARY, <u32>(load<u64>(dst, 8) >>> 32), i);
        recNeed0 = ns0;
        const off = memoVisit(key, sk, c, nf, true);
        if (off >= 0) {
          // The entry's ranges are the subtree's rejected ones.
          const e = memoPool + (<usize>off << 2);
          const nR = load<u32>(e);
          for (let j: u32 = 0; j < nR; j++) rejAdd(load<u32>(e + 16 + (<usize>j << 3)), load<u32>(e + 20 + (<usize>j << 3)));
          const nF = load<u32>(e, 4);
          frontReserve(nf + nF);
          memory.copy(frontScratch + (<usize>nf << 2), e + 16 + (<usize>nR << 3), <usize>nF << 2);
          nf += nF;
          if (load<u32>(e, 8) > maxc) maxc = load<u32>(e, 8);
          setNeedSeen(max(ns0, load<u32>(e, 12)));
          i = sk;
          continue;
        }
        if (recEnd != 0) {
          recRej0 = rejN;
          recRejEnd0 = rejN > 0 ? load<u32>(rejBuf + (<usize>(rejN - 1) << 3), 4) : 0;
        } else setNeedSeen(max(ns0, needSeen));
      } else setNeedSeen(max(ns0, needSeen));
    }
    if (c == 0 || c > PDA_MAX_PAIRS) {
      i = rejSubtree(p);
      continue;
    }
    if (load<u32>(dst, 4) & SF_ESCAPE) {
      if (recEnd != 0 && nf - recFront0 == REC_MAX_PARTS) recAbort();
      frontReserve(nf + 1);
      store<u32>(frontScratch + (<usize>nf << 2), i);
      nf++;
      // The pairs that did not escape go on below it (they are the base's; the escaped path is
      // the pair walk's, from what popping the pair's stack node gives).
    }
    if (load<u32>(dst) == 0) {
      i = rejSubtree(p);
      continue;
    }
    store<u32>(pathAt + (d << 2), i);
    if (xs == 0) {
      const x = load<u64>(walkOne + (d << 3));
      if (x != NO_PAIR && exitsFit(i, <u32>(x >>> 32))) enterExits(i, d);
    }
    i++;
  }
  if (recEnd != 0) finishSummaryRec(nf);
  const base = heap.alloc(maskBytes);
  maskFromRejected(base);
  if (lengths) {
    const short = textMaskUpTo(tr);
    for (let w: usize = 0; w < maskBytes; w += 4) store<u32>(base + w, load<u32>(base + w) | load<u32>(short + w));
  }
  const front = heap.alloc((<usize>nf + 1) << 2);
  store<u32>(front, nf);
  memory.copy(front + 4, frontScratch, <usize>nf << 2);
  store<u32>(symFrontPtr + (<usize>q << 2), <u32>front);
  store<u32>(symStatsPtr + (<usize>q << 3), needSeen);
  store<u32>(symStatsPtr + (<usize>q << 3), maxc, 4);
  store<u32>(symBasePtr + (<usize>q << 2), <u32>base);
}

// ---- Summaries a host keeps (docs/abi.md, "Summaries") ----

/**
 * State q's summary, for a host to keep for another instance whose state has the same automaton
 * below it (the summary depends on that and on the vocabulary alone): 0 while q has none; k = 0 its
 * base mask's address (`mask_words()` words), 1 its frontier's (u32 n, u32 nodes[n]), 2 the
 * deepest `depth + need` it checked, 3 the most pairs one of its closures visited.
 */
export function sym_get(q: i32, k: i32): i32 {
  if (!pdaMode || !pdaVocabReady || <u32>q >= hdr(H_NSTATES)) return 0;
  const base = load<u32>(symBasePtr + (<usize>q << 2));
  if (base == 0) return 0;
  switch (k) {
    case 0: return <i32>base;
    case 1: return <i32>load<u32>(symFrontPtr + (<usize>q << 2));
    case 2: return <i32>load<u32>(symStatsPtr + (<usize>q << 3));
    case 3: return <i32>load<u32>(symStatsPtr + (<usize>q << 3), 4);
  }
  return 0;
}

/**
 * Give state q a summary another instance computed (`sym_get`), instead of walking the trie for
 * it: at `src`, the base mask (`mask_words()` words), then u32 n and u32 nodes[n], increasing.
 * 0, or -1 (not pushdown mode, no vocabulary, q out of range or already summarized, or a frontier
 * node out of order or range). A summary that does not belong to q gives wrong masks, never an
 * access outside this module's memory.
 */
export function sym_install(q: i32, src: i32, deepest: i32, pairs: i32): i32 {
  if (!pdaMode || vocabPhase != 2 || <u32>q >= hdr(H_NSTATES)) return -1;
  pdaVocabInit();
  if (load<u32>(symBasePtr + (<usize>q << 2)) != 0) return -1;
  const fsrc = <usize>src + maskBytes;
  const n = load<u32>(fsrc);
  if (n > nNodes) return -1;
  let last: u32 = 0;
  for (let j: u32 = 0; j < n; j++) {
    const x = load<u32>(fsrc + 4 + (<usize>j << 2));
    if (x <= last || x >= nNodes) return -1;
    last = x;
  }
  const base = heap.alloc(maskBytes);
  memory.copy(base, <usize>src, maskBytes);
  const front = heap.alloc((<usize>n + 1) << 2);
  memory.copy(front, fsrc, (<usize>n + 1) << 2);
  store<u32>(symFrontPtr + (<usize>q << 2), <u32>front);
  store<u32>(symStatsPtr + (<usize>q << 3), <u32>deepest);
  store<u32>(symStatsPtr + (<usize>q << 3), <u32>pairs, 4);
  store<u32>(symBasePtr + (<usize>q << 2), <u32>base);
  return 0;
}

// ---- Rejected ranges (summary walks) ----

/** The trie-id ranges [a, b) a summary walk did not allow: u32 pairs, increasing, adjacent ones merged. */
let rejBuf: usize = 0;
let rejN: u32 = 0;
let rejCap: u32 = 0;

/** Append [a, b) to the rejected ranges (merged with the last one when adjacent). */
function rejAdd(a: u32, b: u32): void {
  if (rejN > 0) {
    const last = rejBuf + (<usize>(rejN - 1) << 3);
    if (load<u32>(last, 4) == a) {
      store<u32>(last, b, 4);
      return;
    }
  }
  if (a >= b) return;
  if (rejN == rejCap) {
    rejCap = rejCap == 0 ? 1024 : rejCap << 1;
    rejBuf = rejBuf == 0 ? heap.alloc(<usize>rejCap << 3) : heap.realloc(rejBuf, <usize>rejCap << 3);
  }
  store<u32>(rejBuf + (<usize>rejN << 3), a);
  store<u32>(rejBuf + (<usize>rejN << 3), b, 4);
  rejN++;
}

/** The first trie id of node `i` (node nNodes: one past the last id). */
// @ts-ignore: decorator
@inline function trieId(i: u32): u32 {
  return load<u32>(nodesPtr + <usize>i * NODE, 8);
}

/** Reject the subtree of the node at `p` (its own tokens included); returns the node after it. */
// @ts-ignore: decorator
@inline function rejSubtree(p: usize): u32 {
  const sk = load<u32>(p, 4);
  rejAdd(load<u32>(p, 8), trieId(sk));
  return sk;
}

/** Every trie token but the rejected ranges into `out`, from the smaller side. */
function maskFromRejected(out: usize): void {
  let rejected: u32 = 0;
  for (let j: u32 = 0; j < rejN; j++) rejected += load<u32>(rejBuf + (<usize>j << 3), 4) - load<u32>(rejBuf + (<usize>j << 3));
  if (rejected < nTrie - rejected) {
    memory.copy(out, trieMask(), maskBytes);
    for (let j: u32 = 0; j < rejN; j++) clearRange(out, load<u32>(rejBuf + (<usize>j << 3)), load<u32>(rejBuf + (<usize>j << 3), 4));
  } else {
    memory.fill(out, 0, maskBytes);
    let a: u32 = 0;
    for (let j: u32 = 0; j < rejN; j++) {
      setRange(out, a, load<u32>(rejBuf + (<usize>j << 3)));
      a = load<u32>(rejBuf + (<usize>j << 3), 4);
    }
    setRange(out, a, nTrie);
  }
}

/**
 * Walk the subtree of node g but g itself exactly, from the set at g's walk depth (the root, g = 0:
 * the whole trie from walk set 0, for a configuration or a pair near the stack limit; a frontier
 * node: from the pairs an escape's pop gives, `escapeWalks`), OR-ing its allowed tokens into `out`.
 * Returns the most pairs one closure visited.
 */
function pdaWalk(out: usize, g: u32): u32 {
  return walkNodes(out, g + 1, load<u32>(nodesPtr + <usize>g * NODE, 4));
}

/**
 * Walk nodes [from, n) (whole subtrees, the first at the depth below a set `pdaWalk` describes),
 * OR-ing their allowed tokens into `out`; returns the most pairs one closure visited.
 */
function walkNodes(out: usize, from: u32, n: u32): u32 {
  const nodes = nodesPtr;
  const sets = walkSets;
  let maxc: u32 = 0;
  // Every node's tokens are allowed but those of the dead subtrees skipped: the ids from `gap` on
  // are set in `out` when a subtree is skipped or the walk (or a recorded subtree) ends, not node by
  // node (as in pdaSummarize). Root children are stepped (their set is in walk set 0 only), deeper
  // nodes go through walkFast (a frontier node's depth has its one pair noted by the caller).
  let gap = trieId(from);
  let i = from;
  while (i < n) {
    if (recEnd != 0 && i >= recEnd) {
      gap = markTo(out, gap, trieId(recEnd));
      recFinish(0, 0);
    }
    const p = nodes + <usize>i * NODE;
    const w0 = load<u32>(p);
    const sk = load<u32>(p, 4);
    const d = <usize>(w0 >>> 8);
    if (d > 1) {
      const t = walkFast(i, d, nodeClass(w0));
      if (t == NONE16) {
        gap = skipFrom(out, gap, p, sk);
        i = sk;
        continue;
      }
      if (t == FAST_SKIP) {
        // Allowed whole: every token of it ends in one pair of a reading state.
        i = sk;
        continue;
      }
      if (t != FAST_NO) {
        i++; // maxc is ≥ 1 already: the node's parent was stepped
        continue;
      }
    }
    const dst = sets + d * SET_BYTES;
    const c = pdaStep(sets + (d - 1) * SET_BYTES, nodeClass(w0), dst);
    walkNote(d, c, dst);
    if (c > maxc) maxc = c;
    if (recEnd != 0 && c > recMax) recMax = c;
    if (!pdaAlive(c, dst)) {
      gap = skipFrom(out, gap, p, sk);
      i = sk;
      continue;
    }
    if (d == 1 && c == 1 && load<u32>(dst) == 1 && <u32>load<u64>(dst, 8) == 0) {
      // A whole root child's subtree from a single (t, empty stack) pair: memoized.
      gap = markTo(out, gap, load<u32>(p, 8));
      const off = memoVisit(memoKey(MK_EMPTY, <u32>(load<u64>(dst, 8) >>> 32), i), sk, c, 0, false);
      if (off >= 0) {
        const e = memoApply(off, out);
        if (load<u32>(e, 8) > maxc) maxc = load<u32>(e, 8);
        gap = trieId(sk);
        i = sk;
        continue;
      }
    }
    i++;
  }
  gap = markTo(out, gap, trieId(n));
  if (recEnd != 0) recFinish(0, 0);
  return maxc;
}

/** Set the allowed ids [gap, a) in `out` (and in the subtree being recorded); returns a. */
function markTo(out: usize, gap: u32, a: u32): u32 {
  if (a > gap) {
    setRange(out, gap, a);
    if (recEnd != 0) recRange(gap, a);
  }
  return a;
}

/** Skip the dead subtree of the node at `p` (ending before node `sk`): mark up to it; returns its end. */
// @ts-ignore: decorator
@inline function skipFrom(out: usize, gap: u32, p: usize, sk: u32): u32 {
  markTo(out, gap, load<u32>(p, 8));
  return trieId(sk);
}

/**
 * Pair (q, node)'s mask from q's summary, into `out`: the base, and below each frontier node (a
 * path where some pair pops SYM_BASE, here `node`) what the pairs of that pop take: the node's own
 * tokens when they are alive, and its subtree walked from them. The pop gives the same pairs
 * wherever it happens, so they are computed once, and the frontier's children are read from q's
 * escape table (`escapeTable`): a child whose class no pair of the pop reads is not walked. Where
 * every pair of the pop has a text run as long as what lies below a frontier node (a text subtree
 * whose node ends an ASCII character), the subtree is allowed whole, as walking it would find
 * (walkFast's FAST_SKIP for each child): the tokens that cross the end of a long string's block,
 * each a walk of its own (1-5 ms a mask near a block's end). A set below a frontier node holds the
 * summary's pairs and those of the pop; each side's closures are counted apart, so where the two
 * counts could add up past PDA_MAX_PAIRS, returns false (the caller walks the pair exactly). Else
 * sets `lastPairMax` (their sum where a pop happens: a bound for pdaMaskOf's check) and returns true.
 */
function escapeWalks(out: usize, q: u32, node: u32): bool {
  memory.copy(out, <usize>load<u32>(symBasePtr + (<usize>q << 2)), maskBytes);
  const own = load<u32>(symStatsPtr + (<usize>q << 3), 4);
  lastPairMax = own;
  const front = <usize>load<u32>(symFrontPtr + (<usize>q << 2));
  const nf = load<u32>(front);
  if (nf == 0) return true;
  const cc = pdaPopped(node, contSet);
  if (cc + own > PDA_MAX_PAIRS) return false;
  if (!pdaAlive(cc, contSet)) return true;
  let esc = <usize>load<u32>(symEscPtr + (<usize>q << 2)); // made on the first frontier node walked below
  // Which classes the pairs of the pop read (a child of another class steps to nothing, allowing no
  // token and counting no closure), and the shortest of their text runs.
  const kept = <usize>load<u32>(contSet);
  const nc = hdr(H_NCLASSES);
  memory.fill(readsCls, 0, <usize>nc);
  let run: u32 = kept > 0 ? RUN_LOOP : 0;
  for (let j: usize = 0; j < kept; j++) {
    const t = <u32>(load<u64>(contSet + 8 + (j << 3)) >>> 32);
    const row = transBase + (<usize>(t * nc) << 1);
    for (let c: u32 = 0; c < nc; c++) {
      if (<u32>load<u16>(row + (<usize>c << 1)) != NONE16) store<u8>(readsCls + <usize>c, 1);
    }
    run = min(run, textRun(t));
  }
  const one = kept == 1 ? load<u64>(contSet, 8) : NO_PAIR;
  let most = cc;
  for (let k: u32 = 0; k < nf; k++) {
    const g = load<u32>(front + 4 + (<usize>k << 2));
    const w0 = load<u32>(nodesPtr + <usize>g * NODE);
    if (run != 0 && (w0 & 0x80) == 0 && textNode(g) && run + 1 >= nodeHeight(g)) {
      setRange(out, trieId(g), trieId(load<u32>(nodesPtr + <usize>g * NODE, 4)));
      continue;
    }
    setRange(out, trieId(g), trieId(g + 1)); // its own tokens
    if (kept == 0) continue;
    if (esc == 0) esc = escapeTable(q, front);
    const kids = esc + ((<usize>nf + 1) << 2);
    for (let e = load<u32>(esc + (<usize>k << 2)), end = load<u32>(esc + (<usize>(k + 1) << 2)); e < end; e++) {
      const x = load<u64>(kids + (<usize>e << 3));
      if (load<u8>(readsCls + <usize>(<u32>(x >>> 32))) == 0) continue;
      const c = <u32>x;
      const dg = <usize>(load<u32>(nodesPtr + <usize>c * NODE) >>> 8) - 1;
      memory.copy(walkSets + dg * SET_BYTES, contSet, 8 + (kept << 3));
      store<u64>(walkOne + (dg << 3), one);
      const m = walkNodes(out, c, load<u32>(nodesPtr + <usize>c * NODE, 4));
      if (m > most) most = m;
    }
  }
  if (most + own > PDA_MAX_PAIRS) return false;
  lastPairMax = most + own; // a bound on the closures of the sets below the frontier nodes
  return true;
}

/**
 * State q's escape table, from its frontier (`front`, n nodes): n + 1 u32 offsets, the children of
 * frontier node k being entries [offset k, offset k + 1), then the entries, u64 (class << 32 |
 * node). Each pair of q walks from these alone, so that a frontier of a thousand nodes (the ends
 * of a number) costs a pass over an array, not a visit to each node and its children in the trie.
 */
function escapeTable(q: u32, front: usize): usize {
  const nodes = nodesPtr;
  const nf = load<u32>(front);
  let nKids: u32 = 0;
  for (let k: u32 = 0; k < nf; k++) {
    const g = load<u32>(front + 4 + (<usize>k << 2));
    const sk = load<u32>(nodes + <usize>g * NODE, 4);
    for (let c = g + 1; c < sk; c = load<u32>(nodes + <usize>c * NODE, 4)) nKids++;
  }
  const esc = heap.alloc(((<usize>nf + 1) << 2) + (<usize>nKids << 3));
  let j: usize = esc + ((<usize>nf + 1) << 2);
  let e: u32 = 0;
  for (let k: u32 = 0; k < nf; k++) {
    store<u32>(esc + (<usize>k << 2), e);
    const g = load<u32>(front + 4 + (<usize>k << 2));
    const sk = load<u32>(nodes + <usize>g * NODE, 4);
    for (let c = g + 1; c < sk; c = load<u32>(nodes + <usize>c * NODE, 4)) {
      store<u64>(j, (<u64>nodeClass(load<u32>(nodes + <usize>c * NODE)) << 32) | <u64>c);
      j += 8;
      e++;
    }
  }
  store<u32>(esc + (<usize>nf << 2), e);
  store<u32>(symEscPtr + (<usize>q << 2), <u32>esc);
  return esc;
}

/** The mask of the single pair `x` (cached); sets `lastPairMax` to the most pairs one of its closures visited. */
function pdaPairMask(x: u64): i32 {
  const hit = pairCacheFind(x);
  if (hit != 0) {
    lastPairMax = load<u32>(hit, 12);
    return load<i32>(hit, 8);
  }
  const q = <u32>(x >>> 32);
  const node = <u32>x;
  if (load<u32>(symBasePtr + (<usize>q << 2)) == 0) pdaSummarize(q);
  const out = pairScratch;
  const sets = walkSets;
  store<u32>(sets, 1);
  store<u32>(sets, 0, 4);
  store<u64>(sets, x, 8);
  let maxc: u32;
  const stats = symStatsPtr + (<usize>q << 3);
  if (pnDepth(node) + load<u32>(stats) <= PDA_MAX_STACK && escapeWalks(out, q, node)) {
    maxc = lastPairMax;
  } else {
    // Near the stack limit a pair or push of the summary may not exist: walk everything exactly.
    memory.fill(out, 0, maskBytes);
    setRange(out, 0, load<u32>(nodesPtr + NODE, 8));
    maxc = pdaWalk(out, 0);
  }
  const idx = pdaInternCopy(out);
  pairCacheAdd(x, idx, maxc);
  lastPairMax = maxc;
  return idx;
}

/** Distinct-mask index of configuration `c` (computed on first use). Needs a vocabulary. */
export function pdaMaskOf(c: u32): i32 {
  let idx = load<i32>(cfRec(c), 8);
  if (idx >= 0) return idx;
  pdaVocabInit();
  const word = load<u32>(cfRec(c), 4);
  const n = word & 0x7fffffff;
  const acc = (word >>> 31) != 0;
  if (n == 1 && !acc) idx = pdaPairMask(load<u64>(pairPool + (<usize>load<u32>(cfRec(c)) << 3)));
  else {
    const out = cfgScratch;
    memory.fill(out, 0, maskBytes);
    setRange(out, 0, load<u32>(nodesPtr + NODE, 8));
    let sum: u32 = 0;
    for (let i: u32 = 0; i < n; i++) {
      const src = maskAddr(pdaPairMask(load<u64>(pairPool + ((<usize>load<u32>(cfRec(c)) + <usize>i) << 3))));
      sum += lastPairMax;
      for (let w: usize = 0; w < maskBytes; w += 4) store<u32>(out + w, load<u32>(out + w) | load<u32>(src + w));
    }
    if (sum > PDA_MAX_PAIRS) {
      // Some closure of the whole configuration might exceed the limit although each pair's
      // does not: walk the configuration itself.
      memory.fill(out, 0, maskBytes);
      setRange(out, 0, load<u32>(nodesPtr + NODE, 8));
      cfLoad(c, walkSets);
          pdaWalk(out, 0);
    }
    if (acc) pdaSetEos(out);
    idx = pdaInternCopy(out);
  }
  store<i32>(cfRec(c), idx, 8);
  return idx;
}

/** `precompute_all` in pushdown mode: every state's summary and the masks of the configurations known so far. */
export function pdaPrecompute(): i32 {
  pdaVocabInit();
  const ns = hdr(H_NSTATES);
  for (let q: u32 = 0; q < ns; q++) {
    if ((<u32>load<u8>(stKind + <usize>q) & SK_READS) && load<u32>(symBasePtr + (<usize>q << 2)) == 0) pdaSummarize(q);
  }
  const nc = cfCount;
  for (let c: u32 = 0; c < nc; c++) pdaMaskOf(c);
  return <i32>nMasks;
}
