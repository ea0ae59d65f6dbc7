/**
 * @fileoverview `oneOf` over object branches that may overlap, exact. A grammar of alternatives says
 * "at least one branch"; `oneOf` says "exactly one". convert.ts first tries to prove that no value
 * satisfies two branches (then the two agree); where that fails and every branch is a plain object
 * schema (`type`, `properties`, `required`, `additionalProperties`), this module writes "exactly
 * one" itself. A value of another type than object satisfies every branch that allows its type, so
 * it may appear where exactly one does.
 *
 * How. A member's value decides, branch by branch, whether that branch still holds: its schema for
 * the name (`properties`, else `additionalProperties`). So each name's values are split into
 * CLASSES by the set of branches whose schema accepts them (the classes are disjoint: exact, and no
 * ambiguity for the parser). The members are written in order, and the rule state carries the set of
 * branches still ALIVE (every member so far satisfied them) and which names that some branches
 * require (but not all) are present. An object may end where exactly one alive branch has all its
 * required names. That is finite state beside the member order, like dependentRequired's bits.
 *
 * Splitting a name's values needs the difference of its schemas. That is written only where it is
 * simple: the schemas are all the same (one class), or no value satisfies two of them (one class
 * each, convert.ts's proof); or each is `true`, `false`, a value list
 * (`enum`/`const`) or a set of JSON types. Then the classes are made of listed values and "the other
 * values of type t" (integers apart from the other numbers where a schema tells them apart); the
 * other strings beside listed ones are written without escapes, and numbers that are not integers
 * without an exponent (stricter, never looser: as additional property names and integers are); the
 * other numbers, objects and arrays beside listed ones are refused. Anything else is refused with the reason, and convert.ts reports it.
 */

import { canonicalText, isObj, JSON_TYPES, typeOfValue, type JType } from "./evaluate.js";

/** What the converter lends this module. */
export interface OneOfHost {
  /** The schema with `$ref` followed. */
  deref(s: unknown, ptr: string): boolean | Record<string, unknown>;
  /** The validation keywords a schema uses (annotations and unknown keywords left out). */
  constrains(s: Record<string, unknown>): string[];
  /** Whether convert.ts proves that no value satisfies both schemas. */
  disjoint(a: unknown, b: unknown, ptr: string): boolean;
  /** GBNF of a schema, or null when nothing satisfies it. */
  expr(s: unknown, ptr: string): string | null;
  /** GBNF of exactly the canonical JSON text of a value. */
  literal(v: unknown): string;
  /** GBNF of a JSON string without escapes that is none of `values`. */
  stringNotIn(values: string[]): string;
  /** A new rule name; `setRule` gives it its body later. */
  fresh(): string;
  setRule(name: string, body: string): void;
}

/** Most branches, names whose presence is tracked, and rules written: past these, refused. */
const MAX_BRANCHES = 16;
const MAX_TRACKED = 10;
const MAX_STATES = 4_000;

export /** The generic GBNF rule (convert.ts's BASE) of any value of each type. */
const TYPE_RULE: Record<JType, string> = {
  null: '"null"', boolean: '("true" | "false")', object: "object", array: "array", number: "number", integer: "integer", string: "string",
};

/**
 * Numbers that are not integers, written without an exponent (stricter: `1.5e0` is refused, as
 * convert.ts's integers refuse `1.0`): a fraction with a digit that is not 0.
 */
export const NON_INTEGER = '( "-"? ( "0" | [1-9] [0-9]* ) "." [0-9]* [1-9] [0-9]* )';

interface Branch { types: Set<JType>; props: Record<string, unknown>; required: string[]; additional: unknown }
/** A class of a name's values: the branches that accept them (bit i = branch i) and their GBNF. */
interface ValueClass { alive: number; gbnf: string }

/** A schema that is a set of types plus listed values, or null when it is more than that. */
interface Simple { types: Set<JType>; values: unknown[] }

/** The types a schema's `type` allows (all when it has none; "number" includes "integer"). */
function typeSet(s: Record<string, unknown>): Set<JType> {
  const t = s["type"];
  const types = new Set<JType>(t === undefined ? JSON_TYPES : ((Array.isArray(t) ? t : [t]) as JType[]));
  if (types.has("number")) types.add("integer");
  return types;
}

/**
 * GBNF alternatives for the values of `type` ("number": all numbers) that are not `listed` (values
 * of other types there are ignored); undefined where specc cannot write them (numbers, objects or
 * arrays beside listed ones of their type). Other strings are written without escapes (stricter).
 */
