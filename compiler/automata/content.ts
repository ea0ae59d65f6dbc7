/**
 * @fileoverview Content constraints as small byte DFAs: what the text between a state's marker and
 * the next marker may be. `any` (free text), `ws` (only whitespace: before the first marker and
 * right after an environment's text), `oneOf` (seeds' :output-constrs — one of the strings with
 * whitespace around it) and `grammar` (:grammar / :grammar-text — a sentence of a context-free
 * grammar with whitespace around it, compiled to a DFA by grammar/regular.ts), `empty` (whitespace
 * only) and the tool contents (tagged unions over the tools list). Each is a
 * `ContentDfa` so the byte-level product treats them alike.
 */
import { DEFAULT_MAX_DEPTH, grammarToDfa, withSurroundingWhitespace, type GrammarDfa } from "../grammar/regular.js";
import { grammarToPda, type GrammarPda } from "../grammar/pda.js";
import type { Cfg, CfgRule } from "../grammar/cfg.js";
import { SpecError } from "../diagnostics.js";
import type { ContentIR, Span, ToolIR } from "../ir.js";

export interface ContentDfa {
  start: number;
  /** Next state, or -1 if the byte cannot appear here. */
  step(state: number, byte: number): number;
  accepting(state: number): boolean;
  /** Bytes the DFA tells apart from others (used to compute byte classes). */
  significant: number[];
  /**
   * Optional partition of the bytes: bytes with different values here may behave differently
   * (for DFAs that tell many bytes apart, e.g. a grammar's; `significant` singles bytes out).
   */
  classOf?: Uint8Array;
}

export const WS_BYTES = [0x20, 0x09, 0x0a, 0x0d];
const isWs = (b: number) => b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d;

export const anyContent: ContentDfa = { start: 0, step: () => 0, accepting: () => true, significant: [] };

/** Nothing at all is allowed (a :tool-args state before any tool was chosen). */
export const noContent: ContentDfa = { start: 0, step: () => -1, accepting: () => false, significant: [] };

export const wsContent: ContentDfa = {
  start: 0, step: (s, b) => (isWs(b) ? 0 : -1), accepting: () => true, significant: WS_BYTES,
};

/**
 * ws* (o1 | o2 | ...) ws*. NFA positions: 0 = leading ws, 1 = trailing ws, 2.. = trie nodes; the
 * DFA state is a set of positions (an option may itself contain whitespace, e.g. "Web Search"),
 * determinized lazily and memoized.
 */
export function oneOfContent(options: string[]): ContentDfa {
  const enc = new TextEncoder();
  const children: Map<number, number>[] = [new Map(), new Map(), new Map()];
  const terminal: boolean[] = [false, true, false];
  for (const o of options) {
    let n = 2;
    for (const b of enc.encode(o)) {
      let c = children[n]!.get(b);
      if (c === undefined) { c = children.length; children.push(new Map()); terminal.push(false); children[n]!.set(b, c); }
      n = c;
    }
    terminal[n] = true;
  }
  const nfaStep = (p: number, b: number, out: Set<number>) => {
    if (p === 0) {
      if (isWs(b)) out.add(0);
      const c = children[2]!.get(b);
      if (c !== undefined) out.add(c);
      return;
    }
    if (p === 1) { if (isWs(b)) out.add(1); return; }
    const c = children[p]!.get(b);
    if (c !== undefined) out.add(c);
    if (terminal[p] && isWs(b)) out.add(1);
  };
  const sets: number[][] = [[0]];
  const ids = new Map<string, number>([["0", 0]]);
  const memo = new Map<number, number>();
  const significant = new Set<number>(WS_BYTES);
  for (const o of options) for (const b of enc.encode(o)) significant.add(b);
  return {
    start: 0,
    step(s, b) {
      const mk = s * 256 + b;
      const hit = memo.get(mk);
      if (hit !== undefined) return hit;
      const out = new Set<number>();
      for (const p of sets[s]!) nfaStep(p, b, out);
      let id = -1;
      if (out.size) {
        const key = [...out].sort((x, y) => x - y).join(",");
        id = ids.get(key) ?? -1;
        if (id < 0) { id = sets.length; ids.set(key, id); sets.push([...out]); }
      }
      memo.set(mk, id);
      return id;
    },
    accepting: (s) => sets[s]!.some((p) => terminal[p]),
    significant: [...significant].sort((a, b) => a - b),
  };
}

