/**
 * @fileoverview Token vocabularies for constrained decoding: for every token id of a real LLM
 * vocabulary, the exact bytes the token decodes to, plus which ids are special (never allowed) and
 * which are EOS (allowed exactly when the automaton accepts). See DESIGN.md §3.
 *
 * Why bytes: the spec's automaton runs over UTF-8 bytes, and tokens do not respect character
 * boundaries (a byte-level BPE token can be a lone continuation byte, a SentencePiece byte-fallback
 * token `<0xE6>` is one byte of a CJK character), so a mask can only be exact if it is computed from
 * each token's bytes.
 *
 * `Vocabulary.fromTokenizerJson` reads a Hugging Face `tokenizer.json` of the two common families:
 *
 * - `"byte-bpe"` (Llama 3.x, Qwen 2/3, DeepSeek V3, GPT-2/GPT-4o style): every vocab string is
 *   written in GPT-2's byte-to-unicode alphabet (`Ġ` = space, `Ċ` = newline, …); each character is
 *   mapped back to its byte. A character outside that alphabet (possible only in added tokens)
 *   stands for its own UTF-8 bytes, as in the `tokenizers` library's ByteLevel decoder.
 * - `"sentencepiece"` (Llama 2, Mistral, Gemma, … with `Metaspace` or `Replace`+`ByteFallback`
 *   decoders): `▁` (U+2581, or the decoder's configured replacement) is a space, a byte-fallback
 *   piece `<0xAB>` is the single byte 0xAB, any other piece is its UTF-8 bytes.
 *
 * The family is detected from the decoder, the pre-tokenizer, the normalizer and
 * `model.byte_fallback` (see `detectFamily`). Token bytes are per token: a SentencePiece tokenizer
 * that prepends `▁` to the input (`addsPrefixSpace`) produces a first token such as `▁Thought`,
 * whose bytes here are `" Thought"`; the HF decoder strips that one leading space of a whole
 * decoded text, which is a property of the text, not of a token, so it is left to the host.
 *
 * Special tokens (bytes `null`) are: every `added_tokens` entry with `special: true`; non-special
 * added tokens that are control placeholders by name (`<|…|>`, `<｜…｜>`, `<unusedN>`, `<mask>`,
 * `<pad>`, `<unk>`, `[multimodal]`); the model's `unk_token`; every id in `0..size-1` that no
 * entry names (a gap); and the EOS ids. Other non-special added tokens are text: Qwen3's `<think>`
 * and `<tool_call>` decode to those characters, and Gemma 3's `<s>`/`</s>` are HTML strikethrough
 * tags, not BOS/EOS (every Llama 2/Mistral tokenizer.json marks its `<s>`/`</s>` `special: true`).
 *
 * Everything is held in one flat layout (`flat()`), the form handed to the WebAssembly runtime.
 * Nothing here imports Node: `fromTokenizerJson` given a path reads it through bindings/source.ts,
 * so the module also runs in a browser (given a URL, a Response, bytes or the parsed object).
 */
import { deserializePrepared, isPreparedVocabulary, serializePrepared } from "./prepared-vocab.js";
import { readBytes, sourceName, type ByteSource } from "./source.js";
import { RawVocab, scanTokenizerJson } from "./tokenizer-json-scan.js";
import { sortTextTokens } from "./token-order.js";

/** How the token strings of a vocabulary were turned into bytes. */
export type VocabularyFamily = "byte-bpe" | "sentencepiece" | "bytes";

/**
 * A vocabulary as three flat arrays: token `i`'s bytes are `bytes.subarray(offsets[i],
 * offsets[i + 1])`; `special[i]` is 1 for a special token (its byte range is empty), else 0. EOS
 * ids are special here too; they are listed in `Vocabulary.eos`.
 */
export interface FlatVocabulary {
  bytes: Uint8Array;
  /** `size + 1` entries, non-decreasing, `offsets[0] = 0`, `offsets[size] = bytes.length`. */
  offsets: Uint32Array;
  special: Uint8Array;
}

export interface TokenizerJsonOptions {
  /**
   * The EOS ids, overriding the lookup by name (e.g. from `generation_config.json`'s
   * `eos_token_id`). `[]` means "no EOS token".
   */
  eos?: number[];
}

