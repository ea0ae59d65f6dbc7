/**
 * @fileoverview S-expression AST → SpecIR. This is where the agent-spec language is defined:
 *
 *   (define NAME
 *     [(:tools "tools.json")]
 *     (:states (STATE (:text "marker" | :token "<tool_call>") [(:flags :env-input)] [CONTENT]) ...)
 *     (:behavior FORMULA)
 *     [(:constraints (at-most N STATE) (at-least N STATE) (eventually STATE)
 *                    (at-most N (tool NAME)) (at-most N (each-tool)) (before (tool A) (tool B)) ...)])
 *
 *   FORMULA = STATE | (next F ...) | (or F ...) | (until F F) | (until_N F F) | (until_M_N F F)
 *           | (always F)
 *
 *   CONTENT = (:output-constrs "a" "b" ...)                     one of the strings
 *           | (:grammar "file.gbnf" ["start"] [:max-depth N])   a sentence of a GBNF/EBNF grammar
 *           | (:grammar-text "root ::= ..." ["start"] [:max-depth N])   … written inline
 *           | (:json-schema "f.schema.json") | (:json-schema-text "{...}")  a JSON value of a schema
 *           | (:empty)                                          whitespace only
 *           | (:tool-name)                 one of the tools' names (choosing one is a call of it)
 *           | (:tool-args [:max-depth N])  JSON arguments valid for the tool chosen last
 *           | (:tool-call [:max-depth N])  {"name": N, "arguments": A}, A valid for tool N
 *   each with whitespace allowed around it. A grammar file's path is relative to the spec file's
 *   folder; its diagnostics point into the grammar file (inline: into the spec, at the character).
 *   Without :max-depth (and without the compile option --max-depth) a content whose grammar nests
 *   runs on a stack, exact at any depth (automata/pushdown-bytes.ts); :max-depth N bounds the
 *   nesting of the grammar's recursion instead (a DFA, grammar/regular.ts).
 *
 * `(:token "<tool_call>")` makes the marker one vocabulary token rather than text (compiler/tokens.ts).
 * A tool call happens when a :tool-name or :tool-call state's content is complete (at the next
 * marker); the tool constraints count those calls. compiler/tools.ts reads the tools file.
 *
 * Every check that needs only the spec's text (names, markers, flags, arities) lives here and
 * reports all errors it finds, each with a span; checks that need the automaton (dead ends, empty
 * language) live in the automaton stages.
 */
import { hostPath, readFileBytes } from "./host.js";
import { SpecError, suggest } from "./diagnostics.js";
import { decodeSource } from "./frontend/parse.js";
import { parseGrammar } from "./grammar/index.js";
import { MAX_BOUND, jsonSchemaToGbnf } from "./jsonschema/convert.js";
import { TOKEN_BYTES } from "./tokens.js";
import { readTools } from "./tools.js";
import type { Behavior, ConstraintIR, ContentIR, Span, SpecIR, StateIR, ToolIR } from "./ir.js";
import type { SExpr } from "./frontend/parse.js";

/** Largest :max-depth accepted (the states grow with the depth; real limits come from maxGrammarStates). */
export const MAX_GRAMMAR_DEPTH = 64;

export interface LowerOptions {
  /** Reads a grammar file (default: node:fs); throw to report it unreadable. */
  readFile?: (path: string) => Uint8Array;
  /** Receives the text of every grammar file read, so diagnostics can quote it. */
  sources?: Map<string, string>;
}

/** Largest N accepted in `until_N` / `at-most N` (bounded-loop expansion is linear in N). */
export const MAX_LOOP_BOUND = 64;

const KNOWN_FLAGS = [":env-input"];
const OPERATORS = ["next", "or", "until", "always"];

type Atom = Extract<SExpr, { kind: "atom" }>;
type List = Extract<SExpr, { kind: "list" }>;

