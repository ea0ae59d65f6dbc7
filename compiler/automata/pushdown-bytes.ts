/**
 * @fileoverview The byte-level automaton of a spec whose grammar, JSON Schema or tool content
 * runs on a stack: a pushdown automaton (the runtime's pushdown mode, grammar/pda.ts's shape)
 * whose top machine is the agent — markers, free text, env states — and whose called machines are
 * the content grammars' nested constructs. Exact at any nesting depth: `:max-depth` bounds a
 * content when it is given (bytes.ts then runs it as a DFA); without it the content comes here.
 *
 * The lazy semantics of bytes.ts feed a state's content only once the marker scan knows the bytes
 * are not the start of a marker; a pending marker prefix that fails is fed all at once. A stack
 * content cannot take several bytes in one step (they may cross a call or a return), so here the
 * content is fed EAGERLY, one byte at a time, and the cases the lazy scan tells apart later are
 * kept side by side as paths of one subset state:
 *   - L: a lazy tuple of bytes.ts (states whose content is a DFA; env phases; before any marker).
 *     With Phase.Trail it is the text after a stack content ENDED at byte `j` of its pending
 *     buffer: only whitespace, then a marker that starts at or after `j`.
 *   - C: the stack content goes on. It has read every byte since its marker; its residual `r` is
 *     the marker scan's (the pending text), and it dies when the scan completes a marker, since
 *     content never contains a complete marker (DESIGN §1.1). Wherever the content may end, an L
 *     path in Phase.Trail is added beside it (j = |r|).
 *   - K: inside a called machine: content state, residual and GOAL, the residual the machine must
 *     end with. The stack holds return states, which cannot know the residual at the return, so a
 *     call guesses it: one call edge per residual the callee can end with (`ends`, a fixpoint over
 *     the callee's states and residuals). A JSON value ends with `}`, `]`, `"`, a digit or a
 *     lowercase letter, and markers rarely start with those, so it is almost always one residual,
 *     the empty one. Most other guesses die at once (a nullable callee that ends where it
 *     starts). Where two goals of one machine state both go on into calls (a marker "]:" after
 *     bracket content that may end with "]" or not), every level of nesting would double the
 *     pairs, so that state's content stays a bounded DFA (`:max-depth`, default 8: what it was
 *     before stacks) instead. Exact there would need the runtime to pop into a return state
 *     chosen by the residual.
 * Every path in one subset state is in the same spec state with the same behavior state (the
 * scan is deterministic; a committed marker kills the C path), so per-state outputs (spec state,
 * flags, next markers, env edge) stay per state, as the runtime reads them from a configuration.
 *
 * Tool contents: :tool-args takes the automaton of the tool chosen last; :tool-call runs one C path
 * per tool side by side, and the one that may end names the call there (bytes.ts takes the first
 * tool whose sentence the text is; here two could only both end on one text if two call grammars
 * shared a sentence, which their distinct names rule out).
 *
 * Not handled (a compile error names the state): a stack content whose marker completes while
 * another marker is still pending, when the bytes the scan then hands over would enter a nested
 * construct (several bytes in one step across a call).
 */
import { SpecError, SpecLimitError } from "../diagnostics.js";
import { ByteFlag, type ByteDfa, type SpecIR, type StateDfa, type ToolIR } from "../ir.js";
import { trimPda, type GrammarPda } from "../grammar/pda.js";
import {
  DEFAULT_MAX_BYTE_STATES, Phase, byteSemantics, scan, type ByteAutomatonOptions, type Entry, type MarkerScanner, type Tuple,
} from "./bytes.js";
import { contentPda, grammarContentPda, isStackContent } from "./content.js";
import { minimize } from "./minimize.js";

const enum Kind { L = 0, C = 1, K = 2 }
interface Path {
  kind: Kind;
  t: Tuple;
  /** L in Phase.Trail: bytes of t.r that were content. */
  j: number;
  /** K: the residual to end with. */
  g: string;
  /** C, K: which automaton of the state's stack content (`StackContent.pdas`). */
  part: number;
}

