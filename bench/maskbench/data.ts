/**
 * @fileoverview MaskBench's data (../shared/maskbench, JSONSchemaBench's MaskBench): 11,305 real
 * JSON Schemas, each with valid and invalid instances. One JSON object a line, gzipped.
 *
 * An instance is replayed as the text `JSON.stringify(data)` writes (compact, properties in the
 * order the data gives them, which is the order of the schema's `properties`): the engines under
 * test accept any JSON whitespace, so the compact form is one of the texts they must accept.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { evaluate, isObj } from "../../compiler/jsonschema/evaluate.js";

export interface MaskBenchTest { description: string; valid: boolean; data: unknown }
export interface MaskBenchCase { name: string; description: string; schema: unknown; tests: MaskBenchTest[] }

/** Where the data is: $MASKBENCH, else ../shared/maskbench next to the repository. */
export function maskBenchPath(root: string): string {
  const env = process.env["MASKBENCH"];
  if (env) return env;
  for (const p of [join(root, "..", "shared", "maskbench", "maskbench.jsonl.gz"), join(root, "shared", "maskbench", "maskbench.jsonl.gz")]) {
    if (existsSync(p)) return p;
  }
  return join(root, "..", "shared", "maskbench", "maskbench.jsonl.gz");
}

export function loadMaskBench(path: string): MaskBenchCase[] {
  const text = gunzipSync(readFileSync(path)).toString("utf8");
  const out: MaskBenchCase[] = [];
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    const o = JSON.parse(line) as Partial<MaskBenchCase>;
    out.push({ name: String(o.name), description: String(o.description ?? ""), schema: o.schema, tests: Array.isArray(o.tests) ? o.tests : [] });
  }
  return out;
}

/** The text an instance is replayed as. */
export const instanceText = (data: unknown): string => JSON.stringify(data);

/**
 * For a schema: an instance's text with every object's keys in the order its schema lists them
 * (the object's schema found along the instance: `$ref`s within the document followed, the
 * `properties` of the schema, then of its allOf members and of the anyOf and oneOf branches the
 * object satisfies, a name at its first place; then the names only `required` gives; other names
 * after, in JavaScript's key order; a value under patternProperties takes that pattern's order),
 * or null when that is its text already. The engines, like the issue, take properties in the order
 * of `properties`, and MaskBench puts its instances in that order only for the schemas LLGuidance
 * compiles; the runner tries this text on a valid instance an engine rejected, to tell a rejection
 * for the order alone from the others. A heuristic: sibling keywords of a `$ref` are not looked at.
 */
export function schemaOrder(schema: unknown): (data: unknown) => string | null {
  type Obj = Record<string, unknown>;
  const resolve = (s: unknown, depth: number): Obj | null => {
    if (!isObj(s)) return null;
    const ref = s["$ref"];
    if (typeof ref !== "string" || !ref.startsWith("#") || depth > 16) return s;
    let t: unknown = schema;
    for (const part of ref.slice(1).split("/").filter(Boolean)) {
      t = isObj(t) ? t[decodeURIComponent(part).replace(/~1/g, "/").replace(/~0/g, "~")] : undefined;
    }
    return resolve(t, depth + 1);
  };
  /**
   * The schema and the members of its allOf, in order, references resolved, and of each anyOf and
   * oneOf the branch `x` satisfies (evaluate.ts; the first that may, where none surely does).
   */
  const parts = (s: unknown, x: unknown, out: Obj[], depth: number): Obj[] => {
    const o = resolve(s, 0);
    if (!o || depth > 8 || out.includes(o)) return out;
    out.push(o);
    if (Array.isArray(o["allOf"])) for (const m of o["allOf"]) parts(m, x, out, depth + 1);
    for (const k of ["anyOf", "oneOf"]) {
      const bs = o[k];
      if (!Array.isArray(bs)) continue;
      const verdicts = bs.map((b) => evaluate(b, x, schema));
      const i = verdicts.indexOf(true) >= 0 ? verdicts.indexOf(true) : verdicts.indexOf(undefined);
      if (i >= 0) parts(bs[i], x, out, depth + 1);
    }
    return out;
  };
  /**
   * The text of `x` with each object's keys in its schema's order: `properties` (of the parts, in
   * order), then the names only `required` gives, then the others as they came. Written out, not
   * by JSON.stringify, which puts integer-like keys ("404") first whatever the order asked.
   */
  const reorder = (x: unknown, s: unknown): string => {
    if (x === null || typeof x !== "object") return JSON.stringify(x);
    const ps = parts(s, x, [], 0);
    if (Array.isArray(x)) {
      const items = x.map((v, i) => {
        for (const p of ps) {
          const pre = p["prefixItems"] ?? (Array.isArray(p["items"]) ? p["items"] : undefined);
          if (Array.isArray(pre) && i < pre.length) return reorder(v, pre[i]);
          if (isObj(p["items"])) return reorder(v, p["items"]);
        }
        return reorder(v, undefined);
      });
      return `[${items.join(",")}]`;
    }
    const sub = new Map<string, unknown>();
    for (const p of ps) {
      const props = p["properties"];
      if (isObj(props)) for (const [k, v] of Object.entries(props)) if (!sub.has(k)) sub.set(k, v);
    }
    const names = [...sub.keys()];
    for (const p of ps) if (Array.isArray(p["required"])) for (const k of p["required"]) if (typeof k === "string" && !names.includes(k)) names.push(k);
    const rank = new Map(names.map((k, i) => [k, i] as const));
    // A name no `properties` lists: the schema of the first pattern it matches, else additionalProperties.
    const patterns = ps.flatMap((p) => (isObj(p["patternProperties"]) ? Object.entries(p["patternProperties"]) : []));
    const other = (k: string): unknown => {
      for (const [src, v] of patterns) {
        try { if (new RegExp(src, "u").test(k)) return v; } catch { /* not a JavaScript regex */ }
      }
      return ps.map((p) => p["additionalProperties"]).find(isObj);
    };
    const keys = Object.keys(x).sort((a, b) => (rank.get(a) ?? rank.size) - (rank.get(b) ?? rank.size)); // stable
    return `{${keys.map((k) => `${JSON.stringify(k)}:${reorder((x as Obj)[k], sub.has(k) ? sub.get(k) : other(k))}`).join(",")}}`;
  };
  return (data) => {
    const text = reorder(data, schema);
    return text === instanceText(data) ? null : text;
  };
}

/**
 * A fixed, spread-out sample of `n` cases (every k-th by name order), the same on every machine:
 * the test suite's slice and `--sample N`.
 */
export function fixedSample(cases: MaskBenchCase[], n: number): MaskBenchCase[] {
  const sorted = [...cases].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  if (n >= sorted.length) return sorted;
  const step = sorted.length / n;
  return Array.from({ length: n }, (_, i) => sorted[Math.floor(i * step)]!);
}
