/**
 * @fileoverview Hopcroft's partition refinement, shared by the state-level and byte-level
 * automata (O(n·k·log n)). Two states end up in one block iff they have the same initial key
 * (their outputs: accepting, flags, ...) and, for every symbol, successors in the same block.
 * Missing transitions go to an implicit sink. The result is renumbered in breadth-first order from
 * the initial state so that equal languages give byte-identical tables.
 */
export interface MinimizeInput {
  nStates: number;
  nSyms: number;
  initial: number;
  /** Next state or -1 (read for every state and symbol unless `edges` is given). */
  next?(state: number, sym: number): number;
  /**
   * The transitions of `state`, symbols ascending: `f(sym, target)` for each. For automata with
   * many symbols and few transitions per state (a pushdown grammar's call symbols), it saves the
   * nStates × nSyms reads of `next`.
   */
  edges?(state: number, f: (sym: number, target: number) => void): void;
  /** States with different keys are never merged. */
  key(state: number): string | number;
}

/** Returns, for each state, its block number in canonical (BFS) order, and the block count. */
export function minimize(m: MinimizeInput): { blockOf: Int32Array; nBlocks: number } {
  const { nSyms } = m;
  const n = m.nStates + 1; // + sink
  const sink = m.nStates;
  // The transitions, by source then symbol (`outStart`, `outSym`, `outTo`); missing ones go to the
  // sink and are not listed: the sink's block is a singleton of its own (its key is unique), so it
  // never splits, and it is the one initial block Hopcroft may leave off the worklist (splitting
  // by all other blocks of a complete automaton implies splitting by it). Most transitions of a
  // sparse automaton go to the sink, so this skips most of the work.
  const outStart = new Int32Array(n + 1);
  let outSym = new Int32Array(Math.max(16, 2 * n));
  let outTo = new Int32Array(outSym.length);
  let nE = 0;
  const add = (a: number, t: number): void => {
    if (nE === outSym.length) {
      const s2 = new Int32Array(2 * nE), t2 = new Int32Array(2 * nE);
      s2.set(outSym);
      t2.set(outTo);
      outSym = s2;
      outTo = t2;
    }
    outSym[nE] = a;
    outTo[nE++] = t;
  };
  for (let s = 0; s < sink; s++) {
    outStart[s] = nE;
    if (m.edges) m.edges(s, add);
    else for (let a = 0; a < nSyms; a++) { const t = m.next!(s, a); if (t >= 0) add(a, t); }
  }
  outStart[sink] = outStart[n] = nE;
  // Inverse transitions: the edges into each state, grouped by target and, within a target, by
  // symbol (two stable counting sorts of the edge list, sources ascending).
  const bySym = new Int32Array(nSyms + 1);
  for (let e = 0; e < nE; e++) bySym[outSym[e]! + 1]!++;
  for (let a = 0; a < nSyms; a++) bySym[a + 1]! += bySym[a]!;
  const edgeS = new Int32Array(nE); // the edges' sources and targets by symbol, sources ascending within one
  const edgeT = new Int32Array(nE);
  {
    const at = bySym.slice();
    for (let st = 0; st < sink; st++) {
      for (let e = outStart[st]!; e < outStart[st + 1]!; e++) { const k = at[outSym[e]!]!++; edgeS[k] = st; edgeT[k] = outTo[e]!; }
    }
  }
  const byTarget = new Int32Array(n + 1);
  for (let e = 0; e < nE; e++) byTarget[edgeT[e]! + 1]!++;
  for (let t = 0; t < n; t++) byTarget[t + 1]! += byTarget[t]!;
  const inv = new Int32Array(nE); // sources by target, then symbol, then source
  const invSym = new Int32Array(nE);
  {
    const at = byTarget.slice();
    for (let a = 0; a < nSyms; a++) {
      for (let e = bySym[a]!; e < bySym[a + 1]!; e++) {
        const k = at[edgeT[e]!]!++;
        inv[k] = edgeS[e]!;
        invSym[k] = a;
      }
    }
  }
  // Per state, the symbols on which some transition enters it (`inSyms`, ascending) and where
  // their sources start in `inv` (`inFrom`; a group ends where the next begins).
  const inSymStart = new Int32Array(n + 1);
  let nIn = 0;
  for (let t = 0; t < n; t++) for (let k = byTarget[t]!; k < byTarget[t + 1]!; k++) if (k === byTarget[t] || invSym[k] !== invSym[k - 1]) nIn++;
  const inSyms = new Int32Array(nIn);
  const inFrom = new Int32Array(nIn + 1);
  nIn = 0;
  for (let t = 0; t < n; t++) {
    inSymStart[t] = nIn;
    for (let k = byTarget[t]!; k < byTarget[t + 1]!; k++) {
      if (k === byTarget[t] || invSym[k] !== invSym[k - 1]) { inSyms[nIn] = invSym[k]!; inFrom[nIn++] = k; }
    }
  }
  inSymStart[n] = nIn;
  inFrom[nIn] = nE;

  // Partition structure.
  const elems = new Int32Array(n);
  const loc = new Int32Array(n);
  const blk = new Int32Array(n);
  const bStart = new Int32Array(n + 1);
  const bEnd = new Int32Array(n + 1);
  const marked = new Int32Array(n + 1);
  let nB = 0;
  {
    const keyIds = new Map<string | number, number>();
    const keyOf = new Int32Array(n);
    for (let s = 0; s < n; s++) {
      const k = s === sink ? "\u0000sink" : m.key(s);
      let id = keyIds.get(k);
      if (id === undefined) { id = keyIds.size; keyIds.set(k, id); }
      keyOf[s] = id;
    }
    nB = keyIds.size;
    const counts = new Int32Array(nB + 1);
    for (let s = 0; s < n; s++) counts[keyOf[s]! + 1]!++;
    for (let b = 0; b < nB; b++) { bStart[b] = counts[b]!; counts[b + 1]! += counts[b]!; bEnd[b] = bStart[b]!; }
    for (let s = 0; s < n; s++) { const b = keyOf[s]!; blk[s] = b; loc[s] = bEnd[b]!; elems[bEnd[b]!++] = s; }
  }
  // A splitter (B, a) is queued only if some transition on `a` enters B (else it splits nothing):
  // most blocks of a sparse automaton are entered on one or two symbols, so this skips most of the
  // symbols per block. The symbols entering a block are gathered from its states (`entering`), at
  // a cost the split that made the block has already paid (each of its states was visited to make
  // it).
  const symSeen = new Int32Array(nSyms).fill(-1);
  let seenStamp = 0;
  const enteringA = new Int32Array(nSyms);
  const enteringB = new Int32Array(nSyms);
  /** The symbols entering block B, into `out`; returns how many. */
  const entering = (B: number, out: Int32Array): number => {
    const stamp = seenStamp++;
    let k = 0;
    for (let i = bStart[B]!; i < bEnd[B]!; i++) {
      const t = elems[i]!;
      for (let j = inSymStart[t]!; j < inSymStart[t + 1]!; j++) {
        const a = inSyms[j]!;
        if (symSeen[a] !== stamp) { symSeen[a] = stamp; out[k++] = a; }
      }
    }
    return k;
  };
  const inW = new Uint8Array((n + 1) * nSyms);
  const work: number[] = [];
  const sinkBlk = blk[sink]!;
  for (let b = 0; b < nB; b++) {
    if (b === sinkBlk) continue;
    const k = entering(b, enteringA);
    for (let i = 0; i < k; i++) { const w = b * nSyms + enteringA[i]!; inW[w] = 1; work.push(w); }
  }
  // Preallocated scratch (emptying a JS array with `length = 0` frees its storage every time).
  const touched = new Int32Array(n + 1);
  const splitter = new Int32Array(n);
  while (work.length) {
    const w = work.pop()!;
    inW[w] = 0;
    const A = (w / nSyms) | 0;
    const a = w % nSyms;
    let nSplit = 0, nTouched = 0;
    for (let i = bStart[A]!; i < bEnd[A]!; i++) splitter[nSplit++] = elems[i]!;
    for (let k = 0; k < nSplit; k++) {
      const t = splitter[k]!;
      let g = inSymStart[t]!;
      const gEnd = inSymStart[t + 1]!;
      // The group of symbol a (the symbols are ascending): by halves where a state is entered on
      // many (a string's character state, entered on most byte classes).
      for (let hi = gEnd; hi - g > 8;) { const mid = (g + hi) >>> 1; if (inSyms[mid]! < a) g = mid + 1; else hi = mid; }
      while (g < gEnd && inSyms[g]! < a) g++;
      if (g === gEnd || inSyms[g] !== a) continue;
      for (let j = inFrom[g]!; j < inFrom[g + 1]!; j++) {
        const s = inv[j]!;
        const b = blk[s]!;
        const pos = bStart[b]! + marked[b]!;
        if (loc[s]! < pos) continue; // already marked
        if (marked[b] === 0) touched[nTouched++] = b;
        const other = elems[pos]!;
        elems[loc[s]!] = other; loc[other] = loc[s]!;
        elems[pos] = s; loc[s] = pos;
        marked[b]!++;
      }
    }
    for (let k = 0; k < nTouched; k++) {
      const b = touched[k]!;
      const size = bEnd[b]! - bStart[b]!;
      if (marked[b] === size) { marked[b] = 0; continue; }
      const nb = nB++;
      bStart[nb] = bStart[b]!;
      bEnd[nb] = bStart[b]! + marked[b]!;
      bStart[b] = bEnd[nb]!;
      marked[b] = 0;
      for (let i = bStart[nb]!; i < bEnd[nb]!; i++) blk[elems[i]!] = nb;
      const smaller = bEnd[nb]! - bStart[nb]! <= bEnd[b]! - bStart[b]! ? nb : b;
      // Where (b, c) is queued, (nb, c) must be too; elsewhere the smaller half is enough.
      const kn = entering(nb, enteringA);
      for (let i = 0; i < kn; i++) {
        const c = enteringA[i]!;
        if (inW[b * nSyms + c]) { inW[nb * nSyms + c] = 1; work.push(nb * nSyms + c); }
      }
      const ks = smaller === nb ? kn : entering(b, enteringB);
      const syms = smaller === nb ? enteringA : enteringB;
      for (let i = 0; i < ks; i++) {
        const c = syms[i]!;
        if (!inW[b * nSyms + c] && !inW[smaller * nSyms + c]) { inW[smaller * nSyms + c] = 1; work.push(smaller * nSyms + c); }
      }
    }
  }
  // Canonical numbering: BFS from the initial state over symbols in order; the sink gets none.
  const order = new Int32Array(nB).fill(-1);
  let count = 0;
  const queue = [m.initial];
  order[blk[m.initial]!] = count++;
  const sinkBlock = blk[sink]!;
  for (let qi = 0; qi < queue.length; qi++) {
    const s = queue[qi]!;
    for (let e = outStart[s]!; e < outStart[s + 1]!; e++) {
      const t = outTo[e]!;
      const b = blk[t]!;
      if (b === sinkBlock || order[b] !== -1) continue;
      order[b] = count++;
      queue.push(t);
    }
  }
  const blockOf = new Int32Array(m.nStates);
  for (let s = 0; s < m.nStates; s++) blockOf[s] = order[blk[s]!]!;
  return { blockOf, nBlocks: count };
}

/** States reachable from `initial`, and states from which an accepting state is reachable. */
export function liveness(nStates: number, nSyms: number, initial: number,
  next: (s: number, a: number) => number, accepting: (s: number) => boolean): { reach: Uint8Array; coreach: Uint8Array } {
  const reach = new Uint8Array(nStates);
  const rev: number[][] = Array.from({ length: nStates }, () => []);
  const stack = [initial];
  reach[initial] = 1;
  while (stack.length) {
    const s = stack.pop()!;
    for (let a = 0; a < nSyms; a++) {
      const t = next(s, a);
      if (t < 0) continue;
      rev[t]!.push(s);
      if (!reach[t]) { reach[t] = 1; stack.push(t); }
    }
  }
  const coreach = new Uint8Array(nStates);
  for (let s = 0; s < nStates; s++) if (reach[s] && accepting(s)) { coreach[s] = 1; stack.push(s); }
  while (stack.length) {
    const t = stack.pop()!;
    for (const s of rev[t]!) if (!coreach[s]) { coreach[s] = 1; stack.push(s); }
  }
  return { reach, coreach };
}
