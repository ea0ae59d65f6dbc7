/**
 * @fileoverview Token markers (`(:token "<tool_call>")`): a marker that is one vocabulary token.
 *
 * The byte automaton reads such a marker as a single byte that never occurs in UTF-8 text (0xC0,
 * 0xC1 and 0xF5–0xFF), one per token marker of the spec. So the same characters spelled out as
 * ordinary text are not the marker, and the runtime needs no new machinery: binding a vocabulary
 * (bindings/spec.ts) gives the marker's token id exactly that one byte, and disables the ordinary
 * tokens whose bytes contain it (byte-fallback and byte-level tokens of invalid UTF-8, which no text
 * needs). Without a vocabulary — `specc check` on a text transcript, `feedText` — a token marker is
 * matched by its text: `encodeText` turns each occurrence of a token's text into its byte.
 */

/** The bytes token markers are read as, in the order the spec's token markers get them. */
export const TOKEN_BYTES: readonly number[] = [0xf8, 0xf9, 0xfa, 0xfb, 0xfc, 0xfd, 0xfe, 0xff, 0xf5, 0xf6, 0xf7, 0xc0, 0xc1];

/** A token marker: the token's text and the byte the automaton reads for it. */
export interface TokenMarker { text: string; byte: number }

const enc = new TextEncoder();

/**
 * `text` as the bytes the automaton reads: UTF-8, except that every occurrence of a token marker's
 * text (leftmost, then longest) is that marker's byte. `at[i]` is the UTF-16 index in `text` where
 * byte i's character starts (`at[bytes.length]` = text.length), for positioned diagnostics.
 */
export function encodeText(text: string, tokens: readonly TokenMarker[]): { bytes: Uint8Array; at: number[] } {
  const out: number[] = [];
  const at: number[] = [];
  let from = 0;
  const plain = (end: number) => {
    for (let i = from; i < end; ) {
      const cp = text.codePointAt(i)!;
      const n = cp > 0xffff ? 2 : 1;
      for (const b of enc.encode(text.slice(i, i + n))) { out.push(b); at.push(i); }
      i += n;
    }
  };
  for (;;) {
    let best = -1;
    let tok: TokenMarker | undefined;
    for (const t of tokens) {
      const i = text.indexOf(t.text, from);
      if (i >= 0 && (best < 0 || i < best || (i === best && t.text.length > tok!.text.length))) { best = i; tok = t; }
    }
    if (best < 0) break;
    plain(best);
    out.push(tok!.byte);
    at.push(best);
    from = best + tok!.text.length;
  }
  plain(text.length);
  at.push(text.length);
  return { bytes: Uint8Array.from(out), at };
}

/** Bytes the automaton read → text: token-marker bytes become their token's text. */
export function decodeBytes(bytes: Uint8Array, tokens: readonly TokenMarker[]): string {
  if (tokens.length === 0) return new TextDecoder().decode(bytes);
  const byByte = new Map(tokens.map((t) => [t.byte, t.text]));
  let s = "";
  let from = 0;
  const dec = new TextDecoder();
  for (let i = 0; i < bytes.length; i++) {
    const t = byByte.get(bytes[i]!);
    if (t === undefined) continue;
    s += dec.decode(bytes.subarray(from, i)) + t;
    from = i + 1;
  }
  return s + dec.decode(bytes.subarray(from));
}

/** The token markers of a list of spec states (`tokenByte` set), in state order. */
export function tokenMarkers(states: readonly { marker: string; tokenByte?: number }[]): TokenMarker[] {
  return states.flatMap((s) => (s.tokenByte === undefined ? [] : [{ text: s.marker, byte: s.tokenByte }]));
}
