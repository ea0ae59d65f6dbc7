/**
 * @fileoverview specc's public runtime API: load (or compile) a spec with a token vocabulary, then
 * per sequence `matcher.maskView()` (or `fillMask(bitmask)`) / `matcher.commit(tokenId)` in the
 * decoding loop.
 *
 * ```ts
 * const vocab = await Vocabulary.fromTokenizerJson("tokenizer.json");
 * const spec = await Spec.load("react.wasm", { vocab });
 * const m = spec.matcher();
 * applyMask(logits, m.maskView()); // the cached mask in place (XGrammar layout: bit id & 31 of word
 *                                  // id >> 5); disallowed logits → -Infinity. m.fillMask(buf) copies it.
 * const status = m.commit(id);    // "continue" | "yield" | "done" | "rejected"
 * if (status === "yield") m.feedEnv(toolOutput);
 * ```
 */
export {
  Spec,
  Matcher,
  applyMask,
  buildTokenTrie,
  NonconformingTextError,
  wasmEngine,
  SUPPORTED_ABI_VERSION,
  STATE_ACCEPTING,
  STATE_YIELD,
  STATE_AFTER_ENV,
  TOKEN_TEXT,
  TOKEN_SPECIAL,
  TOKEN_EOS,
  MAX_ROLLBACK,
  MAX_BUDGET,
  type SpecExports,
  type LoadOptions,
  type CompileOptions,
  type CommitStatus,
  type FeedResult,
  type TokenTrie,
  type VocabularySource,
} from "./spec.js";
export {
  Vocabulary,
  VocabularyError,
  EOS_TOKEN_NAMES,
  type FlatVocabulary,
  type VocabularyFamily,
  type TokenizerJsonOptions,
  type TokenBytesOptions,
} from "./vocab.js";
export type { ByteSource } from "./source.js";
export { SpecLogitsProcessor } from "./adapters/transformers.js";
export { generateConstrained, vocabularyFromLlamaModel, vocabularyFromGguf } from "./adapters/llama.js";