export interface TokenBytesOptions {
  /** EOS ids; they are made special whatever bytes `tokens` gives them. */
  eos: number[];
  /** More special ids, in addition to the `null` entries of `tokens`. */
  special?: number[];
}

/** A vocabulary that cannot be read: the message says what was expected. */
export class VocabularyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "VocabularyError";
  }
}

/**
 * Names of end-of-sequence tokens. When `opts.eos` is not given, the EOS ids are the ids of the
 * *special* tokens (see the file overview) whose content is one of these, all of them, sorted:
 * Llama 3 → `<|end_of_text|>`, `<|eot_id|>` (and `<|eom_id|>` in 3.1); Qwen → `<|endoftext|>`,
 * `<|im_end|>`; Gemma → `<eos>`, `<end_of_turn>`; Llama 2/Mistral → `</s>`; DeepSeek V3 →
 * `<｜end▁of▁sentence｜>`; Phi-3 → `<|end|>`; gpt-oss → `<|return|>`, `<|call|>`. A text token
 * with such a name (Gemma 3's non-special `</s>`) is not EOS. If none is found, loading fails and
 * asks for `opts.eos`.
 */
export const EOS_TOKEN_NAMES: readonly string[] = Object.freeze([
  "</s>",
  "<eos>",
  "<|endoftext|>",
  "<|end_of_text|>",
  "<|eot_id|>",
  "<|eom_id|>",
  "<|im_end|>",
  "<end_of_turn>",
  "<｜end▁of▁sentence｜>",
  "<|end|>",
  "<|return|>",
  "<|call|>",
  "<|END_OF_TURN_TOKEN|>",
]);

/** Non-special added tokens that are nevertheless control placeholders, never text. */
const CONTROL_ADDED_TOKEN = /^(?:<[|｜][^]*[|｜]>|<unused[_-]?\d+>|<mask>|<pad>|<unk>|\[multimodal\])$/;

/** Largest vocabulary accepted (ids beyond this are taken for a corrupt file). */
const MAX_VOCAB_SIZE = 1 << 24;

export class Vocabulary {
  /** Number of token ids: max id + 1 over the model vocab and the added tokens. */
  readonly size: number;
  /** EOS ids, ascending; each is also special. Frozen. */
  readonly eos: number[];
  readonly family: VocabularyFamily;
  /**
   * True when the tokenizer puts a space (`▁` or `Ġ`) in front of the input text when encoding, so
   * the first token of an encoded text carries one extra leading space that decoding drops (Llama 2,
   * Mistral). Gemma 3, Llama 3 and Qwen do not.
   */
  readonly addsPrefixSpace: boolean;

  private readonly bytes: Uint8Array;
  private readonly offsets: Uint32Array;
  private readonly specials: Uint8Array;
  private readonly eosSet: Set<number>;
  private order: Uint32Array | undefined;
  /** `added_tokens` of a tokenizer.json: content → id (special ones included), when known; a prepared file's are read on first use. */
  private addedSource: Map<string, number> | (() => Map<string, number>) | undefined;
  private get added(): Map<string, number> | undefined {
    if (typeof this.addedSource === "function") this.addedSource = this.addedSource();
    return this.addedSource;
  }

  private constructor(
    flat: FlatVocabulary,
    eos: number[],
    family: VocabularyFamily,
    addsPrefixSpace: boolean,
    order?: Uint32Array,
    added?: Map<string, number> | (() => Map<string, number>),
  ) {
    this.order = order;
    this.addedSource = added;
    this.bytes = flat.bytes;
    this.offsets = flat.offsets;
    this.specials = flat.special;
    this.size = flat.special.length;
    this.eos = Object.freeze([...eos].sort((a, b) => a - b)) as number[];
    this.eosSet = new Set(eos);
    this.family = family;
    this.addsPrefixSpace = addsPrefixSpace;
  }

