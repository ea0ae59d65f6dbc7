/**
 * @fileoverview A context-free grammar (cfg.ts) compiled into a byte-level DFA by BOUNDED-STACK
 * expansion, so that grammar-constrained text runs on the same DFA runtime as agent specs.
 *
 * Why a DFA and not a pushdown automaton at run time. The runtime's masks depend only on the DFA
 * state, so each is computed once (a trie walk on the first visit) and then served from a cache
 * shared by all states with the same mask; a PDA's mask depends on the stack, so wherever it does
 * it has to be recomputed (or looked up per stack) at run time, token after token. Measured on
 * Llama 3 (128,256 tokens), Node 20, replaying transcripts token by token (the method of
 * bench/mask.bench.ts; script and output in the report of this change):
 *
 *   content                                DFA states   warm fillMask     first visit   precompute
 *                                                       p50 / p99         p50 / max     (distinct)
 *   arithmetic in react-calculator.agent      221       0.22 / 0.60 µs    19 µs / 2 ms  123 ms (84)
 *   JSON object in tool-json.agent (depth 2)  479       0.20 / 0.37 µs   1.2 ms / 2 ms  348 ms (126)
 *   json.gbnf standalone (depth 8)          10,593      0.28 / 1.11 µs     9 µs / 10 ms 632 ms (121)
 *
 * i.e. ~100× under the 50 µs budget of DESIGN.md §5 for grammar content, the same warm cost as a
 * plain agent spec. The price is that nesting is bounded, since a DFA cannot count. Size and build
 * time of this expansion (subset states before → after trimming and minimization):
 *
 *   maxDepth            4                      8                        12
 *   arithmetic.gbnf     41 → 25 states, <1 ms  73 → 45 states, ~5 ms    105 → 65 states, ~4 ms
 *   json.gbnf           753 → 633, ~10 ms      12,513 → 10,593, ~240 ms 200,673 → 169,953, ~4.5 s
 *   openagi.gbnf        107,513 → 23,891, 1 s  (over the 100,000-state limit)
 *
 * Arithmetic has one kind of nesting (parentheses), so it grows linearly; JSON remembers at every
 * level whether it closes with } or ], so it doubles per level (2^N is the minimum for any DFA);
 * OpenAGI's tools take one or two arguments of two types, so it grows ~4× per level. JSON at depth
 * 12 no longer fits the runtime's tables (u16 state numbers), and inside an agent spec the content
 * states are multiplied by the marker prefixes that may be pending inside strings: tool-json.agent
 * has 479 byte states at depth 2, 1,679 at 4, 6,479 at 6, and exceeds maxByteStates at 8 — which is
 * why a state can lower its own bound, (:grammar "json.gbnf" :max-depth 2).
 *
 * What is exact and what is not. A sentence's NESTING DEPTH is the largest number of pending
 * *recursive* calls in its derivation (defined below). For every sentence of depth ≤ maxDepth
 * (default 8) the DFA is exact: the sentence is accepted and every prefix of it is live. It is
 * always SOUND: every string the DFA accepts is a sentence of the grammar, and every prefix it
 * keeps alive (a mask offers) can still be completed into one. Deeper nesting is simply never
 * offered by the masks; `depthLimited` says whether the bound cut anything.
 *
 * Which calls count. The grammar is read as a recursive transition network: a position is the
 * rest of an alternative (a suffix of symbols; equal suffixes of different rules are one position,
 * which keeps the stacks of `x*` helpers and the like identical), a configuration is (stack of
 * return positions, position). A call in TAIL position (the last symbol of its alternative) pushes
 * nothing: it is a jump. Since lowering turns `*`, `+` and `{m,}` into right-recursive helpers
 * (`h ::= S h | ε`), repetition is a loop and unbounded — a list of 500 items needs no stack. Only a
 * call followed by more symbols pushes a return position. Of those, only calls on RECURSION CUTS
 * count against maxDepth; the others are bounded anyway, because every cycle of the call graph
 * that contains a non-tail call contains a cut:
 *   - a depth-first search of the call graph from the start rule closes each recursion with a back
 *     edge; the cut of that cycle is its LAST non-tail call (the back edge itself when it is not a
 *     tail call), i.e. the call that opens the nested construct: `expr` inside `"(" expr ")"`, a
 *     JSON `value` inside an array or an object;
 *   - then, while the call graph without the cuts still has a cycle through a non-tail call, the
 *     non-tail call of that cycle into the rule discovered first is cut as well (a safety net for
 *     recursion the depth-first search reaches through cross edges).
 * So for `factor ::= "(" expr ")" | …` the depth is the parenthesis nesting, and for JSON it is the
 * number of arrays and objects around the innermost value (`{"a": [1]}` has depth 2, `[]` depth 0).
 * With maxDepth N the stack holds at most N cut frames and, between two of them, at most one frame
 * per strongly connected component of the rest: the configurations are finite.
 *
 * Construction: byte classes from the boundaries of all byte sets (bytes in exactly the same sets
 * share a class); subset construction over the classes with ε-closure through calls (push),
 * tail calls (jump) and rule ends (pop; accept at the empty stack); states that cannot reach
 * acceptance (e.g. after an opening bracket at depth N) are trimmed, so the DFA has no dead ends;
 * then Hopcroft minimization (automata/minimize.ts) with canonical numbering, and classes with
 * identical columns merged. Limit: `maxStates` subset states (default 100,000) → SpecLimitError
 * `maxGrammarStates`, whose hint suggests a smaller --max-depth.
 */