const keyOf = (p: Path): string => {
  const { q, s, phase, c, tool, tc, r } = p.t;
  return `${p.kind},${q},${s},${phase},${c},${tool},${tc},${p.j},${p.part},${p.g.length},${r.length}:${p.g}${r}`;
};

/**
 * A state's content on a stack: one automaton (:grammar, :json-schema); one per tool, the tool
 * chosen last picks it (:tool-args); or one per tool side by side, the one that completes names the
 * call (:tool-call).
 */
interface StackContent { kind: "one" | "byTool" | "union"; pdas: GrammarPda[] }

function stackContent(st: SpecIR["states"][number], tools: readonly ToolIR[], opts: PushdownByteOptions): StackContent | null {
  const c = st.content;
  if (st.env || !isStackContent(c, opts)) return null;
  if (c.kind === "grammar") {
    const one = grammarContentPda(c, opts);
    return one ? { kind: "one", pdas: [one] } : null;
  }
  if (c.kind !== "toolArgs" && c.kind !== "toolCall") return null;
  const list = tools.map((t) => (c.kind === "toolArgs"
    ? contentPda(t.args, `the arguments of tool ${t.name}`, c.span, opts)
    : contentPda(t.call, `the call of tool ${t.name}`, c.span, opts)));
  // No tool's grammar nests: the bounded DFA is the same language (bytes.ts).
  if (list.every((x) => x.calls.every((cs) => cs.length === 0))) return null;
  return { kind: c.kind === "toolArgs" ? "byTool" : "union", pdas: list };
}

export interface PushdownByteOptions extends ByteAutomatonOptions {
  /** Minimize (default true); false gives the trimmed automaton as built (differential tests). */
  minimize?: boolean;
}

/** Two goals of one machine state of state `state`'s content both go on into calls (the file overview). */
class AmbiguousEnd extends Error {
  constructor(readonly state: number) { super(`ambiguous end residual in state ${state}`); }
}

/**
 * The automaton, or null when no state's content runs on a stack (bytes.ts builds it then). A
 * content whose guesses would double with depth stays a bounded DFA (the file overview): that
 * state is then what bytes.ts makes of it, limits included (a free-form JSON value at the
 * default depth 8 can exceed maxGrammarStates; the error then asks for a smaller :max-depth).
 */
export function buildPushdownByteDfa(ir: SpecIR, dfa: StateDfa, opts: PushdownByteOptions = {}): ByteDfa | null {
  const bounded = new Set<number>();
  for (;;) {
    try {
      return build(ir, dfa, opts, bounded);
    } catch (e) {
      if (!(e instanceof AmbiguousEnd)) throw e;
      bounded.add(e.state);
    }
  }
}