/**
 * The union of several content DFAs that remembers which of them matched: `tag(state)` is the index
 * of the part whose sentence the text is, when the state accepts (the first such part), else -1.
 * A :tool-name or :tool-call state is the union of one part per tool, so the byte automaton knows
 * at the next marker which tool was called. States are sets of (part, part state), built lazily.
 */
export interface TaggedContentDfa extends ContentDfa { tag(state: number): number }

export function unionContent(parts: ContentDfa[]): TaggedContentDfa {
  const sets: number[][] = [parts.flatMap((p, i) => [i, p.start])];
  const ids = new Map<string, number>([[sets[0]!.join(","), 0]]);
  const memo = new Map<number, number>();
  const significant = [...new Set(parts.flatMap((p) => p.significant))].sort((a, b) => a - b);
  const partitions = parts.flatMap((p) => (p.classOf ? [p.classOf] : []));
  let classOf: Uint8Array | undefined;
  if (partitions.length) {
    classOf = new Uint8Array(256);
    const keys = new Map<string, number>();
    for (let b = 0; b < 256; b++) {
      const k = partitions.map((c) => c[b]).join(",");
      let id = keys.get(k);
      if (id === undefined) { id = keys.size; keys.set(k, id); }
      classOf[b] = id;
    }
  }
  const tag = (st: number): number => {
    const cur = sets[st]!;
    for (let i = 0; i < cur.length; i += 2) if (parts[cur[i]!]!.accepting(cur[i + 1]!)) return cur[i]!;
    return -1;
  };
  return {
    start: 0,
    step(st, b) {
      const mk = st * 256 + b;
      const hit = memo.get(mk);
      if (hit !== undefined) return hit;
      const cur = sets[st]!;
      const out: number[] = [];
      for (let i = 0; i < cur.length; i += 2) {
        const n = parts[cur[i]!]!.step(cur[i + 1]!, b);
        if (n >= 0) out.push(cur[i]!, n);
      }
      let id = -1;
      if (out.length) {
        const key = out.join(",");
        id = ids.get(key) ?? -1;
        if (id < 0) { id = sets.length; ids.set(key, id); sets.push(out); }
      }
      memo.set(mk, id);
      return id;
    },
    accepting: (st) => tag(st) >= 0,
    tag,
    significant,
    ...(classOf ? { classOf } : {}),
  };
}

/** Options of the grammar → DFA expansion (compile limits). */
export interface ContentOptions {
  /** Nesting depth for grammars whose state gives no :max-depth (default 8). */
  maxDepth?: number;
  /** Subset-state limit of one grammar's expansion. */
  maxGrammarStates?: number;
}

/** Grammar DFAs (ws* sentence ws*) per Cfg and depth: the byte product is built more than once. */
const grammarCache = new WeakMap<Cfg, Map<string, GrammarDfa>>();

export function grammarContentDfa(c: Extract<ContentIR, { kind: "grammar" }>, opts: ContentOptions = {}): GrammarDfa {
  const maxDepth = c.maxDepth ?? opts.maxDepth ?? DEFAULT_MAX_DEPTH;
  const key = `${maxDepth}|${opts.maxGrammarStates ?? ""}`;
  let byKey = grammarCache.get(c.cfg);
  if (!byKey) grammarCache.set(c.cfg, (byKey = new Map()));
  let d = byKey.get(key);
  if (!d) {
    const name = c.source.inline ? `(inline, in ${c.source.file})` : c.source.file;
    try {
      d = withSurroundingWhitespace(grammarToDfa(c.cfg, { maxDepth, maxStates: opts.maxGrammarStates, name }).dfa);
    } catch (e) {
      // Limits and an empty language at this depth are about the state's (:grammar ...): point there.
      if (e instanceof SpecError) (e as { span: Span | null }).span = c.span;
      throw e;
    }
    byKey.set(key, d);
  }
  return d;
}

/**
 * Does this content run on a stack (exact at any depth)? Grammar, JSON Schema and tool contents do
 * where neither the state (:max-depth) nor the compile options bound their nesting.
 */
export function isStackContent(c: ContentIR, opts: ContentOptions = {}): c is Extract<ContentIR, { kind: "grammar" | "toolArgs" | "toolCall" }> {
  return (c.kind === "grammar" || c.kind === "toolArgs" || c.kind === "toolCall") && c.maxDepth === undefined && opts.maxDepth === undefined;
}

const pdaCache = new WeakMap<Cfg, Map<string, GrammarPda>>();

