/**
 * @fileoverview The JSON Schema front end proper (index.ts compiles its output): a schema (draft 2020-12, and the draft-04/06/07
 * spellings real schemas use) → a GBNF grammar of exactly the JSON texts it accepts → the grammar
 * pipeline (grammar/, a pushdown automaton: exact at any depth, recursive `$ref`s included).
 *
 * Never looser than the schema. A keyword specc cannot enforce exactly is an error E0902 with the
 * JSON pointer of the keyword, unless `lenient` (then a warning names it and it is not enforced).
 * Where exactness would cost more than it is worth, the grammar is *stricter* than the schema and
 * says so here: strings are written with the escapes JSON needs and `\uXXXX` for non-surrogates
 * (no surrogate-pair escapes), numbers in canonical form (no `-0`, integers without a fraction or
 * exponent; a number under bounds without exponent, and next to a strict bound with at most 15
 * significant digits, so that it cannot read as the bound), properties in the order of
 * `properties` followed by additional ones, additional
 * property names without escapes (and strings told apart from listed ones: `not`, one-of.ts),
 * numbers told apart from integers without an exponent (one-of.ts), `format`s in the common strict spelling (e.g. `T` and `Z` upper
 * case), a `pattern`'s characters each as JSON writes it (its `.` and, where a match may end
 * anywhere, the rest after a match, in any spelling). Each of these only rejects texts an LLM
 * rarely writes; none accepts a text the schema rejects.
 *
 * Whitespace between tokens is free up to `maxWhitespace` characters a run (unbounded runs let a
 * model loop forever), or none with `compact`.
 */
import { canonicalText, evaluate, isObj, jsonEqual, JSON_TYPES, typeOfValue, type JType } from "./evaluate.js";
import { SpecError } from "../diagnostics.js";
import { formatGrammar, formatImpliesLength } from "./formats.js";
import { jsonSourceOf, parseJsonSource, pointerToken, spanOfPointer, type JsonSource } from "./json-source.js";
import { boundedPattern, searchPattern } from "./bounded-pattern.js";
import { keyClasses, type KeyClass } from "./keys.js";
import { exactlyOneObject, NON_INTEGER, otherValues, type OneOfHost } from "./one-of.js";
import { PatternAutomatonError, patternsDisjoint } from "./pattern-automata.js";
import { parseRegex, regexToGbnf } from "./regex.js";

export interface JsonSchemaOptions {
  /** Relax what cannot be enforced exactly (a warning per keyword) instead of refusing it. */
  lenient?: boolean;
  /** No whitespace between tokens. */
  compact?: boolean;
  /** Longest whitespace run between two tokens (default 20). */
  maxWhitespace?: number;
  /** Objects of up to 5 named properties accept them in any order (default: the order of `properties`). */
  anyOrder?: boolean;
}

export interface JsonSchemaGrammar {
  /** The grammar, root rule `root`. */
  gbnf: string;
  /** Relaxed keywords (lenient mode), positioned. */
  warnings: SpecError[];
  /**
   * Rules to enter by a call rather than expand in place (grammar/pda.ts `called`): used in many
   * places or repeated many times, their machines then exist once. Whitespace (a state per
   * character allowed), any value, an unconstrained string (its characters' mask is then walked
   * once for every string value; each value walks only the tokens that close it), an integer and
   * a number without bounds (the same: a value's digits were a walk of the ~1,100 number tokens
   * through the whitespace machine it calls, per property), a string with a
   * format, a pattern or a length bound from CALLED_STRING on (one machine per format, pattern and
   * bounds however many properties use it), the block of a string with a length bound past
   * LONG_STRING (or its character, without a maximum), the items of arrays with item bounds, a
   * reference used in more than one place, an object schema written again (by its text), the trie
   * of the names an object's other members may not have (one per set of names), and the
   * separators with their whitespace (`colon`, `comma`; not in compact mode).
   */
  called: string[];
}

export const DEFAULT_MAX_WHITESPACE = 20;
/**
 * With `anyOrder`, objects with at most this many named properties accept them in any order (one
 * grammar rule per subset already written: 2^n, which multiplies the automaton); larger ones, and
 * all by default, in the order of `properties`, then additional ones.
 */
const ANY_ORDER_MAX = 5;

/** Longest string or array a bound may ask for (each unit of a bound is a rule of the grammar). */
export const MAX_BOUND = 10_000;
/**
 * Longest maxLength of a plain string: blocks of BLOCK characters make it a rule per block (4,096
 * at this bound; maxLength 32,767, the most common large bound in MaskBench, compiles in ~0.15 s).
 */
const MAX_STRING_BOUND = 262_144;
/**
 * Past this maxLength a string is blocks of BLOCK characters (blockString), and past
 * LONG_UNBOUNDED_STRING of minLength without a maximum, a character entered by a call per
 * position. Expanded in place, each position holds a copy of the character's machine (maxLength
 * 5000: 70,003 states). Below it the characters are expanded in place (in the string's own machine
 * from CALLED_STRING on), and masks inside the string stay plain walks of that machine (a call per
 * character makes each position's mask walk the token trie through the stack: TBM p99 26 ms
 * instead of 6 ms on the MaskBench sample). 128, not 256: maxLength 255 (a common bound) expanded in place was 3,572
 * states of every schema that has it, blocks share 1,779 with every other long string; over
 * MaskBench, the 99th percentile of automaton sizes went 9,119 → 8,175 states and the 98th
 * 6,084 → 4,787.
 */
const LONG_STRING = 128;
/** See LONG_STRING (a call per character costs masks what blocks do not). */
const LONG_UNBOUNDED_STRING = 256;
/**
 * From this many characters on, a length-bounded string is a machine of its own, entered by a call
 * (once per bounds): inlined, every property with maxLength 100 held its own copy (a Snowplow
 * schema with 32 bounded strings: 39,930 states, 0.4 s to build; called, 14,484 and 0.14 s).
 */
const CALLED_STRING = 8;
/** Most members an object's minProperties / maxProperties are counted up to (each count is a copy of the member rules). */
const MAX_COUNTED_MEMBERS = 16;
/** Characters of a block of a long bounded string (blockString); tokens longer than this are rare. */
const BLOCK = 64;
/** Characters of a superblock (BLOCK blocks) of a very long bounded string (superChain). */
const SUPER = BLOCK * BLOCK;
/** Significant digits of a number next to a strict bound (see boundedDecimal). */
const MAX_EXACT_DIGITS = 15;
/** oneOf: past this many branches, only the one-pass proofs (`discriminated`) are tried, not every pair. */
const MAX_PAIRWISE_BRANCHES = 64;
/** Work (evaluate.ts steps) spent on checking a finite value list against the rest of its schema. */
const FINITE_BUDGET = 2_000_000;
/** Value lists longer than this are not checked one by one against the other branch of a oneOf pair. */
const MAX_FINITE_VALUES = 1000;
/** Optional properties that dependentRequired may relate (each doubles an object's member rules). */
const MAX_DEPENDENCY_NAMES = 10;
/** Most merging schemas expanded inside one another (a guard against merges that recurse without end). */
const MAX_MERGE_NESTING = 64;

/** Keywords that carry no validation (ignored), and unknown keywords (ignored, as JSON Schema does). */
const ANNOTATIONS = new Set(["title", "description", "default", "examples", "$schema", "$id", "id", "$comment", "deprecated",
  "readOnly", "writeOnly", "$anchor", "$dynamicAnchor", "contentMediaType", "contentEncoding", "$defs", "definitions", "discriminator",
  "nullable" /* OpenAPI; not JSON Schema: ignoring it only forbids null */, "example", "x-order"]);
/** Validation keywords this front end handles (beside $ref, the combinators and type). */
const HANDLED = new Set(["type", "enum", "const", "properties", "required", "additionalProperties", "items", "prefixItems",
  "additionalItems", "minItems", "maxItems", "minLength", "maxLength", "pattern", "format", "minimum", "maximum",
  "exclusiveMinimum", "exclusiveMaximum", "anyOf", "oneOf", "allOf", "$ref", "minProperties", "maxProperties",
  "uniqueItems", "multipleOf", "patternProperties", "propertyNames", "not", "if", "then", "else", "contains",
  "minContains", "maxContains", "dependentRequired", "dependentSchemas", "dependencies", "unevaluatedProperties",
  "unevaluatedItems", "$dynamicRef", "$recursiveRef"]);

/** Keywords that together say what an object's members may be (allOf merges them together). */
const OBJECT_MEMBERS = new Set(["properties", "patternProperties", "additionalProperties"]);

/** The keywords beside a `$ref` that constrain (annotations and unknown keywords left out), or undefined. */
function refSiblings(s: Record<string, unknown>): Record<string, unknown> | undefined {
  const keys = Object.keys(s).filter((k) => k !== "$ref" && !ANNOTATIONS.has(k) && HANDLED.has(k));
  return keys.length ? Object.fromEntries(keys.map((k) => [k, s[k]])) : undefined;
}

type Schema = boolean | Record<string, unknown>;


/** A GBNF string literal for `s` (characters as they are, quotes, backslashes and controls escaped). */
export function gbnfLit(s: string): string {
  let out = '"';
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (ch === '"' || ch === "\\") out += "\\" + ch;
    else if (c < 0x20 || c === 0x7f) out += "\\x" + c.toString(16).padStart(2, "0");
    else out += ch;
  }
  return out + '"';
}

/** The GBNF for exactly the canonical JSON text of `v` (whitespace allowed between tokens). */
function constGbnf(v: unknown): string {
  if (v === null || typeof v === "boolean" || typeof v === "number" || typeof v === "string") return gbnfLit(JSON.stringify(v));
  if (Array.isArray(v)) return v.length === 0 ? '"[" ws "]"' : `"[" ws ${v.map(constGbnf).join(' comma ')} ws "]"`;
  const entries = Object.entries(v as Record<string, unknown>);
  if (entries.length === 0) return '"{" ws "}"';
  return `"{" ws ${entries.map(([k, x]) => `${gbnfLit(JSON.stringify(k))} colon ${constGbnf(x)}`).join(' comma ')} ws "}"`;
}

/** The values a schema lists (its `const`, or its `enum`), or undefined. */
const valueList = (x: unknown): unknown[] | undefined =>
  !isObj(x) ? undefined : "const" in x ? [x["const"]] : Array.isArray(x["enum"]) ? (x["enum"] as unknown[]) : undefined;

class Converter {
  private readonly rules = new Map<string, string>();
  /** Rules the pushdown automaton enters by a call (JsonSchemaGrammar `called`). */
  readonly called = new Set<string>(["ws", "value", "string", "integer", "number"]);
  private readonly refRules = new Map<string, string>();
  /**
   * Schemas with allOf, anyOf or oneOf being expanded (by identity), with the rule name given to one
   * met again inside its own expansion (`guarded`).
   */
  private readonly mergeActive = new Map<object, { name?: string }>();
  private n = 0;
  readonly warnings: SpecError[] = [];

  constructor(private readonly src: JsonSource, private readonly opts: JsonSchemaOptions) {}

  grammar(): string {
    const root = this.expr(this.src.value, "");
    // A reference used in more than one place is entered by a call: its machine exists once.
    // (A name inside a quoted literal counts too: then a rule used once is called, which is exact.)
    const uses = new Map<string, number>();
    for (const body of [root, ...this.rules.values()]) {
      for (const name of body.match(/\bs\d+\b/g) ?? []) uses.set(name, (uses.get(name) ?? 0) + 1);
    }
    for (const name of this.refRules.values()) {
      if ((uses.get(name) ?? 0) < 2) continue;
      // Through rules that only name another one, to the rule with a body.
      let target = name;
      for (let k = 0; k < 64; k++) {
        const body = this.rules.get(target)!;
        if (!/^s\d+$/.test(body) || !this.rules.has(body)) break;
        target = body;
      }
      if (!/^[A-Za-z0-9_-]+$/.test(this.rules.get(target)!)) this.called.add(target);
    }
    const ws = this.opts.compact ? '""' : `[ \\t\\n\\r]{0,${this.opts.maxWhitespace ?? DEFAULT_MAX_WHITESPACE}}`;
    // The separators with their whitespace are entered by a call (where there is whitespace): one
    // call where each is written, instead of `ws ":" ws`'s two calls and the states between them.
    if (!this.opts.compact) for (const r of ["colon", "comma"]) this.called.add(r);
    const lines = [`root ::= ${root}`, ...[...this.rules].map(([k, v]) => `${k} ::= ${v}`), `ws ::= ${ws}`, ...BASE];
    return lines.join("\n") + "\n";
  }

