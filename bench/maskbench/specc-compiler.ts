/**
 * @fileoverview How the MaskBench runner has specc compile a schema: the JSON Schema front end
 * (compiler/jsonschema) to a pushdown automaton, then the .wasm — what `specc compile x.schema.json`
 * writes. Strict (no --lenient): a keyword specc cannot enforce is a compile error, an honest refusal.
 */
import { compileToWasm } from "../../compiler/compile.js";
import { compileJsonSchema } from "../../compiler/jsonschema/index.js";
import type { SchemaCompiler } from "./engines.js";

export async function speccSchemaCompiler(): Promise<SchemaCompiler> {
  return (schemaText, name) => compileToWasm(compileJsonSchema(schemaText, `${name}.schema.json`));
}
