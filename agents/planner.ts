/**
 * @fileoverview The Formal-LLM planner (seed 002, §4.3–4.4): a plan is a sentence of a grammar,
 * derived leftmost from the start symbol with a stack of pending symbols, as the paper's pushdown
 * automaton does. Where the grammar leaves a choice, the planner asks a chooser (an LLM, a script,
 * a scorer) to pick one of a NUMBERED list of natural-language options built from the grammar;
 * each tool may be used at most `toolLimit` times; on a dead end the planner backtracks to the most
 * recent choice with unexplored options, drops the branch that failed and asks again. It finds a
 * plan whenever one exists (within `maxSteps` derivation steps), and returns null when none does.
 *
 *   const cfg = parseGrammar(readFileSync("examples/grammars/openagi.gbnf", "utf8"), "openagi.gbnf");
 *   const r = await plan({ cfg, task: "Given blurry gray-scale images, …", chooser: scriptedChooser([8, 0, 4, 0, 4]) });
 *   r?.plan   // "Visual Question Answering(Colorization(i), Image Classification(i))"
 *   r?.steps  // ["1. Use Colorization on i", "2. Use Image Classification on i", "3. Use Visual …"]
 *   // null when no plan exists; r.choices, r.backtracks, r.tree, r.trace tell how it was found
 *
 * Definitions (each one is a knob of `plan()`):
 *
 *  - A LEAF is a maximal run of literal bytes inside one alternative of the CFG (the CFG's terminals
 *    are byte sets; a string literal "Colorization" lowers to a run of one-byte sets). A TOOL is a
 *    leaf whose trimmed text `isTool(text)` accepts. The default (`defaultIsTool`) takes leaves that
 *    are words: letters, spaces, hyphens, slashes, apostrophes and '&', at least two letters, one
 *    trailing '.', '!' or '?' allowed — "Colorization", "Eating breakfast.\n" — and not "i", "(",
 *    ", " or "10:00 - 11:00 ". Uses are counted per trimmed text, so "House cleaning." in two rules
 *    is one tool. Text supplied by `fill` is not scanned for tools.
 *  - A DECISION is one step of the derivation: a rule expanded with one of its alternatives, one
 *    byte picked out of a byte set with several bytes ([A-Z]), or a rule's text supplied by `fill`.
 *    `maxSteps` bounds the decisions of one plan, so the search is finite on any grammar.
 *  - An OPTION is what a chooser sees: an alternative of the rule on top of the stack, FLATTENED
 *    the way the paper's prompts are ("we directly use the tool name instead of the category
 *    name", A.3): a leading reference to a rule whose alternatives are all literals (A ::=
 *    "Colorization" | …), to a parenthesized group or to an optional part (`x?`, `x*`) is expanded
 *    in place, so `I ::= A "(" I ")" |
 *    C "(" T ")" | "i"` offers Colorization, Super-Resolution, Image Denoising, Image Deblurring,
 *    Text-to-Image Generation and i. One option makes at most one such choice among literals; the
 *    next one is a question of its own. Its text is `describe.option`'s, else the tools it uses,
 *    else the alternative rendered with rule names in words.
 *  - A CHOICE POINT is a rule with several options (or a byte set with several bytes) on top of
 *    the stack; a rule with one is expanded without asking and is not a choice point.
 *  - An option is FEASIBLE when taking it does not exceed a tool limit and (lookahead "local", the
 *    default) every symbol then on the stack can still be derived without the exhausted tools,
 *    within the steps left (a memoized least-cost fixpoint per set of exhausted tools: a lower
 *    bound, so pruning never removes an option that could complete). Tools shared between two
 *    pending symbols can still dead-end; backtracking handles those. Lookahead "exact" runs a
 *    memoized search for a whole completion instead (no dead end is ever offered; costs more);
 *    "none" offers every option that does not exceed a limit at once, as the paper's PDA does.
 *  - A choice point with one FEASIBLE option is taken without asking (the paper asks "in
 *    situations where multiple viable options are available"); it is recorded with `auto: true`.
 *
 * Budgets and errors: PlannerLimitError (a typed error naming the limit) when the search visits
 * more than `maxNodes` states; PlannerError for a chooser that answers out of range or a `fill`
 * text the rule does not derive. "No plan" is not an error: `plan()` resolves to null.
 *
 * Neighbours: compiler/grammar (parseGrammar, recognize), agents/planner-choosers.ts (scripted,
 * random, LLM and log-probability choosers), cli/plan.ts (`specc plan`), examples/planner/*.ts,
 * tests/agents/planner.test.ts.
 */
import { recognize, type ByteSym, type Cfg, type Sym } from "../compiler/grammar/index.js";

// ───────────────────────────── public types ─────────────────────────────

/** Picks one of `ctx.options` and returns its 0-based index. */
export type Chooser = (ctx: ChoiceContext) => number | Promise<number>;

/** What a chooser sees at a choice point. */
export interface ChoiceContext {
  task: string;
  /** The rule being expanded (the owner rule's name for helper rules and byte choices). */
  rule: string;
  /** "the input image of \"Super-Resolution\"": what the options produce. */
  target: string;
  /** "To get the input image of \"Super-Resolution\", we have the following choices:" */
  question: string;
  /** Feasible options, in grammar order (their 1-based number is index + 1). */
  options: PlanOption[];
  /** The progress texts of the choices taken so far, in derivation order. */
  progress: string[];
  /** The plan text derived so far. */
  planSoFar: string;
  /** Options removed from this choice point by backtracking (their texts). */
  eliminated: string[];
  /** 0-based number of this choice point on the current path. */
  depth: number;
  /** The prompt to show an LLM (from `PlanOptions.prompt`, else `formatPrompt`). */
  prompt: string;
}