  // ---- diagnostics ----
  private error(code: "E0902" | "E0903" | "E0904" | "E0905", msg: string, ptr: string, hint?: string): SpecError {
    const full = (this.src.base ?? "") + ptr;
    return new SpecError(code, `${msg} (at ${full || "/"})`, spanOfPointer(this.src, full), hint);
  }
  /** A keyword that cannot be enforced: an error, or in lenient mode a warning and `true`. */
  private relax(keyword: string, ptr: string, why: string): true {
    const e = this.error("E0902", `${keyword}: ${why}`, `${ptr}/${pointerToken(keyword)}`, this.opts.lenient
      ? "--lenient: this keyword is not enforced, so the output may violate it"
      : "specc never compiles a schema looser than it is; pass --lenient to drop this keyword with a warning");
    if (!this.opts.lenient) throw e;
    this.warnings.push(e);
    return true;
  }

  /** `expr`, or null when the schema can be satisfied by nothing (E0904). */
  private tryExpr(s: unknown, ptr: string): string | null {
    const n0 = this.n;
    try {
      return this.expr(s, ptr);
    } catch (e) {
      if (!(e instanceof SpecError && e.code === "E0904")) throw e;
      // Forget every rule made on the way (some may name a $ref rule that was never finished).
      const late = (name: string) => Number(name.slice(1)) > n0;
      for (const k of [...this.rules.keys()]) if (late(k)) this.rules.delete(k);
      for (const [p, k] of [...this.refRules]) if (late(k)) this.refRules.delete(p);
      for (const memo of [this.calledStrings, this.objectRules, this.trieNodes] as Map<unknown, string>[]) for (const [key, k] of [...memo]) if (late(k)) memo.delete(key);
      for (const k of [...this.called]) if (/^s\d+$/.test(k) && late(k)) this.called.delete(k);
      return null;
    }
  }

  private fresh(): string {
    return `s${++this.n}`;
  }
  /**
   * A string rule entered by a call, one per key (its format, its pattern, its length bounds, the
   * names a key may not be): a machine that exists once however many properties use it, instead of
   * a copy in each place.
   */
  private calledString(key: string, body: () => string): string {
    let name = this.calledStrings.get(key);
    if (name === undefined) {
      const b = body();
      name = /^[A-Za-z0-9_-]+$/.test(b) ? b : this.define(b);
      this.called.add(name);
      this.calledStrings.set(key, name);
    }
    return name;
  }
  private readonly calledStrings = new Map<string, string>();
  private define(body: string): string {
    const name = this.fresh();
    this.rules.set(name, body);
    return name;
  }

  // ---- schemas ----
  /** A GBNF expression (a rule name or a parenthesized group) for the schema at `ptr`. */
  expr(s: unknown, ptr: string): string {
    if (s === true) return "value";
    if (s === false) throw this.error("E0904", "the schema false accepts nothing", ptr);
    if (!isObj(s)) throw this.error("E0903", `a schema is an object or a boolean, not ${JSON.stringify(s)?.slice(0, 40)}`, ptr);
    const finite = this.finiteValues(s, ptr);
    if (finite !== undefined) return finite;
    if (typeof s["$ref"] === "string") return this.ref(s, ptr);
    for (const k of ["$dynamicRef", "$recursiveRef"]) if (k in s) this.relax(k, ptr, "dynamic references are not supported");
    if (Array.isArray(s["allOf"])) return this.guarded(s, ptr, "allOf", () => this.expr(this.mergeAll(s, ptr), ptr));
    for (const k of ["anyOf", "oneOf"] as const) if (k in s) return this.guarded(s, ptr, k, () => this.alternatives(s, k, ptr));
    return this.plain(s, ptr);
  }

  /** anyOf / oneOf, each branch merged with the keywords beside it. */
  private alternatives(s: Record<string, unknown>, k: "anyOf" | "oneOf", ptr: string): string {
    const branches = s[k];
    if (!Array.isArray(branches) || branches.length === 0) throw this.error("E0903", `${k} takes a non-empty array of schemas`, `${ptr}/${k}`);
    const rest = Object.fromEntries(Object.entries(s).filter(([key]) => key !== k));
    const order = (s as { [PROPERTY_ORDER]?: NameOrder })[PROPERTY_ORDER];
    const merged = branches.map((b, i) => (hasValidation(rest) ? inOrder(this.merge(rest, this.deref(b, `${ptr}/${k}/${i}`), ptr, `${ptr}/${k}/${i}`), order && branchOrder(order, k, i)) : b));
    if (k === "oneOf") {
      const exact = this.oneOf(merged, `${ptr}/${k}`);
      if (exact !== undefined) return exact;
    }
    const alts = merged.flatMap((b, i) => {
      const e = this.tryExpr(b, `${ptr}/${k}/${i}`);
      return e === null ? [] : [e];
    });
    if (alts.length === 0) throw this.error("E0904", `no branch of ${k} can be satisfied`, `${ptr}/${k}`);
    return alts.length === 1 ? alts[0]! : this.define(alts.join(" | "));
  }

  /** A schema without $ref, allOf, anyOf or oneOf. */
  private plain(s: Record<string, unknown>, ptr: string): string {
    if ("not" in s) { const e = this.notValues(s, ptr); if (e !== undefined) return e; }
    for (const k of ["not", "if", "then", "else", "dependentSchemas", "dependencies", "dependentRequired", "unevaluatedProperties", "unevaluatedItems", "propertyNames", "contains", "minContains", "maxContains"]) {
      if (k in s) {
        if (k === "unevaluatedProperties" || k === "unevaluatedItems") { if (s[k] === true) continue; }
        if ((k === "dependentRequired" || k === "dependencies" || k === "dependentSchemas") && this.dependencies(s, ptr) !== undefined) continue; // object() enforces them
        this.relax(k, ptr, "not supported by specc's JSON Schema front end");
      }
    }
    if ("const" in s || "enum" in s) return this.enumExpr(s, ptr);
    const types = this.types(s, ptr);
    const alts: string[] = [];
    if (types.has("null")) alts.push('"null"');
    if (types.has("boolean")) alts.push('("true" | "false")');
    if (types.has("number")) alts.push(this.number(s, ptr, false));
    else if (types.has("integer")) alts.push(this.number(s, ptr, true));
    if (types.has("string")) alts.push(this.string(s, ptr));
    if (types.has("array")) alts.push(this.array(s, ptr));
    if (types.has("object")) alts.push(this.sharedObject(s, ptr));
    if (alts.length === 0) throw this.error("E0904", "no JSON value has one of these types", `${ptr}/type`);
    return alts.length === 1 ? alts[0]! : this.define(alts.join(" | "));
  }

  /**
   * Where `s` allows finitely many values (its `enum` or `const`, one of an `allOf` member's, or
   * those of every `anyOf`/`oneOf` branch together), the
   * values that satisfy all of `s` (evaluate.ts), as alternatives: exact whatever else `s` says
   * (`not`, `if`, `pattern`, …). Undefined where there is no such list, or a value's verdict is
   * undecided (then the usual conversion decides what is enforced).
   */
  private finiteValues(s: Record<string, unknown>, ptr: string): string | undefined {
    let values = valueList(s);
    if (values === undefined && Array.isArray(s["allOf"])) {
      for (const [i, m] of (s["allOf"] as unknown[]).entries()) {
        if (!isObj(m)) continue;
        let d: Schema;
        try { d = this.deref(m, `${ptr}/allOf/${i}`); } catch { continue; }
        values = valueList(d);
        if (values) break;
      }
    }
    for (const k of ["anyOf", "oneOf"]) {
      // Every branch finite: the union is the candidates (and oneOf's "exactly one" is evaluated).
      if (values !== undefined || !Array.isArray(s[k])) continue;
      const union: unknown[] = [];
      for (const [i, m] of (s[k] as unknown[]).entries()) {
        let d: Schema;
        try { d = this.deref(m, `${ptr}/${k}/${i}`); } catch { return undefined; }
        const l = valueList(d);
        if (l === undefined) return undefined;
        union.push(...l);
      }
      values = union;
    }
    if (values === undefined) return undefined;
    const kept: unknown[] = [];
    const budget = { steps: FINITE_BUDGET };
    for (const v of values) {
      const ok = evaluate(s, v, this.src.value, budget);
      if (ok === undefined) return undefined;
      if (ok && !kept.some((k) => jsonEqual(k, v))) kept.push(v);
    }
    if (kept.length === 0) throw this.error("E0904", "no value of the enum/const satisfies the rest of the schema", ptr);
    return this.define(kept.map(constGbnf).join(" | "));
  }

  private types(s: Record<string, unknown>, ptr: string): Set<JType> {
    const t = s["type"];
    if (t === undefined) return new Set(JSON_TYPES);
    const list = Array.isArray(t) ? t : [t];
    for (const x of list) {
      if (!(JSON_TYPES as readonly unknown[]).includes(x)) throw this.error("E0903", `unknown type ${JSON.stringify(x)}`, `${ptr}/type`, `types: ${JSON_TYPES.join(", ")}`);
    }
    return new Set(list as JType[]);
  }

  /**
   * A `$ref` as a rule, one per target (and per set of sibling keywords: draft 2019+ applies them
   * too, merged with the target), defined before its body is expanded so that recursive
   * references, merged ones included, come back to the same rule.
   */
  private ref(s: Record<string, unknown>, ptr: string): string {
    const tptr = this.resolve(s["$ref"] as string, `${ptr}/$ref`);
    const siblings = refSiblings(s);
    const key = siblings ? `${tptr} ${JSON.stringify(siblings)}` : tptr;
    let name = this.refRules.get(key);
    if (name === undefined) {
      name = this.fresh();
      this.refRules.set(key, name);
      this.rules.set(name, "");
      this.rules.set(name, siblings ? this.expr(this.deref(s, ptr), ptr) : this.expr(this.at(tptr, `${ptr}/$ref`), tptr));
    }
    return name;
  }

  /** A local reference (`#`, `#/$defs/x`, any `#/…` pointer) to its JSON pointer. */
  private resolve(ref: string, ptr: string): string {
    if (!ref.startsWith("#")) throw this.error("E0905", `only local references (#/…) are supported, not ${JSON.stringify(ref)}`, ptr);
    let p: string;
    try {
      p = decodeURIComponent(ref.slice(1));
    } catch {
      throw this.error("E0905", `malformed reference ${JSON.stringify(ref)} (a % not followed by two hex digits)`, ptr, "escape a literal % in a JSON pointer as %25");
    }
    if (p !== "" && !p.startsWith("/")) throw this.error("E0905", `unsupported reference ${JSON.stringify(ref)} (anchors are not supported)`, ptr);
    this.at(p, ptr);
    return p;
  }

  private at(p: string, refPtr: string): unknown {
    let v: unknown = this.src.value;
    for (const tok of p.split("/").slice(1)) {
      const k = tok.replace(/~1/g, "/").replace(/~0/g, "~");
      if (Array.isArray(v)) v = /^(0|[1-9][0-9]*)$/.test(k) ? v[Number(k)] : undefined;
      else if (isObj(v)) v = Object.hasOwn(v, k) ? v[k] : undefined; // not "__proto__" or "constructor" from Object.prototype
      else v = undefined;
      if (v === undefined) throw this.error("E0905", `$ref #${p} points at nothing`, refPtr);
    }
    return v;
  }

