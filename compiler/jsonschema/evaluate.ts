/**
 * @fileoverview A JSON Schema validator for single values, three-valued: true, false, or undefined
 * where it cannot decide exactly (formats, fractional multipleOf, dynamic references, a regex
 * JavaScript cannot read, recursion that never reaches a value). convert.ts uses it where a schema
 * allows finitely many values (`enum`/`const`, also inside `allOf`): those values are checked
 * against every other keyword here and the survivors become the grammar, so `{"allOf": [{"enum":
 * [1, 2]}, {"not": {"const": 1}}]}` compiles exactly instead of being refused. An undecided value
 * leaves the schema to the usual conversion (which refuses what it cannot enforce).
 *
 * Semantics are convert.ts's: draft 2020-12 and the draft-04/06/07 spellings; keywords beside a
 * `$ref` apply (stricter than draft 7, which ignores them; never looser); unknown keywords are
 * ignored. tests/compiler/jsonschema-evaluate.test.ts checks every decided verdict against
 * MaskBench's labels and ajv.
 */

type Tri = boolean | undefined;

export const isObj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** The JSON Schema types. */
export const JSON_TYPES = ["null", "boolean", "object", "array", "number", "integer", "string"] as const;
export type JType = (typeof JSON_TYPES)[number];

/** The type of a JSON value ("integer" for whole numbers). */
export function typeOfValue(v: unknown): JType {
  if (v === null) return "null";
  if (typeof v === "boolean") return "boolean";
  if (typeof v === "string") return "string";
  if (typeof v === "number") return Number.isInteger(v) ? "integer" : "number";
  return Array.isArray(v) ? "array" : "object";
}

/** Deep equality of JSON values (key order ignored; 1 and 1.0 are one number). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((x, i) => jsonEqual(x, b[i]));
  if (isObj(a)) {
    if (!isObj(b)) return false;
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => Object.hasOwn(b, k) && jsonEqual(a[k], b[k]));
  }
  return false;
}

/** The JSON text of `v` with every object's keys sorted: equal for values `jsonEqual` calls equal. */
export function canonicalText(v: unknown): string {
  const canon = (x: unknown): unknown =>
    Array.isArray(x) ? x.map(canon) : isObj(x) ? Object.fromEntries(Object.keys(x).sort().map((k) => [k, canon(x[k])])) : x;
  return JSON.stringify(canon(v));
}

/** Three-valued and: false wins, then undefined. */
function and(...xs: Tri[]): Tri {
  let out: Tri = true;
  for (const x of xs) { if (x === false) return false; if (x === undefined) out = undefined; }
  return out;
}

/** Past these nested checks of one value, or this much work (a budget shared by the calls given it), the answer is undefined. */
const MAX_DEPTH = 200;
export const MAX_STEPS = 100_000;
const regexCache = new Map<string, RegExp | null>();
function regex(p: unknown): RegExp | null {
  if (typeof p !== "string") return null;
  let r = regexCache.get(p);
  if (r === undefined) {
    try { r = new RegExp(p, "u"); } catch { r = null; }
    regexCache.set(p, r);
  }
  return r;
}

/**
 * Does `value` satisfy `schema`? `root` is the document local `$ref`s point into; `budget.steps`
 * is decreased by the work done (schemas visited, enum entries compared).
 */
export function evaluate(schema: unknown, value: unknown, root: unknown, budget = { steps: MAX_STEPS }): Tri {
  return new Evaluator(root, budget).check(schema, value, 0);
}

class Evaluator {
  constructor(private readonly root: unknown, private readonly budget: { steps: number }) {}

  private at(ref: unknown): unknown {
    if (typeof ref !== "string" || !ref.startsWith("#")) return undefined;
    let p: string;
    try { p = decodeURIComponent(ref.slice(1)); } catch { return undefined; }
    if (p !== "" && !p.startsWith("/")) return undefined;
    let v: unknown = this.root;
    for (const tok of p.split("/").slice(1)) {
      const k = tok.replace(/~1/g, "/").replace(/~0/g, "~");
      v = Array.isArray(v) ? (/^(0|[1-9][0-9]*)$/.test(k) ? v[Number(k)] : undefined) : isObj(v) && Object.hasOwn(v, k) ? v[k] : undefined;
      if (v === undefined) return undefined;
    }
    return v;
  }

