/**
 * @fileoverview What every `specc` command shares: exit codes, the usage error, reading and
 * compiling a spec file (agent spec or grammar) while remembering its text for diagnostics, the
 * compile flags, and loading a spec with a vocabulary. Each command is a module of its own beside
 * this one (compile.ts, render.ts, check.ts, replay.ts, sample.ts, bench.ts, plan.ts, demo.ts);
 * main.ts dispatches and turns every failure into a diagnostic and an exit code.
 */
import { tokenMarkers, type TokenMarker } from "../compiler/tokens.js";
import { compileGrammarSource, compileIR, compileToWasm, isGrammarFile, parseSpecBytes, type CompiledGrammar, type Limits } from "../compiler/compile.js";
import { SpecError } from "../compiler/diagnostics.js";
import { decodeSource } from "../compiler/frontend/parse.js";
import { formatWarning } from "../compiler/grammar/index.js";
import { InputError, readInput } from "../compiler/io.js";
import { compileJsonSchema } from "../compiler/jsonschema/index.js";
import type { Compiled } from "../compiler/ir.js";
import { MAX_GRAMMAR_DEPTH } from "../compiler/lower.js";
import { byteDfaEngine, type Engine } from "../compiler/trace.js";

export { InputError, readInput };

export const EXIT = { ok: 0, nonconforming: 1, usage: 2, input: 3, internal: 70 } as const;

export class UsageError extends Error {}

export interface Io { out: (s: string) => void; err: (s: string) => void }

export interface CompileFileOptions {
  limits?: Limits;
  /** Receives each warning (of grammars), formatted. */
  warn?: (text: string) => void;
  /** Start rule of a standalone grammar (default root). */
  start?: string;
  /** Read the input as a JSON Schema even without the .schema.json ending. */
  jsonSchema?: boolean;
  /** JSON Schema: relax what cannot be enforced exactly (with a warning) instead of refusing it. */
  lenient?: boolean;
  /** JSON Schema: no whitespace between tokens. */
  compact?: boolean;
  /** JSON Schema: small objects' properties in any order. */
  anyOrder?: boolean;
}

/** A JSON Schema input: a .schema.json file, or any file with --json-schema. */
export const isJsonSchemaFile = (path: string, opts: CompileFileOptions = {}): boolean => opts.jsonSchema === true || path.endsWith(".schema.json");

/**
 * Reads and compiles a spec file — an agent spec, or a standalone grammar (.gbnf/.ebnf) — and
 * remembers its text (and its grammar files') so diagnostics can quote them.
 */
export function compileFile(path: string, sources: Map<string, string>, opts: CompileFileOptions = {}): Compiled | CompiledGrammar {
  const bytes = readInput(path);
  try {
    let c: Compiled | CompiledGrammar;
    if (isJsonSchemaFile(path, opts)) {
      const text = decodeSource(path, bytes);
      sources.set(path, text);
      const g = compileJsonSchema(text, path, { lenient: opts.lenient, compact: opts.compact, anyOrder: opts.anyOrder, limits: opts.limits });
      if (opts.warn) for (const w of g.schemaWarnings) opts.warn(formatWarning(w, text));
      // The generated grammar's own warnings (unused shared rules, portability) are about text the
      // user never wrote: not shown.
      return g;
    } else if (isGrammarFile(path)) {
      const text = decodeSource(path, bytes);
      sources.set(path, text);
      c = compileGrammarSource(text, path, opts.limits, opts.start);
    } else {
      const { ir, text } = parseSpecBytes(bytes, path, { sources });
      sources.set(path, text);
      c = compileIR(ir, opts.limits);
    }
    if (opts.warn) for (const w of grammarWarnings(c)) opts.warn(formatWarning(w, w.span ? sources.get(w.span.file) : undefined));
    return c;
  } catch (e) {
    if (e instanceof SpecError && e.span && !sources.has(path)) {
      try { sources.set(path, new TextDecoder().decode(bytes)); } catch { /* binary: no source line */ }
    }
    throw e;
  }
}

