/**
 * @fileoverview The JSON Schema front end's public surface: `jsonSchemaToGbnf` (convert.ts: schema →
 * grammar text) and `compileJsonSchema` (that grammar through the grammar pipeline, like a .gbnf file).
 */
import { compileGrammarSource, type CompiledGrammar, type Limits } from "../compile.js";
import type { SpecError } from "../diagnostics.js";
import { MAX_BOUND, jsonSchemaToGbnf, type JsonSchemaOptions } from "./convert.js";

export { jsonSchemaToGbnf, intRange, gbnfLit, DEFAULT_MAX_WHITESPACE, type JsonSchemaOptions, type JsonSchemaGrammar } from "./convert.js";

/**
 * Whitespace (a run of at most maxWhitespace characters: a state each) and "any value" are used in
 * many places: entered by a call, their machines exist once (grammar/pda.ts `called`). On the
 * 300-schema MaskBench sample this cut TTFM p50 from 118 to 80 ms, and three schemas whose pushdown
 * automaton was past its size limit now compile.
 */
const CALLED = ["ws", "value"];

/** Schema text or value → a compiled grammar (pushdown automaton), like a .gbnf file. */
export function compileJsonSchema(schema: string | unknown, file = "<schema>", opts: JsonSchemaOptions & { limits?: Limits } = {}): CompiledGrammar & { schemaWarnings: SpecError[] } {
  const { gbnf, warnings } = jsonSchemaToGbnf(schema, file, opts);
  const c = compileGrammarSource(gbnf, file, { ...opts.limits, grammarLimits: { maxRepeat: MAX_BOUND, ...opts.limits?.grammarLimits } }, "root", CALLED);
  return Object.assign(c, { schemaWarnings: warnings });
}