import { componentsOf } from "./analyze.js";
import { IdTable } from "./id-table.js";
import { SpecError, SpecLimitError } from "../diagnostics.js";
import { liveness, minimize } from "../automata/minimize.js";
import type { ByteSym, Cfg } from "./cfg.js";
import { sortNumbers } from "./small-sort.js";

export const DEFAULT_MAX_DEPTH = 8;
export const DEFAULT_MAX_GRAMMAR_STATES = 100_000;
/** Configurations in all subset states together: a memory guard next to maxStates. */
const MAX_CONFIGS = 20_000_000;

/**
 * Most items all ε-closures of one compilation may visit (DFA and pushdown alike). The subset
 * construction's cost is the sum of its closures, which a small grammar can make astronomical
 * (nested bounded repetitions of a nullable body: every level's positions multiply); this refuses
 * such a grammar within a second or so instead of exhausting the heap. Every example needs under
 * 300,000 (openagi.gbnf is the largest), so the limit leaves a factor of 10.
 */
export const MAX_CLOSURE_WORK = 3_000_000;

/** The closure work left to one compilation (see MAX_CLOSURE_WORK). */
export interface ClosureBudget { left: number; maxDepth: number; name?: string }

export interface GrammarDfaOptions {
  /** Most pending recursive calls (see the file overview); default 8. */
  maxDepth?: number;
  /** Most subset states built before minimization; default 100,000. */
  maxStates?: number;
  /** Names the grammar in limit errors (a file name). */
  name?: string;
}

/** A byte DFA: `trans[s * nClasses + classMap[b]]` is the next state or -1. Every state is live. */
export interface GrammarDfa {
  nStates: number;
  nClasses: number;
  classMap: Uint8Array;
  initial: number;
  trans: Int32Array;
  accepting: Uint8Array;
}

export interface GrammarDfaResult {
  dfa: GrammarDfa;
  /** True when some configuration needed more than maxDepth recursive calls (and was dropped). */
  depthLimited: boolean;
  maxDepth: number;
  /** Subset states before trimming and minimization. */
  rawStates: number;
}

/** A limit of the grammar → DFA expansion (the hint points at --max-depth) or of the pushdown compilation (maxDepth = Infinity). */
export class GrammarLimitError extends SpecLimitError {
  override readonly hint: string;
  constructor(limit: string, value: number, max: number, maxDepth: number, name?: string) {
    super(limit, value, max, null);
    this.name = "GrammarLimitError";
    const what = `${limit === "maxGrammarStates" ? "states" : limit === "maxClosureWork" ? "closure steps" : "configurations"} (${limit})`;
    if (limit === "maxClosureWork") {
      this.message = `limit exceeded: building the automaton of grammar ${name ?? "(inline)"} would take more than ${max} ${what}`;
      this.hint = "nested repetitions of something that may be empty multiply the work (e.g. ((\"a\"?){0,99}){0,99}): write the repetition once (\"a\"{0,99}), or bound it lower";
      return;
    }
    if (maxDepth === Infinity) {
      // The pushdown compilation (pda.ts): no depth to lower.
      this.message = `limit exceeded: the pushdown automaton of grammar ${name ?? "(inline)"} would need more than ${max} ${what}`;
      this.hint = "raise --max-grammar-states, or simplify the grammar";
      return;
    }
    this.message = `limit exceeded: the DFA of grammar ${name ?? "(inline)"} at nesting depth ${maxDepth} would need more than ${max} ${what}`;
    this.hint = `lower --max-depth (now ${maxDepth}; nested constructs multiply the states, e.g. JSON doubles them per level)` +
      (limit === "maxGrammarStates" ? ", or raise --max-grammar-states" : "");
  }
}