  /**
   * The schema `s` stands for, for merging: its `$ref` chain followed (iteratively) to a schema
   * without one, and the sibling keywords met on the way merged into it (`$ref` with siblings is
   * their allOf). Their properties come in the order of the text: the referenced schema's first
   * where `$ref` is written before `properties`, else after. A chain that comes back to a pointer
   * it passed never reaches a schema: E0905.
   */
  private deref(s: unknown, ptr: string): Schema {
    const chain: { siblings: Record<string, unknown>; ptr: string; refFirst: boolean }[] = [];
    const seen = new Set<string>();
    let cur = s, curPtr = ptr;
    while (isObj(cur) && typeof cur["$ref"] === "string") {
      const p = this.resolve(cur["$ref"], `${curPtr}/$ref`);
      if (seen.has(p)) throw this.error("E0905", `the $ref chain ${[...seen, p].map((x) => `#${x}`).join(" → ")} never reaches a schema`, `${curPtr}/$ref`);
      seen.add(p);
      const siblings = refSiblings(cur);
      if (siblings) {
        const keys = Object.keys(cur);
        chain.push({ siblings, ptr: curPtr, refFirst: "properties" in siblings && keys.indexOf("$ref") < keys.indexOf("properties") });
      }
      cur = this.at(p, `${curPtr}/$ref`);
      curPtr = p;
    }
    if (typeof cur !== "boolean" && !isObj(cur)) throw this.error("E0903", "a schema is an object or a boolean", curPtr);
    let acc: Schema = cur;
    for (let i = chain.length - 1; i >= 0; i--) {
      const { siblings, ptr: at, refFirst } = chain[i]!;
      acc = refFirst ? this.merge(acc, siblings, curPtr, at) : this.merge(siblings, acc, at, curPtr);
    }
    return acc;
  }

  /**
   * `build()`, the expansion of a schema that merges others into new schemas (allOf, or anyOf/oneOf
   * branches merged with the keywords beside them), guarded: met again inside its own expansion,
   * the schema becomes a recursive rule, as a recursive $ref does, instead of being merged in until
   * the stack overflows.
   */
  private guarded(s: Record<string, unknown>, ptr: string, keyword: string, build: () => string): string {
    const active = this.mergeActive.get(s);
    if (active) return (active.name ??= this.fresh());
    if (this.mergeActive.size >= MAX_MERGE_NESTING) {
      throw this.error("E0905", `${keyword} merges nest more than ${MAX_MERGE_NESTING} deep (a recursive schema whose merge never comes back to the same schema)`, `${ptr}/${keyword}`);
    }
    const entry: { name?: string } = {};
    this.mergeActive.set(s, entry);
    try {
      const body = build();
      if (entry.name === undefined) return body;
      this.rules.set(entry.name, body);
      return entry.name;
    } finally {
      this.mergeActive.delete(s);
    }
  }

  private mergeAll(s: Record<string, unknown>, ptr: string): Schema {
    const parts = s["allOf"] as unknown[];
    let acc: Schema = Object.fromEntries(Object.entries(s).filter(([k]) => k !== "allOf"));
    const branch = (x: unknown): Schema | undefined => { try { return this.deref(x, ptr); } catch { return undefined; } };
    const order = propertyNames(acc, branch);
    parts.forEach((p, i) => {
      const d = this.deref(p, `${ptr}/allOf/${i}`);
      acc = this.merge(acc, d, ptr, `${ptr}/allOf/${i}`);
      order.push(...propertyNames(d, branch));
    });
    // A member's anyOf or oneOf branches are merged later (`alternatives`), after every member's own
    // properties: note where the member put their names, so that a branch's come there.
    if (isObj(acc) && (Array.isArray(acc["anyOf"]) || Array.isArray(acc["oneOf"]))) acc = Object.assign({ ...acc }, { [PROPERTY_ORDER]: order });
    return acc;
  }

  /** allOf of two schemas as one schema, where that is exact; else an error (lenient: the first wins on conflicts). */
  private merge(a0: Schema, b0: Schema, ptr: string, bptr: string): Schema {
    const a = isObj(a0) && Array.isArray(a0["allOf"]) ? this.mergeAll(a0, ptr) : a0;
    const b = isObj(b0) && Array.isArray(b0["allOf"]) ? this.mergeAll(b0, bptr) : b0;
    if (a === false || b === false) return false;
    if (a === true) return b;
    if (b === true) return a;
    const out: Record<string, unknown> = { ...a };
    for (const [k, v] of Object.entries(b)) {
      if (ANNOTATIONS.has(k) || OBJECT_MEMBERS.has(k)) continue; // the members' keywords: below
      if (!Object.hasOwn(out, k)) { setOwn(out, k, v); continue; }
      if (!HANDLED.has(k)) continue; // an unknown keyword validates nothing: whichever value stays
      const u = out[k];
      if (jsonEqual(u, v)) continue;
      switch (k) {
        case "type": {
          const ta = new Set(Array.isArray(u) ? u : [u]);
          const tb = new Set(Array.isArray(v) ? v : [v]);
          const both = [...ta].filter((t) => tb.has(t) || (t === "integer" && tb.has("number")));
          for (const t of tb) if (t === "integer" && ta.has("number") && !both.includes("integer")) both.push("integer");
          out[k] = both;
          break;
        }
        case "required": out[k] = [...new Set([...(u as string[]), ...(v as string[])])]; break;
        case "minimum": case "exclusiveMinimum": case "minLength": case "minItems": case "minProperties":
          out[k] = Math.max(u as number, v as number); break;
        case "maximum": case "exclusiveMaximum": case "maxLength": case "maxItems": case "maxProperties":
          out[k] = Math.min(u as number, v as number); break;
        case "enum": out[k] = (u as unknown[]).filter((x) => (v as unknown[]).some((y) => jsonEqual(x, y))); break;
        case "items":
          out[k] = { allOf: [u, v] }; break;
        default:
          this.relax("allOf", ptr, `the subschemas disagree on ${k}, which specc cannot merge`);
      }
    }
    this.mergeMembers(a, b, out, ptr);
    return out;
  }

  /**
   * allOf's object members: each subschema's additionalProperties applies to the names that its own
   * properties and patternProperties leave, so a name listed by one subschema only must also satisfy
   * the other's additionalProperties ({"additionalProperties": false} beside {"properties": {"b": …}}
   * allows no "b"). Exact without patternProperties, or where both subschemas allow any other name
   * (their patterns then apply to every name they match, as in one schema); otherwise refused.
   */
  private mergeMembers(a: Record<string, unknown>, b: Record<string, unknown>, out: Record<string, unknown>, ptr: string): void {
    for (const k of OBJECT_MEMBERS) delete out[k];
    if (![a, b].some((x) => [...OBJECT_MEMBERS].some((k) => Object.hasOwn(x, k)))) return;
    const own = (x: Record<string, unknown>, k: string) => (Object.hasOwn(x, k) ? x[k] : undefined);
    const pa = isObj(own(a, "properties")) ? (own(a, "properties") as Record<string, unknown>) : {};
    const pb = isObj(own(b, "properties")) ? (own(b, "properties") as Record<string, unknown>) : {};
    const xa = own(a, "additionalProperties") ?? true;
    const xb = own(b, "additionalProperties") ?? true;
    const ta = own(a, "patternProperties");
    const tb = own(b, "patternProperties");
    const both = (x: unknown, y: unknown): unknown => (x === true || jsonEqual(x, y) ? y : y === true ? x : x === false || y === false ? false : { allOf: [x, y] });
    // A member with neither properties nor patternProperties puts its additionalProperties on every
    // name: the other's members, each with it as well.
    const uniform = (p: Record<string, unknown>, t: unknown) => Object.keys(p).length === 0 && t === undefined;
    if (uniform(pa, ta) || uniform(pb, tb)) {
      const [p, t, x, y] = uniform(pa, ta) ? [own(b, "properties"), tb, xb, xa] : [own(a, "properties"), ta, xa, xb];
      const each = (m: unknown) => (isObj(m) ? Object.fromEntries(Object.entries(m).map(([k, v]) => [k, both(v, y)])) : m);
      if (p !== undefined) out["properties"] = each(p);
      if (t !== undefined) out["patternProperties"] = each(t);
      const z = both(x, y);
      if (z !== true) out["additionalProperties"] = z;
      return;
    }
    if (ta !== undefined && tb !== undefined && !jsonEqual(ta, tb)) this.relax("allOf", ptr, "the subschemas disagree on patternProperties, which specc cannot merge");
    if ((ta !== undefined || tb !== undefined) && (xa !== true || xb !== true) && !(jsonEqual(ta, tb) && jsonEqual(xa, xb))) {
      this.relax("allOf", ptr, "merging object schemas whose additionalProperties differ is not supported beside patternProperties");
    }
    const props: Record<string, unknown> = {};
    for (const k of [...Object.keys(pa), ...Object.keys(pb)]) {
      if (!Object.hasOwn(props, k)) setOwn(props, k, both(Object.hasOwn(pa, k) ? pa[k] : xa, Object.hasOwn(pb, k) ? pb[k] : xb));
    }
    if (Object.hasOwn(a, "properties") || Object.hasOwn(b, "properties")) out["properties"] = props;
    const x = both(xa, xb);
    if (x !== true) out["additionalProperties"] = x;
    const t = ta ?? tb;
    if (t !== undefined) out["patternProperties"] = t;
  }

  /**
   * oneOf is anyOf when no value can satisfy two branches: specc proves that pair by pair
   * (`disjoint`), and then returns undefined (the caller writes the alternatives). Otherwise, where
   * every branch is a plain object schema, one-of.ts writes "exactly one" itself; else the schema
   * is refused (lenient: undefined, the alternatives).
   */
  private oneOf(branches: unknown[], ptr: string): string | undefined {
    const ds = branches.map((b, i) => this.deref(b, `${ptr}/${i}`));
    let why: string | null = null;
    if (ds.length > MAX_PAIRWISE_BRANCHES) {
      if (!this.discriminated(ds)) why = `no value satisfies two of its ${ds.length} branches (past ${MAX_PAIRWISE_BRANCHES} branches, only a value list per branch, or an object property every branch requires with a value list per branch, is compared)`;
    } else {
      for (let i = 0; i < ds.length && why === null; i++) {
        for (let j = i + 1; j < ds.length; j++) if (!this.disjoint(ds[i]!, ds[j]!, ptr, 0)) { why = `no value satisfies both branch ${i} and branch ${j}`; break; }
      }
    }
    if (why === null) return undefined;
    const exact = exactlyOneObject(this.oneOfHost, ds, ptr);
    if (typeof exact !== "string") {
      if (exact.gbnf === null) throw this.error("E0904", "no object satisfies exactly one branch of oneOf", ptr);
      return this.define(exact.gbnf);
    }
    this.relax("oneOf", ptr.slice(0, ptr.lastIndexOf("/")), `specc cannot prove that ${why} (exactly one must hold), nor write "exactly one": ${exact}`);
    return undefined;
  }

  private readonly oneOfHost: OneOfHost = {
    deref: (s, ptr) => { const d = this.deref(s, ptr); return isObj(d) && Array.isArray(d["allOf"]) ? this.mergeAll(d, ptr) : d; },
    constrains: (s) => Object.keys(s).filter((k) => HANDLED.has(k)),
    expr: (s, ptr) => this.tryExpr(s, ptr),
    disjoint: (a, b, ptr) => this.disjoint(a as Schema, b as Schema, ptr, 0),
    literal: constGbnf,
    stringNotIn: (values) => this.keyNotIn(values),
    fresh: () => this.fresh(),
    setRule: (name, body) => void this.rules.set(name, body),
  };

  /**
   * The proofs of `disjoint` that take one pass over many branches: every branch lists its values
   * (enum/const) and no value is in two lists; or every branch allows only objects, requires one
   * property and lists its values, and no value is in two lists.
   */
  private discriminated(ds: Schema[]): boolean {
    const apart = (lists: (unknown[] | undefined)[]): boolean => {
      const owner = new Map<string, number>();
      for (const [i, l] of lists.entries()) {
        if (l === undefined) return false;
        for (const v of l) {
          const key = canonicalText(v);
          if ((owner.get(key) ?? i) !== i) return false;
          owner.set(key, i);
        }
      }
      return true;
    };
    if (apart(ds.map(valueList))) return true;
    const objs = ds.filter(isObj);
    if (objs.length !== ds.length || !objs.every((o) => o["type"] === "object")) return false;
    const req0 = Array.isArray(objs[0]!["required"]) ? (objs[0]!["required"] as unknown[]) : [];
    return req0.some((k) => typeof k === "string" && objs.every((o) => Array.isArray(o["required"]) && (o["required"] as unknown[]).includes(k)) &&
      apart(objs.map((o) => { const p = isObj(o["properties"]) ? (o["properties"] as Record<string, unknown>)[k] : undefined; try { return valueList(this.deref(p, "")); } catch { return undefined; } })));
  }

  /**
   * Whether no value satisfies both `a` and `b`, by what each allows at its top: JSON types that do
   * not meet; finite values (enum/const) that the other schema refuses (evaluate.ts); or objects,
   * when both allow only objects there, that one requires a property the other forbids or allows
   * only values of that property that the other's schema for it refuses (the same proof, one level
   * down). False where no proof is found.
   */
  private disjoint(a0: Schema, b0: Schema, ptr: string, depth: number): boolean {
    if (depth > 8) return false;
    let a: Schema, b: Schema;
    try { a = this.deref(a0, ptr); b = this.deref(b0, ptr); } catch { return false; }
    if (a === false || b === false) return true;
    if (a === true || b === true) return false;
    if (Array.isArray(a["allOf"]) || Array.isArray(b["allOf"])) return false; // their tops are not all they say
    const refuses = (x: Record<string, unknown>, vs: unknown[] | undefined) =>
      vs !== undefined && vs.length <= MAX_FINITE_VALUES && vs.every((v) => evaluate(x, v, this.src.value) === false);
    if (refuses(b, valueList(a)) || refuses(a, valueList(b))) return true;
    const typesOf = (x: Record<string, unknown>): Set<string> => {
      const t = x["type"];
      const s = new Set(t === undefined ? JSON_TYPES : Array.isArray(t) ? (t as string[]) : [t as string]);
      if (s.has("number")) s.add("integer");
      return s;
    };
    const ta = typesOf(a), tb = typesOf(b);
    const both = [...ta].filter((t) => tb.has(t));
    if (both.length === 0) return true;
    if (both.some((t) => t !== "object" && t !== "string")) return false;
    if (both.includes("string")) {
      // Strings: patterns that no string matches both.
      const pa = a["pattern"], pb = b["pattern"];
      if (typeof pa !== "string" || typeof pb !== "string") return false;
      try { if (!patternsDisjoint(pa, pb)) return false; } catch (e) { if (e instanceof PatternAutomatonError) return false; throw e; }
      if (!both.includes("object")) return true;
    }
    const props = (x: Record<string, unknown>) => (isObj(x["properties"]) ? (x["properties"] as Record<string, unknown>) : {});
    const forbids = (x: Record<string, unknown>, k: string) =>
      props(x)[k] === false || (!Object.hasOwn(props(x), k) && x["additionalProperties"] === false &&
        !(isObj(x["patternProperties"]) && Object.keys(x["patternProperties"] as object).length));
    const oneWay = (x: Record<string, unknown>, y: Record<string, unknown>) => {
      const req = Array.isArray(x["required"]) ? (x["required"] as unknown[]).filter((k): k is string => typeof k === "string") : [];
      return req.some((k) => forbids(y, k) ||
        (Object.hasOwn(props(x), k) && Object.hasOwn(props(y), k) && this.disjoint(props(x)[k] as Schema, props(y)[k] as Schema, ptr, depth + 1)));
    };
    return oneWay(a, b) || oneWay(b, a);
  }

  /**
   * `not` of a value list or of a set of types, beside nothing but `type`: the values of the allowed
   * types minus those (one-of.ts `otherValues`); undefined where that cannot be written.
   */
  private notValues(s: Record<string, unknown>, ptr: string): string | undefined {
    if (Object.keys(s).some((k) => HANDLED.has(k) && k !== "type" && k !== "not")) return undefined;
    let inner: Schema;
    try { inner = this.deref(s["not"], `${ptr}/not`); } catch { return undefined; }
    if (!isObj(inner) || Object.keys(inner).some((k) => HANDLED.has(k) && !["type", "enum", "const"].includes(k))) return undefined;
    const innerTypes = this.types(inner, `${ptr}/not`);
    if (innerTypes.has("number")) innerTypes.add("integer");
    const listed = valueList(inner)?.filter((v) => innerTypes.has(typeOfValue(v)));
    const types = this.types(s, ptr);
    const alts: string[] = [];
    for (const t of ["null", "boolean", "number", "integer", "string", "array", "object"] as const) {
      if (!types.has(t) || (t === "integer" && types.has("number"))) continue;
      if (listed === undefined) {
        // not {type: ...}: the types it does not name.
        if (innerTypes.has(t)) continue;
        if (t === "number" && innerTypes.has("integer")) { alts.push(NON_INTEGER); continue; }
        alts.push(...(otherValues(t, [], this.oneOfHost) ?? []));
        continue;
      }
      const rest = otherValues(t, listed, this.oneOfHost);
      if (rest === undefined) return undefined;
      alts.push(...rest);
    }
    if (alts.length === 0) throw this.error("E0904", "no value satisfies not (beside type)", ptr);
    return alts.length === 1 ? alts[0]! : this.define(alts.join(" | "));
  }

  private enumExpr(s: Record<string, unknown>, ptr: string): string {
    let values: unknown[];
    if ("const" in s) values = [s["const"]];
    else if (Array.isArray(s["enum"])) values = s["enum"] as unknown[];
    else throw this.error("E0903", "enum takes an array", `${ptr}/enum`);
    if ("const" in s && Array.isArray(s["enum"])) values = values.filter((v) => (s["enum"] as unknown[]).some((e) => jsonEqual(e, v)));
    if (s["type"] !== undefined) {
      const types = this.types(s, ptr);
      values = values.filter((v) => { const t = typeOfValue(v); return types.has(t) || (t === "integer" && types.has("number")); });
    }
    const others = Object.keys(s).filter((k) => HANDLED.has(k) && !["const", "enum", "type"].includes(k));
    for (const k of others) this.relax(k, ptr, "beside enum/const, other keywords are not checked against the values");
    if (values.length === 0) throw this.error("E0904", "no value satisfies enum/const (and type)", ptr);
    return this.define(values.map(constGbnf).join(" | "));
  }

  // ---- numbers ----
  private number(s: Record<string, unknown>, ptr: string, integer: boolean): string {
    const mo = s["multipleOf"];
    // multipleOf 1: a whole number, written as an integer or with a fraction of zeros ("3.0"); no
    // exponent ("3e0"), stricter as for bounded numbers. Other multiples are not supported.
    const whole = !integer && mo === 1;
    if (mo !== undefined && mo !== 1) this.relax("multipleOf", ptr, "not supported (only multipleOf 1)");
    let lo: number | null = null;
    let hi: number | null = null;
    let loX = false;
    let hiX = false;
    const num = (k: string): number | null => {
      const v = s[k];
      if (v === undefined) return null;
      if (typeof v === "boolean") return null; // draft-04 exclusiveMinimum: true is read with minimum below
      if (typeof v !== "number" || !Number.isFinite(v)) throw this.error("E0903", `${k} takes a number`, `${ptr}/${k}`);
      return v;
    };
    const mn = num("minimum");
    const mx = num("maximum");
    const emn = num("exclusiveMinimum");
    const emx = num("exclusiveMaximum");
    if (mn !== null) { lo = mn; loX = s["exclusiveMinimum"] === true; }
    if (emn !== null && (lo === null || emn >= lo)) { lo = emn; loX = true; }
    if (mx !== null) { hi = mx; hiX = s["exclusiveMaximum"] === true; }
    if (emx !== null && (hi === null || emx <= hi)) { hi = emx; hiX = true; }
    if (integer || whole) {
      const a = lo === null ? null : BigInt(loX ? Math.floor(lo) + 1 : Math.ceil(lo));
      const b = hi === null ? null : BigInt(hiX ? Math.ceil(hi) - 1 : Math.floor(hi));
      if (a !== null && b !== null && a > b) throw this.error("E0904", "no integer lies between the bounds", ptr);
      if (a === null && b === null) return integer ? "integer" : this.define('integer ( "." "0"+ )?');
      return this.define(integer ? intRange(a, b) : `( ${intRange(a, b)} ) ( "." "0"+ )?`);
    }
    if (lo === null && hi === null) return "number";
    if (hi === null && lo === 0 && !loX) return "nonnegnumber";
    const dLo = lo === null ? null : Number.isSafeInteger(lo) ? { neg: lo < 0, i: BigInt(Math.abs(lo)), f: "" } : decimalOf(lo);
    const dHi = hi === null ? null : Number.isSafeInteger(hi) ? { neg: hi < 0, i: BigInt(Math.abs(hi)), f: "" } : decimalOf(hi);
    if ((lo === null || dLo !== null) && (hi === null || dHi !== null)) {
      const g = boundedDecimal(dLo, loX, dHi, hiX);
      if (g === null) throw this.error("E0904", "no number lies between the bounds", ptr);
      return this.define(g);
    }
    for (const k of ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]) if (k in s) this.relax(k, ptr, `bounds on numbers must be written without an exponent in at most ${MAX_EXACT_DIGITS} significant digits`);
    return "number";
  }