export interface PlanOption {
  /** The natural-language text shown in the numbered list. */
  text: string;
  /** Tools this option uses (display text). */
  tools: string[];
  /** Details for describe hooks. */
  info: OptionInfo;
}

export interface OptionInfo {
  /** The rule on top of the stack (for a byte choice, the rule the byte set belongs to). */
  rule: string;
  /** The user rule that `rule` belongs to (itself for user rules). */
  owner: string;
  /** The alternative chosen in `rule`, then in each flattened rule (`rules[i]` gets `alts[i]`). */
  alts: number[];
  rules: string[];
  /** For a byte choice: the byte. */
  byte?: number;
  /** The alternative rendered: literals as text, rules as words. */
  rendered: string;
  /** Tools used by the option (trimmed leaf text, before `describe.text`). */
  tools: string[];
  /** The default text (before `describe.option`). */
  label: string;
}

export interface TargetInfo {
  rule: string;
  owner: string;
  /** The option that put this symbol on the stack (null for the start symbol). */
  parent: { text: string; tool: string | null } | null;
  /** The default target text. */
  text: string;
  byteChoice: boolean;
  /** The rules of the enclosing derivation-tree nodes, nearest first (helper rules included). */
  ancestors: string[];
}

/** Natural-language overrides, all optional. */
export interface Describe {
  /** Words for what a rule produces: { T: "text", I: "input image" }. Default: the name in words. */
  rule?: Record<string, string>;
  /** Words for a leaf (trimmed text): { i: "the input image" }. Used in options and steps. */
  text?: Record<string, string>;
  /** An option's text: by "rule/alt[/alt…]" (the `alts` path), or a function; undefined = default. */
  option?: Record<string, string> | ((o: OptionInfo) => string | undefined);
  /** How a taken option is listed under "Current Progress" (default: its text; "" leaves it out). */
  progress?: (o: OptionInfo, text: string) => string | undefined;
  /** What the options produce, for the question line. */
  target?: (t: TargetInfo) => string | undefined;
  /** The steps of a finished plan (unnumbered; the planner numbers them). */
  steps?: (tree: PlanNode, plan: string) => string[];
}

export type FillValue = string | readonly string[] | ((info: { rule: string; occurrence: number; planSoFar: string }) => string);

export interface PlanOptions {
  cfg: Cfg;
  task: string;
  chooser: Chooser;
  /** Uses allowed per tool (default 1); a function gives per-tool limits. */
  toolLimit?: number | ((tool: string) => number);
  /** Which leaves are tools (gets the trimmed leaf text). Default `defaultIsTool`. */
  isTool?: (text: string) => boolean;
  /** Most decisions in one plan (default 1000). */
  maxSteps?: number;
  /** Most search states visited, across backtracking and lookahead (default 200 000). */
  maxNodes?: number;
  /** How options are pruned (default "local"; see the file comment). */
  lookahead?: "none" | "local" | "exact";
  describe?: Describe;
  /** Text for rules the planner should not expand (free text such as a company name): by rule name, a
   *  string, a list (the i-th occurrence takes the i-th item, the last repeats) or a function. */
  fill?: Record<string, FillValue>;
  /** The prompt text for the chooser (default `formatPrompt(ctx)`). */
  prompt?: (ctx: Omit<ChoiceContext, "prompt">) => string;
  /** "tools": one step per tool use, inputs before outputs; "lines": the plan's lines. Default:
   *  "tools" when the plan uses a tool, else "lines". Ignored when `describe.steps` is given. */
  stepStyle?: "tools" | "lines";
  /** Observes the search as it happens. */
  onEvent?: (e: PlanEvent) => void;
}

export type PlanNode =
  | { kind: "rule"; rule: string; alt: number; children: PlanNode[] }
  | { kind: "text"; text: string; tool: boolean }
  | { kind: "fill"; rule: string; text: string };

export interface ChoiceRecord {
  rule: string;
  question: string;
  /** The option texts offered (after earlier eliminations). */
  options: string[];
  /** 0-based index into `options`. */
  chosen: number;
  text: string;
  /** true when only one option was feasible (nobody was asked). */
  auto: boolean;
  /** Option texts removed here by backtracking before this one was taken. */
  eliminated: string[];
}

export type PlanEvent =
  | { kind: "choice"; depth: number; rule: string; question: string; options: string[]; chosen: number; auto: boolean; prompt?: string }
  | { kind: "fill"; rule: string; text: string }
  | { kind: "dead-end"; depth: number; planSoFar: string; reason: string }
  | { kind: "backtrack"; toDepth: number; eliminated: string; remaining: number }
  | { kind: "done"; found: boolean; nodes: number; backtracks: number };

export interface PlanResult {
  /** The derived text: a sentence of the grammar. */
  plan: string;
  /** The derivation tree (helper rules from `*`, `+`, `?` and groups spliced into their parents). */
  tree: PlanNode;
  /** Numbered natural-language steps: "1. Use Colorization on the input image". */
  steps: string[];
  /** The choice points of the final path, in order. */
  choices: ChoiceRecord[];
  /** Dead ends resolved by backtracking. */
  backtracks: number;
  toolUses: Record<string, number>;
  trace: PlanEvent[];
  stats: { nodes: number; decisions: number; chooserCalls: number; ms: number };
}

export class PlannerError extends Error {
  constructor(message: string, readonly code: "chooser" | "fill" | "input" | "limit") {
    super(message);
    this.name = "PlannerError";
  }
}

/** A search budget ran out; `limit` names the option to raise. */
export class PlannerLimitError extends PlannerError {
  constructor(readonly limit: "maxNodes", readonly value: number, detail: string) {
    super(`planner limit ${limit} = ${value} exceeded: ${detail} (raise ${limit} or use a more constrained grammar)`, "limit");
    this.name = "PlannerLimitError";
  }
}