export function lower(forms: SExpr[], file: string, opts: LowerOptions = {}): SpecIR {
  const errors: SpecError[] = [];
  const fail = (e: SpecError) => { errors.push(e); };
  const first = forms[0]!;
  if (!isList(first) || !isSym(first.items[0], "define")) {
    throw new SpecError("E0201", "expected (define NAME (:states ...) (:behavior ...))", first.span,
      "a spec file holds one definition; see examples/react.agent");
  }
  if (forms.length > 1) {
    throw new SpecError("E0201", "unexpected form after the definition", forms[1]!.span,
      "a spec file holds exactly one (define ...); if this belongs inside it, check the parentheses of the lines above");
  }
  const name = first.items[1];
  if (!name || name.kind !== "atom" || name.type !== "symbol") {
    throw new SpecError("E0201", "expected the agent's name after define", name?.span ?? first.openSpan);
  }
  let statesForm: List | undefined;
  let behaviorForm: List | undefined;
  let constraintsForm: List | undefined;
  let toolsForm: List | undefined;
  for (const sec of first.items.slice(2)) {
    const head = isList(sec) ? sec.items[0] : undefined;
    const key = head && head.kind === "atom" && head.type === "keyword" ? head.value : undefined;
    if (key === ":states" && !statesForm) statesForm = sec as List;
    else if (key === ":tools" && !toolsForm) toolsForm = sec as List;
    else if (key === ":behavior" && !behaviorForm) behaviorForm = sec as List;
    else if (key === ":constraints" && !constraintsForm) constraintsForm = sec as List;
    else {
      const what = key ? `unknown or repeated section ${key}` : "expected a section (:states ...), (:behavior ...) or (:constraints ...)";
      fail(new SpecError("E0202", what, (head ?? sec).span, suggest(key ?? "", [":states", ":behavior", ":constraints", ":tools"])));
    }
  }
  if (!statesForm) throw withMore(new SpecError("E0209", "missing (:states ...) section", first.openSpan), errors);
  if (!behaviorForm) throw withMore(new SpecError("E0209", "missing (:behavior ...) section", first.openSpan), errors);

  const tools = toolsForm ? lowerTools(toolsForm, { ...opts, file }, fail) : undefined;

  // States.
  const states: StateIR[] = [];
  const byName = new Map<string, StateIR>();
  const byMarker = new Map<string, StateIR>();
  for (const sf of statesForm.items.slice(1)) {
    const st = lowerState(sf, states.length, fail, { ...opts, file });
    if (!st) continue;
    const dup = byName.get(st.name);
    if (dup) {
      fail(new SpecError("E0204", `duplicate state ${st.name} (first defined at ${dup.span.line}:${dup.span.col})`, st.span,
        "give each state a unique name"));
      continue;
    }
    const dupM = byMarker.get(st.marker);
    if (dupM && st.marker !== "") {
      fail(new SpecError("E0205", `duplicate marker ${JSON.stringify(st.marker)}: states ${dupM.name} and ${st.name} would be indistinguishable`, st.markerSpan ?? st.span,
        "give each state a distinct :text"));
    }
    if (st.tokenByte !== undefined) {
      const n = states.filter((x) => x.tokenByte !== undefined).length;
      if (n >= TOKEN_BYTES.length) {
        fail(new SpecError("E0216", `more than ${TOKEN_BYTES.length} token markers`, st.markerSpan ?? st.span,
          "a spec may have at most 13 (:token ...) markers; write the others as (:text ...)"));
      } else st.tokenByte = TOKEN_BYTES[n]!;
    }
    if (!tools && (st.content.kind === "toolName" || st.content.kind === "toolArgs" || st.content.kind === "toolCall")) {
      fail(new SpecError("E0215", `state ${st.name} takes its content from the tools list, but the spec has no (:tools ...)`, st.content.span,
        'add (:tools "tools.json") to the definition, before (:states ...)'));
    }
    byName.set(st.name, st);
    byMarker.set(st.marker, st);
    states.push(st);
  }
  if (states.length === 0) fail(new SpecError("E0203", "the :states section declares no state", statesForm.openSpan));

  // Behavior.
  const used = new Set<number>();
  if (behaviorForm.items.length !== 2) {
    fail(new SpecError("E0302", `(:behavior ...) takes exactly one formula, got ${behaviorForm.items.length - 1}`, behaviorForm.openSpan,
      "combine steps with (next ...), e.g. (:behavior (next Question Answer))"));
  }
  const behavior = behaviorForm.items[1] ? lowerFormula(behaviorForm.items[1], byName, used, fail) : null;

  // Constraints.
  const constraints: ConstraintIR[] = [];
  for (const cf of constraintsForm?.items.slice(1) ?? []) {
    for (const c of lowerConstraint(cf, byName, tools ?? [], fail)) constraints.push(c);
  }

  for (const st of states) {
    if (!used.has(st.id)) {
      fail(new SpecError("E0208", `state ${st.name} is never used in the behavior`, st.span,
        `remove it, or use it in (:behavior ...)`));
    }
  }
  checkEnvMarkers(states, fail);
  if (errors.length > 0) throw withMore(errors[0]!, errors.slice(1));
  return { name: name.value, file, states, behavior: behavior!, constraints, ...(tools ? { tools } : {}) };
}