/**
 * The pushdown automaton of a grammar as content, with the whitespace before it (ws* sentence; the
 * whitespace after it is the agent automaton's, automata/pushdown-bytes.ts). Errors point at `span`.
 */
export function contentPda(cfg: Cfg, name: string, span: Span, opts: ContentOptions = {}): GrammarPda {
  const key = `${opts.maxGrammarStates ?? ""}`;
  let byKey = pdaCache.get(cfg);
  if (!byKey) pdaCache.set(cfg, (byKey = new Map()));
  let pda = byKey.get(key);
  if (!pda) {
    try {
      pda = grammarToPda(leadingWhitespace(cfg), { maxStates: opts.maxGrammarStates, name }).pda;
    } catch (e) {
      if (e instanceof SpecError) (e as { span: Span | null }).span = span;
      throw e;
    }
    byKey.set(key, pda);
  }
  return pda;
}

/**
 * A :grammar / :json-schema content's pushdown automaton (contentPda), or null when the
 * grammar does not nest (no call edge: the DFA of grammarContentDfa is the same language, exactly).
 */
export function grammarContentPda(c: Extract<ContentIR, { kind: "grammar" }>, opts: ContentOptions = {}): GrammarPda | null {
  const pda = contentPda(c.cfg, c.source.inline ? `(inline, in ${c.source.file})` : c.source.file, c.span, opts);
  return pda.calls.some((cs) => cs.length > 0) ? pda : null;
}

/** The grammar with a new start rule: JSON-style whitespace, then the old start rule. */
function leadingWhitespace(cfg: Cfg): Cfg {
  const names = new Set(cfg.rules.map((r) => r.name));
  let base = "specc-content";
  while (names.has(base) || names.has(`${base}-ws`)) base += "-x";
  const ws = cfg.rules.length;
  const top = ws + 1;
  const wsRule: CfgRule = { name: `${base}-ws`, alts: [[{ kind: "bytes", ranges: [[0x09, 0x0a], [0x0d, 0x0d], [0x20, 0x20]] }, { kind: "rule", rule: ws }], []], origin: "repeat", owner: ws, span: null };
  const topRule: CfgRule = { name: base, alts: [[{ kind: "rule", rule: ws }, { kind: "rule", rule: cfg.start }]], origin: "user", owner: top, span: null };
  return { rules: [...cfg.rules, wsRule, topRule], start: top, warnings: [] };
}

/** A table-driven DFA as a ContentDfa. */
export function tableContent(d: GrammarDfa): ContentDfa {
  const { trans, classMap, nClasses, accepting } = d;
  return {
    start: d.initial,
    step: (s, b) => trans[s * nClasses + classMap[b]!]!,
    accepting: (s) => accepting[s] === 1,
    significant: [],
    classOf: classMap,
  };
}

/** A tool's grammar (arguments or call) as content, with whitespace around it. */
export function toolGrammarContent(cfg: Cfg, name: string, maxDepth: number | undefined, span: Span, opts: ContentOptions = {}): ContentDfa {
  return tableContent(grammarContentDfa({ kind: "grammar", cfg, source: { file: name, inline: false, start: "root" }, ...(maxDepth === undefined ? {} : { maxDepth }), span }, opts));
}

/**
 * The content DFA of a state. :tool-name and :tool-call states get a `TaggedContentDfa` over the
 * spec's tools; :tool-args has no single DFA (it depends on the tool chosen: see `toolArgsContents`).
 */
export function contentDfa(c: ContentIR, opts: ContentOptions = {}, tools: readonly ToolIR[] = []): ContentDfa {
  switch (c.kind) {
    case "any": return anyContent;
    case "empty": return wsContent;
    case "oneOf": return oneOfContent(c.options);
    case "grammar": return tableContent(grammarContentDfa(c, opts));
    case "toolName": return unionContent(tools.map((t) => oneOfContent([t.name])));
    case "toolCall": return unionContent(tools.map((t) => toolGrammarContent(t.call, `the call of tool ${t.name}`, c.maxDepth, c.span, opts)));
    case "toolArgs": return noContent;
  }
}

/** The content of a :tool-args state for each tool (by index). */
export function toolArgsContents(c: Extract<ContentIR, { kind: "toolArgs" }>, tools: readonly ToolIR[], opts: ContentOptions = {}): ContentDfa[] {
  return tools.map((t) => toolGrammarContent(t.args, `the arguments of tool ${t.name}`, c.maxDepth, c.span, opts));
}
