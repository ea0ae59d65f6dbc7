/**
 * @fileoverview JSON text → value plus where each value was written (JSON pointer → offset), so
 * that a schema diagnostic can say file:line:col and `/properties/date/format`. The value comes from
 * JSON.parse (a tenth of the time of a parser in JavaScript: 0.24 against 2.6 ms a schema on the
 * MaskBench schemas slowest to compile); the positions come from a small recursive descent parser,
 * run only when a diagnostic asks for one (`spanOfPointer`), or when the text is not valid JSON or
 * nests too deep, to word that error. Its nesting is bounded (MAX_JSON_NESTING), so hostile input
 * is a diagnostic, not a stack overflow.
 */
import { SpecError, SpecLimitError, spanAt, type Span } from "../diagnostics.js";

export const MAX_JSON_NESTING = 256;

export interface JsonSource {
  value: unknown;
  file: string;
  text: string;
  /**
   * JSON pointer (RFC 6901, "" = the document) → offset of the value (for object members: of the
   * key). Read from `text` on the first ask (`spanOfPointer`).
   */
  at?: Map<string, number>;
  /**
   * Where `value` sits in the file, when it is part of a larger document (a tool's `parameters` in a
   * tools list): diagnostics print and position pointers as `base` + the pointer within `value`.
   */
  base?: string;
}

export const pointerToken = (k: string | number): string => String(k).replace(/~/g, "~0").replace(/\//g, "~1");

export function parseJsonSource(text: string, file: string): JsonSource {
  if (nestsDeeper(text, MAX_JSON_NESTING)) return readJsonSource(text, file);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return readJsonSource(text, file); // (throws the diagnostic: the same text is not JSON to it either)
  }
  return { value, file, text };
}

/** Whether some container in `text` (as far as it is JSON) lies inside more than `max` others. */
function nestsDeeper(text: string, max: number): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      for (i++; i < text.length; i++) {
        const e = text.charCodeAt(i);
        if (e === 0x5c) i++;
        else if (e === 0x22) break;
      }
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/** The positioned parser: the value and every pointer's offset, or a diagnostic. */
function readJsonSource(text: string, file: string): JsonSource & { at: Map<string, number> } {
  const at = new Map<string, number>();
  let i = 0;
  const fail = (msg: string, off = i): never => { throw new SpecError("E0901", `not valid JSON: ${msg}`, spanAt(file, text, off), "a JSON Schema file is one JSON value"); };
  const ws = () => { while (i < text.length && (text[i] === " " || text[i] === "\t" || text[i] === "\n" || text[i] === "\r")) i++; };
  const str = (): string => {
    const start = i;
    i++;
    let out = "";
    for (;;) {
      if (i >= text.length) fail("unterminated string", start);
      const c = text[i]!;
      if (c === '"') { i++; return out; }
      if (c === "\\") {
        const e = text[i + 1];
        const map: Record<string, string> = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" };
        if (e !== undefined && e in map) { out += map[e]; i += 2; continue; }
        if (e === "u" && /^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) { out += String.fromCharCode(parseInt(text.slice(i + 2, i + 6), 16)); i += 6; continue; }
        fail("bad escape in a string");
      }
      if (c.charCodeAt(0) < 0x20) fail("a control character in a string");
      out += c;
      i++;
    }
  };
  const value = (ptr: string, depth: number): unknown => {
    ws();
    if (depth > MAX_JSON_NESTING) throw new SpecLimitError("maxJsonNesting", depth, MAX_JSON_NESTING, spanAt(file, text, i));
    at.set(ptr, i);
    const c = text[i];
    if (c === "{") {
      i++;
      const o: Record<string, unknown> = {};
      ws();
      if (text[i] === "}") { i++; return o; }
      for (;;) {
        ws();
        if (text[i] !== '"') fail("expected a property name in double quotes");
        const keyAt = i;
        const k = str();
        ws();
        if (text[i] !== ":") fail("expected ':' after a property name");
        i++;
        const p = `${ptr}/${pointerToken(k)}`;
        // As an own property whatever the name ("__proto__" would set the prototype), as JSON.parse does.
        Object.defineProperty(o, k, { value: value(p, depth + 1), writable: true, enumerable: true, configurable: true });
        at.set(p, keyAt);
        ws();
        if (text[i] === ",") { i++; continue; }
        if (text[i] === "}") { i++; return o; }
        fail("expected ',' or '}'");
      }
    }
    if (c === "[") {
      i++;
      const a: unknown[] = [];
      ws();
      if (text[i] === "]") { i++; return a; }
      for (;;) {
        a.push(value(`${ptr}/${a.length}`, depth + 1));
        ws();
        if (text[i] === ",") { i++; continue; }
        if (text[i] === "]") { i++; return a; }
        fail("expected ',' or ']'");
      }
    }
    if (c === '"') return str();
    const m = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/.exec(text.slice(i, i + 400));
    if (m) { i += m[0].length; return Number(m[0]); }
    for (const [w, v] of [["true", true], ["false", false], ["null", null]] as const) {
      if (text.startsWith(w, i)) { i += w.length; return v; }
    }
    return fail(i >= text.length ? "unexpected end of input" : `unexpected ${JSON.stringify(text[i])}`);
  };
  const v = value("", 0);
  ws();
  if (i < text.length) fail("text after the JSON value");
  return { value: v, file, text, at };
}

/** A schema value that did not come from text (an object given to the API): pointers without positions. */
export function jsonSourceOf(value: unknown, file: string): JsonSource {
  return { value, file, text: "" };
}

/** The span of the value at `ptr` (or of the nearest enclosing value that has a position). */
export function spanOfPointer(src: JsonSource, ptr: string): Span | null {
  for (let p = ptr; ; p = p.slice(0, p.lastIndexOf("/"))) {
    const off = (src.at ??= src.text ? readJsonSource(src.text, src.file).at : new Map()).get(p);
    if (off !== undefined) return spanAt(src.file, src.text, off);
    if (p === "") return src.text ? spanAt(src.file, src.text, 0) : null;
  }
}