// ───────────────────────────── call graph and recursion cuts ─────────────────────────────

/** One occurrence of a rule symbol in an alternative (`callSites`: the object view of `CallGraph`). */
export interface CallSite {
  from: number;
  to: number;
  alt: number;
  /** The last symbol of its alternative: a jump, pushes nothing. */
  tail: boolean;
  /** A recursion cut: counts against maxDepth. */
  cut: boolean;
}

/**
 * The call sites, numbered in grammar order, as parallel arrays: rule r's sites are `start[r]` …
 * `start[r + 1] - 1`. (An object per site was a third of callGraph's time on the largest MaskBench
 * grammars, tens of thousands of sites, most of it the collector's.)
 */
export interface CallGraph {
  start: Int32Array;
  from: Int32Array;
  to: Int32Array;
  alt: Int32Array;
  /** 1: the last symbol of its alternative (a jump, pushes nothing). */
  tail: Uint8Array;
  /** 1: a recursion cut (counts against maxDepth). */
  cut: Uint8Array;
}

/** The sites of a call graph as objects, in grammar order (the rule graph's drawing, tests). */
export function callSites(g: CallGraph): CallSite[] {
  return Array.from(g.from, (from, i) => ({ from, to: g.to[i]!, alt: g.alt[i]!, tail: g.tail[i] === 1, cut: g.cut[i] === 1 }));
}

/**
 * The call sites of every rule, in grammar order, with the recursion cuts chosen (file overview).
 * Calls of the rules in `called` are cut too: the pushdown compilation then enters them by a call,
 * so their machine exists once instead of once per place they are used. That includes tail calls
 * (the return state only ends its machine: one frame more, popped at once), except where the
 * called rule can reach the caller again, whose tail recursion stays a loop.
 */
export function callGraph(cfg: Cfg, called: ReadonlySet<number> = new Set()): CallGraph {
  const R = cfg.rules.length;
  let N = 0;
  for (const r of cfg.rules) for (const alt of r.alts) for (const s of alt) if (s.kind === "rule") N++;
  const start = new Int32Array(R + 1);
  const from = new Int32Array(N), to = new Int32Array(N), alt = new Int32Array(N);
  const tail = new Uint8Array(N), cut = new Uint8Array(N);
  let e = 0;
  for (let r = 0; r < R; r++) {
    start[r] = e;
    const alts = cfg.rules[r]!.alts;
    for (let a = 0; a < alts.length; a++) {
      const syms = alts[a]!;
      for (let d = 0; d < syms.length; d++) {
        const s = syms[d]!;
        if (s.kind !== "rule") continue;
        from[e] = r; to[e] = s.rule; alt[e] = a; tail[e] = d === syms.length - 1 ? 1 : 0;
        e++;
      }
    }
  }
  start[R] = N;
  // A called rule's tail call stays a loop where the rule reaches the caller again: the site is an
  // edge caller → rule, so that is the two being in one strongly connected component.
  const siteGraph = (keep: (e: number) => boolean): { start: Int32Array; to: Int32Array } => {
    const gStart = new Int32Array(R + 1);
    for (let e = 0; e < N; e++) if (keep(e)) gStart[from[e]! + 1]!++;
    for (let v = 0; v < R; v++) gStart[v + 1]! += gStart[v]!;
    const gTo = new Int32Array(gStart[R]!);
    const at = gStart.slice(0, R);
    for (let e = 0; e < N; e++) if (keep(e)) gTo[at[from[e]!]!++] = to[e]!; // sites are in rule order
    return { start: gStart, to: gTo };
  };
  if (called.size > 0) {
    const all = siteGraph(() => true);
    const { comp } = componentsOf(R, all.start, all.to);
    for (let e = 0; e < N; e++) cut[e] = called.has(to[e]!) && (!tail[e] || comp[to[e]!] !== comp[from[e]!]) ? 1 : 0;
  }
  // Depth-first search from the start rule (then any rule not reached, for completeness).
  const disc = new Int32Array(R).fill(-1);
  const onStack = new Uint8Array(R);
  const parentSite = new Int32Array(R).fill(-1);
  const workV = new Int32Array(R), workI = new Int32Array(R);
  let counter = 0;
  for (let k = -1; k < R; k++) {
    const root = k < 0 ? cfg.start : k;
    if (disc[root] !== -1) continue;
    let top = 0;
    workV[0] = root; workI[0] = start[root]!;
    disc[root] = counter++;
    onStack[root] = 1;
    while (top >= 0) {
      const v = workV[top]!;
      if (workI[top]! >= start[v + 1]!) { onStack[v] = 0; top--; continue; }
      const e = workI[top]!++;
      const w = to[e]!;
      if (disc[w] === -1) {
        disc[w] = counter++;
        onStack[w] = 1;
        parentSite[w] = e;
        top++;
        workV[top] = w; workI[top] = start[w]!;
      } else if (onStack[w]) {
        // Back edge: cut the cycle w → … → v → w at its last non-tail call.
        if (!tail[e]) { cut[e] = 1; continue; }
        for (let u = v; u !== w; ) {
          const pe = parentSite[u]!;
          if (!tail[pe]) { cut[pe] = 1; break; }
          u = from[pe]!;
        }
      }
    }
  }
  // Safety net: no cycle through an uncut non-tail call may remain. Per component (its rules in
  // ascending order), the uncut non-tail call inside it to the earliest discovered rule is cut.
  for (;;) {
    const g = siteGraph((e) => !cut[e]);
    const { comp: compOf, count } = componentsOf(R, g.start, g.to);
    const best = new Int32Array(count).fill(-1);
    for (let e = 0; e < N; e++) {
      const c = compOf[from[e]!]!;
      if (cut[e] || tail[e] || compOf[to[e]!] !== c) continue;
      const b = best[c]!;
      if (b < 0 || disc[to[e]!]! < disc[to[b]!]!) best[c] = e;
    }
    let added = false;
    for (let c = 0; c < count; c++) if (best[c]! >= 0) { cut[best[c]!] = 1; added = true; }
    if (!added) break;
  }
  return { start, from, to, alt, tail, cut };
}