  // ---- strings ----
  private string(s: Record<string, unknown>, ptr: string): string {
    const minL = this.count(s, "minLength", ptr) ?? 0;
    let maxL = this.count(s, "maxLength", ptr, MAX_STRING_BOUND);
    if (maxL !== null && minL > maxL) throw this.error("E0904", "minLength is larger than maxLength", ptr);
    const pattern = s["pattern"];
    const format = s["format"];
    if (maxL !== null && maxL > MAX_BOUND && (typeof pattern === "string" || typeof format === "string")) {
      const why = `bounds above ${MAX_BOUND} are supported on plain strings, not together with a pattern or a format`;
      this.relax("maxLength", ptr, why);
      maxL = null;
    }
    if (typeof format === "string") {
      const g = formatGrammar(format);
      if (g === null) this.relax("format", ptr, `format ${JSON.stringify(format)} is not supported`);
      else {
        if (pattern !== undefined) this.relax("pattern", ptr, "pattern together with format is not supported");
        if ((minL > 0 || maxL !== null) && !formatImpliesLength(format, minL, maxL)) {
          this.relax(minL > 0 ? "minLength" : "maxLength", ptr, "length bounds together with format are supported only where the format implies them");
        }
        return this.calledString(`format ${format}`, () => `"\\"" ${g} "\\""`);
      }
    }
    if (typeof pattern === "string") {
      const r = regexToGbnf(pattern);
      if ("error" in r) this.relax("pattern", ptr, r.error);
      else {
        if (minL === 0 && maxL === null) {
          return this.calledString(`pattern ${pattern}`, () => {
            // Unanchored at its end: the DFA of what a string must start with (bounded-pattern.ts).
            try {
              const g = searchPattern(pattern, () => this.fresh(), this.rules);
              if (g !== undefined) return g;
            } catch (e) {
              if (!(e instanceof PatternAutomatonError)) throw e;
            }
            return `"\\"" ${r.gbnf} "\\""`;
          });
        }
        // With length bounds: the pattern's automaton counting characters (bounded-pattern.ts).
        const key = `pattern ${minL} ${maxL} ${pattern}`;
        const known = this.calledStrings.get(key);
        if (known !== undefined) return known;
        let g: string | null = null;
        try {
          g = boundedPattern(pattern, minL, maxL, () => this.fresh(), this.rules);
        } catch (e) {
          if (!(e instanceof PatternAutomatonError)) throw e;
          this.relax(minL > 0 ? "minLength" : "maxLength", ptr, `length bounds together with this pattern: ${e.message}`);
          return this.define(`"\\"" ${r.gbnf} "\\""`);
        }
        if (g === null) throw this.error("E0904", "no string of the allowed length matches the pattern", ptr);
        return this.calledString(key, () => g);
      }
    }
    if (minL === 0 && maxL === null) return "string";
    if (maxL !== null ? maxL <= LONG_STRING : minL <= LONG_UNBOUNDED_STRING) {
      const body = `"\\"" char{${minL},${maxL ?? ""}} "\\""`;
      if (Math.max(minL, maxL ?? 0) < CALLED_STRING) return this.define(body);
      return this.calledString(`length ${minL} ${maxL}`, () => body);
    }
    if (maxL !== null) return this.blockString(minL, maxL);
    // A state per character position: entered by a call, the character's machine exists once.
    this.rules.set("lchar", "char");
    this.called.add("lchar");
    return this.define(`"\\"" lchar{${minL},} "\\""`);
  }

