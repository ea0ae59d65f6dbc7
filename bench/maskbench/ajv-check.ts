/**
 * @fileoverview The independent oracle for MaskBench's labels: where an engine's verdict on an
 * instance disagrees with the label (a valid instance rejected, an invalid one accepted), ajv (the
 * standard JSON Schema validator, with ajv-formats) says which side JSON Schema is on. MaskBench's
 * labels are not all right: an instance labelled invalid only for a property that
 * `additionalProperties` (true by default) allows, or the same text labelled both ways. The report
 * counts such disputed labels apart, so an engine is not charged for following the standard.
 *
 * Draft-04/06 schemas are read by ajv's draft-07 validator (their `$schema` dropped): the keywords
 * that changed (`exclusiveMinimum` as a boolean, `id`) are rare in failing cases, and a schema ajv
 * cannot compile gives no opinion (null).
 */
import Ajv from "ajv";
import Ajv2019 from "ajv/dist/2019.js";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

type Validate = (data: unknown) => boolean;

/** ajv's validator for a schema, or null when ajv cannot compile it (or it is an $async schema). */
export function ajvValidator(schema: unknown): Validate | null {
  if (typeof schema === "boolean") return () => schema;
  if (!schema || typeof schema !== "object" || "$async" in schema) return null;
  const s = { ...(schema as Record<string, unknown>) };
  const draft = String(s["$schema"] ?? "");
  type AjvLike = { compile(s: unknown): Validate };
  let ajv: AjvLike;
  const opts = { strict: false, logger: false, validateSchema: false } as const;
  if (draft.includes("2020-12")) ajv = new Ajv2020(opts) as unknown as AjvLike;
  else if (draft.includes("2019-09")) ajv = new Ajv2019(opts) as unknown as AjvLike;
  else {
    if (!draft.includes("draft-07")) delete s["$schema"];
    ajv = new Ajv(opts) as unknown as AjvLike;
  }
  addFormats(ajv as never);
  try {
    const v = ajv.compile(s);
    return (d) => { try { return v(d) === true; } catch { return false; } };
  } catch {
    return null;
  }
}
