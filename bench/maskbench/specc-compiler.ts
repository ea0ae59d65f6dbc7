/**
 * @fileoverview How the MaskBench runner has specc compile a schema: the JSON Schema front end
 * (compiler/jsonschema) to tables, then the .wasm — what `specc compile x.schema.json` writes.
 */
import type { SchemaCompiler } from "./engines.js";

export async function speccSchemaCompiler(): Promise<SchemaCompiler> {
  const { compileToWasm } = await import("../../compiler/compile.js");
  let front: { compileJsonSchema?: (schema: string, file: string) => Parameters<typeof compileToWasm>[0] };
  try {
    front = (await import("../../compiler/jsonschema/index.js" as string)) as typeof front;
  } catch {
    front = {};
  }
  const f = front.compileJsonSchema;
  if (!f) {
    return () => {
      throw Object.assign(new Error("specc has no JSON Schema front end in this build"), { code: "NO_FRONT_END" });
    };
  }
  return (schemaText, name) => compileToWasm(f(schemaText, `${name}.schema.json`));
}
