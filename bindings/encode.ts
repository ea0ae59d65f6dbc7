/**
 * @fileoverview The real tokenizer of a tokenizer.json (via @lenml/tokenizers, the transformers.js
 * tokenizer code packaged for Node), used where text must become the exact token ids a model would
 * see: `specc replay` and the seed-transcript replay tests. `tokenizer_config.json` is read from
 * beside the tokenizer.json when present.
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";

export { exactEncoder } from "./exact-encoder.js";

export async function encoderFor(tokenizerJsonPath: string): Promise<(text: string) => number[]> {
  const { TokenizerLoader } = await import("@lenml/tokenizers");
  const tokenizerJSON = JSON.parse(readFileSync(tokenizerJsonPath, "utf8"));
  const cfgPath = join(dirname(tokenizerJsonPath), "tokenizer_config.json");
  const tokenizerConfig = existsSync(cfgPath) ? JSON.parse(readFileSync(cfgPath, "utf8")) : {};
  const tok = TokenizerLoader.fromPreTrained({ tokenizerJSON, tokenizerConfig });
  return (text) => [...tok.encode(text, { add_special_tokens: false })];
}