// ───────────────────────────── the transition network ─────────────────────────────

export const END = 0;
export const K_END = 0;
export const K_BYTES = 1;
export const K_CALL = 2;

/** The grammar as a recursive transition network (shared with the pushdown compilation, pda.ts). */
export interface Network {
  /** Per position: kind, argument (byte-set id or rule), next position, cut flag. */
  kind: number[];
  arg: number[];
  next: number[];
  cut: number[];
  /** Entry positions of each rule (one per distinct alternative). */
  entries: number[][];
  byteSets: ByteSym[];
  /** Per byte: the byte sets that contain it. */
}

export function buildNetwork(cfg: Cfg, called?: ReadonlySet<number>): Network {
  const sites = callGraph(cfg, called);
  const net: Network = { kind: [K_END], arg: [0], next: [0], cut: [0], entries: [], byteSets: [] };
  const setIds = new Map<string | number, number>();
  // Positions are interned by their own fields (id-table.ts; END, position 0, never is).
  const posIds = new IdTable();
  let qKind = 0, qArg = 0, qNext = 0, qCut = 0;
  const samePos = (id: number): boolean => net.arg[id] === qArg && net.next[id] === qNext && net.kind[id] === qKind && net.cut[id] === qCut;
  const intern = (kind: number, arg: number, next: number, cut: number): number => {
    qKind = kind; qArg = arg; qNext = next; qCut = cut;
    const h = Math.imul(arg, 0x9e3779b1) ^ Math.imul(next, 0x85ebca6b) ^ (kind * 2 + cut);
    let id = posIds.find(h, samePos);
    if (id < 0) {
      id = net.kind.length;
      net.kind.push(kind); net.arg.push(arg); net.next.push(next); net.cut.push(cut);
      posIds.add(h, id);
    }
    return id;
  };
  // A byte symbol met before (the lowering shares one object per byte value and per class) has
  // its set's id without a key written for it.
  const setOfSym = new Map<object, number>();
  for (let ri = 0; ri < cfg.rules.length; ri++) {
    const r = cfg.rules[ri]!;
    let k = sites.start[ri]!;
    const kEnd = sites.start[ri + 1]!;
    // Distinct entry positions in order (a Set only for a rule of many alternatives).
    const entries: number[] = [];
    const entrySet = r.alts.length > 16 ? new Set<number>() : undefined;
    for (let a = 0; a < r.alts.length; a++) {
      const alt = r.alts[a]!;
      // This alternative's call sites, one per rule symbol in order: read from the last one back.
      while (k < kEnd && sites.alt[k] === a) k++;
      let j = k - 1;
      let p = END;
      for (let d = alt.length - 1; d >= 0; d--) {
        const s = alt[d]!;
        if (s.kind === "rule") p = intern(K_CALL, s.rule, p, sites.cut[j--]!);
        else {
          if (s.ranges.length === 0) { p = -1; break; } // matches nothing: drop the alternative
          let id = setOfSym.get(s);
          if (id === undefined) {
            // One range (a literal's byte, most of them): its bounds as a number.
            const key = s.ranges.length === 1 ? s.ranges[0]![0] * 256 + s.ranges[0]![1] : s.ranges.map(([lo, hi]) => `${lo}-${hi}`).join(",");
            id = setIds.get(key);
            if (id === undefined) { id = net.byteSets.length; setIds.set(key, id); net.byteSets.push(s); }
            setOfSym.set(s, id);
          }
          p = intern(K_BYTES, id, p, 0);
        }
      }
      if (p < 0) continue;
      if (entrySet ? !entrySet.has(p) : !entries.includes(p)) { entries.push(p); entrySet?.add(p); }
    }
    net.entries.push(entries);
  }
  return net;
}

