/**
 * Small pieces the differential tests share: describing where a mask differs from its oracle, and
 * mutating a string by one byte (to get near-miss inputs next to accepted ones).
 */
import type { Vocabulary } from "../../bindings/vocab.js";

const dec = new TextDecoder();

/** Up to 5 token ids where two masks differ, described (empty when equal). */
export function maskDiff(got: Int32Array, want: Int32Array, vocab: Vocabulary): string[] {
  const out: string[] = [];
  for (let w = 0; w < want.length && out.length < 5; w++) {
    const x = got[w]! ^ want[w]!;
    if (x === 0) continue;
    for (let bit = 0; bit < 32 && out.length < 5; bit++) {
      if (!((x >>> bit) & 1)) continue;
      const id = w * 32 + bit;
      const b = id < vocab.size ? vocab.tokenBytes(id) : null;
      out.push(`token ${id} ${b ? JSON.stringify(dec.decode(b)) : "(special)"}: got ${(got[w]! >>> bit) & 1}, want ${(want[w]! >>> bit) & 1}`);
    }
  }
  return out;
}

/** Delete, insert or replace one byte (chosen with `random` from `alphabet`). */
export function mutate(s: Uint8Array, random: () => number, alphabet: Uint8Array): Uint8Array {
  const a = [...s];
  const i = Math.floor(random() * (a.length + 1));
  const b = alphabet[Math.floor(random() * alphabet.length)]!;
  const op = Math.floor(random() * 3);
  if (op === 0) a.splice(i, 1);
  else if (op === 1) a.splice(i, 0, b);
  else a[Math.min(i, a.length - 1)] = b;
  return Uint8Array.from(a);
}
