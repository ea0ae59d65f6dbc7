/**
 * @fileoverview `exactEncoder`: text → token ids whose bytes spell exactly that text, over any
 * tokenizer's encode function. Pure (no Node), so the playground page uses it in the browser;
 * bindings/encode.ts (Node: a tokenizer.json read from disk) re-exports it.
 */

/**
 * Wraps an encoder so the token bytes always spell exactly the given text. SentencePiece
 * tokenizers that add a prefix space (Llama 2, Mistral) turn "ion:" into "▁ion:", which would put a
 * space inside a marker split across two segments; then the text is encoded after a newline and
 * the newline's tokens are dropped, or, failing that, spelled greedily from the vocabulary.
 */
export function exactEncoder(encode: (text: string) => number[], tokenBytes: (id: number) => Uint8Array | null): (text: string) => number[] {
  const enc = new TextEncoder();
  const same = (ids: number[], want: Uint8Array, skip = 0) => {
    const got: number[] = [];
    for (const id of ids) { const b = tokenBytes(id); if (!b) return false; got.push(...b); }
    if (got.length - skip !== want.length) return false;
    for (let i = 0; i < want.length; i++) if (got[i + skip] !== want[i]) return false;
    return true;
  };
  return (text) => {
    const want = enc.encode(text);
    const ids = encode(text);
    if (same(ids, want)) return ids;
    const withNl = encode("\n" + text);
    let cut = 0;
    for (let k = 0, n = 0; k < withNl.length; k++) {
      n += tokenBytes(withNl[k]!)?.length ?? 0;
      const prefix = enc.encode("\n").length + (n > 0 && tokenBytes(withNl[0]!)?.[0] === 0x20 ? 1 : 0);
      if (n === prefix) { cut = k + 1; break; }
      if (n > prefix) break;
    }
    if (cut > 0 && same(withNl.slice(cut), want)) return withNl.slice(cut);
    throw new Error(`the tokenizer cannot spell ${JSON.stringify(text.slice(0, 40))} exactly`);
  };
}