/** The warnings of a compiled grammar, or of the grammars in a spec's states. */
export function grammarWarnings(c: Compiled | CompiledGrammar): SpecError[] {
  if ("grammar" in c) return c.grammar.cfg.warnings;
  return c.ir.states.flatMap((s) => (s.content.kind === "grammar" ? s.content.cfg.warnings : []));
}

export const isCompiledGrammar = (c: Compiled | CompiledGrammar): c is CompiledGrammar => "grammar" in c;

/** Options every command that compiles takes. */
export const COMPILE_OPTIONS = {
  "max-depth": { type: "string" }, "max-grammar-states": { type: "string" }, start: { type: "string" },
  "json-schema": { type: "boolean" }, lenient: { type: "boolean" }, compact: { type: "boolean" }, "any-order": { type: "boolean" },
} as const;

export function compileOptions(values: { "max-depth"?: string; "max-grammar-states"?: string; start?: string; "json-schema"?: boolean; lenient?: boolean; compact?: boolean; "any-order"?: boolean }, io: Io): CompileFileOptions {
  const limits: Limits = {};
  if (values["max-grammar-states"] !== undefined) {
    const n = Number(values["max-grammar-states"]);
    if (!Number.isInteger(n) || n < 1) throw new UsageError(`--max-grammar-states must be a positive integer, not '${values["max-grammar-states"]}'`);
    limits.maxGrammarStates = n;
  }
  if (values["max-depth"] !== undefined) {
    const d = Number(values["max-depth"]);
    if (!Number.isInteger(d) || d < 0 || d > MAX_GRAMMAR_DEPTH) throw new UsageError(`--max-depth must be an integer from 0 to ${MAX_GRAMMAR_DEPTH}, not '${values["max-depth"]}'`);
    limits.maxDepth = d;
  }
  return { limits, start: values.start, warn: (t) => io.err(t), jsonSchema: values["json-schema"], lenient: values.lenient, compact: values.compact, anyOrder: values["any-order"] };
}

export function oneFile(positionals: string[], what: string): string {
  if (positionals.length !== 1) throw new UsageError(positionals.length ? `expected one ${what}, got ${positionals.length}` : `missing ${what}`);
  return positionals[0]!;
}

export async function loadEngine(file: string, sources: Map<string, string>, opts: CompileFileOptions): Promise<{ engine: Engine; markers: string[]; names: string[]; tokens: TokenMarker[] }> {
  if (file.endsWith(".wasm")) {
    const { Spec } = await import("../bindings/spec.js");
    let spec;
    try { spec = await Spec.load(readInput(file)); } catch (e) {
      if (e instanceof InputError) throw e;
      throw new InputError(`${file}: ${(e as Error).message}`);
    }
    const { wasmEngine } = await import("../bindings/spec.js");
    return { engine: wasmEngine(spec), markers: spec.states.map((s) => s.marker), names: spec.states.map((s) => s.name), tokens: tokenMarkers(spec.states) };
  }
  const c = compileFile(file, sources, opts);
  return { engine: byteDfaEngine(c.byteDfa), markers: c.ir.states.map((s) => s.marker), names: c.ir.states.map((s) => s.name), tokens: tokenMarkers(c.ir.states) };
}

/** Loads a spec (compiling it when it is not a .wasm) with the vocabulary of a tokenizer.json. */
export async function loadWithVocab(file: string, vocabPath: string | undefined, sources: Map<string, string>, opts: CompileFileOptions) {
  if (!vocabPath) throw new UsageError("missing --vocab tokenizer.json");
  const { Spec } = await import("../bindings/spec.js");
  const { Vocabulary } = await import("../bindings/vocab.js");
  let vocab;
  try { vocab = await Vocabulary.fromTokenizerJson(vocabPath); } catch (e) { throw new InputError(`${vocabPath}: ${(e as Error).message}`); }
  const wasm = file.endsWith(".wasm") ? readInput(file) : compileToWasm(compileFile(file, sources, opts));
  try {
    return { spec: await Spec.load(wasm, { vocab }), vocab };
  } catch (e) {
    throw new InputError(`${file}: ${(e as Error).message}`);
  }
}