  /**
   * A string of minL..maxL characters (maxL past LONG_STRING), entered by a call (one machine per
   * bounds however many properties have them): `blockChain`, or past 2 × SUPER characters
   * `superChain`. A length splits one way only, so the language is exact.
   */
  private blockString(minL: number, maxL: number): string {
    return this.calledString(`blocks ${minL} ${maxL}`, () => `"\\"" ${maxL < 2 * SUPER ? this.blockChain(minL, maxL) : this.superChain(minL, maxL)}`);
  }

  /**
   * minL..maxL characters and the closing quote as j full blocks of BLOCK characters (`lblock`,
   * entered by a call) and then fewer than BLOCK characters and the closing quote (its own rule
   * per bounds, entered by a call: one machine for every j with the same bounds); returns the rule
   * for j = 0. The automaton has a state per block, not per character, and inside a block a mask
   * is the block machine's summary (shared by every block and every such string) plus the tokens
   * that cross the block's end; with a call per character, every token of the string was a cold
   * walk of the whole vocabulary through the stack (~25 ms on Llama 3).
   */
  private blockChain(minL: number, maxL: number): string {
    this.rules.set("lblock", `char{${BLOCK}}`);
    this.called.add("lblock");
    return this.unitChain(minL, maxL, BLOCK, "lblock", (lo, hi) => {
      const last = `llast-${lo}-${hi}`;
      this.rules.set(last, `char{${lo},${hi}} "\\""`);
      this.called.add(last);
      return last;
    });
  }

  /**
   * minL..maxL characters and the closing quote as J full superblocks of SUPER characters
   * (`lsuper`: BLOCK blocks, entered by a call) and then a block chain of fewer than SUPER
   * (entered by a call, one per bounds: every J but the first and last shares the one of
   * 0..SUPER - 1). maxLength 32,767, the most common large bound in MaskBench, was a chain of 512
   * rules per property; this is 8 rules per bounds and 64 shared.
   */
  private superChain(minL: number, maxL: number): string {
    this.rules.set("lsuper", `lblock{${BLOCK}}`);
    this.called.add("lsuper");
    return this.unitChain(minL, maxL, SUPER, "lsuper", (lo, hi) => this.calledString(`block chain ${lo} ${hi}`, () => this.blockChain(lo, hi)));
  }

  /**
   * The chain both use: the rule for "j units of `size` characters read" is another `unit` or the
   * rest (`rest(lo, hi)`: lo..hi characters, fewer than `size`, and the closing quote), for j from
   * maxL / size down to 0; returns the rule for j = 0.
   */
  private unitChain(minL: number, maxL: number, size: number, unit: string, rest: (lo: number, hi: number) => string): string {
    const full = Math.floor(maxL / size);
    let next = "";
    for (let j = full; j >= 0; j--) {
      const lo = Math.max(0, minL - j * size);
      const hi = Math.min(size - 1, maxL - j * size);
      const alts: string[] = [];
      if (j < full) alts.push(`${unit} ${next}`);
      if (lo <= hi) alts.push(rest(lo, hi));
      next = this.define(alts.join(" | "));
    }
    return next;
  }

  private count(s: Record<string, unknown>, k: string, ptr: string, most = MAX_BOUND): number | null {
    const v = s[k];
    if (v === undefined) return null;
    if (typeof v !== "number" || !Number.isInteger(v) || v < 0) throw this.error("E0903", `${k} takes a non-negative integer`, `${ptr}/${k}`);
    if (v > most) {
      if (k.startsWith("max")) { this.relax(k, ptr, `bounds above ${most} are not supported`); return null; }
      throw this.error("E0902", `${k} ${v} is above the largest supported bound ${most}`, `${ptr}/${k}`);
    }
    return v;
  }

  // ---- arrays ----
  private array(s: Record<string, unknown>, ptr: string): string {
    if (s["uniqueItems"] === true) this.relax("uniqueItems", ptr, "not supported");
    let prefix: unknown[] = [];
    let rest: unknown = true;
    let restPtr = `${ptr}/items`;
    if (Array.isArray(s["prefixItems"])) {
      prefix = s["prefixItems"] as unknown[];
      if ("items" in s) rest = s["items"];
    } else if (Array.isArray(s["items"])) {
      prefix = s["items"] as unknown[]; // draft-04..07 tuple form
      rest = "additionalItems" in s ? s["additionalItems"] : true;
      restPtr = `${ptr}/additionalItems`;
    } else if ("items" in s) rest = s["items"];
    const minI = this.count(s, "minItems", ptr) ?? 0;
    const maxI = this.count(s, "maxItems", ptr);
    if (maxI !== null && minI > maxI) throw this.error("E0904", "minItems is larger than maxItems", ptr);
    const prefixPtr = Array.isArray(s["prefixItems"]) ? `${ptr}/prefixItems` : `${ptr}/items`;
    // An item schema nothing satisfies leaves arrays too short to reach it (null).
    const p = prefix.map((x, i) => (i < (maxI ?? Infinity) ? this.tryExpr(x, `${prefixPtr}/${i}`) : ""));
    let restExpr = rest === false ? null : this.tryExpr(rest, restPtr);
    if (restExpr !== null && Math.max(minI, maxI ?? 0) - p.length > 1) {
      // Repeated up to the bounds: entered by a call, one copy of the item's machine.
      if (!/^[A-Za-z0-9_-]+$/.test(restExpr)) restExpr = this.define(restExpr);
      this.called.add(restExpr);
    }
    // Items from position i on (i items already written). The first item carries the whitespace
    // after `[`, so an empty array is `"[" ws "]"`: one run, not two (which would also make every
    // whitespace token there ambiguous between them: a two-pair walk for each mask).
    const from = (i: number): string => {
      const sep = i === 0 ? "ws " : 'comma ';
      const alts: string[] = [];
      if (i >= minI) alts.push('""');
      if (maxI !== null && i >= maxI) return alts.length ? '""' : "";
      if (i < p.length) {
        if (p[i] === null) return alts.length ? '""' : "";
        const next = from(i + 1);
        if (next === "") return alts.length ? '""' : "";
        alts.push(`${sep}${p[i]} ${next}`);
        return alts.length === 1 ? alts[0]! : this.define(alts.join(" | "));
      }
      if (restExpr === null) return i >= minI ? '""' : "";
      const lo = Math.max(0, minI - i);
      const hi = maxI === null ? null : maxI - i;
      if (hi === 0) return '""';
      if (i === 0) {
        // First item, then ("," item){lo-1, hi-1}.
        const tail = `(comma ${restExpr}){${Math.max(0, lo - 1)},${hi === null ? "" : hi - 1}}`;
        return lo === 0 ? `(ws ${restExpr} ${tail})?` : `ws ${restExpr} ${tail}`;
      }
      return `(comma ${restExpr}){${lo},${hi === null ? "" : hi}}`;
    };
    const body = from(0);
    if (body === "") throw this.error("E0904", "no array satisfies the item bounds", ptr);
    return this.define(`"[" ${body} ws "]"`);
  }

  // ---- objects ----
  /**
   * `object`, once per distinct object schema (by its JSON text): the same object written in many
   * places (schemas with their definitions inlined) is one rule, entered by a call where it is met
   * again, so its machine, the tries of its names above all, exists once. Not where converting it
   * gave warnings: each place names its own relaxed keywords.
   */
  private sharedObject(s: Record<string, unknown>, ptr: string): string {
    const key = this.textId(s);
    const known = this.objectRules.get(key);
    if (known !== undefined) {
      this.called.add(known);
      return known;
    }
    const warned = this.warnings.length;
    const rule = this.object(s, ptr);
    if (this.warnings.length === warned) this.objectRules.set(key, rule);
    return rule;
  }
  private readonly objectRules = new Map<number, string>();

  /**
   * A number per distinct JSON text of a value (equal numbers ⇔ equal `JSON.stringify` texts),
   * from its members' numbers, each object or array numbered once: JSON.stringify of every object
   * schema wrote each nested object out again for every object around it (quadratic in the depth).
   */
  private textId(v: object): number {
    let id = this.textIds.get(v);
    if (id !== undefined) return id;
    // A member as JSON.stringify writes it ("" where it leaves it out: undefined, a function).
    const part = (x: unknown): string => (typeof x === "object" && x !== null ? `#${this.textId(x)}` : JSON.stringify(x) ?? "");
    const parts: string[] = [];
    if (Array.isArray(v)) for (const x of v) parts.push(part(x) || "null");
    else for (const [k, x] of Object.entries(v)) { const p = part(x); if (p !== "") parts.push(`${JSON.stringify(k)}:${p}`); }
    const key = Array.isArray(v) ? `[${parts.join(",")}]` : `{${parts.join(",")}}`;
    id = this.texts.get(key);
    if (id === undefined) this.texts.set(key, (id = this.texts.size));
    this.textIds.set(v, id);
    return id;
  }
  private readonly textIds = new WeakMap<object, number>();
  private readonly texts = new Map<string, number>();