/** Byte classes: bytes contained in exactly the same byte sets share a class. */
function byteClasses(sets: readonly ByteSym[]): { classMap: Uint8Array; nClasses: number; reps: number[] } {
  const member: number[][] = Array.from({ length: 256 }, () => []);
  sets.forEach((s, i) => { for (const [lo, hi] of s.ranges) for (let b = lo; b <= hi; b++) member[b]!.push(i); });
  const classMap = new Uint8Array(256);
  const ids = new Map<string, number>();
  const reps: number[] = [];
  for (let b = 0; b < 256; b++) {
    const key = member[b]!.join(",");
    let c = ids.get(key);
    if (c === undefined) { c = reps.length; ids.set(key, c); reps.push(b); }
    classMap[b] = c;
  }
  return { classMap, nClasses: reps.length, reps };
}

/**
 * The byte classes of a network and `setClass[s * nClasses + c]`: byte set s (`net.byteSets`,
 * interned, so far fewer than positions) holds class c; byte position p reads the classes of set
 * `net.arg[p]` (shared by the bounded expansion below and the pushdown compilation, pda.ts).
 */
export function setClasses(net: Network): { classMap: Uint8Array; nClasses: number; setClass: Uint8Array } {
  const { classMap, nClasses, reps } = byteClasses(net.byteSets);
  const setClass = new Uint8Array(net.byteSets.length * nClasses);
  // (Indexed loops: a callback with a destructured range per set and class was a tenth of what
  // the pushdown compilation allocated on big schemas.)
  for (let i = 0; i < net.byteSets.length; i++) {
    const ranges = net.byteSets[i]!.ranges;
    for (let c = 0; c < nClasses; c++) {
      const b = reps[c]!;
      for (let k = 0; k < ranges.length; k++) if (b >= ranges[k]![0] && b <= ranges[k]![1]) { setClass[i * nClasses + c] = 1; break; }
    }
  }
  return { classMap, nClasses, setClass };
}

/**
 * ε-closure of one item (stack * P + position) over the network: the byte-position items it
 * reaches (sorted) and whether it accepts. An end position returns to the stack's parent; how a
 * call position is entered is the caller's: `onCall(stack, position, add)` (the bounded DFA pushes
 * a frame up to its depth, the pushdown automaton records recursion cuts as call edges).
 */
export function itemClosure(
  net: Network, stParent: readonly number[], stPos: readonly number[], seed: number,
  onCall: (st: number, pos: number, add: (item: number) => void) => void,
  budget?: ClosureBudget,
): { kernel: number[]; accept: boolean } {
  const P = net.kind.length;
  // Most closures are a few items: the items seen are a list searched in order, and a Set only
  // past SMALL_CLOSURE of them (a Set per closure was most of what the subset constructions
  // allocated).
  const seenList = [seed];
  const work = [seed];
  let seen: Set<number> | undefined;
  const kernel: number[] = [];
  let accept = false;
  const add = (x: number) => {
    if (seen) { if (seen.has(x)) return; seen.add(x); }
    else {
      for (let i = 0; i < seenList.length; i++) if (seenList[i] === x) return;
      seenList.push(x);
      if (seenList.length > SMALL_CLOSURE) seen = new Set(seenList);
    }
    work.push(x);
  };
  while (work.length) {
    if (budget && --budget.left < 0) {
      throw new GrammarLimitError("maxClosureWork", MAX_CLOSURE_WORK + 1, MAX_CLOSURE_WORK, budget.maxDepth, budget.name);
    }
    const it = work.pop()!;
    const pos = it % P;
    const st = (it - pos) / P;
    const kind = net.kind[pos]!;
    if (kind === K_BYTES) kernel.push(it);
    else if (kind === K_END) {
      if (st === 0) accept = true;
      else add(stParent[st]! * P + stPos[st]!);
    } else onCall(st, pos, add);
  }
  return { kernel: sortNumbers(kernel), accept };
}
const SMALL_CLOSURE = 32;