export function otherValues(type: JType, listed: unknown[], host: Pick<OneOfHost, "literal" | "stringNotIn">): string[] | undefined {
  const mine = listed.filter((v) => typeOfValue(v) === type || (type === "number" && typeOfValue(v) === "integer"));
  if (mine.length === 0) return [TYPE_RULE[type]];
  if (type === "null") return [];
  if (type === "boolean") return [true, false].filter((b) => !mine.includes(b)).map((b) => host.literal(b));
  if (type === "string") return [host.stringNotIn(mine as string[])];
  return undefined;
}

/** Keywords whose value is a schema, a list of schemas, or a map of names to schemas. */
const SCHEMA_VALUED = new Set(["items", "additionalProperties", "additionalItems", "not", "if", "then", "else", "contains", "propertyNames",
  "unevaluatedProperties", "unevaluatedItems"]);
const SCHEMA_LISTS = new Set(["prefixItems", "allOf", "anyOf", "oneOf"]);
const SCHEMA_MAPS = new Set(["properties", "patternProperties", "dependentSchemas"]);

/**
 * A text that is equal for two schemas that say the same with different annotations (`description`
 * and the like, at any depth): branches often differ only in those.
 */
function schemaText(host: OneOfHost, s: unknown): string {
  if (!isObj(s)) return canonicalText(s);
  const keys = [...host.constrains(s)].sort();
  const part = (k: string, v: unknown): string => {
    if (SCHEMA_VALUED.has(k)) return Array.isArray(v) ? `[${v.map((x) => schemaText(host, x)).join(",")}]` : schemaText(host, v);
    if (SCHEMA_LISTS.has(k) && Array.isArray(v)) return `[${v.map((x) => schemaText(host, x)).join(",")}]`;
    if (SCHEMA_MAPS.has(k) && isObj(v)) return `{${Object.keys(v).sort().map((n) => `${JSON.stringify(n)}:${schemaText(host, v[n])}`).join(",")}}`;
    return canonicalText(v);
  };
  return `{${keys.map((k) => `${JSON.stringify(k)}:${part(k, s[k])}`).join(",")}}`;
}

/**
 * The GBNF of "exactly one of `branches`" (already merged with the schema around the oneOf), or a
 * string saying why it cannot be written. Throws what `host.expr` throws.
 */
