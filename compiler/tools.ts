/**
 * @fileoverview The tools list of an agent spec, `(:tools "tools.json")`: the file is read in any of
 * the three forms agent builders have (OpenAI `[{type: "function", function: {name, parameters}}]`
 * (also the flat `{type: "function", name, parameters}`), Anthropic `[{name, input_schema}]`, MCP
 * `{tools: [{name, inputSchema}]}`), and each tool's argument schema becomes two grammars through
 * the JSON Schema front end (compiler/jsonschema): its arguments object, and a whole Hermes/Qwen
 * call `{"name": "<name>", "arguments": <args>}`. Diagnostics point into the tools file, with the
 * JSON pointer of what is wrong (`/2/function/parameters/properties/date/format`).
 */
import { SpecError } from "./diagnostics.js";
import { parseGrammar } from "./grammar/index.js";
import { MAX_BOUND, jsonSourceToGbnf } from "./jsonschema/convert.js";
import { jsonSourceOf, parseJsonSource, spanOfPointer, type JsonSource } from "./jsonschema/json-source.js";
import type { ToolIR } from "./ir.js";

/** Most tools one list may hold (each one is a branch of every tool state's automaton). */
export const MAX_TOOLS = 64;

const USAGE = 'a tools list is [{"type": "function", "function": {"name": …, "parameters": {…}}}, …] (OpenAI), ' +
  '[{"name": …, "input_schema": {…}}, …] (Anthropic) or {"tools": [{"name": …, "inputSchema": {…}}]} (MCP)';

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** Parses a tools file and compiles every tool's schemas. Throws the first SpecError (others in `.more`). */
export function readTools(text: string, file: string): ToolIR[] {
  const src = parseJsonSource(text, file);
  const err = (msg: string, ptr: string, hint = USAGE) => new SpecError("E0214", `${msg} (at ${ptr || "/"})`, spanOfPointer(src, ptr), hint);
  let list: unknown[];
  let base: string;
  if (Array.isArray(src.value)) { list = src.value; base = ""; }
  else if (isObj(src.value) && Array.isArray(src.value["tools"])) { list = src.value["tools"]; base = "/tools"; }
  else throw err("expected an array of tools, or an object with a \"tools\" array", "");
  if (list.length === 0) throw err("the tools list is empty", base, "list at least one tool");
  if (list.length > MAX_TOOLS) throw err(`${list.length} tools: at most ${MAX_TOOLS} are supported`, base, "split the agent, or drop tools it does not use");
  const tools: ToolIR[] = [];
  const errors: SpecError[] = [];
  const seen = new Map<string, string>();
  list.forEach((t, i) => {
    const at = `${base}/${i}`;
    try {
      const { name, schema, ptr } = toolShape(t, at, err);
      if (seen.has(name)) throw err(`duplicate tool name ${JSON.stringify(name)} (first at ${seen.get(name)})`, `${ptr.namePtr}`, "give each tool a unique name");
      seen.set(name, ptr.namePtr);
      tools.push(compileTool(src, name, schema, ptr.schemaPtr, spanOfPointer(src, at)!));
    } catch (e) {
      if (!(e instanceof SpecError)) throw e;
      errors.push(e);
    }
  });
  if (errors.length) {
    (errors[0] as SpecError & { more?: SpecError[] }).more = errors.slice(1);
    throw errors[0]!;
  }
  return tools;
}

function toolShape(t: unknown, at: string, err: (m: string, p: string, h?: string) => SpecError) {
  if (!isObj(t)) throw err("a tool is an object", at);
  let obj = t;
  let objPtr = at;
  if (t["type"] === "function" && isObj(t["function"])) { obj = t["function"]; objPtr = `${at}/function`; }
  const name = obj["name"];
  const namePtr = `${objPtr}/name`;
  if (typeof name !== "string" || name.trim() === "") throw err("a tool needs a non-empty string \"name\"", "name" in obj ? namePtr : objPtr);
  if (name.trim() !== name || /[\u0000-\u001f"\\]/.test(name)) {
    throw err(`tool name ${JSON.stringify(name)} has surrounding whitespace, a quote, a backslash or a control character`, namePtr, "tool names are identifiers such as get_weather");
  }
  const key = ["parameters", "input_schema", "inputSchema"].find((k) => k in obj);
  if (key === undefined) {
    // A tool without a schema takes no arguments.
    return { name, schema: { type: "object", properties: {}, additionalProperties: false } as unknown, ptr: { namePtr, schemaPtr: null } };
  }
  return { name, schema: obj[key], ptr: { namePtr, schemaPtr: `${objPtr}/${key}` } };
}

function compileTool(src: JsonSource, name: string, schema: unknown, schemaPtr: string | null, span: NonNullable<ReturnType<typeof spanOfPointer>>): ToolIR {
  const sub: JsonSource = schemaPtr === null ? jsonSourceOf(schema, src.file) : { ...src, value: schema, base: schemaPtr };
  const grammar = (gbnf: string, what: string) => {
    try {
      // No warnings: they would be about generated grammar text the user never wrote.
      return parseGrammar(gbnf, `${src.file} (${what} of tool ${name})`, { limits: { maxRepeat: MAX_BOUND }, warnings: false });
    } catch (e) {
      if (e instanceof SpecError) (e as { span: unknown }).span = span;
      throw e;
    }
  };
  const args = grammar(jsonSourceToGbnf(sub).gbnf, "arguments");
  // The call object: name first, then arguments (the order Hermes/Qwen templates write). The
  // arguments schema's definitions move to the top so that its `#/$defs/…` refs still resolve.
  const defs: Record<string, unknown> = {};
  let argSchema = schema;
  if (isObj(schema)) {
    const { $defs, definitions, ...rest } = schema;
    if ($defs !== undefined) defs["$defs"] = $defs;
    if (definitions !== undefined) defs["definitions"] = definitions;
    argSchema = rest;
  }
  const callSchema = {
    type: "object",
    properties: { name: { const: name }, arguments: argSchema },
    required: ["name", "arguments"],
    additionalProperties: false,
    ...defs,
  };
  let callGbnf: string;
  try {
    callGbnf = jsonSourceToGbnf(jsonSourceOf(callSchema, src.file)).gbnf;
  } catch (e) {
    if (!(e instanceof SpecError)) throw e;
    throw new SpecError(e.code, `tool ${name}: its arguments schema cannot be placed inside a call object: ${e.message}`, span,
      "refs must point into $defs or definitions (a ref to the schema's root, #, does not survive the move)");
  }
  return { name, schema, args, call: grammar(callGbnf, "call"), span };
}
