/**
 * @fileoverview A context-free grammar (cfg.ts) compiled into a PUSHDOWN automaton for unbounded
 * nesting: byte-level DFA states plus CALL edges, run with a stack of return states.
 *
 * Why this shape. regular.ts expands the grammar into one DFA up to a nesting bound; the states
 * double per level for JSON, so deep nesting cannot be had that way. Here every RECURSION CUT of
 * the call graph (regular.ts `callGraph`: the call that opens a nested construct, e.g. JSON `value`
 * inside an array or an object, `expr` inside parentheses) becomes a call edge instead of being
 * expanded. What remains between two cuts is finite (tail calls are jumps, other calls are bounded
 * by the cut analysis), so it determinizes exactly like regular.ts at depth 0: one subset state per
 * set of (local stack, position) items. A state therefore has
 *   - byte transitions (by byte class), as in any DFA of the runtime;
 *   - `end` (the `accepting` flag): the machine it belongs to may finish here — pop the runtime
 *     stack and continue in the return state on top, or, with an empty stack, accept the sentence;
 *   - call edges [start, ret]: enter the called rule's start state with `ret` pushed.
 * One state numbering covers all machines (the start rule's and each called rule's), so the
 * tables are the runtime's ordinary DFA tables plus a call list per state (docs/abi.md, format 3).
 *
 * Semantics (the reference, `PdaRunner` below; the runtime implements the same): a configuration
 * is a set of pairs (state, stack). Its CLOSURE adds, for each pair, the pairs reached by calls
 * (push ret, go to start) and by ends (pop: continue in the popped return state), and notes
 * acceptance (an end with an empty stack). A byte steps every pair that has a transition on it and
 * closes the result. Pairs are kept only if their state reads bytes, so equal futures give equal
 * sets. Nondeterminism (ambiguous grammars, a rule that may end or go on) is simply several pairs.
 * Termination: left recursion is rewritten away before this stage, so a chain of calls that reads
 * no byte visits each rule at most once; pops shrink the stack; the closure is a set (no pair is
 * expanded twice). Limits, both order-independent and both what the runtime does too:
 *   - `maxStack` frames. NEED(q) (`pdaNeed`) is how many frames above the current one state q needs
 *     at least to finish its machine (0 if bytes alone get it to an end). A pair (q, stack of k
 *     frames) exists only if k + need(q) ≤ maxStack — every frame below was checked the same way
 *     when it was pushed, at its own level — so every configuration can still be completed within
 *     the limit: deeper nesting is simply not offered, and no mask ever leads into a dead end.
 *   - `maxPairs` pairs visited by one closure: a byte whose closure is larger (only pathologically
 *     ambiguous grammars get there) is not offered.
 *
 * Every state is trimmed to be productive (it can finish its machine) and reachable, so every
 * configuration the runner produces can be completed: masks never lead into a dead end. Then
 * Hopcroft minimization (call edges are symbols too) with canonical numbering, so equal grammars
 * give byte-identical tables.
 */
import { SpecError } from "../diagnostics.js";
import { ByteFlag } from "../ir.js";
import { minimize } from "../automata/minimize.js";
import { IdTable } from "./id-table.js";
import type { Cfg } from "./cfg.js";
import {
  DEFAULT_MAX_GRAMMAR_STATES, END, GrammarLimitError, K_BYTES, MAX_CLOSURE_WORK, buildNetwork, itemClosure, mergeClasses, setClasses,
  type ClosureBudget, type GrammarDfa,
} from "./regular.js";
import { sortByFirst, sortNumbers } from "./small-sort.js";

/** Most stack frames (pending nested constructs) a configuration may hold; the runtime uses the same. */
export const PDA_MAX_STACK = 1024;
/** Most (state, stack) pairs one closure may visit; the runtime uses the same. */
export const PDA_MAX_PAIRS = 256;

/** A grammar DFA whose `accepting` means "may end its machine", plus call edges. */
export interface GrammarPda extends GrammarDfa {
  /** Per state: call edges as [start, ret] pairs, sorted by start then ret. */
  calls: (readonly [number, number])[][];
  /**
   * States a configuration keeps although they read no byte (an agent's Yield states, which wait
   * for the environment's text: automata/pushdown-bytes.ts). Absent: none.
   */
  keep?: Uint8Array;
  /** Per state: the state after the environment's text (an agent's Yield states), or -1. Absent: none. */
  env?: Int32Array;
}

export interface GrammarPdaResult {
  pda: GrammarPda;
  /** Subset states before trimming and minimization. */
  rawStates: number;
  /** Rules entered by a call edge (the recursion cuts' targets). */
  calledRules: string[];
}

/**
 * `called`: rules entered by a call wherever they are not the last symbol of an alternative, as
 * the recursion cuts are, instead of being expanded in place: their machine then exists once. A
 * small rule used in many places (JSON's bounded whitespace, one state per character allowed) is
 * otherwise copied into every state set that reaches it.
 */
