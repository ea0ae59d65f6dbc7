/**
 * What `Spec.load` and `Vocabulary.fromTokenizerJson` read from (bindings/source.ts): bytes, a
 * fetch `Response`, a URL, a file path — the same spec and vocabulary whichever way, and a clear
 * error for a failed response.
 */
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { compileSource, compileToWasm } from "../../compiler/compile.js";
import { Spec } from "../../bindings/spec.js";
import { Vocabulary, VocabularyError } from "../../bindings/vocab.js";
import { tokenizerJsonPath } from "../helpers/tokenizers.js";

const wasm = compileToWasm(compileSource(readFileSync(join(import.meta.dirname, "../../examples/react.agent"), "utf8"), "react.agent"));
const dir = mkdtempSync(join(tmpdir(), "specc-src-"));
const wasmPath = join(dir, "react.wasm");
writeFileSync(wasmPath, wasm);

describe("byte sources", () => {
  it("Vocabulary.fromTokenizerJson: path, file URL, Response, bytes and object agree", async () => {
    const path = tokenizerJsonPath("llama2");
    const text = readFileSync(path, "utf8");
    const all = await Promise.all([
      Vocabulary.fromTokenizerJson(path),
      Vocabulary.fromTokenizerJson(pathToFileURL(path)),
      Vocabulary.fromTokenizerJson(new Response(text)),
      Vocabulary.fromTokenizerJson(new TextEncoder().encode(text)),
      Vocabulary.fromTokenizerJson(JSON.parse(text) as object),
    ]);
    for (const v of all) {
      expect(v.size).toBe(32000);
      expect(v.tokenBytes(1000)).toEqual(all[0]!.tokenBytes(1000));
    }
  });

  it("Spec.load: path, file URL, Response, Uint8Array and ArrayBuffer give the same first mask", async () => {
    const vocab = await Vocabulary.fromTokenizerJson(tokenizerJsonPath("llama2"));
    const sources = [wasmPath, pathToFileURL(wasmPath), new Response(wasm), wasm, wasm.slice().buffer];
    const masks = await Promise.all(sources.map(async (s) => [...(await Spec.load(s, { vocab })).matcher().maskView()]));
    for (const m of masks) expect(m).toEqual(masks[0]);
    expect(masks[0]!.some((w) => w !== 0)).toBe(true);
  });

  it("a failed Response is an error naming the status", async () => {
    await expect(Spec.load(new Response("nope", { status: 404, statusText: "Not Found" }))).rejects.toThrow(/HTTP 404 Not Found/);
    await expect(Vocabulary.fromTokenizerJson(new Response("{}", { status: 500 }))).rejects.toThrow(VocabularyError);
  });
});