  check(s: unknown, v: unknown, depth: number): Tri {
    if (s === true) return true;
    if (s === false) return false;
    if (!isObj(s) || depth > MAX_DEPTH || --this.budget.steps < 0) return undefined;
    const d = depth + 1;
    const results: Tri[] = [];
    for (const k of ["$dynamicRef", "$recursiveRef"]) if (k in s) return undefined;
    if ("unevaluatedProperties" in s && s["unevaluatedProperties"] !== true) return undefined;
    if ("unevaluatedItems" in s && s["unevaluatedItems"] !== true) return undefined;
    if ("$ref" in s) {
      const target = this.at(s["$ref"]);
      if (target === undefined) return undefined;
      results.push(this.check(target, v, d));
    }
    if ("type" in s) results.push(this.type(s["type"], v));
    if ("enum" in s) {
      const list = s["enum"];
      results.push(Array.isArray(list) && (this.budget.steps -= list.length) >= 0 ? list.some((e) => jsonEqual(e, v)) : undefined);
    }
    if ("const" in s) results.push(jsonEqual(s["const"], v));
    if (Array.isArray(s["allOf"])) results.push(and(...s["allOf"].map((x) => this.check(x, v, d))));
    if (Array.isArray(s["anyOf"])) {
      const rs = s["anyOf"].map((x) => this.check(x, v, d));
      results.push(rs.includes(true) ? true : rs.includes(undefined) ? undefined : false);
    }
    if (Array.isArray(s["oneOf"])) {
      const rs = s["oneOf"].map((x) => this.check(x, v, d));
      results.push(rs.includes(undefined) ? undefined : rs.filter((r) => r).length === 1);
    }
    if ("not" in s) { const r = this.check(s["not"], v, d); results.push(r === undefined ? undefined : !r); }
    if ("if" in s) {
      const c = this.check(s["if"], v, d);
      if (c === undefined) results.push(undefined);
      else if (c && "then" in s) results.push(this.check(s["then"], v, d));
      else if (!c && "else" in s) results.push(this.check(s["else"], v, d));
    }
    if (typeof v === "number") results.push(this.number(s, v));
    else if (typeof v === "string") results.push(this.string(s, v));
    else if (Array.isArray(v)) results.push(this.array(s, v, d));
    else if (isObj(v)) results.push(this.object(s, v, d));
    return and(...results);
  }

  private type(t: unknown, v: unknown): Tri {
    const one = (x: unknown): Tri => {
      switch (x) {
        case "null": return v === null;
        case "boolean": return typeof v === "boolean";
        case "string": return typeof v === "string";
        case "number": return typeof v === "number";
        case "integer": return typeof v === "number" && Number.isInteger(v);
        case "array": return Array.isArray(v);
        case "object": return isObj(v);
      }
      return undefined;
    };
    const rs = (Array.isArray(t) ? t : [t]).map(one);
    return rs.includes(true) ? true : rs.includes(undefined) ? undefined : false;
  }