function build(ir: SpecIR, dfa: StateDfa, opts: PushdownByteOptions, bounded: ReadonlySet<number>): ByteDfa | null {
  const tools = ir.tools ?? [];
  const stacks = ir.states.map((st, i) => (bounded.has(i) ? null : stackContent(st, tools, opts)));
  if (!stacks.some((p) => p !== null)) return null;
  const maxStates = opts.maxStates ?? DEFAULT_MAX_BYTE_STATES;
  const sem = byteSemantics(ir, dfa, opts, (s) => stacks[s] !== null, stacks.flatMap((p) => (p ? p.pdas.map((x) => x.classMap) : [])));
  const { sc, classMap, reps, nClasses, markerByte, toolSteps } = sem;
  const pdaOf = (p: { t: Tuple; part: number }): GrammarPda => stacks[p.t.s]!.pdas[p.part]!;
  const step1 = (r: string, b: number) => scan(sc, r + String.fromCharCode(b), false);
  const hasMarker = (evs: readonly object[]) => evs.some((ev) => "marker" in ev);
  const endsOf = new Map<GrammarPda, (start: number, r: string) => string[]>();
  const ends = (p: Path, start: number, r: string): string[] => {
    const pda = pdaOf(p);
    let f = endsOf.get(pda);
    if (!f) endsOf.set(pda, (f = endResiduals(pda, sc, reps)));
    return f(start, r);
  };

  const L = (t: Tuple, j = 0): Path => ({ kind: Kind.L, t, j, g: "", part: 0 });
  /**
   * A C path, and the Trail path beside it where the content may end. A :tool-call part that ends
   * is that tool's call, stepped through the tool constraints here (bytes.ts does it at the next
   * marker; a Trail path can only go on to one, or end the run).
   */
  const withEnd = (t: Tuple, part: number): Path[] => {
    const out: Path[] = [{ kind: Kind.C, t, j: 0, g: "", part }];
    if (!pdaOf({ t, part }).accepting[t.c]) return out;
    let { tool, tc } = t;
    if (stacks[t.s]!.kind === "union") {
      tc = toolSteps.step(tc, part);
      if (tc < 0) return out;
      tool = part;
    }
    out.push(L({ ...t, phase: Phase.Trail, c: 0, tool, tc }, t.r.length));
    return out;
  };
  /** A marker entered a stack-content state: the rest of the buffer is read eagerly, byte by byte. */
  const enter = (e: Entry): Path[] => {
    const st = stacks[e.tuple.s]!;
    const parts = st.kind === "one" ? [0] : st.kind === "byTool" ? (e.tuple.tool >= 0 ? [e.tuple.tool] : []) : st.pdas.map((_, i) => i);
    let paths = parts.flatMap((part) => withEnd({ ...e.tuple, c: st.pdas[part]!.initial, r: "" }, part));
    for (let i = 0; i < e.tail.length && paths.length; i++) {
      const b = e.tail.charCodeAt(i);
      for (const p of paths) {
        if (p.kind === Kind.C && pdaOf(p).calls[p.t.c]!.length > 0) {
          const st = ir.states[p.t.s]!;
          throw new SpecError("E0404", `the content of state ${st.name} may open a nested construct in bytes that the marker scan hands over several at once ` +
            `(its marker "${st.marker}" completes while a longer marker is still possible)`, st.span,
          "give its grammar a nesting bound, (:grammar ... :max-depth N), or use markers where no marker is the start of another");
        }
      }
      paths = dedupe(paths.flatMap((p) => stepPath(p, b))).paths;
    }
    return paths;
  };
  const fromApply = (x: Tuple | Entry | null, j: number): Path[] => (x === null ? [] : "tail" in x ? enter(x) : [L(x, x.phase === Phase.Trail ? j : 0)]);
  const stepPath = (p: Path, b: number): Path[] => {
    const t = p.t;
    if (p.kind === Kind.L) {
      if (t.phase === Phase.Yield) return [];
      if (t.r === "" && !markerByte[b]) {
        const c = sem.contentOf(t).step(t.c, b);
        return c < 0 ? [] : [L({ ...t, c })];
      }
      const { events, rest } = step1(t.r, b);
      const consumed = t.r.length + 1 - rest.length;
      return fromApply(sem.apply(t, events, rest, p.j), Math.max(0, p.j - consumed));
    }
    const { events, rest } = step1(t.r, b);
    if (hasMarker(events)) return [];
    const pda = pdaOf(p);
    const c = pda.trans[t.c * pda.nClasses + pda.classMap[b]!]!;
    if (c < 0) return [];
    return p.kind === Kind.C ? withEnd({ ...t, c, r: rest }, p.part) : [{ ...p, t: { ...t, c, r: rest } }];
  };
  const acceptsPath = (p: Path): boolean =>
    p.kind === Kind.L && sem.isAccepting(p.t, p.j, (e) => enter(e).some(acceptsPath));

  // ---- Exploration: subset states of paths (the top machine) and K states (called machines) ----
  const states: Path[][] = [];
  const ids = new Map<string, number>();
  const intern = (paths: Path[]): number => {
    if (paths.length === 0) return -1;
    const set = dedupe(paths);
    let id = ids.get(set.key);
    if (id === undefined) {
      id = states.length;
      if (id >= maxStates) throw stackLimit(ir, stacks, id + 1, maxStates);
      ids.set(set.key, id);
      states.push(set.paths);
    }
    return id;
  };
  const K = (t: Tuple, g: string, part: number): Path => ({ kind: Kind.K, t, j: 0, g, part });
  const trans: number[] = [];
  const accepting: boolean[] = [];
  const calls: [number, number][][] = [];
  const envNext: number[] = [];
  const specOf: number[] = [];
  const qOf: number[] = [];
  const flags: number[] = [];
  intern([L({ q: dfa.initial, s: -1, phase: Phase.Llm, c: 0, r: "", tool: -1, tc: 0 })]);
  for (let i = 0; i < states.length; i++) {
    const paths = states[i]!;
    for (let k = 0; k < nClasses; k++) trans.push(intern(paths.flatMap((p) => stepPath(p, reps[k]!))));
    const cs: [number, number][] = [];
    let acc = false;
    let fl = 0;
    let env = -1;
    for (const p of paths) {
      const t = p.t;
      if (p.kind === Kind.L) {
        acc ||= acceptsPath(p);
        if (t.phase === Phase.Yield) { fl |= ByteFlag.Yield; env = intern([L({ ...t, phase: Phase.AfterEnv, c: 0, r: "" })]); }
        if (t.phase === Phase.AfterEnv) fl |= ByteFlag.AfterEnv;
        continue;
      }
      const pda = pdaOf(p);
      if (p.kind === Kind.K && pda.accepting[t.c] && t.r === p.g) acc = true;
      for (const [st, rt] of pda.calls[t.c]!) {
        for (const g of ends(p, st, t.r)) {
          const start = intern([K({ ...t, c: st }, g, p.part)]);
          const ret = intern(p.kind === Kind.C ? withEnd({ ...t, c: rt, r: g }, p.part) : [K({ ...t, c: rt, r: g }, p.g, p.part)]);
          cs.push([start, ret]);
        }
      }
    }
    const s0 = paths[0]!.t;
    if (paths.some((p) => p.t.s !== s0.s || p.t.q !== s0.q)) throw new Error(`internal: a byte state of ${ir.name} mixes spec states`);
    accepting.push(acc);
    flags.push((acc ? ByteFlag.Accepting : 0) | fl);
    calls.push(cs);
    envNext.push(env);
    specOf.push(s0.s);
    qOf.push(s0.q);
  }

  // ---- Trim: productive (can finish its machine) and reachable through productive edges ----
  const n = states.length;
  const { prod, live } = trimPda(n, 0, (s) => accepting[s]!, (s, f) => {
    for (let k = 0; k < nClasses; k++) { const t = trans[s * nClasses + k]!; if (t >= 0) f(t); }
    if (envNext[s]! >= 0) f(envNext[s]!);
  }, (s) => calls[s]!);
  if (!prod[0]) {
    throw new SpecError("E0402", "empty language: no text conforms to this spec (check the content constraints against the markers)", ir.behavior.span);
  }
  const liveCalls = (s: number) => calls[s]!.filter(([st, rt]) => prod[st] && prod[rt]);
  // Guesses must not multiply with depth: where one machine state (content state and residual)
  // goes on into a call under two goals, the pairs of every level below would double.
  const goals = new Map<string, string>();
  for (let s = 0; s < n; s++) {
    const p = states[s]![0]!;
    if (!live[s] || p.kind !== Kind.K || liveCalls(s).length === 0) continue;
    const k = keyOf({ ...p, g: "" });
    const g = goals.get(k);
    if (g === undefined) goals.set(k, p.g);
    else if (g !== p.g) throw new AmbiguousEnd(p.t.s);
  }
  const entered = new Set<number>();
  for (let s = 0; s < n; s++) if (live[s] && specOf[s]! >= 0) entered.add(specOf[s]!);
  for (const st of ir.states) {
    if (!entered.has(st.id)) {
      throw new SpecError("E0403", `state ${st.name} can never be completed: no conforming text passes through it`, st.span,
        st.content.kind === "oneOf" ? "its content constraint can never be satisfied (does an option contain a marker?)"
          : st.content.kind === "grammar" ? "no sentence of its grammar avoids every marker text" : undefined);
    }
  }

  // ---- Minimize: byte classes, the env edge and call edges are symbols ----
  const callSym = new Map<string, number>();
  const symCalls: Map<number, number>[] = Array.from({ length: n }, () => new Map());
  for (let s = 0; s < n; s++) {
    if (!live[s]) continue;
    const seen = new Map<number, number>();
    for (const [st, rt] of liveCalls(s)) {
      const k = seen.get(st) ?? 0;
      seen.set(st, k + 1);
      const key = `${st}#${k}`;
      let sym = callSym.get(key);
      if (sym === undefined) { sym = callSym.size; callSym.set(key, sym); }
      symCalls[s]!.set(2 * sym, rt);
      symCalls[s]!.set(2 * sym + 1, st);
    }
  }
  const liveId = new Int32Array(n).fill(-1);
  const order: number[] = [];
  for (let s = 0; s < n; s++) if (live[s]) { liveId[s] = order.length; order.push(s); }
  const base = nClasses + 1;
  const nextOf = (s: number, a: number): number => {
    const o = order[s]!;
    const t = a < nClasses ? trans[o * nClasses + a]! : a === nClasses ? envNext[o]! : symCalls[o]!.get(a - base) ?? -1;
    return t < 0 ? -1 : liveId[t]!;
  };
  const markersOf = Array.from({ length: dfa.nStates }, (_, q) => nextMarkers(dfa, q));
  const outKey = (s: number) => { const o = order[s]!; return `${flags[o]}|${specOf[o]}|${markersOf[qOf[o]!]!.join(",")}`; };
  const { blockOf, nBlocks } = opts.minimize === false
    ? { blockOf: Int32Array.from(order, (_, i) => i), nBlocks: order.length }
    : minimize({ nStates: order.length, nSyms: base + 2 * callSym.size, initial: 0, next: nextOf, key: outKey });
  const out: ByteDfa = {
    nStates: nBlocks, nClasses, classMap, initial: blockOf[0]!,
    trans: new Int32Array(nBlocks * nClasses).fill(-1), flags: new Uint8Array(nBlocks),
    specState: new Int32Array(nBlocks), envNext: new Int32Array(nBlocks).fill(-1), nextMarkers: new Array(nBlocks), calls: new Array(nBlocks),
  };
  for (let i = 0; i < order.length; i++) {
    const b = blockOf[i]!;
    if (out.nextMarkers[b]) continue;
    const o = order[i]!;
    for (let k = 0; k < nClasses; k++) { const t = nextOf(i, k); if (t >= 0) out.trans[b * nClasses + k] = blockOf[t]!; }
    out.flags[b] = flags[o]!;
    out.specState[b] = specOf[o]!;
    if (envNext[o]! >= 0) out.envNext[b] = blockOf[liveId[envNext[o]!]!]!;
    out.nextMarkers[b] = markersOf[qOf[o]!]!;
    const cs = new Map<string, readonly [number, number]>();
    for (const [st, rt] of liveCalls(o)) { const e = [blockOf[liveId[st]!]!, blockOf[liveId[rt]!]!] as const; cs.set(`${e[0]},${e[1]}`, e); }
    out.calls![b] = [...cs.values()].sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  }
  return out;
}

