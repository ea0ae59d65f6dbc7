/**
 * @fileoverview The JSON Schema front end's public surface: `jsonSchemaToGbnf` (convert.ts: schema →
 * grammar text) and `compileJsonSchema` (that grammar through the grammar pipeline, like a .gbnf file).
 */
import { compileGrammarSource, type CompiledGrammar, type Limits } from "../compile.js";
import type { SpecError } from "../diagnostics.js";
import { MAX_BOUND, jsonSchemaToGbnf, type JsonSchemaOptions } from "./convert.js";

export { jsonSchemaToGbnf, intRange, gbnfLit, DEFAULT_MAX_WHITESPACE, type JsonSchemaOptions, type JsonSchemaGrammar } from "./convert.js";

/** Schema text or value → a compiled grammar (pushdown automaton), like a .gbnf file. */
export function compileJsonSchema(schema: string | unknown, file = "<schema>", opts: JsonSchemaOptions & { limits?: Limits } = {}): CompiledGrammar & { schemaWarnings: SpecError[] } {
  const { gbnf, warnings, called } = jsonSchemaToGbnf(schema, file, opts);
  // No warnings about the generated grammar: the user never wrote it.
  const c = compileGrammarSource(gbnf, file, { ...opts.limits, grammarLimits: { maxRepeat: MAX_BOUND, ...opts.limits?.grammarLimits } }, "root", called, false);
  return Object.assign(c, { schemaWarnings: warnings });
}