  /**
   * Reads a Hugging Face `tokenizer.json`: a file path (Node), a URL, a `Response`, its bytes, or
   * the already parsed object (in a browser: `await (await fetch(url)).json()` or the URL itself).
   * Throws a `VocabularyError` for a file that cannot be read, is not JSON, or is not a
   * tokenizer.json of a supported family.
   */
  static async fromTokenizerJson(
    source: ByteSource | object,
    opts: TokenizerJsonOptions = {},
  ): Promise<Vocabulary> {
    const isSource = typeof source === "string" || source instanceof URL || source instanceof Uint8Array ||
      source instanceof ArrayBuffer || (typeof Response !== "undefined" && source instanceof Response);
    if (!isSource) return Vocabulary.fromTokenizerJsonObject(source, opts);
    const path = sourceName(source as ByteSource);
    let bytes: Uint8Array;
    try {
      bytes = await readBytes(source as ByteSource);
    } catch (e) {
      throw new VocabularyError(`cannot read tokenizer.json ${path}: ${errorMessage(e)}`);
    }
    if (isPreparedVocabulary(bytes)) return Vocabulary.fromPrepared(bytes, path);
    // The fast path skips the BPE merges (tokenizer-json-scan.ts); anything it does not expect is
    // parsed whole below, which also words the error.
    const scanned = scanTokenizerJson(bytes);
    if (scanned) return Vocabulary.fromTokenizerJsonObject(scanned, opts, path);
    const text = new TextDecoder().decode(bytes);
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (e) {
      throw new VocabularyError(
        `${path} is not JSON (expected a Hugging Face tokenizer.json): ${errorMessage(e)}`,
      );
    }
    return Vocabulary.fromTokenizerJsonObject(json, opts, path);
  }