function nextMarkers(dfa: StateDfa, q: number): number[] {
  const nm: number[] = [];
  for (let a = 0; a < dfa.nSyms; a++) if (dfa.delta[q * dfa.nSyms + a]! >= 0) nm.push(a);
  return nm;
}

/** The distinct paths in key order, and the subset state's key. */
function dedupe(paths: Path[]): { paths: Path[]; key: string } {
  const m = new Map<string, Path>();
  for (const p of paths) m.set(keyOf(p), p);
  const keys = [...m.keys()].sort();
  return { paths: keys.map((k) => m.get(k)!), key: keys.join("|") };
}

/**
 * For a content automaton: the residuals (pending marker text) its machine can END with when
 * entered at state `start` with residual `r` — what a call must guess. A least fixpoint over
 * nodes (state, residual): F(n) holds n's residual where n may end, and F of every node a byte
 * leads to; a call edge [st, rt] adds F(rt, g) for every g in F(st, r). A byte that completes a
 * marker leads nowhere (content never holds a marker).
 */
function endResiduals(pda: GrammarPda, sc: MarkerScanner, reps: number[]): (start: number, r: string) => string[] {
  const rIds = new Map<string, number>();
  const rStr: string[] = [];
  const rid = (r: string) => { let i = rIds.get(r); if (i === undefined) { i = rStr.length; rIds.set(r, i); rStr.push(r); } return i; };
  const nodeIds = new Map<number, number>();
  const nodeC: number[] = [];
  const nodeR: number[] = [];
  const F: Set<number>[] = [];
  const deps: Set<number>[] = [];
  const succ: (number[] | null)[] = [];
  const work: number[] = [];
  const RMAX = 1 << 20;
  const node = (c: number, r: number): number => {
    const k = c * RMAX + r;
    let id = nodeIds.get(k);
    if (id === undefined) {
      id = nodeC.length;
      nodeIds.set(k, id);
      nodeC.push(c); nodeR.push(r); F.push(new Set()); deps.push(new Set()); succ.push(null);
      work.push(id);
    }
    return id;
  };
  const evaluate = (n: number) => {
    const c = nodeC[n]!;
    const r = nodeR[n]!;
    if (!succ[n]) {
      const out = new Set<number>();
      for (const b of reps) {
        const t = pda.trans[c * pda.nClasses + pda.classMap[b]!]!;
        if (t < 0) continue;
        const { events, rest } = scan(sc, rStr[r]! + String.fromCharCode(b), false);
        if (events.some((ev) => "marker" in ev)) continue;
        out.add(node(t, rid(rest)));
      }
      succ[n] = [...out];
      for (const m of succ[n]!) deps[m]!.add(n);
    }
    const f = F[n]!;
    const before = f.size;
    if (pda.accepting[c]) f.add(r);
    for (const m of succ[n]!) for (const g of F[m]!) f.add(g);
    for (const [st, rt] of pda.calls[c]!) {
      const callee = node(st, r);
      deps[callee]!.add(n);
      for (const g of F[callee]!) {
        const back = node(rt, g);
        deps[back]!.add(n);
        for (const x of F[back]!) f.add(x);
      }
    }
    if (f.size > before) for (const d of deps[n]!) work.push(d);
  };
  return (start, r) => {
    const n = node(start, rid(r));
    while (work.length) evaluate(work.pop()!);
    return [...F[n]!].sort((a, b) => a - b).map((i) => rStr[i]!);
  };
}

function stackLimit(ir: SpecIR, stacks: (StackContent | null)[], value: number, max: number): SpecLimitError {
  const g = ir.states.find((s, i) => stacks[i] !== null)!;
  const e = new SpecLimitError("maxByteStates", value, max, "span" in g.content ? g.content.span : null);
  (e as { hint?: string }).hint = `the markers and ${g.name}'s grammar multiply the byte states (each pending marker prefix inside its content is a state): ` +
    "use fewer or shorter markers, or raise the limit (option maxByteStates)";
  return e;
}