/** (:tools "file.json"): the file's path is relative to the spec's folder. */
function lowerTools(form: List, ctx: LowerOptions & { file: string }, fail: (e: SpecError) => void): ToolIR[] {
  const src = form.items[1];
  if (form.items.length !== 2 || !src || src.kind !== "atom" || src.type !== "string" || src.value.trim() === "") {
    fail(new SpecError("E0214", "(:tools ...) takes the tools file's name as one string", (src ?? form).span, '(:tools "tools/tools.json")'));
    return [];
  }
  const { dirname, isAbsolute, join } = hostPath();
  const path = isAbsolute(src.value) ? src.value : join(dirname(ctx.file), src.value);
  let text: string;
  try {
    text = decodeSource(path, (ctx.readFile ?? readFileBytes)(path));
  } catch (e) {
    if (e instanceof SpecError) { fail(e); return []; }
    const why = (e as { code?: string }).code === "ENOENT" ? "no such file" : (e as { code?: string }).code === "EISDIR" ? "is a directory" : (e as Error).message;
    fail(new SpecError("E0214", `cannot read tools file ${path}: ${why}`, src.span, `the path is relative to the spec file's folder (${dirname(ctx.file)})`));
    return [];
  }
  ctx.sources?.set(path, text);
  try {
    return readTools(text, path);
  } catch (e) {
    if (!(e instanceof SpecError)) throw e;
    for (const err of [e, ...((e as SpecError & { more?: SpecError[] }).more ?? [])]) fail(err);
    delete (e as SpecError & { more?: SpecError[] }).more;
    return [];
  }
}

function withMore(e: SpecError, more: SpecError[]): SpecError {
  (e as SpecError & { more?: SpecError[] }).more = more.filter((m) => m !== e);
  return e;
}

