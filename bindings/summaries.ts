/**
 * @fileoverview Pushdown summaries kept from one spec for the next (docs/abi.md, "Summaries").
 *
 * A pushdown spec's mask at a stack top q starts from q's summary: a trie walk of ~10,000 nodes,
 * ~150 µs on Llama 3, computed the first time q is on top. It depends only on the automaton below
 * q (what q reaches through bytes, environment edges and calls) and on the vocabulary. JSON Schema
 * grammars call the same machines (a string, a number, whitespace) schema after schema, so the
 * summaries of one spec's states serve the same states of the next: `keep` reads them out of a spec
 * that is done (Spec.dispose), `install` writes them into a new one (Spec.load).
 *
 * A state's key is its called machine's shape, written out in a canonical breadth-first order over
 * bytes (not the spec's byte classes, which the rest of the grammar decides), and its place in that
 * order; the map holds the shape's hash, and a summary is installed only where the whole shape is
 * equal. Two states with one key have the same automaton below them. A machine with a state of
 * more than one call edge has no canonical order here, and one that reaches more than 256 states
 * (2,048 if it calls none) is rarely shared: they get no key (their states are not kept). The
 * cache holds 512 summaries a vocabulary; once full, what a new spec computes replaces entries
 * that no spec installed lately (`keepSummaries`).
 */
import type { ByteDfa } from "../compiler/ir.js";

export interface Summary {
  /** The machine's whole shape, compared on use (the key holds only its hash). */
  machine: string;
  /** The base mask (mask words) and the frontier (u32 n, then n trie nodes). */
  mask: Int32Array;
  front: Uint32Array;
  deepest: number;
  pairs: number;
  /** Installed in a spec since the cache last looked for entries to let go (`keepSummaries`). */
  used: boolean;
}

/** The runtime exports this file uses (absent in runtimes before them). */
interface SummaryExports {
  memory: WebAssembly.Memory;
  mask_words(): number;
  out_ptr(bytes: number): number;
  sym_get?(q: number, k: number): number;
  sym_install?(q: number, src: number, deepest: number, pairs: number): number;
}

/** At most this many summaries a vocabulary (16 KB each on a 128k vocabulary). */
export const MAX_KEPT = 512;
/** At most this many new summaries from one spec (the others stay for what later specs bring). */
const MAX_NEW = MAX_KEPT / 4;
/**
 * Machines that reach more states than this get no key (rarely shared, and costly to write out:
 * each machine that calls another walks the callee's states again).
 */
const MAX_MACHINE = 256;
/**
 * The same for a machine that calls none (it is walked once): a long string's 64-character blocks
 * (`char{64}`, ~450 states with escapes), which every long string of every schema calls.
 */
const MAX_LEAF_MACHINE = 2048;

/** Per state: its key (the machine's hash and the state's place), and the machine's whole shape. */
export interface SummaryKeys {
  keys: (string | undefined)[];
  /** State q's machine's whole shape, written out on the first ask (undefined: q has no key). */
  machine(q: number): string | undefined;
}

/**
 * Per state, its key, or undefined (not in a called machine, or no canonical order). A machine's
 * shape is hashed as it is walked (two 32-bit lanes over the numbers it is written with) and
 * written out only where a cache asks (`machine`): joining every called machine's shape into a
 * string at every load was ~5 ms of a large schema's.
 */
