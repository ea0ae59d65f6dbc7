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
 * A fixed, spread-out sample of `n` cases (every k-th by name order), the same on every machine:
 * the test suite's slice and `--sample N`.
 */
export function fixedSample(cases: MaskBenchCase[], n: number): MaskBenchCase[] {
  const sorted = [...cases].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  if (n >= sorted.length) return sorted;
  const step = sorted.length / n;
  return Array.from({ length: n }, (_, i) => sorted[Math.floor(i * step)]!);
}