  private object(s: Record<string, unknown>, ptr: string): string {
    const props = isObj(s["properties"]) ? (s["properties"] as Record<string, unknown>) : {};
    const required = Array.isArray(s["required"]) ? (s["required"] as unknown[]).filter((x): x is string => typeof x === "string") : [];
    const additional = "additionalProperties" in s ? s["additionalProperties"] : true;
    const patterns = this.patternProperties(s, ptr, additional);
    const matching = (k: string) => patterns.filter((p) => p.re.test(k));
    let keys = Object.keys(props);
    for (const r of required) {
      if (!Object.hasOwn(props, r)) {
        if (additional === false && matching(r).length === 0) throw this.error("E0904", `required property ${JSON.stringify(r)} is not allowed by additionalProperties: false`, `${ptr}/required`);
        keys.push(r);
      }
    }
    // dependentRequired (and dependencies' name lists): a present name needs others present. The
    // names they mention are members like any other; a required one makes its dependents required.
    const dep = this.dependencies(s, ptr) ?? { needs: new Map<string, string[]>(), formulas: new Map<string, Presence[]>() };
    const deps = dep.needs;
    // The names a dependency mentions are members like any other (their presence is tracked below).
    const depNames = [
      ...[...deps].flatMap(([t, ds]) => [t, ...ds]),
      ...[...dep.formulas].flatMap(([t, fs]) => [t, ...fs.flatMap((f) => presenceNames(f))]),
    ];
    for (const d of depNames) if (!keys.includes(d)) keys.push(d);
    const req = new Set(required);
    for (let grew = true; grew;) {
      grew = false;
      for (const [t, ds] of deps) if (req.has(t)) for (const d of ds) if (!req.has(d)) { req.add(d); grew = true; }
    }
    // A property whose schema nothing satisfies can never appear (and the object not at all if it is required).
    const values = new Map<string, string>();
    for (const k of keys) {
      // A named property's value satisfies its schema and that of every pattern its name matches;
      // a required one without a schema, those patterns' or else additionalProperties.
      const m = matching(k);
      const listed = Object.hasOwn(props, k);
      const own = listed ? [props[k]] : m.length ? [] : [additional];
      const sch = own.length + m.length === 1 ? [...own, ...m.map((p) => p.schema)][0] : { allOf: [...own, ...m.map((p) => p.schema)] };
      const vp = listed ? `${ptr}/properties/${pointerToken(k)}` : m.length ? `${ptr}/patternProperties` : `${ptr}/additionalProperties`;
      const e = this.tryExpr(sch, vp);
      if (e !== null) values.set(k, e);
      else if (req.has(k)) throw this.error("E0904", `required property ${JSON.stringify(k)} has a schema nothing satisfies`, vp);
    }
    const allNames = keys;
    keys = keys.filter((k) => values.has(k));
    // A name whose dependent cannot appear cannot appear either (it is not required: a required
    // name's dependents are, and one that cannot appear was an error above).
    for (let shrank = true; shrank;) {
      shrank = false;
      for (const [t, ds] of deps) {
        if (keys.includes(t) && ds.some((d) => !keys.includes(d))) {
          keys = keys.filter((k) => k !== t);
          shrank = true;
        }
      }
    }
    // The optional names a dependency mentions: which of them are present is part of the rule
    // state (one bit each), checked when the members end.
    const depBits = new Map<string, number>();
    for (const d of depNames) if (keys.includes(d) && !req.has(d) && !depBits.has(d)) depBits.set(d, depBits.size);
    if (depBits.size > MAX_DEPENDENCY_NAMES) this.relax("dependentRequired", ptr, `dependencies among more than ${MAX_DEPENDENCY_NAMES} optional properties are not supported`);
    const depsMet = (mask: number): boolean => {
      for (const [t, ds] of deps) {
        const tb = depBits.get(t);
        if (tb === undefined || !(mask & (1 << tb))) continue; // absent (or required: its dependents are too)
        for (const d of ds) { const db = depBits.get(d); if (db !== undefined && !(mask & (1 << db))) return false; }
      }
      // Dependency schemas: where the trigger is present, their formula holds. A name is present
      // when it is required and can appear, or its bit is set; absent when it cannot appear.
      const present = (n: string): boolean => {
        const b = depBits.get(n);
        return b !== undefined ? (mask & (1 << b)) !== 0 : req.has(n) && keys.includes(n);
      };
      for (const [t, fs] of dep.formulas) if (present(t) && !fs.every((f) => presenceHolds(f, present))) return false;
      return true;
    };
    const members = keys.map((k) => `${gbnfLit(JSON.stringify(k))} colon ${values.get(k)!}`);
    let extra: string | null;
    if (patterns.length) {
      // Other names, by the patterns they match (keys.ts): each set of patterns gives its names the
      // schemas of those patterns, and no pattern additionalProperties.
      let classes: KeyClass[] = [];
      try {
        classes = keyClasses(allNames, patterns.map((p) => p.source));
      } catch (e) {
        if (!(e instanceof PatternAutomatonError)) throw e;
        this.relax("patternProperties", ptr, e.message);
      }
      const alts: string[] = [];
      for (const c of classes) {
        const schemas = c.matched.length ? c.matched.map((i) => patterns[i]!.schema) : [additional];
        if (schemas.includes(false)) continue;
        const vp = c.matched.length === 1 ? `${ptr}/patternProperties/${pointerToken(patterns[c.matched[0]!]!.source)}` : c.matched.length ? `${ptr}/patternProperties` : `${ptr}/additionalProperties`;
        const value = this.tryExpr(schemas.length === 1 ? schemas[0] : { allOf: schemas }, vp);
        if (value !== null) alts.push(`${c.emit(() => this.fresh(), this.rules)} colon ${value}`);
      }
      extra = alts.length === 0 ? null : alts.length === 1 ? alts[0]! : this.define(alts.join(" | "));
    } else {
      const extraValue = additional === false ? null : this.tryExpr(additional, `${ptr}/additionalProperties`);
      extra = extraValue === null ? null : `${this.keyNotIn(allNames)} colon ${extraValue}`;
    }
    const minP = this.count(s, "minProperties", ptr) ?? 0;
    const maxP = this.count(s, "maxProperties", ptr);
    // Members counted (up to MAX_COUNTED_MEMBERS) where the required ones do not settle
    // minProperties, or the members could outnumber maxProperties. Other names are counted as
    // written: a name written twice ({"a":1,"a":2} is one property) counts twice, which is
    // stricter for maxProperties and would be looser for a minProperties above 1 (refused).
    let lo = minP > req.size ? minP : 0;
    let hi = maxP !== null && (extra !== null || keys.length > maxP) ? maxP : null;
    if (lo > 1 && extra !== null) { this.relax("minProperties", ptr, "a bound above 1 is supported only where the required properties satisfy it or no other names are allowed"); lo = 0; }
    if (lo > MAX_COUNTED_MEMBERS) { this.relax("minProperties", ptr, `bounds above ${MAX_COUNTED_MEMBERS} are supported only where the required properties satisfy them`); lo = 0; }
    if (hi !== null && hi > MAX_COUNTED_MEMBERS) { this.relax("maxProperties", ptr, `bounds above ${MAX_COUNTED_MEMBERS} are supported only where the defined properties cannot exceed them`); hi = null; }
    const counting = lo > 0 || hi !== null;
    if (counting && this.opts.anyOrder && keys.length >= 2 && keys.length <= ANY_ORDER_MAX) this.relax(lo > 0 ? "minProperties" : "maxProperties", ptr, "not supported together with any-order properties");
    /** Members so far, kept up to what decides: hi when there is one, else lo. */
    const cap = hi ?? lo;
    if (this.opts.anyOrder && (depBits.size > 0 || dep.formulas.size > 0)) this.relax("dependentRequired", ptr, "not supported together with any-order properties");
    if (this.opts.anyOrder && keys.length >= 2 && keys.length <= ANY_ORDER_MAX) {
      // Any order, each property at most once: one rule per set of properties already written
      // (2^n of them), additional properties anywhere in between.
      const memoS = new Map<number, string>();
      const reqMask = keys.reduce((m, k, i) => (req.has(k) ? m | (1 << i) : m), 0);
      const after = (seen: number): string => {
        const hit = memoS.get(seen);
        if (hit !== undefined) return hit;
        const name = this.fresh();
        memoS.set(seen, name);
        const alts: string[] = [];
        if ((seen & reqMask) === reqMask) alts.push('""');
        for (let i = 0; i < keys.length; i++) if (!(seen & (1 << i))) alts.push(`comma ${members[i]} ${after(seen | (1 << i))}`);
        if (extra !== null) alts.push(`comma ${extra} ${name}`);
        this.rules.set(name, alts.join(" | "));
        return name;
      };
      const first: string[] = [];
      if (reqMask === 0) first.push('""');
      for (let i = 0; i < keys.length; i++) first.push(`ws ${members[i]} ${after(1 << i)}`);
      if (extra !== null) first.push(`ws ${extra} ${after(0)}`);
      return this.define(`"{" ( ${first.join(" | ")} ) ws "}"`);
    }
    // Members from property i on; `first`: nothing written yet (no comma before the next); `mask`:
    // which optional names of dependencies are present so far. null: no way to go on.
    const memo = new Map<string, string | null>();
    // Other names after the listed ones: at least `a`, at most `b` (null: any number) of them.
    const others = (first: boolean, a: number, b: number | null): string | null => {
      if (b === 0) return '""';
      const rep = (x: number, y: number | null) => (x === 0 && y === null ? "*" : `{${x},${y ?? ""}}`);
      if (!first) return `(comma ${extra})${rep(a, b)}`;
      const tail = `(comma ${extra})${rep(Math.max(0, a - 1), b === null ? null : b - 1)}`;
      return a === 0 ? `(ws ${extra} ${tail})?` : `ws ${extra} ${tail}`;
    };
    // `c`: members so far (up to `cap`), when counting.
    const from = (i: number, first: boolean, mask: number, c: number): string | null => {
      const key = `${i}|${first}|${mask}|${c}`;
      const hit = memo.get(key);
      if (hit !== undefined) return hit;
      let out: string | null;
      // As in arrays, the first member carries the whitespace after `{` (one run in `{ }`).
      const sep = first ? "ws " : 'comma ';
      if (i === keys.length) {
        if (!depsMet(mask)) out = null;
        else if (extra === null) out = c >= lo ? '""' : null;
        else out = others(first, Math.max(0, lo - c), hi === null ? null : hi - c);
      } else {
        const bit = depBits.get(keys[i]!);
        const c1 = hi !== null ? c + 1 : Math.min(c + 1, cap);
        const rest = hi !== null && c1 > hi ? null : from(i + 1, false, bit === undefined ? mask : mask | (1 << bit), c1);
        // A name no `properties` lists (required, or named by a dependency) comes after the listed
        // ones, and other names may come before it too (not where members are counted).
        // (First: the whitespace after `{`, then other names each with its comma.)
        const before = extra === null || counting || Object.hasOwn(props, keys[i]!) ? "" : first ? `(${extra} comma)* ` : `(comma ${extra})* `;
        const take = rest === null ? null : first ? `${sep}${before}${members[i]} ${rest}` : `${before}${sep}${members[i]} ${rest}`;
        const skip = req.has(keys[i]!) ? null : from(i + 1, first, mask, c);
        out = take === null ? skip : skip === null ? take : this.define(`${take} | ${skip}`);
      }
      memo.set(key, out);
      return out;
    };
    const body = from(0, true, 0, 0);
    if (body === null) throw this.error("E0904", counting ? "no object satisfies the properties' dependencies and the bounds on their number" : "no object satisfies the properties' dependencies", ptr);
    return this.define(`"{" ${body} ws "}"`);
  }

  /**
   * The patternProperties to enforce: none when none matters (every pattern's schema accepts
   * anything, beside additionalProperties: true); else every pattern, with its parsed regex (the
   * names they match are split by keys.ts).
   */
  private patternProperties(s: Record<string, unknown>, ptr: string, additional: unknown): { source: string; re: RegExp; schema: unknown }[] {
    const pp = isObj(s["patternProperties"]) ? Object.entries(s["patternProperties"] as Record<string, unknown>) : [];
    if (pp.length === 0) return [];
    const anything = (x: unknown) => x === true || (isObj(x) && !hasValidation(x));
    if (additional === true && pp.every(([, x]) => anything(x))) return [];
    const out: { source: string; re: RegExp; schema: unknown }[] = [];
    for (const [p, schema] of pp) {
      const r = parseRegex(p);
      let re: RegExp | undefined;
      try { re = new RegExp(p, "u"); } catch { /* refused below */ }
      // --lenient: a pattern specc cannot read is dropped (its names get additionalProperties).
      if ("error" in r || !re) this.relax("patternProperties", `${ptr}/patternProperties`, "error" in r ? r.error : `pattern ${JSON.stringify(p)} is not a valid regex`);
      else out.push({ source: p, re, schema });
    }
    return out;
  }

