/**
 * @fileoverview Drawing the automata: Graphviz DOT text, and SVG through Graphviz compiled to
 * WebAssembly (`@hpcc-js/wasm-graphviz`, in-process, no `dot` binary needed).
 *
 * `stateDot` draws the agent's state diagram the way the seed papers do (states as nodes,
 * transitions as arrows). The state DFA is labeled on its edges (Mealy style: reading spec state s
 * moves q to q'), but a reader wants to see *spec states* as nodes, so the drawing is its Moore view:
 * one node per reachable pair (q, s) = "the DFA is in q, having just entered spec state s". A pair
 * (q, s) has an arrow to (q', s') exactly when `delta[q][s'] = q'`; a point-shaped start node has
 * arrows to the pairs entered first. For an unbounded loop this gives the papers' picture
 * (Observation → Thought back edge); a bounded loop (`until_3`) unrolls, and the repeated spec
 * states are told apart by an iteration hint ("thought ·2").
 *
 * `byteDot` draws the byte-level automaton for debugging; it refuses graphs too large to read.
 * `ruleDot` draws a standalone grammar's "state diagram": its rule graph (which rule uses which),
 * with the recursion cuts that count against the nesting depth (grammar/regular.ts) in red.
 *
 * All output is deterministic: nodes are discovered breadth-first with symbols in ascending order,
 * ids depend only on automaton numbers, and edges are emitted in sorted order.
 */
import { callGraph, callSites } from "./grammar/regular.js";
import type { Cfg } from "./grammar/cfg.js";
import { ByteFlag, type ByteDfa, type SpecIR, type StateDfa } from "./ir.js";
import type { Engine } from "./trace.js";

// ───────────────────────────── escaping ─────────────────────────────

/** A DOT double-quoted string. Backslashes are doubled, so no Graphviz escape (\n, \N, \l) fires. */
export function dotString(s: string): string {
  return `"${s.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\r?\n|\r/g, "\\n")}"`;
}

/** Text for inside an HTML-like label (`<...>`): XML entities, control characters made visible. */
function htmlText(s: string): string {
  return visible(s)
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");
}

/** Control characters shown as escapes (`\n`, `\t`, `\x01`); everything else, non-ASCII included, as is. */
function visible(s: string): string {
  return s.replace(/[\u0000-\u001f\u007f]/g, (ch) => {
    switch (ch) {
      case "\n": return "\\n";
      case "\t": return "\\t";
      case "\r": return "\\r";
      default: return `\\x${ch.charCodeAt(0).toString(16).padStart(2, "0")}`;
    }
  });
}

// ─────────────────────────── state diagram ───────────────────────────

const FONT = "Helvetica";

/** The shared graph preamble. */
function header(title: string, extra: string[] = []): string[] {
  return [
    `digraph ${dotString(title)} {`,
    `  graph [rankdir=LR, fontname=${dotString(FONT)}, nodesep=0.35, ranksep=0.45, pad=0.2];`,
    `  node [fontname=${dotString(FONT)}, fontsize=13, shape=box, style=rounded, margin="0.2,0.07"];`,
    `  edge [fontname=${dotString(FONT)}, fontsize=10, arrowsize=0.7];`,
    ...extra,
  ];
}

/**
 * The agent's state diagram (Moore view of the state DFA; see the file overview).
 * Node ids: `start`, and `q<Q>_s<S>` for the pair (DFA state Q, spec state S).
 */