export function summaryKeys(dfa: ByteDfa): SummaryKeys {
  const { nStates: n, nClasses: nc, classMap, trans, flags, envNext } = dfa;
  const calls = dfa.calls ?? [];
  const keys: (string | undefined)[] = new Array(n);
  // The byte row of a state is read as runs of the class map (bytes of one class side by side):
  // the same runs of targets as byte by byte, a few dozen lookups instead of 256.
  const runs: number[] = [];
  for (let b = 0; b < 256; b++) if (b === 0 || classMap[b] !== classMap[b - 1]) runs.push(b);
  const runStarts = Int32Array.from(runs);
  const runClass = runStarts.map((b) => classMap[b]!);
  // The called machines' start states, each once.
  const starts: number[] = [];
  {
    const isStart = new Uint8Array(n);
    for (let q = 0; q < calls.length; q++) {
      const cs = calls[q];
      if (cs === undefined) continue;
      for (let i = 0; i < cs.length; i++) { const st = cs[i]![0]; if (!isStart[st]) { isStart[st] = 1; starts.push(st); } }
    }
  }
  // Breadth-first from s: a state's targets have their canonical index (`idx`, -1: not reached) as
  // soon as they are visited. Each number of the shape goes to `put` (the hash, or the shape
  // written out). Returns the states in canonical order, or undefined: no key.
  const idx = new Int32Array(n).fill(-1);
  // A state's byte row, once read: (first byte, target) where the target changes (`rowPool` from
  // rowAt[q], rowLen[q] numbers; rowAt -1: not read yet). The walks of machines that call others
  // cover their callees' states again, and most rows have one or two targets: reading each row's
  // runs once, not once per walk through it, was most of this function on large schemas.
  const rowAt = new Int32Array(n).fill(-1);
  const rowLen = new Int32Array(n);
  let rowPool = new Int32Array(1024);
  let rowUsed = 0;
  const readRow = (q: number): void => {
    const row = q * nc;
    let prev = -3;
    const at = rowUsed;
    for (let r = 0; r < runStarts.length; r++) {
      const t = trans[row + runClass[r]!]!;
      if (t === prev) continue;
      if (rowUsed + 2 > rowPool.length) { const p2 = new Int32Array(2 * rowPool.length); p2.set(rowPool); rowPool = p2; }
      rowPool[rowUsed++] = runStarts[r]!;
      rowPool[rowUsed++] = t;
      prev = t;
    }
    rowAt[q] = at;
    rowLen[q] = rowUsed - at;
  };
  const walk = (s: number, put: (x: number) => void): number[] | undefined => {
    const order = [s];
    idx[s] = 0;
    const visit = (t: number): number => {
      if (t < 0) return -1;
      if (idx[t] === -1) { idx[t] = order.length; order.push(t); }
      return idx[t]!;
    };
    let ok = true;
    let most = MAX_LEAF_MACHINE;
    for (let i = 0; i < order.length && ok; i++) {
      const q = order[i]!;
      const cs = calls[q];
      if (cs !== undefined && cs.length > 0) most = MAX_MACHINE;
      if (order.length > most || (cs !== undefined && cs.length > 1)) { ok = false; break; }
      put(-1); put(flags[q]!);
      // The byte row as runs: (first byte, target) where the target changes (the canonical
      // index changes exactly where the state does).
      if (rowAt[q]! < 0) readRow(q);
      for (let k = rowAt[q]!, end = k + rowLen[q]!; k < end; k += 2) { put(rowPool[k]!); put(visit(rowPool[k + 1]!)); }
      put(-2); put(visit(envNext[q]!));
      if (cs !== undefined && cs.length === 1) { put(-3); put(visit(cs[0]![0])); put(visit(cs[0]![1])); }
    }
    for (const q of order) idx[q] = -1;
    return ok ? order : undefined;
  };
  let ha = 0, hb = 0;
  const hashIn = (x: number): void => {
    ha = Math.imul(ha ^ x, 0x01000193);
    hb = Math.imul(hb ^ x, 0x5bd1e995) ^ (hb >>> 15);
  };
  const machines: { start: number; order: number[]; key: string }[] = [];
  for (const s of starts) {
    ha = 0x811c9dc5;
    hb = 0x01000193;
    const order = walk(s, hashIn);
    if (order !== undefined) machines.push({ start: s, order, key: `${(ha >>> 0).toString(36)}.${(hb >>> 0).toString(36)}.${order.length.toString(36)}` });
  }
  // Smallest machines first, so that a machine's states take its own key, not a caller's.
  machines.sort((a, b) => a.order.length - b.order.length);
  const machineOf = new Int32Array(n).fill(-1);
  machines.forEach(({ order, key }, m) => {
    for (let i = 0; i < order.length; i++) {
      const q = order[i]!;
      if (keys[q] === undefined) { keys[q] = `${key}#${i}`; machineOf[q] = m; }
    }
  });
  const shapes: string[] = [];
  const machine = (q: number): string | undefined => {
    const m = q >= 0 && q < n ? machineOf[q]! : -1;
    if (m < 0) return undefined;
    if (shapes[m] === undefined) {
      const parts: number[] = [];
      walk(machines[m]!.start, (x) => parts.push(x));
      shapes[m] = parts.join(",");
    }
    return shapes[m];
  };
  return { keys, machine };
}