  /**
   * The name dependencies of an object schema (`dependentRequired`, `dependencies` whose values are
   * name lists: trigger → names it needs; schema values that only say which names are present:
   * trigger → `presence` formulas). undefined when some dependency is a schema that says more
   * (refused by the caller).
   */
  private dependencies(s: Record<string, unknown>, ptr: string): { needs: Map<string, string[]>; formulas: Map<string, Presence[]> } | undefined {
    const needs = new Map<string, string[]>();
    const formulas = new Map<string, Presence[]>();
    for (const k of ["dependentRequired", "dependencies", "dependentSchemas"]) {
      const d = s[k];
      if (d === undefined) continue;
      if (!isObj(d)) throw this.error("E0903", `${k} takes an object`, `${ptr}/${k}`);
      for (const [t, v] of Object.entries(d)) {
        if (Array.isArray(v) && k !== "dependentSchemas") {
          if (!v.every((x) => typeof x === "string")) throw this.error("E0903", `${k}: the names that ${JSON.stringify(t)} needs must be strings`, `${ptr}/${k}/${pointerToken(t)}`);
          needs.set(t, [...new Set([...(needs.get(t) ?? []), ...(v as string[])])].filter((x) => x !== t));
          continue;
        }
        if (k === "dependentRequired") return undefined;
        const f = presence(v);
        if (f === undefined) return undefined;
        if (presenceNames(f).length > 0) formulas.set(t, [...(formulas.get(t) ?? []), f]);
      }
    }
    return { needs, formulas };
  }