function lowerState(sf: SExpr, id: number, fail: (e: SpecError) => void, ctx: LowerOptions & { file: string }): StateIR | undefined {
  if (!isList(sf) || !sf.items[0] || sf.items[0].kind !== "atom" || sf.items[0].type !== "symbol") {
    fail(new SpecError("E0203", "expected a state: (NAME (:text \"marker\") ...)", sf.span,
      isList(sf) && sf.items[0]?.kind === "atom" && sf.items[0].type === "keyword"
        ? "a property appears where a state was expected: a ')' earlier on this or the previous line probably closes the state too soon"
        : undefined));
    return undefined;
  }
  const nameAtom = sf.items[0];
  let marker: string | undefined;
  let markerSpan: Span | undefined;
  let env = false;
  let content: ContentIR = { kind: "any" };
  let contentProp: SExpr | undefined;
  let token = false;
  for (const prop of sf.items.slice(1)) {
    const key = isList(prop) && prop.items[0]?.kind === "atom" ? (prop.items[0] as Atom).value : undefined;
    const args = isList(prop) ? prop.items.slice(1) : [];
    if (key === ":text" || key === ":token") {
      const s = args[0];
      if (args.length !== 1 || !s || s.kind !== "atom" || s.type !== "string") {
        fail(new SpecError("E0203", `(${key} ...) takes one string`, prop.span, key === ":text" ? '(:text "Thought:")' : '(:token "<tool_call>")'));
        continue;
      }
      if (marker !== undefined) {
        fail(new SpecError("E0203", `state ${nameAtom.value} has a second marker`, prop.span, "a state has one (:text ...) or one (:token ...)"));
        continue;
      }
      token = key === ":token";
      if (s.value.length === 0) {
        fail(new SpecError("E0206", `state ${nameAtom.value} has an empty marker`, s.span,
          "a marker is the text that announces the state in the output, e.g. \"Thought:\""));
        marker = "";
        continue;
      }
      marker = s.value;
      markerSpan = s.span;
    } else if (key === ":flags") {
      for (const f of args) {
        if (f.kind === "atom" && f.type === "keyword" && KNOWN_FLAGS.includes(f.value)) env = true;
        else fail(new SpecError("E0207", `unknown flag ${f.kind === "atom" ? f.value : "(...)"}`, f.span,
          suggest(f.kind === "atom" ? f.value : "", KNOWN_FLAGS) ?? "the known flag is :env-input"));
      }
    } else if ((key === ":output-constrs" || GRAMMAR_KEYS.includes(key ?? "") || TOOL_KEYS.includes(key ?? "")) && contentProp) {
      fail(new SpecError("E0210", `state ${nameAtom.value} has a second content constraint`, prop.span,
        "a state's content has one constraint: (:output-constrs ...), (:grammar ...), (:grammar-text ...), (:json-schema ...), (:json-schema-text ...), (:empty), (:tool-name), (:tool-args) or (:tool-call)"));
    } else if (TOOL_KEYS.includes(key ?? "")) {
      contentProp = prop;
      const c = lowerToolContent(key!, prop as List, args, fail);
      if (c) content = c;
    } else if (GRAMMAR_KEYS.includes(key ?? "")) {
      contentProp = prop;
      const g = lowerGrammarContent(key!, prop as List, args, ctx, fail);
      if (g) content = g;
    } else if (key === ":output-constrs") {
      contentProp = prop;
      const options: string[] = [];
      for (const a of args) {
        if (a.kind !== "atom" || a.type !== "string" || a.value.trim() === "") {
          fail(new SpecError("E0210", "(:output-constrs ...) takes non-empty strings", a.span, '(:output-constrs "Search" "Lookup")'));
        } else options.push(a.value.trim());
      }
      if (args.length === 0) fail(new SpecError("E0210", "(:output-constrs) needs at least one string", prop.span, '(:output-constrs "Search" "Lookup")'));
      content = { kind: "oneOf", options: [...new Set(options)], span: prop.span };
    } else {
      fail(new SpecError("E0203", `unknown state property ${key ?? "(...)"}`, prop.span,
        suggest(key ?? "", [":text", ":token", ":flags", ":output-constrs", ...GRAMMAR_KEYS, ...TOOL_KEYS]) ?? `known properties: :text, :token, :flags, :output-constrs, ${[...GRAMMAR_KEYS, ...TOOL_KEYS].join(", ")}`));
    }
  }
  if (marker === undefined) {
    fail(new SpecError("E0203", `state ${nameAtom.value} has no (:text "marker")`, sf.span, '(:text "Thought:") or (:token "<tool_call>")'));
    return undefined;
  }
  // tokenByte is given in lower() once the state is accepted (bytes go to token markers in order).
  return { id, name: nameAtom.value, marker, env, content, span: nameAtom.span, markerSpan, ...(token ? { tokenByte: -1 } : {}) };
}

const TOOL_KEYS = [":empty", ":tool-name", ":tool-args", ":tool-call"];

