/**
 * @fileoverview node-llama-cpp adapter: a Vocabulary from a GGUF model's own tokenizer, and a
 * constrained decode loop (`generateConstrained`) that reads the model's next-token probabilities
 * with `controlledEvaluate`, keeps only the tokens the spec's mask allows, and drives the matcher
 * (yield → tool → feedEnv, jump-forward over forced text). node-llama-cpp is a peer: this module
 * only uses the model/sequence objects the caller passes in, so importing it costs nothing.
 */
import { Vocabulary } from "./vocab.js";

/** The parts of node-llama-cpp's LlamaModel this module reads (kept structural on purpose). */
export interface LlamaModelLike {
  readonly fileInfo: { metadata: { tokenizer?: { ggml?: { model?: string; tokens?: readonly string[]; token_type?: readonly number[] } } } };
  readonly tokens: { readonly eos: number | null; readonly eot?: number | null };
}

/** GGUF token types (llama.cpp's llama_token_type). */
const enum TokenType { Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6 }

/** GPT-2's byte ↔ printable-unicode table, inverted: char code → byte. */
function gpt2ByteDecoder(): Map<number, number> {
  const bs: number[] = [];
  for (let b = 33; b <= 126; b++) bs.push(b);
  for (let b = 161; b <= 172; b++) bs.push(b);
  for (let b = 174; b <= 255; b++) bs.push(b);
  const cs = [...bs];
  let n = 0;
  for (let b = 0; b < 256; b++) if (!bs.includes(b)) { bs.push(b); cs.push(256 + n++); }
  return new Map(cs.map((c, i) => [c, bs[i]!]));
}

/**
 * Each token's exact bytes from a GGUF tokenizer: "llama" (SentencePiece: U+2581 is a space,
 * `<0xAB>` byte tokens are that byte) or "gpt2" (byte-level BPE). Control, unknown and unused
 * tokens are special; EOS (and EOT) come from the model.
 */
export function vocabularyFromGguf(tokens: readonly string[], types: readonly number[], kind: string, eos: number[]): Vocabulary {
  const enc = new TextEncoder();
  const dec = kind === "gpt2" ? gpt2ByteDecoder() : undefined;
  if (kind !== "llama" && kind !== "gpt2") throw new Error(`unsupported GGUF tokenizer model '${kind}' (supported: llama, gpt2)`);
  const bytes = tokens.map((piece, id): Uint8Array | null => {
    const t = types[id] ?? TokenType.Normal;
    if (t === TokenType.Control || t === TokenType.Unknown || t === TokenType.Unused) return null;
    if (t === TokenType.Byte) {
      const m = /^<0x([0-9A-Fa-f]{2})>$/.exec(piece);
      if (m) return Uint8Array.of(parseInt(m[1]!, 16));
    }
    if (dec && t !== TokenType.UserDefined) {
      const out = new Uint8Array(piece.length);
      for (let i = 0; i < piece.length; i++) {
        const b = dec.get(piece.charCodeAt(i));
        if (b === undefined) return enc.encode(piece); // not byte-level text: take it literally
        out[i] = b;
      }
      return out;
    }
    return enc.encode(kind === "llama" ? piece.replace(/\u2581/g, " ") : piece);
  });
  return Vocabulary.fromTokenBytes(bytes, { eos });
}

/** A Vocabulary from a loaded node-llama-cpp model. */
export function vocabularyFromLlamaModel(model: LlamaModelLike): Vocabulary {
  const g = model.fileInfo.metadata.tokenizer?.ggml;
  if (!g?.tokens) throw new Error("this GGUF file carries no tokenizer (tokenizer.ggml.tokens is missing)");
  const eos = [model.tokens.eos, model.tokens.eot].filter((x): x is number => typeof x === "number" && x >= 0);
  return vocabularyFromGguf(g.tokens, g.token_type ?? [], g.model ?? "llama", [...new Set(eos)]);
}