// ───────────────────────────── subset construction ─────────────────────────────

export function grammarToDfa(cfg: Cfg, opts: GrammarDfaOptions = {}): GrammarDfaResult {
  const maxDepth = opts.maxDepth ?? DEFAULT_MAX_DEPTH;
  const maxStates = opts.maxStates ?? DEFAULT_MAX_GRAMMAR_STATES;
  if (!Number.isInteger(maxDepth) || maxDepth < 0) throw new RangeError(`maxDepth must be an integer ≥ 0, not ${maxDepth}`);
  const net = buildNetwork(cfg);
  const P = net.kind.length;
  const { classMap, nClasses, setClass } = setClasses(net);

  // Stacks: interned (parent, return position, cut), stack 0 is empty.
  const stParent: number[] = [0];
  const stPos: number[] = [0];
  const stDepth: number[] = [0];
  const stIds = new Map<number, number>();
  const push = (s: number, pos: number, cut: number): number => {
    const key = (s * P + pos) * 2 + cut;
    let id = stIds.get(key);
    if (id === undefined) {
      id = stParent.length;
      stIds.set(key, id);
      stParent.push(s); stPos.push(pos); stDepth.push(stDepth[s]! + cut);
    }
    return id;
  };

  let depthLimited = false;
  const budget: ClosureBudget = { left: MAX_CLOSURE_WORK, maxDepth, name: opts.name };
  /** ε-closure of one item (stack * P + position): its byte-position items and whether it accepts. */
  const itemMemo = new Map<number, { kernel: number[]; accept: boolean }>();
  const closeItem = (seed: number): { kernel: number[]; accept: boolean } => {
    let hit = itemMemo.get(seed);
    if (hit) return hit;
    hit = itemClosure(net, stParent, stPos, seed, (st, pos, add) => {
      const next = net.next[pos]!;
      let ns = st;
      if (next !== END) {
        const cut = net.cut[pos]!;
        if (cut && stDepth[st]! >= maxDepth) { depthLimited = true; return; }
        ns = push(st, next, cut);
      }
      for (const e of net.entries[net.arg[pos]!]!) add(ns * P + e);
    }, budget);
    itemMemo.set(seed, hit);
    return hit;
  };

  const kernels: number[][] = [];
  const accepting: number[] = [];
  const stateIds = new Map<string, number>();
  const seedMemo = new Map<string, number>();
  let configs = 0;
  const stateOf = (seeds: number[]): number => {
    const skey = seeds.join(",");
    const memo = seedMemo.get(skey);
    if (memo !== undefined) return memo;
    let kernel: number[];
    let accept = false;
    if (seeds.length === 1) ({ kernel, accept } = closeItem(seeds[0]!));
    else {
      const all = new Set<number>();
      for (const s of seeds) { const c = closeItem(s); accept ||= c.accept; for (const x of c.kernel) all.add(x); }
      kernel = sortNumbers([...all]);
    }
    let id: number;
    if (kernel.length === 0 && !accept) id = -1;
    else {
      const key = (accept ? "A" : "") + kernel.join(",");
      const known = stateIds.get(key);
      if (known !== undefined) id = known;
      else {
        id = kernels.length;
        if (id >= maxStates) throw new GrammarLimitError("maxGrammarStates", id + 1, maxStates, maxDepth, opts.name);
        configs += kernel.length;
        if (configs > MAX_CONFIGS) throw new GrammarLimitError("maxGrammarConfigs", configs, MAX_CONFIGS, maxDepth, opts.name);
        stateIds.set(key, id);
        kernels.push(kernel);
        accepting.push(accept ? 1 : 0);
      }
    }
    seedMemo.set(skey, id);
    return id;
  };

  const trans: number[] = [];
  const initial = stateOf(net.entries[cfg.start]!.map((e) => e));
  if (initial < 0) return emptyLanguage(cfg, maxDepth);
  let seedBuf = new Float64Array(64);
  for (let s = 0; s < kernels.length; s++) {
    const kernel = kernels[s]!;
    if (kernel.length > seedBuf.length) seedBuf = new Float64Array(2 * kernel.length);
    for (let c = 0; c < nClasses; c++) {
      let n = 0;
      for (const it of kernel) {
        const pos = it % P;
        if (setClass[net.arg[pos]! * nClasses + c]) seedBuf[n++] = it - pos + net.next[pos]!;
      }
      if (n === 0) { trans.push(-1); continue; }
      const seeds = seedBuf.subarray(0, n).sort();
      let w = 1;
      for (let i = 1; i < n; i++) if (seeds[i] !== seeds[w - 1]) seeds[w++] = seeds[i]!;
      trans.push(stateOf(Array.from(seeds.subarray(0, w))));
    }
  }
  const rawStates = kernels.length;

  // Trim states that cannot reach acceptance (compacting the table), then minimize.
  const { reach, coreach } = liveness(rawStates, nClasses, initial, (s, c) => trans[s * nClasses + c]!, (s) => accepting[s] === 1);
  if (!coreach[initial]) return emptyLanguage(cfg, maxDepth);
  const liveId = new Int32Array(rawStates).fill(-1);
  let nLive = 0;
  for (let s = 0; s < rawStates; s++) if (reach[s] && coreach[s]) liveId[s] = nLive++;
  const lTrans = new Int32Array(nLive * nClasses);
  const lAcc = new Uint8Array(nLive);
  for (let s = 0; s < rawStates; s++) {
    const id = liveId[s]!;
    if (id < 0) continue;
    lAcc[id] = accepting[s]!;
    for (let c = 0; c < nClasses; c++) { const t = trans[s * nClasses + c]!; lTrans[id * nClasses + c] = t < 0 ? -1 : liveId[t]!; }
  }
  const { blockOf, nBlocks } = minimize({
    nStates: nLive, nSyms: nClasses, initial: liveId[initial]!,
    next: (s, c) => lTrans[s * nClasses + c]!,
    key: (s) => (lAcc[s] ? "A" : "N"),
  });
  const mTrans = new Int32Array(nBlocks * nClasses).fill(-1);
  const mAcc = new Uint8Array(nBlocks);
  for (let s = 0; s < nLive; s++) {
    const b = blockOf[s]!;
    mAcc[b] = lAcc[s]!;
    for (let c = 0; c < nClasses; c++) { const t = lTrans[s * nClasses + c]!; mTrans[b * nClasses + c] = t < 0 ? -1 : blockOf[t]!; }
  }
  const initialBlock = blockOf[liveId[initial]!]!;
  const dfa = mergeClasses({ nStates: nBlocks, nClasses, classMap, initial: initialBlock, trans: mTrans, accepting: mAcc });
  return { dfa, depthLimited, maxDepth, rawStates };
}

