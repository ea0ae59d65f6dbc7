/**
 * @fileoverview `specc vocab tokenizer.json -o NAME.vocab`: a prepared vocabulary file
 * (bindings/prepared-vocab.ts) — the token bytes, specials, EOS and the trie's sorted order — that
 * `Vocabulary.fromPrepared` (and `Vocabulary.fromTokenizerJson`, `specc compile --vocab`) loads in
 * milliseconds instead of reading and converting the tokenizer.json each time.
 */
import { parseArgs } from "node:util";
import { readInput, writeAtomic } from "../compiler/io.js";
import { Vocabulary, VocabularyError } from "../bindings/vocab.js";
import { EXIT, InputError, oneFile, type Io } from "./common.js";

export async function cmdVocab(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { out: { type: "string", short: "o" } } });
  const file = oneFile(positionals, "tokenizer.json");
  const out = values.out ?? file.replace(/\.json$/, "") + ".vocab";
  let vocab: Vocabulary;
  try {
    vocab = await Vocabulary.fromTokenizerJson(readInput(file));
  } catch (e) {
    if (e instanceof VocabularyError) throw new InputError(`${file}: ${e.message.replace(/^the given bytes: /, "")}`);
    throw e;
  }
  const data = vocab.toPrepared();
  writeAtomic(out, data);
  io.out(`${out}: ${vocab.size} tokens (${vocab.family}${vocab.addsPrefixSpace ? ", adds a prefix space" : ""}), ${data.length} bytes`);
  return EXIT.ok;
}