/** (:empty), (:tool-name), (:tool-args [:max-depth N]), (:tool-call [:max-depth N]). */
function lowerToolContent(key: string, prop: List, args: SExpr[], fail: (e: SpecError) => void): ContentIR | undefined {
  const takesDepth = key === ":tool-args" || key === ":tool-call";
  let maxDepth: number | undefined;
  const usage = takesDepth ? `(${key} [:max-depth N])` : `(${key})`;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (takesDepth && a.kind === "atom" && a.type === "keyword" && a.value === ":max-depth") {
      const n = args[i + 1];
      if (!n || n.kind !== "atom" || n.type !== "symbol" || !/^\d+$/.test(n.value) || Number(n.value) > MAX_GRAMMAR_DEPTH) {
        fail(new SpecError("E0210", `:max-depth takes a whole number from 0 to ${MAX_GRAMMAR_DEPTH}`, (n ?? a).span, usage));
        return undefined;
      }
      maxDepth = Number(n.value);
      i++;
      continue;
    }
    fail(new SpecError("E0210", `unexpected ${a.kind === "atom" ? a.value : "(...)"} in (${key} ...)`, a.span, usage));
    return undefined;
  }
  if (key === ":empty") return { kind: "empty" };
  if (key === ":tool-name") return { kind: "toolName", span: prop.span };
  const depth = maxDepth === undefined ? {} : { maxDepth };
  return key === ":tool-args" ? { kind: "toolArgs", ...depth, span: prop.span } : { kind: "toolCall", ...depth, span: prop.span };
}

/**
 * (:grammar "file" ["start"] [:max-depth N]) or (:grammar-text "text" ["start"] [:max-depth N]).
 * Grammar diagnostics keep their own positions: in the grammar file, or (inline) mapped back to the
 * character of the spec's string literal they are about.
 */
const GRAMMAR_KEYS = [":grammar", ":grammar-text", ":json-schema", ":json-schema-text"];
const GRAMMAR_USAGE: Record<string, string> = {
  ":grammar": '(:grammar "grammars/json.gbnf" ["root"] [:max-depth 8])',
  ":grammar-text": '(:grammar-text "root ::= [0-9]+" ["root"] [:max-depth 8])',
  ":json-schema": '(:json-schema "schemas/args.schema.json" [:max-depth 8])',
  ":json-schema-text": '(:json-schema-text "{\\"type\\": \\"integer\\"}" [:max-depth 8])',
};

function lowerGrammarContent(key: string, prop: List, args: SExpr[], ctx: LowerOptions & { file: string }, fail: (e: SpecError) => void): ContentIR | undefined {
  const usage = GRAMMAR_USAGE[key]!;
  const schema = key.startsWith(":json-schema");
  const src = args[0];
  if (!src || src.kind !== "atom" || src.type !== "string" || src.value.trim() === "") {
    fail(new SpecError("E0210", `(${key} ...) takes ${key.endsWith("-text") ? (schema ? "a JSON Schema" : "a grammar") : "a file name"} as a non-empty string`, (src ?? prop).span, usage));
    return undefined;
  }
  let start = "root";
  let maxDepth: number | undefined;
  let ok = true;
  for (let i = 1; i < args.length; i++) {
    const a = args[i]!;
    if (i === 1 && !schema && a.kind === "atom" && a.type === "string") { start = a.value; continue; }
    if (a.kind === "atom" && a.type === "keyword" && a.value === ":max-depth") {
      const n = args[i + 1];
      if (!n || n.kind !== "atom" || n.type !== "symbol" || !/^\d+$/.test(n.value) || Number(n.value) > MAX_GRAMMAR_DEPTH) {
        fail(new SpecError("E0210", `:max-depth takes a whole number from 0 to ${MAX_GRAMMAR_DEPTH}`, (n ?? a).span, usage));
        ok = false;
      } else maxDepth = Number(n.value);
      i++;
      continue;
    }
    fail(new SpecError("E0210", `unexpected ${a.kind === "atom" ? a.value : "(...)"} in (${key} ...)`, a.span, usage));
    ok = false;
  }
  let text: string;
  let gfile: string;
  const inline = key.endsWith("-text");
  if (inline) {
    text = src.value;
    gfile = ctx.file;
  } else {
    const { dirname, isAbsolute, join } = hostPath();
    gfile = isAbsolute(src.value) ? src.value : join(dirname(ctx.file), src.value);
    let bytes: Uint8Array;
    try {
      bytes = (ctx.readFile ?? readFileBytes)(gfile);
    } catch (e) {
      const why = (e as { code?: string }).code === "ENOENT" ? "no such file" : (e as { code?: string }).code === "EISDIR" ? "is a directory" : (e as Error).message;
      fail(new SpecError("E0213", `cannot read grammar file ${gfile}: ${why}`, src.span,
        `the path is relative to the spec file's folder (${dirname(ctx.file)}); or write the grammar inline with (:grammar-text "...")`));
      return undefined;
    }
    try {
      text = decodeSource(gfile, bytes);
    } catch (e) {
      if (e instanceof SpecError) { fail(e); return undefined; }
      throw e;
    }
    ctx.sources?.set(gfile, text);
  }
  if (schema) {
    // The schema becomes grammar text (compiler/jsonschema); its diagnostics point into the schema.
    try {
      text = jsonSchemaToGbnf(text, gfile).gbnf;
    } catch (e) {
      if (!(e instanceof SpecError)) throw e;
      if (inline) remapInline(e, src);
      fail(e);
      return undefined;
    }
  }
  let cfg;
  try {
    cfg = parseGrammar(text, gfile, { start, limits: schema ? { maxRepeat: MAX_BOUND } : undefined, warnings: !schema });
  } catch (e) {
    if (!(e instanceof SpecError)) throw e;
    for (const err of [e, ...((e as SpecError & { more?: SpecError[] }).more ?? [])]) {
      if (inline) remapInline(err, src);
      fail(err);
    }
    delete (e as SpecError & { more?: SpecError[] }).more;
    return undefined;
  }
  // A schema's generated grammar has no warnings (warnings: false): the user never wrote it.
  if (inline && !schema) for (const w of cfg.warnings) remapInline(w, src);
  if (!ok) return undefined;
  return { kind: "grammar", cfg, source: { file: gfile, inline, start }, maxDepth, span: prop.span };
}