/** Gives each keyed state whose summary the cache has that summary. Returns how many it installed. */
export function installSummaries(ex: SummaryExports, { keys, machine }: SummaryKeys, cache: Map<string, Summary>): number {
  if (!ex.sym_install || cache.size === 0) return 0;
  const words = ex.mask_words();
  let installed = 0;
  // The last cached shape found equal to this spec's (entries of one machine kept from one spec
  // share their shape string: one comparison, not one per state).
  let sameCached: string | undefined;
  let sameShape: string | undefined;
  for (let q = 0; q < keys.length; q++) {
    const k = keys[q];
    const s = k === undefined ? undefined : cache.get(k);
    if (!s || s.mask.length !== words) continue;
    // The whole shape compared: a hash that collides installs nothing.
    const shape = machine(q)!;
    if (s.machine !== sameCached || shape !== sameShape) { // the same string objects: no content compared
      if (s.machine !== shape) continue;
      sameCached = s.machine;
      sameShape = shape;
    }
    const src = ex.out_ptr(4 * words + 4 * s.front.length);
    const buf = ex.memory.buffer;
    new Int32Array(buf, src, words).set(s.mask);
    new Uint32Array(buf, src + 4 * words, s.front.length).set(s.front);
    if (ex.sym_install(q, src, s.deepest, s.pairs) === 0) {
      installed++;
      s.used = true;
    }
  }
  return installed;
}

/**
 * Copies the summaries a spec computed for its keyed states into the cache: at most MAX_NEW of
 * them, and while it is full, in place of entries no spec installed since the last such look
 * (a clock: an installed entry is passed over once, and goes the next time unless installed again
 * meanwhile). So the machines every spec calls (whitespace, numbers, strings, a long string's
 * blocks) stay, and the cache does not stop taking summaries once full.
 */
export function keepSummaries(ex: SummaryExports, keysOf: () => SummaryKeys, cache: Map<string, Summary>): void {
  if (!ex.sym_get) return;
  const { keys, machine } = keysOf();
  const fresh: number[] = [];
  for (let q = 0; q < keys.length && fresh.length < MAX_NEW; q++) {
    const k = keys[q];
    if (k !== undefined && !cache.has(k) && ex.sym_get(q, 0) !== 0) fresh.push(q);
  }
  const words = ex.mask_words();
  const spare: Int32Array[] = [];
  let over = cache.size + fresh.length - MAX_KEPT;
  for (let pass = 0; pass < 2 && over > 0; pass++) {
    for (const [k, s] of [...cache]) {
      if (over <= 0) break;
      cache.delete(k);
      if (s.used) {
        s.used = false;
        cache.set(k, s); // to the back
      } else {
        over--;
        if (s.mask.length === words) spare.push(s.mask);
      }
    }
  }
  for (const q of fresh) {
    if (cache.size >= MAX_KEPT) break;
    const base = ex.sym_get(q, 0);
    const buf = ex.memory.buffer;
    const f = ex.sym_get(q, 1);
    const n = new Uint32Array(buf, f, 1)[0]!;
    const mask = spare.pop() ?? new Int32Array(words);
    mask.set(new Int32Array(buf, base, words));
    cache.set(keys[q]!, {
      machine: machine(q)!,
      mask,
      front: new Uint32Array(buf, f, n + 1).slice(),
      deepest: ex.sym_get(q, 2),
      pairs: ex.sym_get(q, 3),
      used: false,
    });
  }
}