export function exactlyOneObject(host: OneOfHost, branches: unknown[], ptr: string): { gbnf: string | null } | string {
  if (branches.length > MAX_BRANCHES) return `more than ${MAX_BRANCHES} branches`;
  const bs: Branch[] = [];
  for (const [i, b0] of branches.entries()) {
    const b = host.deref(b0, `${ptr}/${i}`);
    if (!isObj(b)) return `branch ${i} is a boolean schema`;
    const types = typeSet(b);
    const other = host.constrains(b).filter((k) => !["type", "properties", "required", "additionalProperties"].includes(k));
    if (other.length) return `branch ${i} uses ${other.join(", ")}`;
    const props = isObj(b["properties"]) ? (b["properties"] as Record<string, unknown>) : {};
    const required = Array.isArray(b["required"]) ? (b["required"] as unknown[]).filter((x): x is string => typeof x === "string") : [];
    bs.push({ types, props, required, additional: "additionalProperties" in b ? b["additionalProperties"] : true });
  }
  const n = bs.length;
  const names = memberOrder(bs.map((b) => [...Object.keys(b.props), ...b.required]));

  const simple = (s0: unknown, at: string): Simple | null => {
    const s = host.deref(s0, at);
    if (s === true) return { types: new Set(JSON_TYPES), values: [] };
    if (s === false) return { types: new Set(), values: [] };
    const keys = host.constrains(s);
    if (keys.some((k) => !["type", "enum", "const"].includes(k))) return null;
    const types = typeSet(s);
    if ("const" in s || Array.isArray(s["enum"])) {
      const list = "const" in s ? [s["const"]] : (s["enum"] as unknown[]);
      return { types: new Set(), values: list.filter((v) => types.has(typeOfValue(v)) || (typeOfValue(v) === "integer" && types.has("number"))) };
    }
    return { types, values: [] };
  };
  const accepts = (x: Simple, v: unknown) => x.values.some((w) => canonicalText(w) === canonicalText(v)) || x.types.has(typeOfValue(v));

  /** The classes of the values of a name whose schema in branch i is `schemas[i]`; a string: refused. */
  const classesOf = (schemas: unknown[], at: string): ValueClass[] | string => {
    const texts = schemas.map((s) => (s === false ? "false" : schemaText(host, s)));
    const distinct = [...new Set(texts.filter((t) => t !== "false"))];
    if (distinct.length === 0) return [];
    if (distinct.length === 1) {
      const i = texts.indexOf(distinct[0]!);
      const gbnf = host.expr(schemas[i], at);
      if (gbnf === null) return [];
      let alive = 0;
      texts.forEach((t, j) => { if (t === distinct[0]) alive |= 1 << j; });
      return [{ alive, gbnf }];
    }
    // Schemas that no value satisfies two of: one class each.
    const firsts = distinct.map((d) => texts.indexOf(d));
    if (firsts.every((i, x) => firsts.every((j, y) => y <= x || host.disjoint(schemas[i], schemas[j], at)))) {
      const out: ValueClass[] = [];
      for (const [x, d] of distinct.entries()) {
        const gbnf = host.expr(schemas[firsts[x]!], at);
        let alive = 0;
        texts.forEach((t, j) => { if (t === d) alive |= 1 << j; });
        if (gbnf !== null) out.push({ alive, gbnf });
      }
      return out;
    }
    const sims: Simple[] = [];
    for (const s of schemas) {
      const x = simple(s, at);
      if (x === null) return "their schemas for one property differ, and one of them is more than a type or a list of values";
      sims.push(x);
    }
    // Atoms: each listed value, and the other values of each type.
    const listed: unknown[] = [];
    for (const x of sims) for (const v of x.values) if (!listed.some((w) => canonicalText(w) === canonicalText(v))) listed.push(v);
    const aliveOf = (test: (x: Simple) => boolean) => sims.reduce((m, x, i) => (test(x) ? m | (1 << i) : m), 0);
    const groups = new Map<number, string[]>();
    const add = (alive: number, gbnf: string) => { if (alive) (groups.get(alive) ?? groups.set(alive, []).get(alive)!).push(gbnf); };
    for (const v of listed) add(aliveOf((x) => accepts(x, v)), host.literal(v));
    // "number" and "integer": one atom while every schema treats them alike, else the integers and
    // the other numbers.
    const intAlive = aliveOf((x) => x.types.has("integer"));
    const numAlive = aliveOf((x) => x.types.has("number"));
    if (numAlive !== intAlive && numAlive !== 0) {
      if (listed.some((v) => typeof v === "number")) return "specc cannot write the numbers other than the listed ones";
      add(numAlive, NON_INTEGER);
    }
    for (const t of JSON_TYPES) {
      if (t === "number") continue;
      const alive = t === "integer" ? intAlive : aliveOf((x) => x.types.has(t));
      if (!alive) continue;
      const type: JType = t === "integer" && numAlive === intAlive ? "number" : t;
      const rest = otherValues(type, listed, host);
      if (rest === undefined) return `specc cannot write the ${type}s other than the listed ones`;
      for (const g of rest) add(alive, g);
    }
    return [...groups].map(([alive, gs]) => ({ alive, gbnf: gs.length === 1 ? gs[0]! : `( ${gs.join(" | ")} )` }));
  };

  const classes: ValueClass[][] = [];
  for (const k of names) {
    const c = classesOf(bs.map((b) => (Object.hasOwn(b.props, k) ? b.props[k] : b.additional)), `${ptr}/0/properties/${k}`);
    if (typeof c === "string") return `${c} (${JSON.stringify(k)})`;
    classes.push(c);
  }
  const extra = classesOf(bs.map((b) => b.additional), `${ptr}/0/additionalProperties`);
  if (typeof extra === "string") return `${extra} (additional properties)`;

  // Names every branch requires are required; those some require are tracked (one bit each).
  const requiredAll = names.filter((k) => bs.every((b) => b.required.includes(k)));
  const tracked = names.filter((k) => !requiredAll.includes(k) && bs.some((b) => b.required.includes(k)));
  if (tracked.length > MAX_TRACKED) return `more than ${MAX_TRACKED} properties that only some branches require`;
  const needs = bs.map((b) => b.required.reduce((m, k) => (tracked.includes(k) ? m | (1 << tracked.indexOf(k)) : m), 0));
  const exactlyOne = (alive: number, mask: number): boolean => {
    let count = 0;
    for (let i = 0; i < n; i++) if ((alive >> i) & 1 && (needs[i]! & mask) === needs[i]) count++;
    return count === 1;
  };

  let states = 0;
  const budget = () => { if (++states > MAX_STATES) throw new TooLarge(); };
  // The other members, at the end: `viable` (some way to end from here), then their rules.
  const viableMemo = new Map<number, boolean>();
  const viable = (alive: number, mask: number): boolean => {
    const key = alive * 1024 + mask;
    let v = viableMemo.get(key);
    if (v === undefined) {
      v = exactlyOne(alive, mask) || extra.some((c) => { const a = alive & c.alive; return a !== 0 && a !== alive && viable(a, mask); });
      viableMemo.set(key, v);
    }
    return v;
  };
  const otherKey = host.stringNotIn(names);
  const endMemo = new Map<string, string>();
  const end = (first: boolean, alive: number, mask: number): string => {
    const key = `${first}|${alive}|${mask}`;
    let name = endMemo.get(key);
    if (name !== undefined) return name;
    budget();
    name = host.fresh();
    endMemo.set(key, name);
    const alts: string[] = [];
    if (exactlyOne(alive, mask)) alts.push('""');
    for (const c of extra) {
      const a = alive & c.alive;
      if (a !== 0 && viable(a, mask)) alts.push(`${first ? "ws " : 'comma '}${otherKey} colon ${c.gbnf} ${end(false, a, mask)}`);
    }
    host.setRule(name, alts.join(" | "));
    return name;
  };
  const memo = new Map<string, string | null>();
  const from = (i: number, first: boolean, alive: number, mask: number): string | null => {
    if (i === names.length) return viable(alive, mask) ? end(first, alive, mask) : null;
    const key = `${i}|${first}|${alive}|${mask}`;
    if (memo.has(key)) return memo.get(key)!;
    budget();
    const k = names[i]!;
    const bit = tracked.includes(k) ? 1 << tracked.indexOf(k) : 0;
    const alts: string[] = [];
    for (const c of classes[i]!) {
      const a = alive & c.alive;
      const rest = a === 0 ? null : from(i + 1, false, a, mask | bit);
      if (rest !== null) alts.push(`${first ? "ws " : 'comma '}${host.literal(k)} colon ${c.gbnf} ${rest}`);
    }
    if (!requiredAll.includes(k)) { const skip = from(i + 1, first, alive, mask); if (skip !== null) alts.push(skip); }
    let out: string | null = null;
    if (alts.length === 1) out = alts[0]!;
    else if (alts.length > 1) { out = host.fresh(); host.setRule(out, alts.join(" | ")); }
    memo.set(key, out);
    return out;
  };
  // A value of another type satisfies a branch that allows its type (the other keywords are about
  // objects): it may appear where exactly one branch allows its type.
  const alts: string[] = [];
  const count = (t: JType) => bs.filter((b) => b.types.has(t)).length;
  for (const t of ["null", "boolean", "array", "string"] as const) if (count(t) === 1) alts.push(TYPE_RULE[t]);
  const ints = count("integer"), nums = count("number");
  if (nums === 1 && ints === 1) alts.push(TYPE_RULE.number);
  else {
    if (ints === 1) alts.push(TYPE_RULE.integer);
    if (nums === 1) alts.push(NON_INTEGER);
  }
  const objects = bs.reduce((m, b, i) => (b.types.has("object") ? m | (1 << i) : m), 0);
  try {
    const body = objects === 0 ? null : from(0, true, objects, 0);
    if (body !== null) alts.unshift(`"{" ${body} ws "}"`);
    return { gbnf: alts.length === 0 ? null : alts.join(" | ") };
  } catch (e) {
    if (e instanceof TooLarge) return `the branches' combinations would need more than ${MAX_STATES} grammar rules`;
    throw e;
  }
}

class TooLarge extends Error {}

/**
 * The order the members are written in: one that keeps every branch's own order (`properties`,
 * then the names only `required` gives) where there is one, so an object in its branch's order is
 * in this one too. Among the names free to come next, the one first seen. Where two branches order
 * two names differently, the names in the order they are first seen.
 */
export function memberOrder(orders: string[][]): string[] {
  const seen: string[] = [];
  for (const o of orders) for (const k of o) if (!seen.includes(k)) seen.push(k);
  const before = new Map(seen.map((k) => [k, new Set<string>()]));
  for (const o of orders) {
    const own = [...new Set(o)];
    for (let i = 1; i < own.length; i++) before.get(own[i]!)!.add(own[i - 1]!);
  }
  const out: string[] = [];
  const placed = new Set<string>();
  while (out.length < seen.length) {
    const next = seen.find((k) => !placed.has(k) && [...before.get(k)!].every((p) => placed.has(p)));
    if (next === undefined) return seen; // the branches disagree
    out.push(next);
    placed.add(next);
  }
  return out;
}
