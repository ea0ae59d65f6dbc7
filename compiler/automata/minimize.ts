/**
 * @fileoverview Moore partition refinement, shared by the state-level and byte-level automata.
 * Two states end up in one block iff they have the same initial key (their outputs: accepting,
 * flags, ...) and, for every symbol, successors in the same block. The result is renumbered in
 * breadth-first order from the initial state so that equal languages give byte-identical tables.
 */
export interface MinimizeInput {
  nStates: number;
  nSyms: number;
  initial: number;
  /** Next state or -1. */
  next(state: number, sym: number): number;
  /** States with different keys are never merged. */
  key(state: number): string;
}

/** Returns, for each state, its block number in canonical (BFS) order, and the block count. */
export function minimize(m: MinimizeInput): { blockOf: Int32Array; nBlocks: number } {
  const { nStates, nSyms } = m;
  let block = new Int32Array(nStates);
  let nBlocks = 0;
  {
    const ids = new Map<string, number>();
    for (let s = 0; s < nStates; s++) {
      const k = m.key(s);
      let id = ids.get(k);
      if (id === undefined) { id = ids.size; ids.set(k, id); }
      block[s] = id;
    }
    nBlocks = ids.size;
  }
  const succ = new Int32Array(nStates * nSyms);
  for (let s = 0; s < nStates; s++) for (let a = 0; a < nSyms; a++) succ[s * nSyms + a] = m.next(s, a);
  for (;;) {
    const ids = new Map<string, number>();
    const nb = new Int32Array(nStates);
    const sig: number[] = new Array(nSyms + 1);
    for (let s = 0; s < nStates; s++) {
      sig[0] = block[s]!;
      for (let a = 0; a < nSyms; a++) {
        const t = succ[s * nSyms + a]!;
        sig[a + 1] = t < 0 ? -1 : block[t]!;
      }
      const k = sig.join(",");
      let id = ids.get(k);
      if (id === undefined) { id = ids.size; ids.set(k, id); }
      nb[s] = id;
    }
    const stable = ids.size === nBlocks;
    block = nb;
    nBlocks = ids.size;
    if (stable) break;
  }
  // Canonical numbering: BFS from the initial state over symbols in order.
  const order = new Int32Array(nBlocks).fill(-1);
  const rep = new Int32Array(nBlocks).fill(-1);
  for (let s = 0; s < nStates; s++) if (rep[block[s]!] === -1) rep[block[s]!] = s;
  let count = 0;
  const queue = [block[m.initial]!];
  order[queue[0]!] = count++;
  for (let qi = 0; qi < queue.length; qi++) {
    const s = rep[queue[qi]!]!;
    for (let a = 0; a < nSyms; a++) {
      const t = succ[s * nSyms + a]!;
      if (t < 0) continue;
      const b = block[t]!;
      if (order[b] === -1) { order[b] = count++; queue.push(b); }
    }
  }
  const blockOf = new Int32Array(nStates);
  for (let s = 0; s < nStates; s++) blockOf[s] = order[block[s]!]!;
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