function emptyLanguage(cfg: Cfg, maxDepth: number): never {
  const start = cfg.rules[cfg.start];
  throw new SpecError("E0711", `the grammar has no sentence of nesting depth ≤ ${maxDepth}${start ? ` (start rule ${start.name})` : ""}`,
    start?.span ?? null, "raise --max-depth: every sentence of this grammar nests deeper");
}

/** Merges byte classes whose columns are identical in every state (fewer table entries). */
export function mergeClasses(d: GrammarDfa): GrammarDfa {
  // Columns compared by a hash first, then element by element (no per-column string keys).
  const { nStates, nClasses: k } = d;
  // Every column's hash in one pass over the rows (a pass per column strode across the whole
  // table once per class: 5 ms of a large schema's compile).
  const hashes = new Int32Array(k).fill(0x811c9dc5 | 0);
  for (let s = 0, row = 0; s < nStates; s++, row += k) {
    // (The shift breaks the multiply-xor's linearity: without it, columns as simple as (-1, 3)
    // and (3, -1) hash alike.)
    for (let c = 0; c < k; c++) { const h = Math.imul(hashes[c]! ^ d.trans[row + c]!, 0x01000193); hashes[c] = h ^ (h >>> 15); }
  }
  // Each class's candidate twin is the first class with its hash; all candidates are checked in
  // one more pass over the rows (a column compared by striding the whole table once per merged
  // class was most of this function). A class whose hash collides with an unequal column's stays
  // a class of its own (a table with two equal columns is still exact; a 32-bit collision on a
  // grammar's few dozen columns is not expected).
  const firstOf = new Map<number, number>();
  const twinOf = new Int32Array(k).fill(-1);
  let cand: number[] = [];
  for (let c = 0; c < k; c++) {
    const f = firstOf.get(hashes[c]!);
    if (f === undefined) firstOf.set(hashes[c]!, c);
    else { twinOf[c] = f; cand.push(c); }
  }
  for (let s = 0, row = 0; s < nStates && cand.length > 0; s++, row += k) {
    for (let i = 0; i < cand.length; i++) {
      const c = cand[i]!;
      if (d.trans[row + c] !== d.trans[row + twinOf[c]!]) { twinOf[c] = -1; cand = cand.filter((x) => x !== c); i--; }
    }
  }
  const newOf = new Int32Array(k);
  const keep: number[] = [];
  for (let c = 0; c < k; c++) {
    if (twinOf[c]! >= 0) { newOf[c] = newOf[twinOf[c]!]!; continue; }
    newOf[c] = keep.length;
    keep.push(c);
  }
  if (keep.length === d.nClasses) return d;
  const n = keep.length;
  const trans = new Int32Array(d.nStates * n);
  for (let s = 0; s < d.nStates; s++) for (let k = 0; k < n; k++) trans[s * n + k] = d.trans[s * d.nClasses + keep[k]!]!;
  const classMap = new Uint8Array(256);
  for (let b = 0; b < 256; b++) classMap[b] = newOf[d.classMap[b]!]!;
  return { ...d, nClasses: n, classMap, trans };
}