/** Points a diagnostic about inline grammar text at the character of the spec's string literal. */
function remapInline(e: SpecError, atom: Atom): void {
  const s = e.span;
  if (!s || atom.raw === undefined) return;
  // map[i] = index in the literal's body (between the quotes) of the value's character i.
  const body = atom.raw.slice(1, -1);
  const map: number[] = [];
  for (let j = 0; j < body.length; j++) {
    map.push(j);
    if (body[j] === "\\") j++;
  }
  map.push(body.length);
  const at = (o: number) => map[Math.max(0, Math.min(o, map.length - 1))]!;
  const offset = atom.span.offset + 1 + at(s.offset);
  const end = atom.span.offset + 1 + at(s.end);
  (e as { span: Span }).span = { file: atom.span.file, line: atom.span.line, col: atom.span.col + (offset - atom.span.offset), offset, end: Math.max(end, offset) };
}

function lowerFormula(f: SExpr, byName: Map<string, StateIR>, used: Set<number>, fail: (e: SpecError) => void): Behavior {
  const bad: Behavior = { op: "or", args: [], span: f.span };
  if (f.kind === "atom") {
    if (f.type !== "symbol") {
      fail(new SpecError("E0303", `expected a state name, found ${f.type} ${f.value}`, f.span));
      return bad;
    }
    const st = byName.get(f.value);
    if (!st) {
      fail(new SpecError("E0303", `undefined state ${f.value}`, f.span,
        suggest(f.value, [...byName.keys()]) ?? `declare it in (:states ...): (${f.value} (:text "..."))`));
      return bad;
    }
    used.add(st.id);
    return { op: "state", state: st.id, span: f.span };
  }
  const head = f.items[0];
  if (!head || head.kind !== "atom" || head.type !== "symbol") {
    fail(new SpecError("E0301", "expected an operator: next, or, until, until_N, until_M_N, always", (head ?? f).span));
    return bad;
  }
  const args = f.items.slice(1).map((a) => lowerFormula(a, byName, used, fail));
  const arity = (ok: boolean, want: string) => {
    if (!ok) fail(new SpecError("E0302", `${head.value} takes ${want}, got ${args.length}`, head.span,
      `e.g. ${example(head.value)}`));
    return ok;
  };
  const op = head.value;
  if (op === "next" || op === "or") {
    if (!arity(args.length >= 1, "one or more arguments")) return bad;
    return args.length === 1 ? args[0]! : { op, args, span: f.span };
  }
  if (op === "always") {
    if (!arity(args.length === 1, "exactly one argument")) return bad;
    return { op: "always", body: args[0]!, span: f.span };
  }
  const m = /^until(?:_(\d+))?(?:_(\d+))?$/.exec(op);
  if (m) {
    if (!arity(args.length === 2, "exactly two arguments")) return bad;
    let min = 0;
    let max: number | null = null;
    if (m[1] !== undefined && m[2] !== undefined) { min = Number(m[1]); max = Number(m[2]); }
    else if (m[1] !== undefined) max = Number(m[1]);
    if (max !== null && (min > max || max > MAX_LOOP_BOUND)) {
      fail(new SpecError("E0304", max > MAX_LOOP_BOUND
        ? `loop bound ${max} exceeds the limit ${MAX_LOOP_BOUND}` : `loop bounds ${min}..${max}: the minimum exceeds the maximum`,
        head.span, max > MAX_LOOP_BOUND ? "use an unbounded (until a b) with an (at-most N S) constraint, or a smaller bound" : "write (until_MIN_MAX a b) with MIN ≤ MAX"));
      return bad;
    }
    return { op: "until", body: args[0]!, then: args[1]!, min, max, span: f.span };
  }
  fail(new SpecError("E0301", `unknown operator ${op}`, head.span,
    suggest(op, OPERATORS) ?? "operators: next, or, until, until_N, until_M_N, always"));
  return bad;
}

