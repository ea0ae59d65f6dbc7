/**
 * @fileoverview One MaskBench schema through one engine: compile it (time to first mask, TTFM), then
 * replay every instance token by token (time by mask, TBM), and give the verdict MaskBench's README
 * defines: pass, compile error (an honest refusal), validation error (a valid instance rejected at
 * some token or incomplete at the end), invalidation error (an invalid instance accepted to the end).
 *
 * Engines: specc (the JSON Schema front end → .wasm → Spec with the vocabulary) and XGrammar's
 * WebAssembly build (`@mlc-ai/web-xgrammar`, its own JSON Schema support, any whitespace, non-strict:
 * JSON Schema's own defaults), both on the same tokenizer.json and the same token ids. The caller
 * (worker.ts) runs this in a worker thread so a hang or an exhausted heap is a timeout or an
 * out-of-memory, not the end of the run.
 */
import { Spec } from "../../bindings/spec.js";
import { now, since, type LoadedVocab } from "../harness/common.js";
import type { XGrammarVocab } from "../harness/xgrammar.js";
import { instanceText, schemaOrder, type MaskBenchCase } from "./data.js";

export type Verdict = "pass" | "compile_error" | "validation_error" | "invalidation_error" | "crash" | "timeout" | "oom";

export interface InstanceResult {
  valid: boolean;
  /** Accepted to the end (EOS allowed after the last token). */
  accepted: boolean;
  /** Index of the first token the mask did not allow (-1: none). */
  rejectedAt: number;
  tokens: number;
  /**
   * A valid instance rejected: whether it is accepted with its keys in the schema's order
   * (data.ts `schemaOrder`; replayed after every instance, untimed). Absent: no other order.
   */
  acceptedInSchemaOrder?: boolean;
}

/** An instance as the engines replay it: its token ids, and those of its text in the schema's key order (if another). */
export interface TokenizedInstance { valid: boolean; tokens: number[]; inSchemaOrder?: number[] }

export interface EngineResult {
  verdict: Verdict;
  /** Compile error code or message (compile_error, crash). */
  error?: string;
  /** Compile + load + first mask, µs. */
  ttfmUs?: number;
  /** Mask times (ns) as a log histogram: bucket → count (see `bucketOf`). */
  tbm?: Record<number, number>;
  instances?: InstanceResult[];
  /** Mask steps where the mask disallowed the token yet the commit accepted it, or the reverse. */
  inconsistent?: number;
}

/** Log-scale buckets 2% wide: percentiles from merged histograms are within 2%. */
const LOG_BASE = Math.log(1.02);
export const bucketOf = (ns: number): number => Math.max(0, Math.floor(Math.log(Math.max(ns, 1)) / LOG_BASE));
export const bucketValue = (b: number): number => Math.exp((b + 0.5) * LOG_BASE);

const bitSet = (mask: Int32Array, id: number): boolean => ((mask[id >>> 5]! >>> (id & 31)) & 1) === 1;

function verdictOf(instances: InstanceResult[]): Verdict {
  if (instances.some((i) => i.valid && !i.accepted)) return "validation_error";
  if (instances.some((i) => !i.valid && i.accepted)) return "invalidation_error";
  return "pass";
}

/** One engine's matcher, as the replay sees it. */
interface ReplayMatcher<M> {
  reset(): void;
  /** The current mask: the call that is timed. */
  mask(): M;
  /** Is `tok` in the mask (not timed; releases the mask where the engine needs that)? */
  has(mask: M, tok: number): boolean;
  /** Advance by `tok`; false: the matcher refused a token its mask allowed. */
  commit(tok: number): boolean;
}