export function stateDot(ir: SpecIR, dfa: StateDfa): string {
  const { nSyms, delta } = dfa;
  const key = (q: number, s: number) => q * nSyms + s;
  const id = (q: number, s: number) => `q${q}_s${s}`;

  // Breadth-first discovery of the reachable (q, s) pairs, symbols in ascending order.
  const order: [number, number][] = [];
  const seen = new Set<number>();
  const edges: [string, string][] = [];
  const visit = (from: string, q: number) => {
    for (let s = 0; s < nSyms; s++) {
      const t = delta[key(q, s)]!;
      if (t < 0) continue;
      edges.push([from, id(t, s)]);
      if (!seen.has(key(t, s))) { seen.add(key(t, s)); order.push([t, s]); }
    }
  };
  visit("start", dfa.initial);
  for (let i = 0; i < order.length; i++) visit(id(...order[i]!), order[i]![0]);

  // Spec states that occur in several pairs (unrolled bounded loops) get an iteration hint.
  const count = new Map<number, number>();
  for (const [, s] of order) count.set(s, (count.get(s) ?? 0) + 1);
  const nth = new Map<number, number>();

  const lines = header(ir.name, [
    `  labelloc=t; label=${dotString(ir.name)}; fontsize=14;`,
    `  start [shape=point, width=0.14, label="", tooltip="start"${dfa.accepting[dfa.initial] ? ", peripheries=2" : ""}];`,
  ]);
  for (const [q, s] of order) {
    const st = ir.states[s]!;
    const k = (nth.get(s) ?? 0) + 1;
    nth.set(s, k);
    const name = count.get(s)! > 1 ? `${st.name} ·${k}` : st.name;
    let label = htmlText(name);
    if (st.marker !== "") label += `<BR/><FONT POINT-SIZE="10" COLOR="#555555">${htmlText(st.marker)}${st.tokenByte !== undefined ? " (token)" : ""}</FONT>`;
    const tools = ir.tools ?? [];
    const toolLabel = st.content.kind === "toolName" ? tools.map((t) => t.name).join(" | ")
      : st.content.kind === "toolArgs" ? "arguments of the tool chosen"
      : st.content.kind === "toolCall" ? `call of ${tools.map((t) => t.name).join(" | ")}`
      : st.content.kind === "empty" ? "(whitespace)" : null;
    if (toolLabel !== null) label += `<BR/><FONT POINT-SIZE="9" COLOR="#555555"><I>${htmlText(toolLabel)}</I></FONT>`;
    if (st.content.kind === "oneOf") {
      const opts = st.content.options.map((o) => htmlText(o)).join(" | ");
      label += `<BR/><FONT POINT-SIZE="9" COLOR="#555555"><I>${opts}</I></FONT>`;
    } else if (st.content.kind === "grammar") {
      const src = st.content.source;
      const what = src.inline ? "inline grammar" : `grammar ${src.file.replace(/^.*[\\/]/, "")}`;
      label += `<BR/><FONT POINT-SIZE="9" COLOR="#555555"><I>${htmlText(src.start === "root" ? what : `${what}, ${src.start}`)}</I></FONT>`;
    }
    const attrs = [`label=<${label}>`];
    if (st.env) attrs.push(`style="rounded,dashed,filled"`, `fillcolor="#eef3fb"`, `color="#3a5a8c"`, `tooltip="env-input"`);
    else attrs.push(`tooltip=${dotString(`${st.name}: LLM output (DFA state ${q})`)}`);
    if (dfa.accepting[q]) attrs.push("peripheries=2");
    lines.push(`  ${id(q, s)} [${attrs.join(", ")}];`);
  }
  for (const [a, b] of edges) lines.push(`  ${a} -> ${b};`);
  lines.push("}");
  return lines.join("\n") + "\n";
}

// ─────────────────────────── byte automaton ───────────────────────────

export const DEFAULT_MAX_RENDER_NODES = 400;

export interface ByteDotOptions {
  /** Refuse automata with more states than this (default 400): Graphviz output would be unreadable. */
  maxNodes?: number;
}

/** One byte as it reads inside a character class (`rangeChar`) or on its own (`singleByte`). */
function rangeChar(b: number): string {
  if (b === 0x0a) return "\\n";
  if (b === 0x09) return "\\t";
  if (b === 0x0d) return "\\r";
  if (b >= 0x20 && b < 0x7f) return "\\]-^[".includes(String.fromCharCode(b)) ? `\\${String.fromCharCode(b)}` : String.fromCharCode(b);
  return `\\x${b.toString(16).padStart(2, "0").toUpperCase()}`;
}

function singleByte(b: number): string {
  if (b >= 0x20 && b < 0x7f) return b === 0x27 ? `'\\''` : b === 0x5c ? `'\\\\'` : `'${String.fromCharCode(b)}'`;
  return rangeChar(b);
}

/** The inside of a character class for sorted bytes: runs of 3+ become ranges. */
function classBody(bytes: number[]): string {
  let out = "";
  for (let i = 0; i < bytes.length; ) {
    let j = i;
    while (j + 1 < bytes.length && bytes[j + 1] === bytes[j]! + 1) j++;
    if (j - i >= 2) out += `${rangeChar(bytes[i]!)}-${rangeChar(bytes[j]!)}`;
    else for (let k = i; k <= j; k++) out += rangeChar(bytes[k]!);
    i = j + 1;
  }
  return out;
}