export function grammarToPda(cfg: Cfg, opts: { maxStates?: number; name?: string; called?: readonly string[] } = {}): GrammarPdaResult {
  const maxStates = opts.maxStates ?? DEFAULT_MAX_GRAMMAR_STATES;
  const ruleIndex = new Map(cfg.rules.map((r, i) => [r.name, i] as const));
  const called = new Set((opts.called ?? []).map((n) => ruleIndex.get(n) ?? -1).filter((i) => i >= 0 && i !== cfg.start));
  const net = buildNetwork(cfg, called);
  const P = net.kind.length;
  const { classMap, nClasses, setClass } = setClasses(net);

  // Local stacks (calls that are not cuts), interned; 0 is the empty stack.
  const stParent: number[] = [0];
  const stPos: number[] = [0];
  const stIds = new Map<number, number>();
  const push = (s: number, pos: number): number => {
    const key = s * P + pos;
    let id = stIds.get(key);
    if (id === undefined) { id = stParent.length; stIds.set(key, id); stParent.push(s); stPos.push(pos); }
    return id;
  };

  // Items met so far (stack * P + position: past 2^31 on big grammars, so a Map would hash them as
  // boxed doubles), interned by id-table.ts: per id the item, the subset state of the item alone
  // (-2: not asked yet, -1: none), and for an item that reads no byte its closure. An item that
  // reads a byte (most of them: a literal's next byte) is its own closure and needs no object.
  interface Closure { kernel: number[]; accept: boolean; callList: (readonly [number, number[]])[] }
  const NO_CALLS: (readonly [number, number[]])[] = [];
  const itemIds = new IdTable();
  let itemSeed = new Float64Array(1024);
  let itemState = new Int32Array(1024);
  const itemClosure_: (Closure | undefined)[] = [];
  let nItems = 0;
  let qSeed = 0;
  const sameItem = (id: number): boolean => itemSeed[id] === qSeed;
  const itemId = (seed: number): number => {
    const h = (seed | 0) ^ Math.imul((seed / 4294967296) | 0, 0x9e3779b1);
    qSeed = seed;
    let id = itemIds.find(h, sameItem);
    if (id < 0) {
      id = nItems++;
      if (id === itemSeed.length) {
        const s2 = new Float64Array(2 * id); s2.set(itemSeed); itemSeed = s2;
        const t2 = new Int32Array(2 * id); t2.set(itemState); itemState = t2;
      }
      itemSeed[id] = seed;
      itemState[id] = -2;
      itemIds.add(h, id);
    }
    return id;
  };
  const budget: ClosureBudget = { left: MAX_CLOSURE_WORK, maxDepth: Infinity, name: opts.name };
  /** The closure of an item that reads no byte, item id `id` (memoized). */
  const closeItem = (id: number): Closure => {
    const hit = itemClosure_[id];
    if (hit) return hit;
    let calls: Map<number, number[]> | undefined;
    const { kernel, accept } = itemClosure(net, stParent, stPos, itemSeed[id]!, (st, pos, add) => {
      const next = net.next[pos]!;
      const rule = net.arg[pos]!;
      if (net.cut[pos]) {
        // A recursion cut is never a tail call (callGraph); a call of a `called` rule may be one:
        // its return item is then an end (of this machine, or of a local frame below it).
        calls ??= new Map();
        let rets = calls.get(rule);
        if (!rets) calls.set(rule, (rets = []));
        rets.push(st * P + next);
        return;
      }
      const ns = next === END ? st : push(st, next);
      for (let j = 0, es_ = net.entries[rule]!; j < es_.length; j++) { const e = es_[j]!; add(ns * P + e); }
    }, budget);
    const callList = calls ? sortByFirst([...calls].map(([rule, r]) => [rule, sortNumbers([...new Set(r)])] as const)) : NO_CALLS;
    const c: Closure = { kernel, accept, callList };
    itemClosure_[id] = c;
    return c;
  };
  const readsByte = (item: number): boolean => net.kind[item % P] === K_BYTES;

  const kernels: number[][] = [];
  const accepting: number[] = [];
  const callSeeds: (readonly [number, number[]])[][] = [];
  // Subset states by a hash of (accept, kernel, calls), then compared item by item (id-table.ts):
  // string keys of whole kernels, and later a Map of one bucket array per state, were most of what
  // this function left for the garbage collector to copy.
  const stateIds = new IdTable();
  let qAccept = false;
  let qKernel: readonly number[] = [];
  let qCalls: readonly (readonly [number, number[]])[] = [];
  const sameState = (id: number): boolean => {
    const accept = qAccept, kernel = qKernel, callList = qCalls;
    if ((accepting[id] === 1) !== accept) return false;
    const k = kernels[id]!, cl = callSeeds[id]!;
    if (k.length !== kernel.length || cl.length !== callList.length) return false;
    for (let i = 0; i < k.length; i++) if (k[i] !== kernel[i]) return false;
    for (let i = 0; i < cl.length; i++) {
      const r1 = cl[i]![0], x1 = cl[i]![1], r2 = callList[i]![0], x2 = callList[i]![1];
      if (r1 !== r2 || x1.length !== x2.length) return false;
      for (let j = 0; j < x1.length; j++) if (x1[j] !== x2[j]) return false;
    }
    return true;
  };
  // Seed sets of more than one item, interned like the states (a string key per set was garbage).
  const seedIds = new IdTable();
  const seedLists: number[][] = [];
  const seedStates: number[] = [];
  let qSeeds: readonly number[] = [];
  const sameSeeds = (id: number): boolean => {
    const a = seedLists[id]!, b = qSeeds;
    if (a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
    return true;
  };
  const oneKernel = [0];
  /** The subset state of a sorted, distinct seed list (`seeds` may be scratch: it is copied when kept). */
  const stateOf = (seeds: readonly number[]): number => {
    let item = -1, sh = 0;
    if (seeds.length === 1) {
      // Most seed sets are one item: its state is kept by the item's id.
      item = itemId(seeds[0]!);
      const st = itemState[item]!;
      if (st !== -2) return st;
    } else {
      sh = 0x1b873593 ^ seeds.length;
      for (let j = 0; j < seeds.length; j++) { const x = seeds[j]!; sh = Math.imul(sh ^ (x | 0) ^ ((x / 4294967296) | 0), 0xcc9e2d51); }
      qSeeds = seeds;
      const k = seedIds.find(sh, sameSeeds);
      if (k >= 0) return seedStates[k]!;
    }
    let kernel: readonly number[];
    let accept = false;
    let callList: (readonly [number, number[]])[];
    if (item >= 0 && readsByte(seeds[0]!)) {
      oneKernel[0] = seeds[0]!;
      kernel = oneKernel;
      callList = NO_CALLS;
    } else if (item >= 0) {
      // One item: its closure is the state (kernel and returns already sorted and distinct).
      const one = closeItem(item);
      kernel = one.kernel;
      accept = one.accept;
      callList = one.callList;
    } else {
      const all = new Set<number>();
      const calls = new Map<number, Set<number>>();
      for (let j = 0; j < seeds.length; j++) {
        const s = seeds[j]!;
        if (readsByte(s)) { all.add(s); continue; }
        const c = closeItem(itemId(s));
        accept ||= c.accept;
        for (let k = 0; k < c.kernel.length; k++) { const x = c.kernel[k]!; all.add(x); }
        for (let i = 0; i < c.callList.length; i++) {
          const r = c.callList[i]![0], rets = c.callList[i]![1];
          let set = calls.get(r);
          if (!set) calls.set(r, (set = new Set()));
          for (let k = 0; k < rets.length; k++) { const x = rets[k]!; set.add(x); }
        }
      }
      kernel = sortNumbers([...all]);
      callList = sortByFirst([...calls.entries()]).map(([r, set]) => [r, sortNumbers([...set])] as const);
    }
    let id: number;
    if (kernel.length === 0 && !accept && callList.length === 0) id = -1;
    else {
      let h = accept ? 0x5bd1e995 : 0x27d4eb2f;
      for (let j = 0; j < kernel.length; j++) { const x = kernel[j]!; h = Math.imul(h ^ x, 0x9e3779b1); }
      for (let i = 0; i < callList.length; i++) {
        const r = callList[i]![0], xs = callList[i]![1];
        h = Math.imul(h ^ (r + 0x7fff), 0x85ebca6b);
        for (let k = 0; k < xs.length; k++) { const x = xs[k]!; h = Math.imul(h ^ x, 0xc2b2ae35); }
      }
      h ^= kernel.length + (callList.length << 20);
      qAccept = accept; qKernel = kernel; qCalls = callList;
      id = stateIds.find(h, sameState);
      if (id < 0) {
        id = kernels.length;
        if (id >= maxStates) throw new GrammarLimitError("maxGrammarStates", id + 1, maxStates, Infinity, opts.name);
        stateIds.add(h, id);
        kernels.push(kernel === oneKernel ? [oneKernel[0]!] : (kernel as number[]));
        accepting.push(accept ? 1 : 0);
        callSeeds.push(callList);
      }
    }
    if (item >= 0) itemState[item] = id;
    else {
      // (Right after this table's unsuccessful find above: nothing between adds to it.)
      seedIds.add(sh, seedLists.length);
      seedLists.push(seeds.slice());
      seedStates.push(id);
    }
    return id;
  };

  const initial = stateOf(net.entries[cfg.start]!);
  if (initial < 0) return emptyLanguage(cfg);
  const startOf = new Map<number, number>();
  // Byte transitions, sparse: state s's (class, target) pairs, classes ascending, are eCls/eTo
  // from eAt[s] (typed arrays grown by doubling). Most states read one or a few classes: dense
  // rows of every class, copied again for the live states, were scanned whole by every step after
  // this one (a tenth of this function on large schemas).
  const eAt: number[] = [];
  let eCls = new Int32Array(1024);
  let eTo = new Int32Array(1024);
  let nE = 0;
  const addEdge = (c: number, t: number): void => {
    if (nE === eCls.length) {
      const c2 = new Int32Array(2 * nE), t2 = new Int32Array(2 * nE);
      c2.set(eCls); t2.set(eTo);
      eCls = c2; eTo = t2;
    }
    eCls[nE] = c;
    eTo[nE++] = t;
  };
  const rawCalls: (readonly [number, number, number])[][] = []; // [rule, start, ret]
  const NO_EDGES: [number, number, number][] = [];
  // Per position, the id of the list of byte classes it reads: that of its byte set (interned), or
  // the empty list (the last) for a position that reads no byte.
  const classLists: number[][] = net.byteSets.map((_, i) => {
    const cs: number[] = [];
    for (let c = 0; c < nClasses; c++) if (setClass[i * nClasses + c]) cs.push(c);
    return cs;
  });
  classLists.push([]);
  const listOfPos = new Int32Array(P);
  for (let p = 0; p < P; p++) listOfPos[p] = net.kind[p] === K_BYTES ? net.arg[p]! : net.byteSets.length;
  // Per class, which kernel items read it (a bitset over the kernel, W words per class): classes
  // with the same bits have the same successor, computed once. A position that reads most bytes
  // (a string's characters) would otherwise build the same seed set once per class.
  let bits = new Int32Array(nClasses);
  const usedBuf = new Int32Array(nClasses); // classes some kernel item reads, `nUsed` of them
  let nUsed = 0;
  // Scratch reused from state to state (a state's own arrays were most of what this loop left
  // for the collector): the kernel's distinct class lists and their bits, the successors found
  // (first class, state), the seeds of one successor.
  let lists = new Int32Array(16);
  let listBits = new Int32Array(16);
  let groups = new Int32Array(32);
  const seeds: number[] = [];
  const oneSeed = [0];
  const succOf = (it: number): number => { const pos = it % P; return it - pos + net.next[pos]!; };
  // Per state, its distinct byte successors (`succs` from succStart[s]): what trimming walks,
  // instead of every class of the row.
  const succStart: number[] = [];
  const succs: number[] = [];
  for (let s = 0; s < kernels.length; s++) {
    const kernel = kernels[s]!;
    eAt.push(nE);
    succStart.push(succs.length);
    if (kernel.length === 1) {
      // One item (a literal's next byte, a trie's node): every class it reads goes to one state.
      const cs = classLists[listOfPos[kernel[0]! % P]!]!;
      if (cs.length > 0) {
        oneSeed[0] = succOf(kernel[0]!);
        const t = stateOf(oneSeed);
        if (t >= 0) {
          for (let k = 0; k < cs.length; k++) addEdge(cs[k]!, t);
          succs.push(t);
        }
      }
    } else {
      const W = (kernel.length + 31) >>> 5;
      if (bits.length < nClasses * W) bits = new Int32Array(nClasses * W);
      // The kernel's items as bitsets per class list (a kernel holds few distinct lists), then
      // each list's bits OR-ed into the classes it reads.
      if (lists.length < kernel.length) lists = new Int32Array(2 * kernel.length);
      if (listBits.length < kernel.length * W) listBits = new Int32Array(2 * kernel.length * W);
      let nLists = 0;
      for (let k = 0; k < kernel.length; k++) {
        const l = listOfPos[kernel[k]! % P]!;
        let j = 0;
        while (j < nLists && lists[j] !== l) j++;
        if (j === nLists) { lists[nLists++] = l; for (let w = 0; w < W; w++) listBits[j * W + w] = 0; }
        listBits[j * W + (k >>> 5)]! |= 1 << (k & 31);
      }
      for (let j = 0; j < nLists; j++) {
        for (let k = 0, cs_ = classLists[lists[j]!]!; k < cs_.length; k++) {
          const c = cs_[k]!;
          let fresh = true;
          for (let w = 0; w < W; w++) { if (bits[c * W + w] !== 0) fresh = false; bits[c * W + w]! |= listBits[j * W + w]!; }
          if (fresh) usedBuf[nUsed++] = c;
        }
      }
      // States are numbered in class order: the used classes sorted, by insertion where they are
      // few, else by a pass over every class (a string's states read most classes).
      if (nUsed > 16) {
        let k = 0;
        for (let c = 0; c < nClasses; c++) {
          for (let w = 0; w < W; w++) if (bits[c * W + w] !== 0) { usedBuf[k++] = c; break; }
        }
      } else {
        for (let a = 1; a < nUsed; a++) {
          const c = usedBuf[a]!;
          let b = a - 1;
          for (; b >= 0 && usedBuf[b]! > c; b--) usedBuf[b + 1] = usedBuf[b]!;
          usedBuf[b + 1] = c;
        }
      }
      if (groups.length < 2 * nUsed) groups = new Int32Array(4 * nUsed);
      let nGroups = 0; // (groups: per distinct successor, its first class, then its state)
      for (let u = 0; u < nUsed; u++) {
        const c = usedBuf[u]!;
        let g = 0;
        for (; g < nGroups; g += 2) {
          const o = groups[g]! * W;
          let same = true;
          for (let w = 0; w < W && same; w++) same = bits[o + w] === bits[c * W + w];
          if (same) break;
        }
        if (g === nGroups) {
          seeds.length = 0;
          for (let k = 0; k < kernel.length; k++) {
            if ((bits[c * W + (k >>> 5)]! >>> (k & 31)) & 1) { const x = succOf(kernel[k]!); if (!seeds.includes(x)) seeds.push(x); }
          }
          groups[nGroups] = c;
          groups[nGroups + 1] = stateOf(sortNumbers(seeds));
          nGroups += 2;
        }
        if (groups[g + 1]! >= 0) addEdge(c, groups[g + 1]!);
      }
      for (let g = 1; g < nGroups; g += 2) if (groups[g]! >= 0) succs.push(groups[g]!);
      for (let u = 0; u < nUsed; u++) { const c = usedBuf[u]!; for (let w = 0; w < W; w++) bits[c * W + w] = 0; } // (fill's call costs more for W = 1, the usual)
      nUsed = 0;
    }
    if (callSeeds[s]!.length === 0) rawCalls.push(NO_EDGES);
    else {
      const edges: [number, number, number][] = [];
      const cs = callSeeds[s]!;
      for (let i = 0; i < cs.length; i++) {
        const rule = cs[i]![0], rets = cs[i]![1];
        let start = startOf.get(rule);
        if (start === undefined) { start = stateOf(net.entries[rule]!); startOf.set(rule, start); }
        const ret = stateOf(rets);
        if (start >= 0 && ret >= 0) edges.push([rule, start, ret]);
      }
      rawCalls.push(edges);
    }
  }
  const n = kernels.length;
  succStart.push(succs.length);
  eAt.push(nE);

  const NO_PAIRS: (readonly [number, number])[] = [];
  const callPairs: (readonly [number, number])[][] = rawCalls.map((es) => (es === NO_EDGES ? NO_PAIRS : es.map(([, st, rt]) => [st, rt] as const))); // (edges have st, rt ≥ 0)
  const { prod, live: reach } = trimPda(n, initial, (s) => accepting[s] === 1,
    (s, f) => { for (let k = succStart[s]!; k < succStart[s + 1]!; k++) f(succs[k]!); }, (s) => callPairs[s]!);
  if (!prod[initial]) return emptyLanguage(cfg);
  const liveId = new Int32Array(n).fill(-1);
  let nLive = 0;
  for (let s = 0; s < n; s++) if (reach[s]) liveId[s] = nLive++;
  const ruleSeen = new Uint8Array(cfg.rules.length);
  for (let s = 0; s < n; s++) {
    if (!reach[s]) continue;
    const es = rawCalls[s]!;
    for (let i = 0; i < es.length; i++) if (prod[es[i]![1]] && prod[es[i]![2]]) ruleSeen[es[i]![0]] = 1;
  }
  const calledRules: number[] = [];
  for (let r = 0; r < ruleSeen.length; r++) if (ruleSeen[r]) calledRules.push(r);
  const callSym = new Map(calledRules.map((r, k) => [r, k] as const));
  const K = calledRules.length;
  // The live states' byte transitions, sparse as above (`lCls`/`lTo` from lAt[s]).
  const lAt = new Int32Array(nLive + 1);
  const lCls = new Int32Array(nE);
  const lTo = new Int32Array(nE);
  let nL = 0;
  const lAcc = new Uint8Array(nLive);
  // Per live state, its call edges (k, start, ret in live numbering; k the called rule's symbol),
  // k ascending: `lCalls` from lCallAt[s] (few states have any).
  const lCallAt = new Int32Array(nLive + 1);
  const lCalls: number[] = [];
  for (let s = 0; s < n; s++) {
    const id = liveId[s]!;
    if (id < 0) continue;
    lAcc[id] = accepting[s]!;
    for (let e = eAt[s]!; e < eAt[s + 1]!; e++) { const t = liveId[eTo[e]!]!; if (t >= 0) { lCls[nL] = eCls[e]!; lTo[nL++] = t; } }
    lAt[id + 1] = nL;
    const from = lCalls.length;
    const es = rawCalls[s]!;
    for (let i = 0; i < es.length; i++) {
      const r = es[i]![0], st = es[i]![1], rt = es[i]![2];
      if (!prod[st] || !prod[rt]) continue;
      const k = callSym.get(r)!;
      let at = lCalls.length;
      lCalls.push(0, 0, 0);
      for (; at > from && lCalls[at - 3]! > k; at -= 3) { lCalls[at] = lCalls[at - 3]!; lCalls[at + 1] = lCalls[at - 2]!; lCalls[at + 2] = lCalls[at - 1]!; }
      lCalls[at] = k;
      lCalls[at + 1] = liveId[st]!;
      lCalls[at + 2] = liveId[rt]!;
    }
    lCallAt[id + 1] = lCalls.length;
  }
  // Symbols: byte classes, then "call k returns to" and "call k enters" (so the canonical
  // breadth-first numbering reaches every machine's start state).
  const { blockOf, nBlocks } = minimize({
    nStates: nLive, nSyms: nClasses + 2 * K, initial: liveId[initial]!,
    edges: (s, f) => {
      for (let e = lAt[s]!; e < lAt[s + 1]!; e++) f(lCls[e]!, lTo[e]!);
      for (let i = lCallAt[s]!; i < lCallAt[s + 1]!; i += 3) f(nClasses + lCalls[i]!, lCalls[i + 2]!);
      for (let i = lCallAt[s]!; i < lCallAt[s + 1]!; i += 3) f(nClasses + K + lCalls[i]!, lCalls[i + 1]!);
    },
    key: (s) => lAcc[s]!,
  });
  const mTrans = new Int32Array(nBlocks * nClasses).fill(-1);
  const mAcc = new Uint8Array(nBlocks);
  const mCalls: (readonly [number, number])[][] = new Array(nBlocks); // (every block is some state's)
  const done = new Uint8Array(nBlocks);
  for (let s = 0; s < nLive; s++) {
    const b = blockOf[s]!;
    if (done[b]) continue;
    done[b] = 1;
    mAcc[b] = lAcc[s]!;
    for (let e = lAt[s]!; e < lAt[s + 1]!; e++) mTrans[b * nClasses + lCls[e]!] = blockOf[lTo[e]!]!;
    if (lCallAt[s] === lCallAt[s + 1]) { mCalls[b] = NO_PAIRS; continue; } // (most states call nothing)
    const list: [number, number][] = [];
    for (let i = lCallAt[s]!; i < lCallAt[s + 1]!; i += 3) list.push([blockOf[lCalls[i + 1]!]!, blockOf[lCalls[i + 2]!]!]);
    if (list.length > 1) list.sort((x, y) => x[0] - y[0] || x[1] - y[1]);
    mCalls[b] = list;
  }
  const dfa = mergeClasses({ nStates: nBlocks, nClasses, classMap, initial: blockOf[liveId[initial]!]!, trans: mTrans, accepting: mAcc });
  return { pda: { ...dfa, calls: mCalls }, rawStates: n, calledRules: calledRules.map((r) => cfg.rules[r]!.name) };
}

/**
 * Trimming a pushdown automaton: `prod`, the states that can finish their machine (end, or a byte
 * or env edge into a productive state, or a call whose start and return are both productive), and
 * `live`, those reachable from `initial` through productive edges (none when `initial` is not
 * productive). A worklist over reversed edges, linear: a call edge waits for both of its states.
 * `next(s, f)` calls f on each byte (and env) successor of s.
 */
export function trimPda(n: number, initial: number, accepting: (s: number) => boolean,
  next: (s: number, f: (t: number) => void) => void, calls: (s: number) => readonly (readonly [number, number])[]): { prod: Uint8Array; live: Uint8Array } {
  const prod = new Uint8Array(n);
  // Reversed byte edges and the call edges each state is waited on by, as CSR arrays: counted in
  // one pass over the edges, filled in a second (arrays of arrays were most of this function).
  const revAt = new Int32Array(n + 1);
  const watchAt = new Int32Array(n + 1);
  let nCalls = 0;
  let last = -1;
  const countEdge = (t: number) => { if (t !== last) { revAt[t + 1]!++; last = t; } };
  for (let s = 0; s < n; s++) {
    last = -1;
    next(s, countEdge);
    const cs = calls(s);
    for (let i = 0; i < cs.length; i++) {
      const st = cs[i]![0], rt = cs[i]![1];
      watchAt[st + 1]!++;
      if (rt !== st) watchAt[rt + 1]!++;
      nCalls++;
    }
  }
  for (let s = 0; s < n; s++) { revAt[s + 1]! += revAt[s]!; watchAt[s + 1]! += watchAt[s]!; }
  const rev = new Int32Array(revAt[n]!);
  const watch = new Int32Array(watchAt[n]!);
  const owner = new Int32Array(nCalls);
  const waiting = new Int32Array(nCalls);
  {
    const ra = revAt.slice(0, n), wa = watchAt.slice(0, n);
    let from = 0, e = 0;
    const noteEdge = (t: number) => { if (t !== last) { rev[ra[t]!++] = from; last = t; } };
    for (let s = 0; s < n; s++) {
      from = s;
      last = -1;
      next(s, noteEdge);
      const cs = calls(s);
      for (let i = 0; i < cs.length; i++) {
        const st = cs[i]![0], rt = cs[i]![1];
        owner[e] = s;
        waiting[e] = st === rt ? 1 : 2;
        watch[wa[st]!++] = e;
        if (rt !== st) watch[wa[rt]!++] = e;
        e++;
      }
    }
  }
  const work: number[] = [];
  const mark = (s: number) => { if (!prod[s]) { prod[s] = 1; work.push(s); } };
  for (let s = 0; s < n; s++) if (accepting(s)) mark(s);
  while (work.length) {
    const t = work.pop()!;
    for (let k = revAt[t]!; k < revAt[t + 1]!; k++) mark(rev[k]!);
    for (let k = watchAt[t]!; k < watchAt[t + 1]!; k++) { const e = watch[k]!; if (--waiting[e]! === 0) mark(owner[e]!); }
  }
  const live = new Uint8Array(n);
  if (!prod[initial]) return { prod, live };
  const queue = [initial];
  live[initial] = 1;
  const visit = (t: number) => { if (t >= 0 && prod[t] && !live[t]) { live[t] = 1; queue.push(t); } };
  while (queue.length) {
    const s = queue.pop()!;
    next(s, visit);
    const cs = calls(s);
    for (let i = 0; i < cs.length; i++) { const st = cs[i]![0], rt = cs[i]![1]; if (prod[st] && prod[rt]) { visit(st); visit(rt); } }
  }
  return { prod, live };
}

function emptyLanguage(cfg: Cfg): never {
  const start = cfg.rules[cfg.start];
  throw new SpecError("E0711", `the grammar has no sentence${start ? ` (start rule ${start.name})` : ""}`, start?.span ?? null,
    "every derivation from the start rule needs a rule that never finishes");
}

// ───────────────────────────── the reference runner ─────────────────────────────

type PdaShape = Pick<GrammarPda, "nStates" | "nClasses" | "trans" | "accepting" | "calls" | "env">;

/**
 * The least fixpoint of a per-state cost: 0 at an end state, else the cheapest of `byte(cost of
 * the target)` over byte edges and `call(cost of start, cost of ret)` over call edges; an env edge
 * (an agent's Yield state) costs what a byte edge does. Every state of a trimmed automaton gets a
 * finite value.
 */
function stateCosts(pda: PdaShape, byte: (t: number) => number, call: (start: number, ret: number) => number): Int32Array {
  const cost = new Int32Array(pda.nStates).fill(0x3fffffff);
  // Sweeps alternate direction, last state first (a sweep one way can take a pass per state of a
  // long chain; the runtime's computeNeed does the same).
  for (let changed = true, backward = true; changed; backward = !backward) {
    changed = false;
    for (let k = 0; k < pda.nStates; k++) {
      const q = backward ? pda.nStates - 1 - k : k;
      let best = pda.accepting[q] ? 0 : cost[q]!;
      for (let c = 0; c < pda.nClasses && best > 0; c++) {
        const t = pda.trans[q * pda.nClasses + c]!;
        if (t >= 0) best = Math.min(best, byte(cost[t]!));
      }
      for (const [st, rt] of pda.calls[q]!) best = Math.min(best, call(cost[st]!, cost[rt]!));
      const e = pda.env?.[q] ?? -1;
      if (e >= 0) best = Math.min(best, byte(cost[e]!));
      if (best < cost[q]!) { cost[q] = best; changed = true; }
    }
  }
  return cost;
}

/**
 * need(q) for every state (the file overview): the fewest frames above its own that state q's
 * machine must push to reach an end. A byte edge costs nothing; a call edge [start, ret] costs
 * max(1 + need(start), need(ret)).
 */
export function pdaNeed(pda: PdaShape): Int32Array {
  return stateCosts(pda, (t) => t, (st, rt) => Math.max(st + 1, rt));
}

/**
 * dist(q) for every state: the fewest bytes that finish state q's machine (a byte edge costs 1; a
 * call [start, ret] costs dist(start) + dist(ret)). A pair (q, frames) is then at
 * dist(q) + Σ dist(frame) bytes from acceptance — what `PdaRunner.finish` descends.
 */
export function pdaDist(pda: PdaShape): Int32Array {
  return stateCosts(pda, (t) => t + 1, (st, rt) => st + rt);
}

/** A compiled pushdown grammar's ByteDfa (tables) as the GrammarPda the runner takes. */
export function pdaOfByteDfa(d: { nStates: number; nClasses: number; classMap: Uint8Array; initial: number; trans: Int32Array; flags: Uint8Array; envNext?: Int32Array; calls?: (readonly [number, number])[][] }): GrammarPda {
  if (!d.calls) throw new Error("pdaOfByteDfa: the automaton has no call table (not a pushdown grammar)");
  const keep = Uint8Array.from(d.flags, (f) => (f & ByteFlag.Yield ? 1 : 0));
  return {
    nStates: d.nStates, nClasses: d.nClasses, classMap: d.classMap, initial: d.initial, trans: d.trans, accepting: Uint8Array.from(d.flags, (f) => f & 1), calls: d.calls,
    ...(keep.includes(1) ? { keep, env: d.envNext! } : {}),
  };
}

/** A configuration: closed set of pairs, `stacks[i]` bottom → top; `accept`: an end with an empty stack. */
export interface PdaConfig {
  states: number[];
  stacks: (readonly number[])[];
  accept: boolean;
}

/**
 * The pushdown semantics in plain TypeScript (the file overview): the oracle the runtime's
 * pushdown mode is tested against, and the engine of `check`/`replay` for grammars.
 */
export class PdaRunner {
  private readonly readsBytes: Uint8Array;
  private readonly need: Int32Array;
  constructor(readonly pda: GrammarPda, readonly maxStack = PDA_MAX_STACK, readonly maxPairs = PDA_MAX_PAIRS) {
    this.need = pdaNeed(pda);
    this.readsBytes = new Uint8Array(pda.nStates);
    for (let s = 0; s < pda.nStates; s++) {
      for (let c = 0; c < pda.nClasses; c++) if (pda.trans[s * pda.nClasses + c]! >= 0) { this.readsBytes[s] = 1; break; }
      if (pda.keep?.[s]) this.readsBytes[s] = 1;
    }
  }

  /** The configuration of state `q` with an empty stack (an agent's state after the environment's text). */
  at(q: number): PdaConfig | null {
    return this.close([[q, []]]);
  }

  start(): PdaConfig {
    const c = this.close([[this.pda.initial, []]]);
    if (!c) throw new Error("PdaRunner: the start configuration exceeds maxPairs");
    return c;
  }

  /** The configuration after `byte`, or null when no pair can read it. */
  step(c: PdaConfig, byte: number): PdaConfig | null {
    const { pda } = this;
    const cls = pda.classMap[byte]!;
    const seeds: [number, readonly number[]][] = [];
    for (let i = 0; i < c.states.length; i++) {
      const t = pda.trans[c.states[i]! * pda.nClasses + cls]!;
      if (t >= 0) seeds.push([t, c.stacks[i]!]);
    }
    if (seeds.length === 0) return null;
    const next = this.close(seeds);
    return !next || (next.states.length === 0 && !next.accept) ? null : next;
  }

  /** Runs `bytes` from `c` (default: the start); null at the first byte that is not allowed. */
  run(bytes: Uint8Array, c: PdaConfig | null = this.start()): PdaConfig | null {
    for (let i = 0; c && i < bytes.length; i++) c = this.step(c, bytes[i]!);
    return c;
  }

  accepts(bytes: Uint8Array): boolean {
    return this.run(bytes)?.accept === true;
  }

  /**
   * Bytes that complete `c` into a sentence, greedily along `pdaDist` (each byte brings the
   * nearest pair one byte closer, so this is a shortest completion); null if none is found within
   * `maxBytes` (the stack limit can, in principle, cut a completion's way). With `done`, the bytes
   * up to the first configuration it holds for on that way (an agent: up to the next marker).
   */
  finish(c: PdaConfig, maxBytes = 100_000, done: (c: PdaConfig) => boolean = (x) => x.accept): Uint8Array | null {
    const dist = (this.dist ??= pdaDist(this.pda));
    const d = (x: PdaConfig): number => {
      if (x.accept) return 0;
      let best = Infinity;
      for (let i = 0; i < x.states.length; i++) best = Math.min(best, dist[x.states[i]!]! + x.stacks[i]!.reduce((a, r) => a + dist[r]!, 0));
      return best;
    };
    const reps: number[] = [];
    const seenClass = new Set<number>();
    for (let b = 0; b < 256; b++) if (!seenClass.has(this.pda.classMap[b]!)) { seenClass.add(this.pda.classMap[b]!); reps.push(b); }
    const out: number[] = [];
    while (!done(c)) {
      if (out.length >= maxBytes) return null;
      let best: PdaConfig | null = null, bestByte = -1, bestD = Infinity;
      for (const b of reps) {
        const n = this.step(c, b);
        if (n && d(n) < bestD) { best = n; bestByte = b; bestD = d(n); }
      }
      if (!best) return null;
      out.push(bestByte);
      c = best;
    }
    return Uint8Array.from(out);
  }
  private dist: Int32Array | undefined;

  /** A canonical string for a configuration (equal sets of pairs, equal keys). */
  static key(c: PdaConfig): string {
    return (c.accept ? "A" : "") + c.states.map((s, i) => `${s}/${c.stacks[i]!.join(".")}`).join(" ");
  }

  /** The closure of `seeds`, or null when it visits more than maxPairs pairs. */
  private close(seeds: [number, readonly number[]][]): PdaConfig | null {
    const { pda } = this;
    const seen = new Set<string>();
    const out: [number, readonly number[]][] = [];
    let accept = false;
    const work = seeds.slice().reverse();
    while (work.length) {
      const [q, stack] = work.pop()!;
      if (stack.length + this.need[q]! > this.maxStack) continue; // cannot finish within the stack limit
      const key = `${q}/${stack.join(".")}`;
      if (seen.has(key)) continue;
      seen.add(key);
      if (seen.size > this.maxPairs) return null;
      if (this.readsBytes[q]) out.push([q, stack]);
      // Pushed in reverse so that the work list handles them in table order (deterministic).
      const more: [number, readonly number[]][] = [];
      // The return state must be able to finish at this level (checked once, when it is pushed).
      for (const [start, ret] of pda.calls[q]!) if (stack.length + this.need[ret]! <= this.maxStack) more.push([start, [...stack, ret]]);
      if (pda.accepting[q]) {
        if (stack.length === 0) accept = true;
        else more.push([stack[stack.length - 1]!, stack.slice(0, -1)]);
      }
      for (let i = more.length - 1; i >= 0; i--) work.push(more[i]!);
    }
    out.sort((a, b) => a[0] - b[0] || cmpStack(a[1], b[1]));
    return { states: out.map((p) => p[0]), stacks: out.map((p) => p[1]), accept };
  }
}

function cmpStack(a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}