// ───────────────────────────── defaults ─────────────────────────────

/** Words (letters, spaces, - / ' &), at least two letters, one optional final . ! or ?. */
export function defaultIsTool(text: string): boolean {
  const t = text.trim().replace(/[.!?]$/, "");
  if (!/^\p{L}[\p{L}\p{M}' \-/&]*$/u.test(t)) return false;
  return (t.match(/\p{L}/gu)?.length ?? 0) >= 2;
}

/** "raw-beef-slices" → "raw beef slices", "checkSeller" → "check seller". */
export function ruleWords(name: string): string {
  return name.replace(/([a-z])([A-Z])/g, "$1 $2").replace(/[-_]+/g, " ").trim();
}

export interface PromptFormat {
  /** "forward" (default): Step 1, Step 2, …, Step k: ?. "backward": the paper's OpenAGI style for
   *  plans derived from the final output: Step n: …; Step (n-1): …; …; Step (n-k): ? */
  numbering?: "forward" | "backward";
  /** Header line; {task} is replaced. */
  header?: string;
  /** Instruction after the options. */
  instruction?: string;
  /** The answer cue on the last line ("" for none). */
  cue?: string;
}

/**
 * The paper's Formal-LLM prompt (A.3): the task, the current progress, the question, the numbered
 * feasible choices and the answer instruction, then "Your choice:".
 */
export function formatPrompt(ctx: Omit<ChoiceContext, "prompt">, f: PromptFormat = {}): string {
  const task = /^["“].*["”]$/s.test(ctx.task) ? ctx.task : `"${ctx.task}"`;
  const lines = [(f.header ?? "You will help me generate a plan for the problem: {task} by answering a series of my questions.").replace("{task}", task)];
  lines.push("Current Progress:");
  const n = ctx.progress.length;
  if (f.numbering === "backward") {
    ctx.progress.forEach((p, i) => lines.push(`Step ${i === 0 ? "n" : `(n-${i})`}: ${p};`));
    lines.push(`Step ${n === 0 ? "n" : `(n-${n})`}: ?`);
  } else {
    ctx.progress.forEach((p, i) => lines.push(`Step ${i + 1}: ${p}`));
    lines.push(`Step ${n + 1}: ?`);
  }
  lines.push(ctx.question);
  ctx.options.forEach((o, i) => lines.push(`${i + 1}: ${o.text.replace(/[.,;]+$/, "")}${i === ctx.options.length - 1 ? "." : ","}`));
  lines.push(f.instruction ?? "Your answer should be only an integer, referring to the desired choice.");
  const cue = f.cue ?? "Your choice:";
  if (cue) lines.push(cue);
  return lines.join("\n");
}

// ───────────────────────────── grammar preparation ─────────────────────────────

interface Run { start: number; end: number; bytes: Uint8Array; text: string; tool: number }

interface Template {
  /** rules[i] is expanded with alts[i], in leftmost order. */
  rules: number[];
  alts: number[];
  tools: number[];
  rendered: string;
}

const dec = new TextDecoder();
const isSingle = (s: Sym): boolean => s.kind === "bytes" && s.ranges.length === 1 && s.ranges[0]![0] === s.ranges[0]![1];

class Prepared {
  readonly nR: number;
  readonly runs: Run[][][];
  readonly altTools: number[][][];
  readonly toolNames: string[] = [];
  readonly toolIds = new Map<string, number>();
  readonly limits: number[] = [];
  readonly lexical: boolean[];
  readonly filled: boolean[];
  readonly byteIds = new Map<ByteSym, number>();
  private readonly templateCache = new Map<number, Template[]>();
  private readonly costCache = new Map<string, Float64Array>();
  private readonly ruleCfgs = new Map<number, Cfg>();

  constructor(readonly cfg: Cfg, isTool: (t: string) => boolean, limit: number | ((t: string) => number),
    fill: Record<string, FillValue>, readonly describe: Describe) {
    const rules = cfg.rules;
    this.nR = rules.length;
    const names = new Set(rules.map((r) => r.name));
    for (const k of Object.keys(fill)) if (!names.has(k)) throw new PlannerError(`fill: the grammar has no rule '${k}'`, "input");
    this.filled = rules.map((r) => Object.prototype.hasOwnProperty.call(fill, r.name));
    this.runs = rules.map((r) => r.alts.map((alt) => {
      const out: Run[] = [];
      let i = 0;
      while (i < alt.length) {
        if (!isSingle(alt[i]!)) { i++; continue; }
        const start = i;
        while (i < alt.length && isSingle(alt[i]!)) i++;
        const bytes = Uint8Array.from(alt.slice(start, i).map((s) => (s as ByteSym).ranges[0]![0]));
        const text = dec.decode(bytes);
        const key = text.trim();
        let tool = -1;
        if (key && isTool(key)) {
          tool = this.toolIds.get(key) ?? -1;
          if (tool < 0) {
            tool = this.toolNames.length;
            this.toolNames.push(key);
            this.toolIds.set(key, tool);
            const l = typeof limit === "function" ? limit(key) : limit;
            this.limits.push(Number.isFinite(l) ? Math.max(0, Math.floor(l)) : Number.MAX_SAFE_INTEGER);
          }
        }
        out.push({ start, end: i, bytes, text, tool });
      }
      return out;
    }));
    this.altTools = this.runs.map((alts) => alts.map((runs) => runs.filter((r) => r.tool >= 0).map((r) => r.tool)));
    this.lexical = rules.map((r, i) => !this.filled[i] && r.alts.length > 0 && r.alts.every((a) => a.length > 0 && a.every(isSingle)));
    for (const r of rules) for (const a of r.alts) for (const s of a) if (s.kind === "bytes" && !this.byteIds.has(s)) this.byteIds.set(s, this.nR + this.byteIds.size);
  }

  name(r: number): string { return this.cfg.rules[r]!.name; }
  owner(r: number): number { return this.cfg.rules[r]!.owner; }
  words(r: number): string {
    const d = this.describe.rule;
    return d?.[this.name(r)] ?? d?.[this.name(this.owner(r))] ?? ruleWords(this.name(this.owner(r)));
  }
  leafText(text: string): string {
    const t = text.trim();
    return this.describe.text?.[t] ?? t;
  }

  /** Expanded in place inside an option: literal choices, groups, and `x?`/`x*` helpers (x | ε). */
  flattenable(r: number): boolean {
    const rule = this.cfg.rules[r]!;
    if (this.filled[r]) return false;
    return this.lexical[r]! || rule.origin === "group" || (rule.origin === "repeat" && rule.alts.length === 2 && rule.alts.some((a) => a.length === 0));
  }

  /** The options of rule r before feasibility: its alternatives, leading lexical/group rules expanded. */
  templates(r: number): Template[] {
    let t = this.templateCache.get(r);
    if (t) return t;
    t = [];
    const rules = this.cfg.rules;
    const MAX = 64;
    // `picked`: a lexical rule with several alternatives was expanded already; an option names one
    // tool choice (the paper's "tool name instead of the category"), so later ones are asked separately.
    const expand = (path: { rules: number[]; alts: number[] }, seq: readonly Sym[], emitted: string, depth: number, picked: boolean, out: Template[]): void => {
      let k = 0;
      while (k < seq.length && isSingle(seq[k]!)) k++;
      const lead = seq[k];
      const prefix = emitted + dec.decode(Uint8Array.from(seq.slice(0, k).map((s) => (s as ByteSym).ranges[0]![0])));
      const branching = lead?.kind === "rule" && this.lexical[lead.rule]! && rules[lead.rule]!.alts.length > 1;
      if (lead && lead.kind === "rule" && this.flattenable(lead.rule) && depth < 6 && !(branching && picked)) {
        const q = lead.rule;
        const sub: Template[] = [];
        rules[q]!.alts.forEach((alt, b) => expand({ rules: [...path.rules, q], alts: [...path.alts, b] }, [...alt, ...seq.slice(k + 1)], prefix, depth + 1, picked || branching, sub));
        if (out.length + sub.length <= MAX || rules[q]!.alts.length === 1) { out.push(...sub); return; }
      }
      const tools: number[] = [];
      path.rules.forEach((rr, i) => tools.push(...this.altTools[rr]![path.alts[i]!]!));
      out.push({ rules: path.rules, alts: path.alts, tools, rendered: this.render(prefix, seq.slice(k)) });
    };
    rules[r]!.alts.forEach((alt, a) => expand({ rules: [r], alts: [a] }, alt, "", 0, this.lexical[r]! && rules[r]!.alts.length > 1, t!));
    this.templateCache.set(r, t);
    return t;
  }

  /** Emitted text, then the pending symbols: literal runs as text, rules as words. */
  private render(prefix: string, seq: readonly Sym[]): string {
    const parts: string[] = [];
    const lit = (s: string) => { const t = s.trim(); parts.push(t ? this.describe.text?.[t] ?? s : s); };
    lit(prefix);
    let i = 0;
    while (i < seq.length) {
      const s = seq[i]!;
      if (isSingle(s)) {
        const st = i;
        while (i < seq.length && isSingle(seq[i]!)) i++;
        lit(dec.decode(Uint8Array.from(seq.slice(st, i).map((x) => (x as ByteSym).ranges[0]![0]))));
        continue;
      }
      if (s.kind === "bytes") parts.push("…");
      else if (this.lexical[s.rule] && this.cfg.rules[s.rule]!.alts.length === 1) lit(dec.decode(Uint8Array.from(this.cfg.rules[s.rule]!.alts[0]!.map((x) => (x as ByteSym).ranges[0]![0]))));
      else parts.push(` ${this.words(s.rule)} `);
      i++;
    }
    return parts.join("").replace(/\s+/g, " ").trim();
  }

  /** Least decisions to derive each rule without the exhausted tools (Infinity: impossible). */
  costs(used: Int32Array): Float64Array {
    let key = "";
    for (let t = 0; t < used.length; t++) key += used[t]! >= this.limits[t]! ? "1" : "0";
    let c = this.costCache.get(key);
    if (c) return c;
    c = new Float64Array(this.nR).fill(Infinity);
    const rules = this.cfg.rules;
    const banned = (r: number, a: number) => this.altTools[r]![a]!.some((t) => key[t] === "1");
    let changed = true;
    while (changed) {
      changed = false;
      for (let r = 0; r < this.nR; r++) {
        if (this.filled[r]) { if (c[r] !== 1) { c[r] = 1; changed = true; } continue; }
        let best = c[r]!;
        rules[r]!.alts.forEach((alt, a) => {
          if (banned(r, a)) return;
          let s = 1;
          for (const sym of alt) {
            s += this.symCost(sym, c!);
            if (s >= best) return;
          }
          best = s;
        });
        if (best < c[r]!) { c[r] = best; changed = true; }
      }
    }
    this.costCache.set(key, c);
    return c;
  }

  symCost(s: Sym, c: Float64Array): number {
    if (s.kind === "rule") return c[s.rule]!;
    if (s.ranges.length === 0) return Infinity;
    return isSingle(s) ? 0 : 1;
  }

  /** A Cfg whose start is rule r (for checking `fill` texts with the Earley recognizer). */
  ruleCfg(r: number): Cfg {
    let c = this.ruleCfgs.get(r);
    if (!c) this.ruleCfgs.set(r, (c = { rules: this.cfg.rules, start: r, warnings: [] }));
    return c;
  }
}

// ───────────────────────────── search state ─────────────────────────────

interface Parent { text: string; tool: string | null }
/** A pending symbol, the option that pushed it (for the question) and the rule whose alternative holds it (-1: the start). */
interface Stack { readonly sym: Sym; readonly parent: Parent | null; readonly from: number; readonly up: Stack | null; readonly next: Stack | null }
interface List<T> { readonly head: T; readonly tail: List<T> | null }
type Decision = { kind: "alt"; rule: number; alt: number } | { kind: "byte"; byte: number } | { kind: "fill"; rule: number; bytes: Uint8Array };

interface State {
  readonly stack: Stack | null;
  readonly used: Int32Array;
  readonly steps: number;
  readonly decisions: List<Decision> | null;
  readonly out: List<Uint8Array> | null;
  readonly progress: List<string> | null;
}

interface Opt {
  text: string;
  progressText: string;
  info: OptionInfo;
  tools: string[];
  state: State;
}

function toArray<T>(l: List<T> | null): T[] {
  const out: T[] = [];
  for (let x = l; x; x = x.tail) out.push(x.head);
  return out.reverse();
}

function bytesOf(l: List<Uint8Array> | null): Uint8Array {
  const parts = toArray(l);
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) { out.set(p, o); o += p.length; }
  return out;
}

function byteLabel(b: number): string {
  return b >= 0x20 && b < 0x7f ? JSON.stringify(String.fromCharCode(b)) : `byte 0x${b.toString(16).padStart(2, "0")}`;
}

// ───────────────────────────── the planner ─────────────────────────────

/**
 * Derives a plan from `cfg`'s start symbol, asking `chooser` at every choice point with several
 * feasible options and backtracking out of dead ends. Resolves to null when no plan exists.
 */
export async function plan(o: PlanOptions): Promise<PlanResult | null> {
  const t0 = performance.now();
  const describe = o.describe ?? {};
  const fill = o.fill ?? {};
  const P = new Prepared(o.cfg, o.isTool ?? defaultIsTool, o.toolLimit ?? 1, fill, describe);
  const maxSteps = o.maxSteps ?? 1000;
  const maxNodes = o.maxNodes ?? 200_000;
  const lookahead = o.lookahead ?? "local";
  const rules = o.cfg.rules;
  const trace: PlanEvent[] = [];
  const emit = (e: PlanEvent) => { trace.push(e); o.onEvent?.(e); };
  let nodes = 0;
  let chooserCalls = 0;
  const visit = (what: string) => {
    if (++nodes > maxNodes) throw new PlannerLimitError("maxNodes", maxNodes, `${what} after ${maxNodes} search states`);
  };

  /** Pops literal bytes off the top of the stack into the output. */
  const flush = (s: State): State => {
    let st = s.stack;
    if (!st || !isSingle(st.sym)) return s;
    const bytes: number[] = [];
    while (st && isSingle(st.sym)) { bytes.push((st.sym as ByteSym).ranges[0]![0]); st = st.next; }
    return { ...s, stack: st, out: { head: Uint8Array.from(bytes), tail: s.out } };
  };

  const push = (syms: readonly Sym[], parent: Parent | null, from: number, up: Stack, below: Stack | null): Stack | null => {
    let st = below;
    for (let i = syms.length - 1; i >= 0; i--) st = { sym: syms[i]!, parent, from, up, next: st };
    return st;
  };

  /** Applies a template to a flushed state whose top is rule tpl.rules[0]; null if a tool limit breaks. */
  const applyTemplate = (s: State, tpl: Template, parent: Parent): State | null => {
    let used = s.used;
    if (tpl.tools.length) {
      used = Int32Array.from(used);
      for (const t of tpl.tools) if (++used[t]! > P.limits[t]!) return null;
    }
    let cur: State = { ...s, used };
    for (let i = 0; i < tpl.rules.length; i++) {
      cur = flush(cur);
      const top = cur.stack!;
      const r = tpl.rules[i]!;
      if (top.sym.kind !== "rule" || top.sym.rule !== r) throw new Error(`internal: template step ${i} expects rule ${P.name(r)} on top`);
      const alt = tpl.alts[i]!;
      cur = { ...cur, stack: push(rules[r]!.alts[alt]!, parent, r, top, top.next), steps: cur.steps + 1, decisions: { head: { kind: "alt", rule: r, alt }, tail: cur.decisions } };
    }
    return cur;
  };

  /** Necessary condition for completion: every pending symbol derivable, within the steps left. */
  const locallyFeasible = (s: State): boolean => {
    if (s.steps > maxSteps) return false;
    if (lookahead === "none") return true;
    const c = P.costs(s.used);
    let left = maxSteps - s.steps;
    for (let st = s.stack; st; st = st.next) {
      left -= P.symCost(st.sym, c);
      if (!(left >= 0)) return false;
    }
    return true;
  };

  // Exact lookahead: memoized search for a completion. Keyed by the stack's symbols and the tool counts;
  // a failure with k steps left also fails with fewer, a success with k steps left also succeeds with more.
  const memo = new Map<string, { fail: number; ok: number }>();
  const symId = (x: Sym) => (x.kind === "rule" ? x.rule : P.byteIds.get(x) ?? -1);
  const completable = (s0: State): boolean => {
    const s = flush(s0);
    if (!s.stack) return true;
    if (s.steps > maxSteps) return false;
    visit("exact lookahead");
    let key = "";
    for (let st: Stack | null = s.stack; st; st = st.next) key += symId(st.sym) + ",";
    key += "|" + s.used.join(",");
    const left = maxSteps - s.steps;
    const m = memo.get(key);
    if (m && left <= m.fail) return false;
    if (m && left >= m.ok) return true;
    let ok = false;
    for (const next of successors(s)) if (locallyFeasible(next) && completable(next)) { ok = true; break; }
    const e = memo.get(key) ?? { fail: -1, ok: Infinity };
    if (ok) e.ok = Math.min(e.ok, left); else e.fail = Math.max(e.fail, left);
    memo.set(key, e);
    return ok;
  };

  /** Every next state of a flushed, non-empty state (templates or bytes or a fill), unpruned. */
  function* successors(s: State): Generator<State> {
    const top = s.stack!;
    const sym = top.sym;
    if (sym.kind === "bytes") {
      for (const [lo, hi] of sym.ranges) for (let b = lo; b <= hi; b++) {
        yield { ...s, stack: top.next, steps: s.steps + 1, out: { head: Uint8Array.of(b), tail: s.out }, decisions: { head: { kind: "byte", byte: b }, tail: s.decisions } };
      }
      return;
    }
    if (P.filled[sym.rule]) {
      yield { ...s, stack: top.next, steps: s.steps + 1 };
      return;
    }
    for (const tpl of P.templates(sym.rule)) {
      const n = applyTemplate(s, tpl, { text: "", tool: null });
      if (n) yield n;
    }
  }

  const optionText = (info: OptionInfo): string => {
    const d = describe.option;
    const custom = typeof d === "function" ? d(info) : d?.[`${info.rule}/${info.alts.join("/")}`];
    return custom ?? info.label;
  };

  /** The feasible options at a flushed state whose top is a rule (not filled) or a byte set. */
  const options = (s: State): Opt[] => {
    const top = s.stack!;
    const sym = top.sym;
    const out: Opt[] = [];
    const ok = (n: State) => locallyFeasible(n) && (lookahead !== "exact" || completable(n));
    if (sym.kind === "bytes") {
      const owner = top.from >= 0 ? P.name(P.owner(top.from)) : "";
      for (const [lo, hi] of sym.ranges) for (let b = lo; b <= hi; b++) {
        const n: State = { ...s, stack: top.next, steps: s.steps + 1, out: { head: Uint8Array.of(b), tail: s.out }, decisions: { head: { kind: "byte", byte: b }, tail: s.decisions } };
        if (!ok(n)) continue;
        const label = byteLabel(b);
        const info: OptionInfo = { rule: owner, owner, alts: [], rules: [], byte: b, rendered: String.fromCharCode(b), tools: [], label };
        const text = optionText(info);
        out.push({ text, progressText: text, info, tools: [], state: n });
      }
      return out;
    }
    const r = sym.rule;
    const structural = P.templates(r).length > 1;
    for (const tpl of P.templates(r)) {
      const tools = tpl.tools.map((t) => P.toolNames[t]!);
      const shown = tools.map((t) => P.leafText(t));
      const label = shown.length ? shown.join(", ") : tpl.rendered ? P.leafText(tpl.rendered) : "(nothing)";
      const info: OptionInfo = { rule: P.name(r), owner: P.name(P.owner(r)), alts: tpl.alts, rules: tpl.rules.map((x) => P.name(x)), rendered: tpl.rendered, tools, label };
      const text = optionText(info);
      // Symbols pushed by a real choice remember it (for the question); otherwise the parent's is inherited.
      const n = applyTemplate(s, tpl, structural ? { text, tool: shown[0] ?? null } : top.parent ?? { text: "", tool: null });
      if (!n || !ok(n)) continue;
      const progressText = describe.progress?.(info, text) ?? text;
      out.push({ text, progressText, info, tools: shown, state: n });
    }
    return out;
  };

  const target = (top: Stack): { rule: string; target: string } => {
    const sym = top.sym;
    const byteChoice = sym.kind === "bytes";
    const r = sym.kind === "rule" ? sym.rule : top.from;
    const rule = r >= 0 ? P.name(r) : "";
    const owner = r >= 0 ? P.name(P.owner(r)) : "";
    const subject = r >= 0 ? P.words(r) : "plan";
    const parent = top.parent && top.parent.text ? top.parent : null;
    const text = `the ${byteChoice ? `next character of the ${subject}` : subject}${parent ? ` of "${parent.tool ?? parent.text}"` : ""}`;
    const ancestors: string[] = [];
    for (let u: Stack | null = top; u; u = u.up) if (u.from >= 0) ancestors.push(P.name(u.from));
    const custom = describe.target?.({ rule, owner, parent, text, byteChoice, ancestors });
    return { rule: owner || rule, target: custom ?? text };
  };

  // ── the outer search: an explicit DFS whose frames are the choice points of the current path ──
  interface Frame { state: State; opts: Opt[]; current: number; eliminated: string[]; rule: string; target: string; question: string; record?: ChoiceRecord }
  const frames: Frame[] = [];
  let backtracks = 0;
  let state: State = {
    stack: { sym: { kind: "rule", rule: o.cfg.start }, parent: null, from: -1, up: null, next: null },
    used: new Int32Array(P.toolNames.length), steps: 0, decisions: null, out: null, progress: null,
  };

  const ask = async (f: Frame): Promise<void> => {
    const planSoFar = dec.decode(bytesOf(f.state.out));
    let idx = 0;
    let auto = true;
    let prompt: string | undefined;
    if (f.opts.length > 1) {
      auto = false;
      const base: Omit<ChoiceContext, "prompt"> = {
        task: o.task, rule: f.rule, target: f.target, question: f.question,
        options: f.opts.map((x) => ({ text: x.text, tools: x.tools, info: x.info })),
        progress: toArray(f.state.progress), planSoFar, eliminated: [...f.eliminated], depth: frames.indexOf(f),
      };
      prompt = o.prompt ? o.prompt(base) : formatPrompt(base);
      chooserCalls++;
      idx = await o.chooser({ ...base, prompt });
      if (!Number.isInteger(idx) || idx < 0 || idx >= f.opts.length) {
        throw new PlannerError(`the chooser answered ${idx}, but the options are 0…${f.opts.length - 1} (${f.opts.length} options at "${f.question}")`, "chooser");
      }
    }
    f.current = idx;
    const opt = f.opts[idx]!;
    f.record = { rule: f.rule, question: f.question, options: f.opts.map((x) => x.text), chosen: idx, text: opt.text, auto, eliminated: [...f.eliminated] };
    emit({ kind: "choice", depth: frames.indexOf(f), rule: f.rule, question: f.question, options: f.opts.map((x) => x.text), chosen: idx, auto, ...(prompt ? { prompt } : {}) });
    state = opt.progressText ? { ...opt.state, progress: { head: opt.progressText, tail: opt.state.progress } } : opt.state;
  };

  /** Back to the most recent choice point with an unexplored option; false when there is none. */
  const backtrack = async (reason: string): Promise<boolean> => {
    emit({ kind: "dead-end", depth: frames.length, planSoFar: dec.decode(bytesOf(state.out)), reason });
    while (frames.length) {
      const f = frames[frames.length - 1]!;
      const [gone] = f.opts.splice(f.current, 1);
      f.eliminated.push(gone!.text);
      if (f.opts.length) {
        backtracks++;
        emit({ kind: "backtrack", toDepth: frames.length - 1, eliminated: gone!.text, remaining: f.opts.length });
        await ask(f);
        return true;
      }
      frames.pop();
    }
    return false;
  };

  for (;;) {
    state = flush(state);
    visit("planning");
    const top = state.stack;
    if (!top) break;
    if (state.steps > maxSteps) {
      if (!(await backtrack(`more than maxSteps = ${maxSteps} decisions`))) return done(null);
      continue;
    }
    const sym = top.sym;
    if (sym.kind === "rule" && P.filled[sym.rule]) {
      const r = sym.rule;
      const occurrence = toArray(state.decisions).filter((d) => d.kind === "fill" && d.rule === r).length;
      const planSoFar = dec.decode(bytesOf(state.out));
      const v = fill[P.name(r)]!;
      const text = typeof v === "string" ? v : typeof v === "function" ? v({ rule: P.name(r), occurrence, planSoFar }) : v[Math.min(occurrence, v.length - 1)];
      if (typeof text !== "string") throw new PlannerError(`fill for rule '${P.name(r)}' gave no text for occurrence ${occurrence}`, "fill");
      const bytes = new TextEncoder().encode(text);
      if (!recognize(P.ruleCfg(r), bytes)) throw new PlannerError(`fill for rule '${P.name(r)}': ${JSON.stringify(text)} is not derived by the rule`, "fill");
      emit({ kind: "fill", rule: P.name(r), text });
      state = { ...state, stack: top.next, steps: state.steps + 1, out: { head: bytes, tail: state.out }, decisions: { head: { kind: "fill", rule: r, bytes }, tail: state.decisions } };
      continue;
    }
    const opts = options(state);
    if (opts.length === 0) {
      if (!(await backtrack(`no feasible option for ${target(top).target}`))) return done(null);
      continue;
    }
    const structural = sym.kind === "bytes" ? sym.ranges.length > 1 || sym.ranges[0]![0] !== sym.ranges[0]![1] : P.templates(sym.rule).length > 1;
    if (!structural) { state = opts[0]!.state; continue; } // the grammar offers no choice here: not a choice point
    const { rule, target: tgt } = target(top);
    const f: Frame = { state, opts, current: 0, eliminated: [], rule, target: tgt, question: `To get ${tgt}, we have the following choices:`, };
    frames.push(f);
    await ask(f);
  }

  return done(finish(state));

  function done(r: PlanResult | null): PlanResult | null {
    emit({ kind: "done", found: r !== null, nodes, backtracks });
    if (r) r.stats.ms = performance.now() - t0;
    return r;
  }

  function finish(s: State): PlanResult {
    const planBytes = bytesOf(s.out);
    const text = dec.decode(planBytes);
    const tree = buildTree(P, o.cfg, toArray(s.decisions));
    const toolUses: Record<string, number> = {};
    s.used.forEach((n, t) => { if (n) toolUses[P.toolNames[t]!] = n; });
    const raw = describe.steps ? describe.steps(tree, text)
      : (o.stepStyle ?? (Object.keys(toolUses).length ? "tools" : "lines")) === "tools" ? toolSteps(tree, (t) => P.leafText(t)) : lineSteps(text);
    return {
      plan: text, tree, steps: raw.map((x, i) => `${i + 1}. ${x}`),
      choices: frames.map((f) => f.record!), backtracks, toolUses, trace,
      stats: { nodes, decisions: s.steps, chooserCalls, ms: 0 },
    };
  }
}

// ───────────────────────────── the tree and the steps ─────────────────────────────

type RawNode = { kind: "rule"; rule: number; alt: number; children: RawNode[] } | { kind: "bytes"; bytes: Uint8Array; tool: boolean } | { kind: "fill"; rule: number; bytes: Uint8Array };

function buildTree(P: Prepared, cfg: Cfg, decisions: Decision[]): PlanNode {
  let i = 0;
  const node = (r: number): RawNode => {
    const d = decisions[i++];
    if (!d) throw new Error("internal: the derivation ended early");
    if (d.kind === "fill") return { kind: "fill", rule: d.rule, bytes: d.bytes };
    if (d.kind !== "alt" || d.rule !== r) throw new Error("internal: the derivation does not match the grammar");
    const alt = cfg.rules[r]!.alts[d.alt]!;
    const runs = P.runs[r]![d.alt]!;
    const children: RawNode[] = [];
    let k = 0;
    for (let j = 0; j < alt.length;) {
      const run = runs[k];
      if (run && run.start === j) { children.push({ kind: "bytes", bytes: run.bytes, tool: run.tool >= 0 }); j = run.end; k++; continue; }
      const s = alt[j]!;
      if (s.kind === "rule") children.push(node(s.rule));
      else {
        const b = decisions[i++];
        if (!b || b.kind !== "byte") throw new Error("internal: a byte choice is missing from the derivation");
        children.push({ kind: "bytes", bytes: Uint8Array.of(b.byte), tool: false });
      }
      j++;
    }
    return { kind: "rule", rule: r, alt: d.alt, children };
  };
  const root = node(cfg.start);
  // Splice helper rules (groups, repetitions, left-recursion tails) into their parents, merge
  // adjacent non-tool text, decode.
  const convert = (n: RawNode): PlanNode[] => {
    if (n.kind === "bytes") return [{ kind: "text", text: dec.decode(n.bytes), tool: n.tool }];
    if (n.kind === "fill") return [{ kind: "fill", rule: cfg.rules[n.rule]!.name, text: dec.decode(n.bytes) }];
    const kids: RawNode[] = [];
    const spliceInto = (m: RawNode) => {
      if (m.kind === "rule" && cfg.rules[m.rule]!.origin !== "user") m.children.forEach(spliceInto);
      else kids.push(m);
    };
    n.children.forEach(spliceInto);
    const merged: RawNode[] = [];
    for (const k of kids) {
      const last = merged[merged.length - 1];
      if (k.kind === "bytes" && !k.tool && last?.kind === "bytes" && !last.tool) {
        const b = new Uint8Array(last.bytes.length + k.bytes.length);
        b.set(last.bytes); b.set(k.bytes, last.bytes.length);
        merged[merged.length - 1] = { kind: "bytes", bytes: b, tool: false };
      } else merged.push(k);
    }
    return [{ kind: "rule", rule: cfg.rules[n.rule]!.name, alt: n.alt, children: merged.flatMap(convert) }];
  };
  return convert(root)[0]!;
}

/** The plan's non-empty lines. */
export function lineSteps(plan: string): string[] {
  return plan.split("\n").map((l) => l.trim()).filter(Boolean);
}

const isLexicalNode = (n: PlanNode): n is Extract<PlanNode, { kind: "rule" }> => n.kind === "rule" && n.children.every((c) => c.kind === "text");
const nodeText = (n: PlanNode): string => (n.kind === "rule" ? n.children.map(nodeText).join("") : n.text);

function joinWords(xs: string[]): string {
  return xs.length <= 1 ? xs.join("") : `${xs.slice(0, -1).join(", ")} and ${xs[xs.length - 1]}`;
}

/**
 * One step per tool use, in execution order. A tool belongs to the nearest rule node above it that
 * is not lexical (made of text only). That node's other rule children are the tool's INPUTS, done
 * before it and named "the output of X" when they hold a tool, else by their text — except a rule
 * child that ends the node (a right-linear tail, as in `t10 ::= "10:00 " chore t11`): that one is
 * the CONTINUATION, done after it. So `VQA(Colorization(i), Image Classification(i))` gives
 * Colorization, Image Classification, VQA, and a right-linear day plan gives its activities in order.
 */
export function toolSteps(tree: PlanNode, show: (leaf: string) => string = (t) => t.trim()): string[] {
  const name = (t: string) => show(t).replace(/[.!?]$/, "");
  const out: string[] = [];
  const toolsOf = (n: Extract<PlanNode, { kind: "rule" }>): string[] => {
    const ts: string[] = [];
    for (const c of n.children) {
      if (c.kind === "text" && c.tool) ts.push(c.text);
      else if (c.kind === "rule" && isLexicalNode(c)) for (const t of c.children) if (t.kind === "text" && t.tool) ts.push(t.text);
    }
    return ts;
  };
  const producer = (n: PlanNode): string | null => {
    if (n.kind !== "rule") return null;
    const ts = toolsOf(n);
    if (ts.length) return ts[0]!;
    for (const c of n.children) { const p = producer(c); if (p) return p; }
    return null;
  };
  const visit = (n: PlanNode): void => {
    if (n.kind !== "rule") return;
    const ts = toolsOf(n);
    const inputs: string[] = [];
    const last = n.children[n.children.length - 1];
    const tail = ts.length && last?.kind === "rule" && !isLexicalNode(last) ? last : null;
    for (const c of n.children) {
      if (c === tail) continue;
      if (c.kind === "fill") { inputs.push(c.text); continue; }
      if (c.kind !== "rule") continue;
      if (isLexicalNode(c)) {
        if (!c.children.some((t) => t.kind === "text" && t.tool) && nodeText(c).trim()) inputs.push(show(nodeText(c)));
        continue;
      }
      visit(c);
      const p = producer(c);
      if (p) inputs.push(`the output of ${name(p)}`);
      else if (nodeText(c).trim()) inputs.push(show(nodeText(c)));
    }
    ts.forEach((t, i) => out.push(`Use ${name(t)}${i === 0 && inputs.length ? ` on ${joinWords(inputs)}` : ""}`));
    if (tail) visit(tail);
  };
  if (tree.kind === "rule" && isLexicalNode(tree)) { for (const t of tree.children) if (t.kind === "text" && t.tool) out.push(`Use ${name(t.text)}`); }
  else visit(tree);
  return out;
}