const MAX_LABEL = 40;

/** A compact label for a set of bytes: `'T'`, `\n`, `[A-Z]`, `[^\n]`, `any`. */
export function byteSetLabel(bytes: number[]): string {
  if (bytes.length === 256) return "any";
  if (bytes.length === 1) return singleByte(bytes[0]!);
  const inSet = new Set(bytes);
  const rest: number[] = [];
  for (let b = 0; b < 256; b++) if (!inSet.has(b)) rest.push(b);
  const pos = `[${classBody(bytes)}]`;
  const neg = `[^${classBody(rest)}]`;
  const best = neg.length < pos.length ? neg : pos;
  return best.length > MAX_LABEL ? best.slice(0, MAX_LABEL - 2) + "…]" : best;
}

/**
 * The byte-level automaton. Nodes: byte states labeled with their number and the spec state whose
 * marker was committed last; accepting = double border, Yield = dashed, AfterEnv = dotted. Edges are
 * grouped per (from, to) and labeled with the bytes they carry; on a state whose transitions cover
 * every byte, the widest edge is labeled `other`. Env steps (`envNext`) are dashed edges labeled `env`.
 * A pushdown grammar's calls are bold red `call` edges to the called machine's start and dotted red
 * edges to the state its end returns to; accepting (double border) then means "this machine may end".
 */
export function byteDot(ir: SpecIR, d: ByteDfa, opts: ByteDotOptions = {}): string {
  const maxNodes = opts.maxNodes ?? DEFAULT_MAX_RENDER_NODES;
  if (d.nStates > maxNodes) {
    throw new Error(
      `the byte automaton of '${ir.name}' has ${d.nStates} states, more than the ${maxNodes} a drawing can show legibly; ` +
        `draw the state diagram instead (--level states)`,
    );
  }
  const bytesOfClass: number[][] = Array.from({ length: d.nClasses }, () => []);
  for (let b = 0; b < 256; b++) bytesOfClass[d.classMap[b]!]!.push(b);

  const lines = header(`${ir.name} (bytes)`, [
    `  labelloc=t; label=${dotString(`${ir.name}: byte automaton, ${d.nStates} states × ${d.nClasses} classes`)}; fontsize=14;`,
    `  node [fontsize=10, margin="0.06,0.03"];`,
    `  start [shape=point, width=0.12, label="", tooltip="start"];`,
  ]);
  for (let s = 0; s < d.nStates; s++) {
    const spec = d.specState[s]!;
    const name = spec >= 0 ? ir.states[spec]!.name : "–";
    const f = d.flags[s]!;
    const attrs = [`label=${dotString(`${s}\n${name}`)}`];
    const styles = ["rounded"];
    const tips: string[] = [];
    if (f & ByteFlag.Yield) { styles.push("dashed"); tips.push("yield: the host feeds env text"); }
    if (f & ByteFlag.AfterEnv) { styles.push("dotted"); tips.push("after env: whitespace, then a marker"); }
    if (f & ByteFlag.Accepting) { attrs.push("peripheries=2"); tips.push("accepting"); }
    attrs.push(`style=${dotString(styles.join(","))}`);
    if (tips.length) attrs.push(`tooltip=${dotString(tips.join("; "))}`);
    lines.push(`  b${s} [${attrs.join(", ")}];`);
  }
  lines.push(`  start -> b${d.initial};`);
  for (let s = 0; s < d.nStates; s++) {
    const groups = new Map<number, number[]>();
    let covered = 0;
    for (let c = 0; c < d.nClasses; c++) {
      const t = d.trans[s * d.nClasses + c]!;
      if (t < 0) continue;
      let g = groups.get(t);
      if (!g) groups.set(t, (g = []));
      g.push(...bytesOfClass[c]!);
      covered += bytesOfClass[c]!.length;
    }
    const targets = [...groups.keys()].sort((a, b) => a - b);
    // On a total state, the widest edge reads best as "other" (ties: the lowest target).
    let other = -1;
    if (covered === 256 && targets.length > 1) {
      for (const t of targets) if (other < 0 || groups.get(t)!.length > groups.get(other)!.length) other = t;
    }
    for (const t of targets) {
      const bytes = groups.get(t)!.sort((a, b) => a - b);
      const label = t === other ? "other" : byteSetLabel(bytes);
      lines.push(`  b${s} -> b${t} [label=${dotString(label)}];`);
    }
    const e = d.envNext[s]!;
    if (e >= 0) lines.push(`  b${s} -> b${e} [label="env", style=dashed, color="#3a5a8c", fontcolor="#3a5a8c"];`);
    // Pushdown grammars: a call enters `start` and, when that machine ends, returns to `ret`.
    for (const [start, ret] of d.calls?.[s] ?? []) {
      lines.push(`  b${s} -> b${start} [label="call", style=bold, color="#b03a2e", fontcolor="#b03a2e"];`);
      lines.push(`  b${s} -> b${ret} [label=${dotString(`after b${start}…`)}, style=dotted, color="#b03a2e", fontcolor="#b03a2e"];`);
    }
  }
  lines.push("}");
  return lines.join("\n") + "\n";
}

