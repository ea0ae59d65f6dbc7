/**
 * @fileoverview node-llama-cpp adapter: a Vocabulary from a GGUF model's own tokenizer, and a
 * constrained decode loop (`generateConstrained`) that reads the model's next-token probabilities
 * with `controlledEvaluate`, keeps only the tokens the spec's mask allows, and drives the matcher
 * (yield → tool → feedEnv, jump-forward over forced text). node-llama-cpp is a peer: this module
 * only uses the model/sequence objects the caller passes in, so importing it costs nothing.
 */
import { seededRandom } from "../../compiler/random.js";
import { Vocabulary } from "../vocab.js";

export { seededRandom };

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

/** The parts of a node-llama-cpp LlamaContextSequence the loop uses. */
export interface SequenceLike {
  controlledEvaluate(input: (number | [number, { generateNext: { probabilities: true } }])[]): Promise<
    (undefined | { next: { probabilities?: Map<number, number> } })[]>;
}

/** The parts of the matcher the loop drives (bindings/spec.ts's Matcher). */
export interface MatcherLike {
  /** The current mask, read in place (zero copy); read it before the next call into the runtime. */
  maskView(): Int32Array;
  commit(token: number): "continue" | "yield" | "done" | "rejected";
  feedText(text: string): "continue" | "yield";
  feedEnv(text: string): void;
  forced(): string;
  readonly specState: string | null;
  readonly isDone: boolean;
}

export interface ConstrainedOptions {
  sequence: SequenceLike;
  tokenize: (text: string) => number[];
  vocab: Vocabulary;
  /** null: generate without constraints (for comparison); env markers then act as stop sequences. */
  matcher: MatcherLike | null;
  /** Context for the model (instructions, few-shot examples); not fed to the matcher. */
  prompt: string;
  /** Called at each yield with the env-input state's name and the text so far; returns its content. */
  tool: (state: string, textSoFar: string) => string | Promise<string>;
  /** Marker texts of the env-input states (used as stop sequences when `matcher` is null). */
  envMarkers: { name: string; marker: string }[];
  maxTokens?: number;
  /** 0 = greedy. */
  temperature?: number;
  seed?: number;
  /** Append forced text (jump-forward) without a forward pass per token. Default true. */
  jumpForward?: boolean;
  /** Observes the output as it is produced (e.g. to print it). */
  onText?: (text: string, kind: "sampled" | "forced" | "env") => void;
}

export interface ConstrainedResult {
  segments: { by: "prompt" | "llm" | "env"; text: string }[];
  sampledTokens: number;
  forcedChars: number;
  stop: "done" | "max-tokens" | "eos" | "no-allowed-token";
}


/**
 * The decoding loop: next-token probabilities from the model, the spec's mask applied, a token
 * chosen (greedy or seeded sampling), committed to the matcher; at a yield the tool runs and its
 * text goes to both the matcher (feedEnv) and the model's context; forced text is appended
 * without sampling. Returns the transcript in DESIGN §4 form.
 */
export async function generateConstrained(o: ConstrainedOptions): Promise<ConstrainedResult> {
  const rand = seededRandom(o.seed ?? 1);
  const dec = new TextDecoder();
  // The matcher's cached mask, read in place: no 16 KB copy per token. Taken right before the
  // (synchronous) pick, after the model's await, so nothing can move the module's memory meanwhile.
  let mask: Int32Array = new Int32Array(0);
  const segments: ConstrainedResult["segments"] = [{ by: "prompt", text: o.prompt }];
  let llmBytes: number[] = [];
  let text = "";
  const flushLlm = () => {
    if (llmBytes.length) segments.push({ by: "llm", text: dec.decode(Uint8Array.from(llmBytes)) });
    llmBytes = [];
  };
  let pending = o.tokenize(o.prompt);
  let sampled = 0;
  let forcedChars = 0;
  const max = o.maxTokens ?? 256;
  const pick = (probs: Map<number, number>): number => {
    let best = -1, bestP = -1, total = 0;
    const cands: [number, number][] = [];
    for (const [id, p] of probs) {
      if (o.vocab.isSpecial(id) && !o.vocab.isEos(id)) continue;
      if (o.matcher && !((mask[id >> 5]! >>> (id & 31)) & 1)) continue;
      if (p > bestP) { bestP = p; best = id; }
      const w = o.temperature ? Math.pow(Math.max(p, 1e-30), 1 / o.temperature) : 0;
      cands.push([id, w]);
      total += w;
    }
    if (!o.temperature || total <= 0) return best;
    let r = rand() * total;
    for (const [id, w] of cands) { r -= w; if (r <= 0) return id; }
    return cands[cands.length - 1]![0];
  };
  const yieldTo = async (state: string) => {
    flushLlm();
    const env = await o.tool(state, text);
    segments.push({ by: "env", text: env });
    o.onText?.(env, "env");
    text += env;
    if (o.matcher) o.matcher.feedEnv(env);
    pending.push(...o.tokenize(env));
  };
  while (sampled < max) {
    if (o.matcher && o.jumpForward !== false) {
      const f = o.matcher.forced();
      if (f) {
        const st = o.matcher.feedText(f);
        for (const b of new TextEncoder().encode(f)) llmBytes.push(b);
        text += f;
        o.onText?.(f, "forced");
        forcedChars += f.length;
        pending.push(...o.tokenize(f));
        if (st === "yield") { await yieldTo(o.matcher.specState ?? "?"); continue; }
      }
    }
    if (pending.length === 0) pending = [o.tokenize(" ")[0] ?? 0];
    const last = pending.pop()!;
    const res = await o.sequence.controlledEvaluate([...pending, [last, { generateNext: { probabilities: true } }]]);
    pending = [];
    const probs = res[res.length - 1]?.next.probabilities;
    if (!probs) throw new Error("the model returned no probabilities");
    if (o.matcher) mask = o.matcher.maskView();
    const tok = pick(probs);
    if (tok < 0) { flushLlm(); return { segments, sampledTokens: sampled, forcedChars, stop: "no-allowed-token" }; }
    sampled++;
    if (o.vocab.isEos(tok)) {
      if (o.matcher) o.matcher.commit(tok);
      flushLlm();
      return { segments, sampledTokens: sampled, forcedChars, stop: o.matcher ? "done" : "eos" };
    }
    const bytes = o.vocab.tokenBytes(tok)!;
    for (const b of bytes) llmBytes.push(b);
    const piece = dec.decode(bytes, { stream: true });
    text += piece;
    o.onText?.(piece, "sampled");
    pending.push(tok);
    if (o.matcher) {
      const st = o.matcher.commit(tok);
      if (st === "rejected") throw new Error(`internal: the matcher rejected token ${tok}, which its own mask allowed`);
      if (st === "yield") await yieldTo(o.matcher.specState ?? "?");
    } else {
      const hit = o.envMarkers.find((e) => text.endsWith(e.marker));
      if (hit) await yieldTo(hit.name);
    }
  }
  flushLlm();
  return { segments, sampledTokens: sampled, forcedChars, stop: "max-tokens" };
}