/** Runs bytes through a grammar DFA from `state`; the final state or -(1 + index) of the first rejected byte. */
export function runGrammarDfa(d: GrammarDfa, bytes: Uint8Array, state = d.initial): number {
  let s = state;
  for (let i = 0; i < bytes.length; i++) {
    s = d.trans[s * d.nClasses + d.classMap[bytes[i]!]!]!;
    if (s < 0) return -(1 + i);
  }
  return s;
}

// ───────────────────────────── content: ws* sentence ws* ─────────────────────────────

const isWs = (b: number) => b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d;

/**
 * ws* G ws* as a minimized DFA (the content of an agent state constrained by a grammar, like
 * :output-constrs allows whitespace around its options). Classes: the grammar's, split by whether
 * the byte is whitespace.
 */
export function withSurroundingWhitespace(g: GrammarDfa): GrammarDfa {
  const ids = new Map<string, number>();
  const reps: number[] = [];
  const classMap = new Uint8Array(256);
  for (let b = 0; b < 256; b++) {
    const key = `${g.classMap[b]}|${isWs(b) ? 1 : 0}`;
    let c = ids.get(key);
    if (c === undefined) { c = reps.length; ids.set(key, c); reps.push(b); }
    classMap[b] = c;
  }
  const nClasses = reps.length;
  const L = g.nStates;
  const T = g.nStates + 1;
  const sets: number[][] = [];
  const setIds = new Map<string, number>();
  const addG = (out: Set<number>, q: number) => { out.add(q); if (g.accepting[q]) out.add(T); };
  const intern = (out: Set<number>): number => {
    if (out.size === 0) return -1;
    const arr = sortNumbers([...out]);
    const key = arr.join(",");
    let id = setIds.get(key);
    if (id === undefined) { id = sets.length; setIds.set(key, id); sets.push(arr); }
    return id;
  };
  const init = new Set<number>([L]);
  addG(init, g.initial);
  intern(init);
  const trans: number[] = [];
  for (let s = 0; s < sets.length; s++) {
    for (let c = 0; c < nClasses; c++) {
      const b = reps[c]!;
      const out = new Set<number>();
      for (const q of sets[s]!) {
        if (q === L) { if (isWs(b)) { out.add(L); addG(out, g.initial); } }
        else if (q === T) { if (isWs(b)) out.add(T); }
        else {
          const t = g.trans[q * g.nClasses + g.classMap[b]!]!;
          if (t >= 0) addG(out, t);
        }
      }
      trans[s * nClasses + c] = intern(out);
    }
  }
  const n = sets.length;
  const acc = (s: number) => sets[s]!.includes(T);
  const { blockOf, nBlocks } = minimize({ nStates: n, nSyms: nClasses, initial: 0, next: (s, c) => trans[s * nClasses + c]!, key: (s) => (acc(s) ? "A" : "N") });
  const mTrans = new Int32Array(nBlocks * nClasses).fill(-1);
  const mAcc = new Uint8Array(nBlocks);
  for (let s = 0; s < n; s++) {
    const bl = blockOf[s]!;
    mAcc[bl] = acc(s) ? 1 : 0;
    for (let c = 0; c < nClasses; c++) { const t = trans[s * nClasses + c]!; mTrans[bl * nClasses + c] = t < 0 ? -1 : blockOf[t]!; }
  }
  return mergeClasses({ nStates: nBlocks, nClasses, classMap, initial: blockOf[0]!, trans: mTrans, accepting: mAcc });
}