function lowerConstraint(cf: SExpr, byName: Map<string, StateIR>, tools: ToolIR[], fail: (e: SpecError) => void): ConstraintIR[] {
  const usage = "(at-most N STATE), (at-least N STATE), (eventually STATE), (at-most N (tool NAME)), (at-most N (each-tool)) or (before (tool A) (tool B))";
  if (!isList(cf) || cf.items[0]?.kind !== "atom") {
    fail(new SpecError("E0211", `expected a constraint: ${usage}`, cf.span));
    return [];
  }
  const kind = (cf.items[0] as Atom).value;
  const args = cf.items.slice(1);
  /** (tool NAME) → the tool's index; (each-tool) → every index. */
  const toolArg = (a: SExpr | undefined, each: boolean): number[] | undefined => {
    const head = isList(a) && a.items[0]?.kind === "atom" ? (a.items[0] as Atom).value : undefined;
    if (each && head === "each-tool" && isList(a) && a.items.length === 1) return tools.map((_, i) => i);
    const n = isList(a) ? a.items[1] : undefined;
    if (head !== "tool" || !isList(a) || a.items.length !== 2 || !n || n.kind !== "atom" || (n.type !== "symbol" && n.type !== "string")) {
      fail(new SpecError("E0211", `expected (tool NAME)${each ? " or (each-tool)" : ""} in ${kind}`, (a ?? cf).span, usage));
      return undefined;
    }
    if (tools.length === 0) {
      fail(new SpecError("E0215", `(tool ${n.value}) needs a tools list`, a.span, 'add (:tools "tools.json") to the definition'));
      return undefined;
    }
    const i = tools.findIndex((t) => t.name === n.value);
    if (i < 0) {
      fail(new SpecError("E0303", `unknown tool ${n.value}`, n.span, suggest(n.value, tools.map((t) => t.name)) ?? `the tools are ${tools.map((t) => t.name).join(", ")}`));
      return undefined;
    }
    return [i];
  };
  if (kind === "before") {
    if (args.length !== 2) { fail(new SpecError("E0302", `before takes two tools, got ${args.length}`, cf.span, "(before (tool search) (tool book))")); return []; }
    const a = toolArg(args[0], false);
    const b = toolArg(args[1], false);
    if (!a || !b) return [];
    if (a[0] === b[0]) { fail(new SpecError("E0211", "(before (tool X) (tool X)) can never be satisfied by a call of X", cf.span)); return []; }
    return [{ kind: "toolBefore", first: a[0]!, then: b[0]!, span: cf.span }];
  }
  if (kind === "at-most" && isList(args[1])) {
    const n = args[0];
    if (args.length !== 2 || !n || n.kind !== "atom" || !/^\d+$/.test(n.value)) {
      fail(new SpecError("E0302", "at-most takes a count and a tool", cf.span, "(at-most 2 (tool web_search))"));
      return [];
    }
    const count = Number(n.value);
    if (count > MAX_LOOP_BOUND) { fail(new SpecError("E0304", `count ${count} exceeds the limit ${MAX_LOOP_BOUND}`, n.span)); return []; }
    return (toolArg(args[1], true) ?? []).map((tool) => ({ kind: "toolAtMost" as const, tool, n: count, span: cf.span }));
  }
  return lowerStateConstraint(kind, args, cf, byName, fail, usage);
}