  /** `fromTokenizerJson` for an already parsed tokenizer.json object. */
  static fromTokenizerJsonObject(
    json: unknown,
    opts: TokenizerJsonOptions = {},
    source = "tokenizer.json",
  ): Vocabulary {
    const fail = (what: string): never => {
      throw new VocabularyError(`${source}: ${what}`);
    };
    if (!isRecord(json) || !isRecord(json["model"]) || json["model"]["vocab"] === undefined) {
      fail(
        `not a Hugging Face tokenizer.json (expected an object with "model.vocab", a map from token ` +
          `string to id; found ${describe(json)})`,
      );
    }
    const root = json as Record<string, unknown>;
    const model = root["model"] as Record<string, unknown>;
    const modelType = typeof model["type"] === "string" ? (model["type"] as string) : undefined;
    if (modelType !== undefined && modelType !== "BPE" && modelType !== "Unigram") {
      fail(
        `unsupported model.type "${modelType}" (expected "BPE" — byte-level or SentencePiece — or ` +
          `a SentencePiece "Unigram")`,
      );
    }

    // Token strings by id, from the model vocab and then the added tokens (which win, as in the
    // tokenizers library's id_to_token).
    let pieces: (string | undefined)[] = [];
    const vocab = model["vocab"];
    // From a scanned file (tokenizer-json-scan.ts): pieces stay bytes of the file until needed.
    const raw = vocab instanceof RawVocab ? vocab : undefined;
    if (raw) {
      pieces = new Array<string | undefined>(raw.size);
    } else if (Array.isArray(vocab)) {
      // Unigram: [[piece, score], ...], the id is the index.
      vocab.forEach((entry, id) => {
        const piece = Array.isArray(entry) ? entry[0] : undefined;
        if (typeof piece !== "string") fail(`model.vocab[${id}] is not a [piece, score] pair`);
        pieces[id] = piece as string;
      });
    } else if (isRecord(vocab)) {
      for (const piece in vocab) {
        const id = vocab[piece];
        if (!isTokenId(id)) fail(`model.vocab[${JSON.stringify(piece)}] is not a token id: ${describe(id)}`);
        pieces[id as number] = piece;
      }
    } else {
      fail(`model.vocab is ${describe(vocab)} (expected a map from token string to id)`);
    }

    const added: { id: number; content: string; special: boolean }[] = [];
    const addedTokens = root["added_tokens"] ?? [];
    if (!Array.isArray(addedTokens)) fail(`added_tokens is ${describe(addedTokens)} (expected a list)`);
    (addedTokens as unknown[]).forEach((t, i) => {
      if (!isRecord(t) || !isTokenId(t["id"]) || typeof t["content"] !== "string") {
        fail(`added_tokens[${i}] is not {id, content, special}: ${describe(t)}`);
      }
      const token = t as Record<string, unknown>;
      added.push({ id: token["id"] as number, content: token["content"] as string, special: token["special"] === true });
    });

    let size = pieces.length;
    for (const a of added) size = Math.max(size, a.id + 1);
    if (size === 0) fail("model.vocab is empty");
    if (size > MAX_VOCAB_SIZE) fail(`token ids go up to ${size - 1}, beyond the supported ${MAX_VOCAB_SIZE - 1}`);

    const special = new Uint8Array(size).fill(1); // gaps stay special
    if (raw) for (let id = 0; id < raw.size; id++) special[id] = raw.start[id]! < 0 ? 1 : 0;
    else for (let id = 0; id < pieces.length; id++) if (pieces[id] !== undefined) special[id] = 0;
    const fromAdded = new Uint8Array(size); // ids whose piece is an added token's content
    const specialByName = new Map<string, number[]>();
    const markSpecial = (id: number, name: string): void => {
      special[id] = 1;
      const ids = specialByName.get(name) ?? [];
      if (!ids.includes(id)) ids.push(id);
      specialByName.set(name, ids);
    };
    for (const a of added) {
      pieces[a.id] = a.content;
      fromAdded[a.id] = 1;
      if (a.special || CONTROL_ADDED_TOKEN.test(a.content)) markSpecial(a.id, a.content);
      else special[a.id] = 0;
    }
    const unk = model["unk_token"];
    if (typeof unk === "string") {
      const ids = idsOf(pieces, unk, added);
      const rawId = raw ? raw.find(unk) : -1;
      if (rawId >= 0 && !fromAdded[rawId] && !ids.includes(rawId)) ids.push(rawId);
      for (const id of ids) markSpecial(id, unk);
    }

    // The family detection may look at every piece (a file with no decoder or pre-tokenizer hints).
    const allPieces = () => {
      if (raw) for (let id = 0; id < raw.size; id++) if (!fromAdded[id]) pieces[id] = raw.piece(id);
      return pieces;
    };
    const { family, byteFallback, replacement } = detectFamily(root, model, allPieces, fail);
    const addsPrefixSpace = detectPrefixSpace(root, family, replacement);

    let eos: number[];
    if (opts.eos !== undefined) {
      eos = checkEos(opts.eos, size, source);
    } else {
      eos = [];
      for (const name of EOS_TOKEN_NAMES) for (const id of specialByName.get(name) ?? []) eos.push(id);
      if (eos.length === 0) {
        fail(
          `no EOS token found among the special tokens (looked for ${EOS_TOKEN_NAMES.join(" ")}); ` +
            `pass the EOS ids as opts.eos`,
        );
      }
    }
    for (const id of eos) special[id] = 1;

    const sink = new ByteSink(size * 6);
    const offsets = new Uint32Array(size + 1);
    const repBytes = new TextEncoder().encode(replacement);
    for (let id = 0; id < size; id++) {
      offsets[id] = sink.length;
      if (special[id]) continue;
      if (raw && !fromAdded[id] && !raw.escaped[id]) {
        const s = raw.start[id]!, e = raw.end[id]!;
        if (family === "byte-bpe") sink.pushRawByteLevel(raw.data, s, e);
        else sink.pushRawSentencePiece(raw.data, s, e, repBytes, byteFallback);
        continue;
      }
      const piece = (raw && !fromAdded[id] ? raw.piece(id) : pieces[id]) as string;
      if (family === "byte-bpe") sink.pushByteLevel(piece);
      else sink.pushSentencePiece(piece, replacement, byteFallback);
    }
    offsets[size] = sink.length;
    return new Vocabulary({ bytes: sink.finish(), offsets, special }, eos, family, addsPrefixSpace, undefined,
      new Map(added.map((a) => [a.content, a.id])));
  }

  /**
   * A vocabulary from a prepared file (`specc vocab tokenizer.json -o x.vocab`, or `toPrepared()`):
   * no JSON and no sorting, so it loads in milliseconds. `Vocabulary.fromTokenizerJson` also
   * accepts one (by its magic). Throws a `VocabularyError` saying what is wrong with a bad file.
   */
  static fromPrepared(data: Uint8Array, name = "the prepared vocabulary"): Vocabulary {
    let p;
    try {
      p = deserializePrepared(data, name);
    } catch (e) {
      throw new VocabularyError(errorMessage(e));
    }
    const added = p.added;
    const lazy = typeof added === "function"
      ? () => { try { return new Map(added()); } catch (e) { throw new VocabularyError(errorMessage(e)); } }
      : added?.length ? new Map(added) : undefined;
    return new Vocabulary({ bytes: p.bytes, offsets: p.offsets, special: p.special }, p.eos, p.family, p.addsPrefixSpace, p.order, lazy);
  }