/** The bytes allowed after `state` as a compact label, and whether the text may end there. */
export function allowedBytesLabel(engine: Engine, state: number): string {
  const ok: number[] = [];
  for (let b = 0; b < 256; b++) if (engine.feed(state, Uint8Array.of(b)) >= 0) ok.push(b);
  const end = (engine.flags(state) & ByteFlag.Accepting) !== 0;
  if (ok.length === 0) return end ? "the end of the text" : "nothing";
  return byteSetLabel(ok) + (end ? " or the end of the text" : "");
}

// ─────────────────────────── grammar rule graph ───────────────────────────

/**
 * A grammar's rule graph: one node per rule the author wrote (helpers made for `*`, `( … )`,
 * classes are folded into the rule they belong to), an arrow A → B when A uses B. Red, bold arrows
 * are the recursion cuts: each pending one counts 1 toward the nesting depth (--max-depth).
 */
export function ruleDot(cfg: Cfg, title: string): string {
  const owner = (r: number) => cfg.rules[r]!.owner;
  const sites = callSites(callGraph(cfg));
  const edges = new Map<string, { from: number; to: number; cut: boolean }>();
  for (const s of sites) {
    const from = owner(s.from);
    const to = owner(s.to);
    if (from === to && !s.cut && cfg.rules[s.to]!.origin !== "user") continue; // into the rule's own helpers
    const k = `${from}>${to}`;
    const e = edges.get(k);
    if (e) e.cut ||= s.cut;
    else edges.set(k, { from, to, cut: s.cut });
  }
  const users = cfg.rules.map((r, i) => i).filter((i) => owner(i) === i);
  const order = [...users].sort((a, b) => (a === cfg.start ? -1 : b === cfg.start ? 1 : a - b));
  const lines = header(`${title} (rules)`, [
    `  labelloc=t; label=${dotString(`${title}: rule graph (red: recursion that counts toward --max-depth)`)}; fontsize=14;`,
    `  start [shape=point, width=0.14, label="", tooltip="start"];`,
  ]);
  for (const r of order) lines.push(`  r${r} [label=${dotString(cfg.rules[r]!.name)}];`);
  lines.push(`  start -> r${cfg.start};`);
  const sorted = [...edges.values()].sort((a, b) => a.from - b.from || a.to - b.to);
  for (const e of sorted) {
    lines.push(`  r${e.from} -> r${e.to}${e.cut ? ` [color="#c0392b", penwidth=2, tooltip="nested: counts toward the nesting depth"]` : ""};`);
  }
  lines.push("}");
  return lines.join("\n") + "\n";
}

// ─────────────────────────────── SVG ───────────────────────────────

type GraphvizInstance = Awaited<ReturnType<typeof import("@hpcc-js/wasm-graphviz").Graphviz.load>>;
let graphviz: Promise<GraphvizInstance> | undefined;

/** Lays out DOT with Graphviz's `dot` engine (WebAssembly, in-process; loaded once and cached). */
export async function renderSvg(dot: string): Promise<string> {
  if (!graphviz) {
    graphviz = import("@hpcc-js/wasm-graphviz").then((m) => m.Graphviz.load());
    graphviz.catch(() => { graphviz = undefined; });
  }
  const gv = await graphviz;
  return gv.layout(dot, "svg", "dot");
}