function lowerStateConstraint(kind: string, args: SExpr[], cf: List, byName: Map<string, StateIR>, fail: (e: SpecError) => void, usage: string): ConstraintIR[] {
  const stateArg = (a: SExpr | undefined): number | undefined => {
    if (!a || a.kind !== "atom" || a.type !== "symbol") { fail(new SpecError("E0211", `expected a state name in ${kind}`, (a ?? cf).span, usage)); return undefined; }
    const st = byName.get(a.value);
    if (!st) { fail(new SpecError("E0303", `undefined state ${a.value}`, a.span, suggest(a.value, [...byName.keys()]))); return undefined; }
    return st.id;
  };
  if (kind === "eventually") {
    if (args.length !== 1) { fail(new SpecError("E0302", `eventually takes one state, got ${args.length}`, cf.span, "(eventually Answer)")); return []; }
    const s = stateArg(args[0]);
    return s === undefined ? [] : [{ kind: "eventually", state: s, span: cf.span }];
  }
  if (kind === "at-most" || kind === "at-least") {
    const n = args[0];
    if (args.length !== 2 || !n || n.kind !== "atom" || !/^\d+$/.test(n.value)) {
      fail(new SpecError("E0302", `${kind} takes a count and a state`, cf.span, `(${kind} 3 Action)`));
      return [];
    }
    const count = Number(n.value);
    if (count > MAX_LOOP_BOUND) { fail(new SpecError("E0304", `count ${count} exceeds the limit ${MAX_LOOP_BOUND}`, n.span)); return []; }
    const s = stateArg(args[1]);
    return s === undefined ? [] : [{ kind: kind === "at-most" ? "atMost" : "atLeast", state: s, n: count, span: cf.span }];
  }
  fail(new SpecError("E0211", `unknown constraint ${kind}`, cf.items[0]!.span, suggest(kind, ["at-most", "at-least", "eventually", "before"]) ?? usage));
  return [];
}

/**
 * The runtime ends the LLM's turn the moment an env-input marker is complete, so that moment must
 * be unambiguous: the marker may not occur inside another marker except as its suffix (where the
 * longer marker wins, leftmost-longest).
 */
function checkEnvMarkers(states: StateIR[], fail: (e: SpecError) => void): void {
  for (const e of states) {
    if (!e.env || e.marker === "" || e.tokenByte !== undefined) continue;
    for (const m of states) {
      if (m === e || m.marker === "" || m.tokenByte !== undefined) continue;
      const at = m.marker.indexOf(e.marker);
      if (at >= 0 && at + e.marker.length < m.marker.length) {
        fail(new SpecError("E0212", `the env-input marker ${JSON.stringify(e.marker)} occurs inside the marker ${JSON.stringify(m.marker)} of ${m.name}`,
          e.span, "when the LLM writes an env-input marker its turn ends, so that marker must not begin or sit inside another marker; rename one of them"));
      }
    }
  }
}

function example(op: string): string {
  if (op === "always") return "(always (next Chat-Bot User))";
  if (op.startsWith("until")) return `(${op} (next Thought Action) Answer)`;
  return `(${op} Thought Answer)`;
}

const isList = (e: SExpr | undefined): e is List => e?.kind === "list";
const isSym = (e: SExpr | undefined, v: string) => e?.kind === "atom" && e.type === "symbol" && e.value === v;

export type { Span };