  private number(s: Record<string, unknown>, v: number): Tri {
    const num = (k: string) => (typeof s[k] === "number" ? (s[k] as number) : undefined);
    // Past 2^53 a number read into a double may have been rounded (9223372036854775807 reads as
    // 2^63): no comparison is exact there.
    const inexact = (x: number | undefined) => x !== undefined && Math.abs(x) > Number.MAX_SAFE_INTEGER;
    if (inexact(v) || ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"].some((k) => inexact(num(k)))) return undefined;
    const out: Tri[] = [];
    const mn = num("minimum"), mx = num("maximum"), emn = num("exclusiveMinimum"), emx = num("exclusiveMaximum");
    if (mn !== undefined) out.push(s["exclusiveMinimum"] === true ? v > mn : v >= mn);
    if (mx !== undefined) out.push(s["exclusiveMaximum"] === true ? v < mx : v <= mx);
    if (emn !== undefined) out.push(v > emn);
    if (emx !== undefined) out.push(v < emx);
    if ("multipleOf" in s) {
      const m = s["multipleOf"];
      // Exact only for whole numbers; fractional steps depend on the validator's float handling.
      out.push(typeof m === "number" && Number.isSafeInteger(m) && m > 0 && Number.isSafeInteger(v) ? v % m === 0 : undefined);
    }
    return and(...out);
  }

  private string(s: Record<string, unknown>, v: string): Tri {
    const out: Tri[] = [];
    const len = [...v].length;
    if (typeof s["minLength"] === "number") out.push(len >= s["minLength"]);
    if (typeof s["maxLength"] === "number") out.push(len <= s["maxLength"]);
    if ("pattern" in s) { const r = regex(s["pattern"]); out.push(r ? r.test(v) : undefined); }
    if ("format" in s) out.push(undefined);
    return and(...out);
  }

  private array(s: Record<string, unknown>, v: unknown[], d: number): Tri {
    const out: Tri[] = [];
    let from = 0;
    if (Array.isArray(s["prefixItems"])) {
      const p = s["prefixItems"];
      for (let i = 0; i < Math.min(p.length, v.length); i++) out.push(this.check(p[i], v[i], d));
      from = p.length;
      if ("items" in s) for (let i = from; i < v.length; i++) out.push(this.check(s["items"], v[i], d));
    } else if (Array.isArray(s["items"])) {
      const p = s["items"];
      for (let i = 0; i < Math.min(p.length, v.length); i++) out.push(this.check(p[i], v[i], d));
      if ("additionalItems" in s) for (let i = p.length; i < v.length; i++) out.push(this.check(s["additionalItems"], v[i], d));
    } else if ("items" in s) {
      for (const x of v) out.push(this.check(s["items"], x, d));
    }
    if (typeof s["minItems"] === "number") out.push(v.length >= s["minItems"]);
    if (typeof s["maxItems"] === "number") out.push(v.length <= s["maxItems"]);
    if (s["uniqueItems"] === true) out.push(v.every((x, i) => v.findIndex((y) => jsonEqual(x, y)) === i));
    if ("contains" in s) {
      const rs = v.map((x) => this.check(s["contains"], x, d));
      if (rs.includes(undefined)) out.push(undefined);
      else {
        const n = rs.filter((r) => r).length;
        const lo = typeof s["minContains"] === "number" ? s["minContains"] : 1;
        out.push(n >= lo && (typeof s["maxContains"] !== "number" || n <= s["maxContains"]));
      }
    }
    return and(...out);
  }

  private object(s: Record<string, unknown>, v: Record<string, unknown>, d: number): Tri {
    const out: Tri[] = [];
    const keys = Object.keys(v);
    const props = isObj(s["properties"]) ? s["properties"] : {};
    const patterns = isObj(s["patternProperties"]) ? Object.entries(s["patternProperties"]) : [];
    for (const k of keys) {
      let matched = Object.hasOwn(props, k);
      if (matched) out.push(this.check(props[k], v[k], d));
      for (const [p, ps] of patterns) {
        const r = regex(p);
        if (!r) { out.push(undefined); continue; }
        if (r.test(k)) { matched = true; out.push(this.check(ps, v[k], d)); }
      }
      if (!matched && "additionalProperties" in s) out.push(this.check(s["additionalProperties"], v[k], d));
      if ("propertyNames" in s) out.push(this.check(s["propertyNames"], k, d));
    }
    if (Array.isArray(s["required"])) out.push(s["required"].every((k) => typeof k !== "string" || Object.hasOwn(v, k)));
    if (typeof s["minProperties"] === "number") out.push(keys.length >= s["minProperties"]);
    if (typeof s["maxProperties"] === "number") out.push(keys.length <= s["maxProperties"]);
    const dependent = (deps: unknown, arrays: boolean, schemas: boolean) => {
      if (!isObj(deps)) return;
      for (const [k, dep] of Object.entries(deps)) {
        if (!Object.hasOwn(v, k)) continue;
        if (Array.isArray(dep)) { if (arrays) out.push(dep.every((x) => typeof x !== "string" || Object.hasOwn(v, x))); }
        else if (schemas) out.push(this.check(dep, v, d));
      }
    };
    dependent(s["dependentRequired"], true, false);
    dependent(s["dependentSchemas"], false, true);
    dependent(s["dependencies"], true, true);
    return and(...out);
  }
}