  /**
   * A JSON string that is none of `names`: a trie, left at the first difference. Where no name has
   * a character only an escape writes (`"`, `\\`, a control character), the string may hold the
   * escapes of those characters (keyesc), which then spell no name; otherwise it holds no escapes
   * (stricter than JSON, never looser) and the names with such characters need no excluding.
   */
  private keyNotIn(names0: string[]): string {
    const needsEscape = (n: string) => /["\\\u0000-\u001f]/.test(n);
    const plain = names0.some(needsEscape);
    const names = names0.filter((n) => !needsEscape(n));
    if (names.length === 0) return plain ? "keyplain" : "key";
    // One called rule per set of names, however many objects (or places of one) exclude them.
    return this.calledString(`not ${JSON.stringify(names0)}`, () => this.exclusionTrie(names, plain));
  }

  /** `keyNotIn`'s trie: the key's opening quote, then a rule per node. */
  private exclusionTrie(names: string[], plain: boolean): string {
    interface Node { next: Map<string, Node>; end: boolean }
    const root: Node = { next: new Map(), end: false };
    for (const n of names) {
      let x = root;
      for (const ch of n) { let y = x.next.get(ch); if (!y) x.next.set(ch, (y = { next: new Map(), end: false })); x = y; }
      x.end = true;
    }
    const cls = (chars: string[]) => `[^"\\\\\\u0000-\\u001f${chars.map((c) => (/[\]\\^-]/.test(c) ? "\\" + c : c.charCodeAt(0) < 0x20 ? "" : c)).join("")}]`;
    const walk = (x: Node): string => {
      // After the text so far (a prefix of some name): end here if that is not a name; or go on with
      // a character no name continues with (then anything); or follow a name's next character.
      const alts: string[] = [];
      if (!x.end) alts.push('"\\""');
      // The rest of the name is one rule, the alternative's last symbol: entered by a jump, so every
      // node of the trie continues in the same states.
      alts.push(`${cls([...x.next.keys()])} ${plain ? "keytailplain" : "keytail"}`);
      if (!plain) alts.push("keyesctail");
      for (const [ch, y] of x.next) alts.push(`${gbnfLit(ch)} ${walk(y)}`);
      // Nodes with the same rest (the same subtree) are one rule, in this trie and every other:
      // the names of a schema's objects share their endings ("…Version", "…Name"), so the tries
      // become one minimal acyclic automaton, and the stages after this one read it once.
      const body = alts.join(" | ");
      let name = this.trieNodes.get(body);
      if (name === undefined) this.trieNodes.set(body, (name = this.define(body)));
      return name;
    };
    return `"\\"" ${walk(root)}`;
  }
  private readonly trieNodes = new Map<string, string>();
}

/**
 * The order of property names in an allOf whose members hold anyOf or oneOf branches (mergeAll):
 * each member's names where the member is, and there its anyOf's and oneOf's, per branch.
 */
const PROPERTY_ORDER = Symbol("property order");
type NameOrder = (string | { k: "anyOf" | "oneOf"; branches: string[][] })[];

/** The names of `s`'s properties, then those of each branch of its anyOf and oneOf (`deref`: a branch as a schema, or undefined). */
function propertyNames(s: Schema, deref: (branch: unknown) => Schema | undefined): NameOrder {
  if (!isObj(s)) return [];
  const names: NameOrder = isObj(s["properties"]) ? Object.keys(s["properties"]) : [];
  for (const k of ["anyOf", "oneOf"] as const) {
    const bs = s[k];
    if (Array.isArray(bs)) names.push({ k, branches: bs.map((b) => { const d = deref(b); return isObj(d) && isObj(d["properties"]) ? Object.keys(d["properties"]) : []; }) });
  }
  return names;
}

/** The names in `order` for branch i of its `k` (every branch of the other keyword's, in turn). */
function branchOrder(order: NameOrder, k: "anyOf" | "oneOf", i: number): string[] {
  return order.flatMap((x) => (typeof x === "string" ? [x] : x.k === k ? (x.branches[i] ?? []) : x.branches.flat()));
}

/** `s` with its properties in `order` (names not in it after, as they were); `s` when there is none. */
function inOrder(s: Schema, order: string[] | undefined): Schema {
  if (!order || !isObj(s) || !isObj(s["properties"])) return s;
  const props = s["properties"];
  const at = new Map<string, number>();
  order.forEach((k, i) => { if (!at.has(k)) at.set(k, i); });
  const keys = Object.keys(props).sort((a, b) => (at.get(a) ?? order.length) - (at.get(b) ?? order.length)); // stable
  return { ...s, properties: Object.fromEntries(keys.map((k) => [k, props[k]])) };
}

/** Which names are present, as a dependency schema may say it (`presence`). */
type Presence = { has: string } | { not: string } | { all: Presence[] } | { any: Presence[] } | { one: Presence[] };

/**
 * A dependency schema that only says which names are present, as a formula: `required` (each
 * name present), `properties` whose schemas nothing satisfies (`{"not": {}}`, `false`: absent) or
 * anything satisfies, `not: {required: [...]}` (not all present), and `allOf`, `anyOf`, `oneOf` of
 * such. undefined for any other schema.
 */
function presence(x: unknown): Presence | undefined {
  if (x === true) return { all: [] };
  if (!isObj(x)) return undefined;
  const parts: Presence[] = [];
  const kw = (v: Record<string, unknown>) => Object.keys(v).filter((k) => HANDLED.has(k));
  const never = (v: unknown) => v === false || (isObj(v) && kw(v).join() === "not" && isObj(v["not"]) && !hasValidation(v["not"] as Record<string, unknown>));
  const names = (v: unknown): string[] | undefined => (Array.isArray(v) && v.every((n) => typeof n === "string") ? (v as string[]) : undefined);
  for (const k of kw(x)) {
    const v = x[k];
    if (k === "required" && names(v)) parts.push(...names(v)!.map((n) => ({ has: n })));
    else if (k === "properties" && isObj(v)) {
      for (const [n, ps] of Object.entries(v)) {
        if (never(ps)) parts.push({ not: n });
        else if (!(ps === true || (isObj(ps) && !hasValidation(ps)))) return undefined;
      }
    } else if (k === "not" && isObj(v) && kw(v).join() === "required" && names(v["required"])) {
      parts.push({ any: names(v["required"])!.map((n) => ({ not: n })) });
    } else if ((k === "allOf" || k === "anyOf" || k === "oneOf") && Array.isArray(v)) {
      const ms = v.map(presence);
      if (ms.some((m) => m === undefined)) return undefined;
      parts.push(k === "allOf" ? { all: ms as Presence[] } : k === "anyOf" ? { any: ms as Presence[] } : { one: ms as Presence[] });
    } else return undefined;
  }
  return { all: parts };
}

/** The names a formula mentions. */
function presenceNames(f: Presence, out: string[] = []): string[] {
  if ("has" in f) out.push(f.has);
  else if ("not" in f) out.push(f.not);
  else for (const g of "all" in f ? f.all : "any" in f ? f.any : f.one) presenceNames(g, out);
  return out;
}

/** A formula's value, given which names are present. */
function presenceHolds(f: Presence, present: (n: string) => boolean): boolean {
  if ("has" in f) return present(f.has);
  if ("not" in f) return !present(f.not);
  if ("all" in f) return f.all.every((g) => presenceHolds(g, present));
  if ("any" in f) return f.any.some((g) => presenceHolds(g, present));
  return f.one.filter((g) => presenceHolds(g, present)).length === 1;
}

function hasValidation(s: Record<string, unknown>): boolean {
  return Object.keys(s).some((k) => HANDLED.has(k));
}

// ---- integer ranges ----

/**
 * Canonical integers n with a ≤ n ≤ b (null: unbounded) as GBNF alternatives: no leading zeros, no
 * "-0". Ranges are split by sign, then by number of digits, then digit by digit.
 */
export function intRange(a: bigint | null, b: bigint | null): string {
  const alts: string[] = [];
  // Negative part: -m for m in [max(1, -b), -a].
  if (a === null || a < 0n) {
    const mLo = b === null || b >= 0n ? 1n : -b;
    const mHi = a === null ? null : -a;
    if (mHi === null || mLo <= mHi) for (const x of natRange(mLo, mHi)) alts.push(`"-" ${x}`);
  }
  if (b === null || b >= 0n) {
    const lo = a === null || a < 0n ? 0n : a;
    if (b === null || lo <= b) alts.push(...natRange(lo, b));
  }
  return alts.length ? alts.join(" | ") : '"0" "x"';
}

/** A decimal bound: sign, integer part and fraction digits (no trailing zeros). */
interface Dec { neg: boolean; i: bigint; f: string }

/**
 * A bound as a decimal, from its shortest JavaScript spelling; null where that has an exponent or
 * more than MAX_EXACT_DIGITS significant digits (then decimals and doubles may order differently).
 */
export function decimalOf(v: number): Dec | null {
  const t = String(v);
  const m = /^(-?)(\d+)(?:\.(\d+))?$/.exec(t);
  if (!m) return null;
  const f = (m[3] ?? "").replace(/0+$/, "");
  if ((m[2]! + f).replace(/^0+/, "").length > MAX_EXACT_DIGITS) return null;
  return { neg: m[1] === "-" && (m[2] !== "0" || f !== ""), i: BigInt(m[2]!), f };
}

const cmpAbs = (a: Dec, b: Dec): number => {
  if (a.i !== b.i) return a.i < b.i ? -1 : 1;
  const n = Math.max(a.f.length, b.f.length);
  const x = a.f.padEnd(n, "0"), y = b.f.padEnd(n, "0");
  return x === y ? 0 : x < y ? -1 : 1;
};

/** Up to `n` digits (Infinity: any number), one of them not 0; null when n is 0. */
function nonzero(n: number): string | null {
  if (n === Infinity) return '( "0"* [1-9] [0-9]* )';
  if (n <= 0) return null;
  return `( ${Array.from({ length: n }, (_, z) => `${z ? `"0"{${z}} ` : ""}[1-9]${n - 1 - z ? ` [0-9]{0,${n - 1 - z}}` : ""}`).join(" | ")} )`;
}

/**
 * The optional fraction part `("." D)?` of a number whose digits D satisfy lo < 0.D or lo ≤ 0.D
 * (`lx`), and 0.D < hi or 0.D ≤ hi (`hx`), as GBNF; lo and hi are digit strings ("" is 0, hi null:
 * below 1, always true); at most `cap` digits (Infinity: any). Null when no D satisfies them. Digit
 * by digit, keeping whether the digits so far equal lo's and hi's.
 */
function fraction(lo: string, lx: boolean, hi: string | null, hx: boolean, cap: number): string | null {
  const L = Math.max(lo.length, hi?.length ?? 0);
  const loD = (i: number) => Number(lo[i] ?? "0");
  const hiD = (i: number) => Number(hi?.[i] ?? "0");
  const upTo = (n: number, body: string) => (n === Infinity ? `${body}*` : n <= 0 ? '""' : `${body}{0,${n}}`);
  /** GBNF of the digits from position i on (empty included), or null; `tl`/`th`: equal so far. */
  const rest = (i: number, tl: boolean, th: boolean, left: number): string | null => {
    if (!tl && !th) return upTo(left, "[0-9]");
    if (i >= L) {
      // lo's and hi's digits are all 0 from here.
      if (tl && th) return lx || hx ? null : upTo(left, '"0"');
      if (tl) return !lx ? upTo(left, "[0-9]") : nonzero(left);
      return hx ? null : upTo(left, '"0"');
    }
    const alts: string[] = [];
    // Stop here: the remaining digits are 0.
    const loRest = lo.slice(i).replace(/0/g, "") === "";
    const hiRest = (hi ?? "").slice(i).replace(/0/g, "") === "";
    if ((!tl || (loRest && !lx)) && (!th || !hiRest || !hx)) alts.push('""');
    if (left > 0) {
      const a = tl ? loD(i) : 0, b = th ? hiD(i) : 9;
      for (let d = a; d <= b; d++) {
        const nl = tl && d === a, nh = th && d === b;
        if (!nl && !nh && d > a && d < b) {
          alts.push(`${rangeDigit(d, b - (th ? 1 : 0))} ${upTo(left - 1, "[0-9]")}`);
          d = b - (th ? 1 : 0);
          continue;
        }
        const r = rest(i + 1, nl, nh, left - 1);
        if (r !== null) alts.push(`"${d}" ${r}`);
      }
    }
    return alts.length ? `( ${alts.join(" | ")} )` : null;
  };
  // D empty (no fraction) is 0.
  const zeroOk = (lo.replace(/0/g, "") === "" && !lx) && !(hx && (hi ?? "x").replace(/0/g, "") === "");
  const first: string[] = [];
  if (cap > 0) {
    const a = loD(0), b = hi === null ? 9 : hiD(0);
    for (let d = a; d <= b; d++) {
      const r = rest(1, d === a, hi !== null && d === b, cap - 1);
      if (r !== null) first.push(`"${d}" ${r}`);
    }
  }
  if (first.length === 0) return zeroOk ? '""' : null;
  const body = `"." ( ${first.join(" | ")} )`;
  return zeroOk ? `( ${body} )?` : body;
}

/**
 * Decimal numbers x with lo ≤ x ≤ hi (strict where lx / hx; null: no bound): integer part I
 * (canonical) and an optional fraction F, no exponent (stricter, as the module note says). For
 * x ≥ 0: I in the open range between the bounds' integer parts takes any F; at I = lo's integer
 * part F must be at least lo's fraction (more when strict); at I = hi's at most hi's. Negative
 * x = -(I.F) is the same on |x| with the bounds mirrored, and never zero ("-0" excluded).
 */
function boundedDecimal(lo: Dec | null, lx: boolean, hi: Dec | null, hx: boolean): string | null {
  const ANY_F = '( "." [0-9]+ )?';
  const ZERO_F = '( "." "0"+ )?';
  // Next to a strict bound a number must not read as the bound: 1.0000000000000000001 is the
  // double 1, which exclusiveMinimum: 1 refuses (so does ajv). With at most 15 significant digits
  // distinct decimals are distinct doubles, in the same order; there the fraction is capped.
  const room = (i: bigint) => MAX_EXACT_DIGITS - (i === 0n ? 0 : i.toString().length);
  const capped = (n: number) => (n <= 0 ? '""' : `( "." [0-9]{1,${n}} )?`);
  const cappedNonzero = (n: number) => { const d = nonzero(n); return d === null ? null : `"." ${d}`; };
  const ZERO: Dec = { neg: false, i: 0n, f: "" };
  const alts: string[] = [];
  // |x| = I.F in [a, b] (b null: unbounded) with strictness ax / bx; `neg`: x = -|x|, which must be non-zero.
  const side = (a: Dec, ax: boolean, b: Dec | null, bx: boolean, neg: boolean) => {
    const sign = neg ? '"-" ' : "";
    const int = (x: bigint) => `( ${natRange(x, x).join(" | ")} )`;
    const c = b === null ? -1 : cmpAbs(a, b);
    if (b !== null && (c > 0 || (c === 0 && (ax || bx)))) return;
    if (b !== null && c === 0) {
      // Exactly a (and a ≠ 0 when negative).
      if (neg && a.i === 0n && a.f === "") return;
      alts.push(a.f === "" ? `${sign}${natRange(a.i, a.i).join(" | ")} ${ZERO_F}` : `${sign}${int(a.i)} "." "${a.f}" "0"*`);
      return;
    }
    const lowX = ax || (neg && a.i === 0n && a.f === "");
    if (a.f === "" && (b === null || b.f === "")) {
      // Whole-number bounds. I = a: any F (non-zero when strict, or when negative and a = 0),
      // capped where a strict bound is within 1 (a itself, or b = a + 1).
      const aF = lowX ? cappedNonzero(room(a.i)) : bx && b!.i === a.i + 1n ? capped(room(a.i)) : ANY_F;
      if (aF !== null) alts.push(`${sign}${int(a.i)} ${aF}`);
    } else {
      // I = a's integer part: F from a's fraction, to b's when b has the same integer part.
      const same = b !== null && b.i === a.i;
      const near = lowX || (same && bx) || (bx && b !== null && b.f === "" && b.i === a.i + 1n);
      const aF = fraction(a.f, lowX, same ? b.f : null, same && bx, near ? room(a.i) : Infinity);
      if (aF !== null) alts.push(`${sign}${int(a.i)} ${aF}`);
      if (same) return;
    }
    // a < I < b: any F, capped on I = b - 1 when b is a strict whole number.
    const midHi = b === null ? null : b.i - 1n;
    const first = a.i + 1n;
    if (bx && b!.f === "" && midHi !== null && first <= midHi) {
      if (first <= midHi - 1n) alts.push(`${sign}( ${natRange(first, midHi - 1n).join(" | ")} ) ${ANY_F}`);
      alts.push(`${sign}( ${natRange(midHi, midHi).join(" | ")} ) ${capped(room(midHi))}`);
    } else if (midHi === null || first <= midHi) alts.push(`${sign}( ${natRange(first, midHi).join(" | ")} ) ${ANY_F}`);
    // I = b's integer part: F up to b's fraction (a zero F for a whole b; out when that is strict).
    if (b === null) return;
    if (b.f === "") { if (!bx) alts.push(`${sign}${int(b.i)} ${ZERO_F}`); return; }
    const bF = fraction("", false, b.f, bx, bx ? room(b.i) : Infinity);
    if (bF !== null) alts.push(`${sign}${int(b.i)} ${bF}`);
  };
  const abs = (d: Dec): Dec => ({ ...d, neg: false });
  // x ≥ 0 part: |x| in [max(lo, 0), hi] when hi ≥ 0.
  if (hi === null || !hi.neg) {
    if (lo === null || lo.neg) side(ZERO, false, hi, hx, false);
    else side(lo, lx, hi, hx, false);
  }
  // x < 0 part: |x| in [max(-hi, 0), -lo] when lo < 0.
  if (lo === null || lo.neg) {
    if (hi === null || !hi.neg) side(ZERO, false, lo === null ? null : abs(lo), lx, true);
    else side(abs(hi), hx, lo === null ? null : abs(lo), lx, true);
  }
  return alts.length ? alts.join(" | ") : null;
}

/** Naturals in [lo, hi] (hi null: unbounded), canonical decimal, as GBNF sequences. */
function natRange(lo: bigint, hi: bigint | null): string[] {
  const out: string[] = [];
  if (lo === 0n) { out.push('"0"'); lo = 1n; if (hi !== null && hi < 1n) return out; }
  const dl = lo.toString().length;
  const dh = hi === null ? null : hi.toString().length;
  for (let d = dl; dh === null ? d <= dl : d <= dh; d++) {
    const a = d === dl ? lo : 10n ** BigInt(d - 1);
    const b = dh !== null && d === dh ? hi! : 10n ** BigInt(d) - 1n;
    out.push(...sameLength(a.toString(), b.toString()));
  }
  if (hi === null) out.push(`[1-9] [0-9]{${dl},}`);
  return out;
}

/** Digit strings of one length between a and b (inclusive, a ≤ b), as GBNF sequences. */
function sameLength(a: string, b: string): string[] {
  if (a.length === 0) return ['""'];
  if (a[0] === b[0]) return sameLength(a.slice(1), b.slice(1)).map((r) => `"${a[0]}" ${r}`);
  const r = a.length - 1;
  const da = Number(a[0]);
  const db = Number(b[0]);
  const restA = a.slice(1);
  const restB = b.slice(1);
  const lowFull = restA === "0".repeat(r);
  const highFull = restB === "9".repeat(r);
  const any = r ? ` [0-9]{${r}}` : "";
  const out: string[] = [];
  if (!lowFull) for (const x of sameLength(restA, "9".repeat(r))) out.push(`"${da}" ${x}`);
  const mLo = lowFull ? da : da + 1;
  const mHi = highFull ? db : db - 1;
  if (mLo <= mHi) out.push(`${rangeDigit(mLo, mHi)}${any}`);
  if (!highFull) for (const x of sameLength("0".repeat(r), restB)) out.push(`"${db}" ${x}`);
  return out;
}

const rangeDigit = (x: number, y: number): string => (x === y ? `"${x}"` : `[${x}-${y}]`);

/** Rules every schema grammar shares. */
const BASE = [
  'value ::= object | array | string | number | "true" | "false" | "null"',
  'colon ::= ws ":" ws',
  'comma ::= ws "," ws',
  'object ::= "{" ( ws member (comma member)* )? ws "}"',
  'member ::= string colon value',
  'array ::= "[" ( ws value (comma value)* )? ws "]"',
  'string ::= "\\"" char* "\\""',
  'key ::= "\\"" keytail',
  'keyplain ::= "\\"" keytailplain',
  'keychar ::= [^"\\\\\\u0000-\\u001f]',
  // Escapes of characters that need one: no name written without escapes can be spelled with them.
  'keyesc ::= "\\\\" ["\\\\bfnrt]',
  'keytail ::= ( keychar | keyesc )* "\\""',
  'keytailplain ::= keychar* "\\""',
  'keyesctail ::= keyesc keytail',
  'char ::= [^"\\\\\\u0000-\\u001f] | "\\\\" ( ["\\\\/bfnrt] | "u" ( [0-9a-cA-CeEfF] [0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2} ) )',
  'number ::= "-"? ( "0" | [1-9] [0-9]* ) ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?',
  'integer ::= "-"? ( "0" | [1-9] [0-9]* )',
  'nonnegnumber ::= ( "0" | [1-9] [0-9]* ) ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?',
];

/** Schema text or value → grammar text (the front end proper). */
export function jsonSchemaToGbnf(schema: string | unknown, file: string, opts: JsonSchemaOptions = {}): JsonSchemaGrammar {
  const src = typeof schema === "string" ? parseJsonSource(schema, file) : jsonSourceOf(schema, file);
  return jsonSourceToGbnf(src, opts);
}

/** A schema that is part of a parsed JSON document (`src.base` says where) → grammar text. */
export function jsonSourceToGbnf(src: JsonSource, opts: JsonSchemaOptions = {}): JsonSchemaGrammar {
  const c = new Converter(src, opts);
  const gbnf = c.grammar();
  return { gbnf, warnings: c.warnings, called: [...c.called] };
}

/**
 * `obj[k] = v` as an own property whatever the name: a property named "__proto__" would otherwise
 * set the object's prototype, and the name would be lost.
 */
function setOwn(obj: Record<string, unknown>, k: string, v: unknown): void {
  Object.defineProperty(obj, k, { value: v, writable: true, enumerable: true, configurable: true });
}