  /** This vocabulary as a prepared file (see `fromPrepared`). */
  toPrepared(): Uint8Array {
    return serializePrepared({ bytes: this.bytes, offsets: this.offsets, special: this.specials, eos: this.eos, order: this.textOrder(), family: this.family, addsPrefixSpace: this.addsPrefixSpace, added: [...(this.added ?? [])] });
  }

  /** The text (non-special) token ids sorted by bytes: the token trie's order, computed once. */
  textOrder(): Uint32Array {
    return (this.order ??= sortTextTokens(this.bytes, this.offsets, this.specials));
  }

  /**
   * A vocabulary from each token's bytes, e.g. read from a GGUF file or written by hand in a test.
   * `null` marks a special token; EOS ids are made special.
   */
  static fromTokenBytes(tokens: (Uint8Array | null)[], opts: TokenBytesOptions): Vocabulary {
    const size = tokens.length;
    if (size === 0) throw new VocabularyError("fromTokenBytes: the token list is empty");
    const source = "fromTokenBytes";
    const eos = checkEos(opts.eos, size, source);
    const special = new Uint8Array(size);
    for (const id of opts.special ?? []) {
      if (!isTokenId(id) || id >= size) {
        throw new VocabularyError(`${source}: special id ${String(id)} is not a token id below ${size}`);
      }
      special[id] = 1;
    }
    for (const id of eos) special[id] = 1;
    let total = 0;
    for (let id = 0; id < size; id++) {
      const t = tokens[id];
      if (t === null || t === undefined) special[id] = 1;
      else if (!(t instanceof Uint8Array)) {
        throw new VocabularyError(`${source}: token ${id} is ${describe(t)} (expected a Uint8Array or null)`);
      } else if (!special[id]) total += t.length;
    }
    const bytes = new Uint8Array(total);
    const offsets = new Uint32Array(size + 1);
    let pos = 0;
    for (let id = 0; id < size; id++) {
      offsets[id] = pos;
      if (special[id]) continue;
      const t = tokens[id] as Uint8Array;
      bytes.set(t, pos);
      pos += t.length;
    }
    offsets[size] = pos;
    return new Vocabulary({ bytes, offsets, special }, eos, "bytes", false);
  }

  /** The bytes token `id` decodes to (a read-only view, do not write), or `null` for a special token. */
  tokenBytes(id: number): Uint8Array | null {
    this.checkId(id);
    if (this.specials[id]) return null;
    return this.bytes.subarray(this.offsets[id], this.offsets[id + 1]);
  }

  /**
   * The id of the token that is exactly `text`: an added token of the tokenizer.json with that
   * content (special or not: `<|im_end|>`, `<tool_call>`), else a text token whose bytes are the
   * text. `undefined` when there is none. Token markers (`(:token ...)`) are bound through this.
   */
  tokenId(text: string): number | undefined {
    const a = this.added?.get(text);
    if (a !== undefined) return a;
    const want = new TextEncoder().encode(text);
    for (let id = 0; id < this.size; id++) {
      if (this.specials[id]) continue;
      const o = this.offsets[id]!;
      if (this.offsets[id + 1]! - o !== want.length) continue;
      let k = 0;
      while (k < want.length && this.bytes[o + k] === want[k]) k++;
      if (k === want.length) return id;
    }
    return undefined;
  }

  /** The content of added token `id` (`<|im_end|>`, `<tool_call>`), special or not; else undefined. */
  addedContent(id: number): string | undefined {
    if (!this.added) return undefined;
    this.addedById ??= new Map([...this.added].map(([c, i]) => [i, c]));
    return this.addedById.get(id);
  }
  private addedById: Map<number, string> | undefined;

  /** Whether token `id` is special: never allowed, except EOS when the automaton accepts. */
  isSpecial(id: number): boolean {
    this.checkId(id);
    return this.specials[id] === 1;
  }