/** Every instance token by token: mask times into a log histogram, and the verdict per instance. */
function replay<M>(m: ReplayMatcher<M>, eos: number, instances: TokenizedInstance[]) {
  const tbm: Record<number, number> = {};
  const results: InstanceResult[] = [];
  let inconsistent = 0;
  for (const inst of instances) {
    m.reset();
    let rejectedAt = -1;
    for (let i = 0; i < inst.tokens.length; i++) {
      const tok = inst.tokens[i]!;
      const a = now();
      const mask = m.mask();
      const b = bucketOf(since(a));
      tbm[b] = (tbm[b] ?? 0) + 1;
      if (!m.has(mask, tok)) { rejectedAt = i; break; }
      if (!m.commit(tok)) { inconsistent++; rejectedAt = i; break; }
    }
    const accepted = rejectedAt < 0 && m.has(m.mask(), eos);
    results.push({ valid: inst.valid, accepted, rejectedAt, tokens: inst.tokens.length });
  }
  // After the timed replays (their first masks stay cold): rejected valid instances in the schema's order.
  instances.forEach((inst, k) => {
    if (!inst.valid || results[k]!.accepted || !inst.inSchemaOrder) return;
    m.reset();
    let ok = true;
    for (const tok of inst.inSchemaOrder) if (!(ok = m.has(m.mask(), tok) && m.commit(tok))) break;
    results[k]!.acceptedInSchemaOrder = ok && m.has(m.mask(), eos);
  });
  return { verdict: verdictOf(results), tbm, instances: results, inconsistent };
}

/** Tokenized instances of a case (the same ids for every engine). */
export function tokenizeCase(c: MaskBenchCase, v: LoadedVocab): TokenizedInstance[] {
  const ordered = schemaOrder(c.schema);
  return c.tests.map((t) => {
    const other = t.valid ? ordered(t.data) : null;
    return { valid: t.valid, tokens: v.encode(instanceText(t.data)), ...(other === null ? {} : { inSchemaOrder: v.encode(other) }) };
  });
}

/** How specc compiles a schema to a .wasm (the JSON Schema front end; injected so this file stays independent of its API). */
export type SchemaCompiler = (schemaText: string, name: string) => Uint8Array;

export async function runSpecc(c: MaskBenchCase, v: LoadedVocab, compile: SchemaCompiler, instances: TokenizedInstance[]): Promise<EngineResult> {
  const schemaText = JSON.stringify(c.schema);
  const t0 = now();
  let spec: Spec;
  try {
    const wasm = compile(schemaText, c.name);
    spec = await Spec.load(wasm, { vocab: v.vocab });
  } catch (e) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && /^E\d+|^[A-Z]/.test(code)) return { verdict: "compile_error", error: `${code}: ${(e as Error).message.split("\n")[0]}` };
    return { verdict: "crash", error: String((e as Error)?.stack ?? e).split("\n").slice(0, 3).join(" | ") };
  }
  const m = spec.matcher();
  m.maskView();
  const ttfmUs = since(t0) / 1e3;
  const eos = v.vocab.eos[0]!;
  try {
    return { ttfmUs, ...replay({ reset: () => m.reset(), mask: () => m.maskView(), has: bitSet, commit: (tok) => m.commit(tok) !== "rejected" }, eos, instances) };
  } finally {
    spec.dispose(); // as XGrammar's matcher and compiled grammar are disposed below
  }
}

export async function runXGrammar(c: MaskBenchCase, xv: XGrammarVocab, eos: number, instances: TokenizedInstance[]): Promise<EngineResult> {
  const schemaText = JSON.stringify(c.schema);
  const compiler = xv.compiler as unknown as {
    compileJSONSchema(schema: string, anyWhitespace?: boolean, indent?: number, separators?: [string, string], strictMode?: boolean): Promise<{ dispose(): void }>;
  };
  const t0 = now();
  let cg: { dispose(): void };
  let m: Awaited<ReturnType<typeof xv.x.GrammarMatcher.createGrammarMatcher>>;
  try {
    cg = await compiler.compileJSONSchema(schemaText, true, undefined, undefined, false);
    m = await xv.x.GrammarMatcher.createGrammarMatcher(cg as never);
  } catch (e) {
    return { verdict: "compile_error", error: String((e as Error)?.message ?? e).split("\n")[0]!.slice(0, 200) };
  }
  const vsize = m.vocab_size;
  const first = m.handle.GetNextTokenBitmask(vsize);
  first.delete();
  const ttfmUs = since(t0) / 1e3;
  const has = (vec: { get(i: number): string; delete(): void }, tok: number): boolean => {
    const word = Number(vec.get(tok >>> 5));
    vec.delete();
    return ((word >>> (tok & 31)) & 1) === 1;
  };
  try {
    return { ttfmUs, ...replay({ reset: () => m.reset(), mask: () => m.handle.GetNextTokenBitmask(vsize), has, commit: (tok) => m.acceptToken(tok) }, eos, instances) };
  } finally {
    m.dispose();
    cg.dispose();
  }
}