  isEos(id: number): boolean {
    return this.eosSet.has(id);
  }

  /**
   * The flat layout for WebAssembly. The arrays are the vocabulary's own storage, shared between
   * calls: copy them into the module's memory, do not write to them.
   */
  flat(): FlatVocabulary {
    return { bytes: this.bytes, offsets: this.offsets, special: this.specials };
  }

  private checkId(id: number): void {
    if (!Number.isInteger(id) || id < 0 || id >= this.size) {
      throw new RangeError(`token id ${id} is out of range (vocabulary size ${this.size})`);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Family detection

interface FamilyInfo {
  family: "byte-bpe" | "sentencepiece";
  byteFallback: boolean;
  /** The character that stands for a space in SentencePiece pieces. */
  replacement: string;
}

/** `type` of a component and of everything nested in its `Sequence`s. */
function componentTypes(component: unknown, out: Record<string, unknown>[] = []): Record<string, unknown>[] {
  if (!isRecord(component)) return out;
  out.push(component);
  for (const key of ["decoders", "pretokenizers", "normalizers"]) {
    const list = component[key];
    if (Array.isArray(list)) for (const c of list) componentTypes(c, out);
  }
  return out;
}

function stringPattern(c: Record<string, unknown>): string | undefined {
  const p = c["pattern"];
  return isRecord(p) && typeof p["String"] === "string" ? (p["String"] as string) : undefined;
}

/**
 * Byte-level BPE: a `ByteLevel` decoder or pre-tokenizer. SentencePiece: a `Metaspace` decoder or
 * pre-tokenizer, a `ByteFallback` decoder, a `Replace` decoder that turns something into a space,
 * `model.byte_fallback: true`, or a `Unigram` model. If a file has both kinds, the decoder decides.
 * If it has neither, the vocab decides (pieces starting with `Ġ` vs `▁`).
 */
function detectFamily(
  root: Record<string, unknown>,
  model: Record<string, unknown>,
  allPieces: () => (string | undefined)[],
  fail: (what: string) => never,
): FamilyInfo {
  const decoders = componentTypes(root["decoder"]);
  const preTokenizers = componentTypes(root["pre_tokenizer"]);
  const has = (cs: Record<string, unknown>[], type: string): boolean => cs.some((c) => c["type"] === type);

  let replacement = "\u2581";
  for (const c of [...decoders, ...preTokenizers]) {
    if (c["type"] === "Metaspace" && typeof c["replacement"] === "string") replacement = c["replacement"] as string;
  }
  let replaceDecoder = false;
  for (const c of decoders) {
    const pattern = stringPattern(c);
    if (c["type"] === "Replace" && c["content"] === " " && pattern !== undefined && pattern.length > 0) {
      replacement = pattern;
      replaceDecoder = true;
    }
  }
  const byteFallback = model["byte_fallback"] === true || has(decoders, "ByteFallback");

  const decoderByte = has(decoders, "ByteLevel");
  const decoderSp = has(decoders, "Metaspace") || has(decoders, "ByteFallback") || replaceDecoder;
  const byteLevel = decoderByte || has(preTokenizers, "ByteLevel");
  const sentencePiece =
    decoderSp || has(preTokenizers, "Metaspace") || byteFallback || model["type"] === "Unigram";

  let family: FamilyInfo["family"] | undefined;
  if (byteLevel && !sentencePiece) family = "byte-bpe";
  else if (sentencePiece && !byteLevel) family = "sentencepiece";
  else if (byteLevel && sentencePiece) family = decoderByte && !decoderSp ? "byte-bpe" : "sentencepiece";
  else {
    let g = 0;
    let s = 0;
    for (const p of allPieces()) {
      if (p === undefined) continue;
      if (p.startsWith("\u0120")) g++;
      else if (p.startsWith(replacement)) s++;
    }
    if (g > s) family = "byte-bpe";
    else if (s > g) family = "sentencepiece";
  }
  if (family === undefined) {
    return fail(
      "cannot tell the tokenizer family (expected a ByteLevel decoder/pre-tokenizer for byte-level " +
        "BPE, or a Metaspace/ByteFallback decoder for SentencePiece)",
    );
  }
  return { family, byteFallback, replacement };
}

/** Whether encoding puts a space in front of the text (see `Vocabulary.addsPrefixSpace`). */
function detectPrefixSpace(root: Record<string, unknown>, family: string, replacement: string): boolean {
  const preTokenizers = componentTypes(root["pre_tokenizer"]);
  if (family === "byte-bpe") {
    return preTokenizers.some((c) => c["type"] === "ByteLevel" && c["add_prefix_space"] === true);
  }
  for (const c of componentTypes(root["normalizer"])) {
    if (c["type"] === "Prepend" && (c["prepend"] === replacement || c["prepend"] === " ")) return true;
  }
  for (const c of preTokenizers) {
    if (c["type"] !== "Metaspace") continue;
    const scheme = c["prepend_scheme"];
    if (typeof scheme === "string") return scheme !== "never";
    return c["add_prefix_space"] !== false;
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// Bytes

/** GPT-2's bytes_to_unicode, inverted: code unit → byte, or -1 for a character outside it. */
const BYTE_LEVEL_DECODE: Int16Array = (() => {
  const table = new Int16Array(324).fill(-1);
  let extra = 0;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    table[printable ? b : 256 + extra++] = b;
  }
  return table;
})();

function hexDigit(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 65 && c <= 70) return c - 55;
  if (c >= 97 && c <= 102) return c - 87;
  return -1;
}

/** A growable byte buffer with the two decoders. */
class ByteSink {
  private buf: Uint8Array;
  length = 0;

  constructor(capacity: number) {
    this.buf = new Uint8Array(Math.max(16, capacity));
  }

  private reserve(n: number): void {
    if (this.length + n <= this.buf.length) return;
    const next = new Uint8Array(Math.max(this.buf.length * 2, this.length + n));
    next.set(this.buf.subarray(0, this.length));
    this.buf = next;
  }

  /** One code point (or a lone surrogate, as U+FFFD like TextEncoder) of `s` at `i`; returns its length. */
  private pushCodePoint(s: string, i: number): number {
    let cp = s.charCodeAt(i);
    let units = 1;
    if (cp >= 0xd800 && cp <= 0xdbff && i + 1 < s.length) {
      const lo = s.charCodeAt(i + 1);
      if (lo >= 0xdc00 && lo <= 0xdfff) {
        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
        units = 2;
      }
    }
    if (cp >= 0xd800 && cp <= 0xdfff) cp = 0xfffd;
    this.reserve(4);
    const b = this.buf;
    if (cp < 0x80) b[this.length++] = cp;
    else if (cp < 0x800) {
      b[this.length++] = 0xc0 | (cp >> 6);
      b[this.length++] = 0x80 | (cp & 0x3f);
    } else if (cp < 0x10000) {
      b[this.length++] = 0xe0 | (cp >> 12);
      b[this.length++] = 0x80 | ((cp >> 6) & 0x3f);
      b[this.length++] = 0x80 | (cp & 0x3f);
    } else {
      b[this.length++] = 0xf0 | (cp >> 18);
      b[this.length++] = 0x80 | ((cp >> 12) & 0x3f);
      b[this.length++] = 0x80 | ((cp >> 6) & 0x3f);
      b[this.length++] = 0x80 | (cp & 0x3f);
    }
    return units;
  }

  private pushByte(byte: number): void {
    this.reserve(1);
    this.buf[this.length++] = byte;
  }

  pushByteLevel(piece: string): void {
    for (let i = 0; i < piece.length; ) {
      const c = piece.charCodeAt(i);
      const byte = c < BYTE_LEVEL_DECODE.length ? BYTE_LEVEL_DECODE[c]! : -1;
      if (byte >= 0) {
        this.pushByte(byte);
        i++;
      } else {
        i += this.pushCodePoint(piece, i);
      }
    }
  }

  /** `pushByteLevel` of a piece given as its UTF-8 bytes `data[s, e)` (no string made). */
  pushRawByteLevel(data: Uint8Array, s: number, e: number): void {
    this.reserve(e - s);
    const b = this.buf;
    for (let i = s; i < e; ) {
      const c = data[i]!;
      // One code point: 1 to 4 bytes; the byte-level alphabet lies below U+0144 (1 or 2 bytes).
      const n = c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
      const cp = n === 1 ? c : n === 2 ? ((c & 0x1f) << 6) | (data[i + 1]! & 0x3f) : -1;
      const byte = cp >= 0 && cp < BYTE_LEVEL_DECODE.length ? BYTE_LEVEL_DECODE[cp]! : -1;
      if (byte >= 0) b[this.length++] = byte;
      else for (let k = 0; k < n && i + k < e; k++) b[this.length++] = data[i + k]!;
      i += n;
    }
  }

  /** `pushSentencePiece` of a piece given as its UTF-8 bytes `data[s, e)` (no string made). */
  pushRawSentencePiece(data: Uint8Array, s: number, e: number, rep: Uint8Array, byteFallback: boolean): void {
    if (byteFallback && e - s === 6 && data[s] === 0x3c && data[s + 1] === 0x30 && data[s + 2] === 0x78 && data[s + 5] === 0x3e) {
      const hi = hexDigit(data[s + 3]!);
      const lo = hexDigit(data[s + 4]!);
      if (hi >= 0 && lo >= 0) {
        this.pushByte(hi * 16 + lo);
        return;
      }
    }
    this.reserve(e - s);
    const b = this.buf;
    const r0 = rep[0]!, rn = rep.length;
    for (let i = s; i < e; ) {
      if (data[i] === r0 && i + rn <= e) {
        let k = 1;
        while (k < rn && data[i + k] === rep[k]) k++;
        if (k === rn) { b[this.length++] = 0x20; i += rn; continue; }
      }
      b[this.length++] = data[i++]!;
    }
  }

  pushSentencePiece(piece: string, replacement: string, byteFallback: boolean): void {
    if (byteFallback && piece.length === 6 && piece.startsWith("<0x") && piece.charCodeAt(5) === 62) {
      const hi = hexDigit(piece.charCodeAt(3));
      const lo = hexDigit(piece.charCodeAt(4));
      if (hi >= 0 && lo >= 0) {
        this.pushByte(hi * 16 + lo);
        return;
      }
    }
    if (replacement.length !== 1) piece = piece.split(replacement).join(" ");
    const rep = replacement.length === 1 ? replacement.charCodeAt(0) : -1;
    for (let i = 0; i < piece.length; ) {
      if (piece.charCodeAt(i) === rep) {
        this.pushByte(0x20);
        i++;
      } else {
        i += this.pushCodePoint(piece, i);
      }
    }
  }

  finish(): Uint8Array {
    return this.buf.slice(0, this.length);
  }
}

// ---------------------------------------------------------------------------------------------
// Small helpers

function isRecord(x: unknown): x is Record<string, unknown> {
  return typeof x === "object" && x !== null && !Array.isArray(x) && !ArrayBuffer.isView(x);
}

function isTokenId(x: unknown): x is number {
  return typeof x === "number" && Number.isInteger(x) && x >= 0;
}

/** Ids whose token string is `name` (model vocab or added tokens). */
function idsOf(pieces: (string | undefined)[], name: string, added: { id: number; content: string }[]): number[] {
  const ids = added.filter((a) => a.content === name).map((a) => a.id);
  const id = pieces.indexOf(name);
  if (id >= 0 && !ids.includes(id)) ids.push(id);
  return ids;
}

function checkEos(eos: unknown, size: number, source: string): number[] {
  if (!Array.isArray(eos)) throw new VocabularyError(`${source}: eos is ${describe(eos)} (expected a list of token ids)`);
  for (const id of eos) {
    if (!isTokenId(id) || id >= size) {
      throw new VocabularyError(`${source}: EOS id ${String(id)} is not a token id below the vocabulary size ${size}`);
    }
  }
  return [...new Set(eos as number[])];
}

function describe(x: unknown): string {
  if (x === null) return "null";
  if (Array.isArray(x)) return `a list of ${x.length}`;
  if (typeof x === "object") {
    const keys = Object.keys(x as object);
    return keys.length === 0 ? "an empty object" : `an object with keys ${keys.slice(0, 6).join(", ")}${keys.length > 6 ? ", …" : ""}`;
  }
  if (typeof x === "string") return `the string ${JSON.stringify(x.length > 40 ? x.slice(0, 40) + "…" : x)}`;
  return `${typeof x} ${String(x)}`;
}

function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
