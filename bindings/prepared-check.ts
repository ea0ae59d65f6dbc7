/**
 * @fileoverview The prepared vocabulary's whole-file checks, run in a small WebAssembly module
 * (runtime-wasm/prepared-check/, embedded at build time) instead of JavaScript: a decoder loads its
 * prepared file once, just after starting, when the same loops in JavaScript run mostly before the
 * JIT has warmed up. This only answers yes or no; prepared-vocab.ts keeps the JavaScript checks,
 * which word the error when the answer is no, and read the files of versions 1 and 2.
 */
import { PREPARED_CHECK_WASM_BASE64 } from "./prepared-check.generated.js";

interface CheckExports {
  memory: WebAssembly.Memory;
  wordSum(from: number, n: number, h: number): number;
  textTokens(offsets: number, kinds: number, size: number): number;
}

/** Where the parts of a prepared file lie (byte offsets into it), and its counts. */
export interface PreparedParts {
  /** Where the checksummed 32-bit words start, how many there are, and the hash before them. */
  words: number;
  nWords: number;
  hash: number;
  offsets: number;
  kinds: number;
  size: number;
}

export interface PreparedVerdict {
  /** The hash after the words. */
  hash: number;
  /** The number of text tokens, or -1 where an offset decreases or a kind is not 0 or 1. */
  text: number;
}

let compiled: WebAssembly.Module | undefined;
/** The module's memory: 7 pages; words are checksummed `CHUNK` at a time from `BASE`, kinds beside them. */
const BASE = 65536;
const CHUNK = 65536;
const KINDS = BASE + 4 * (CHUNK + 1);

/**
 * The checks on `data`, or undefined where WebAssembly cannot run them here (the caller then
 * runs them in JavaScript). The file goes through the module's memory a chunk at a time.
 */
export function checkPrepared(data: Uint8Array, p: PreparedParts): PreparedVerdict | undefined {
  try {
    if (!compiled) {
      const bin = atob(PREPARED_CHECK_WASM_BASE64);
      const bytes = new Uint8Array(bin.length);
      for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
      compiled = new WebAssembly.Module(bytes);
    }
    const x = new WebAssembly.Instance(compiled, {}).exports as unknown as CheckExports;
    const mem = new Uint8Array(x.memory.buffer);
    let hash = p.hash;
    for (let k = 0; k < p.nWords; k += CHUNK) {
      const n = Math.min(CHUNK, p.nWords - k);
      const at = data.byteOffset + p.words + 4 * k;
      mem.set(new Uint8Array(data.buffer, at, 4 * n), BASE);
      hash = x.wordSum(BASE, n, hash);
    }
    let text = 0;
    for (let i = 0; i < p.size && text >= 0; i += CHUNK) {
      const n = Math.min(CHUNK, p.size - i);
      mem.set(new Uint8Array(data.buffer, data.byteOffset + p.offsets + 4 * i, 4 * (n + 1)), BASE);
      mem.set(new Uint8Array(data.buffer, data.byteOffset + p.kinds + i, n), KINDS);
      const t = x.textTokens(BASE, KINDS, n);
      text = t < 0 ? -1 : text + t;
    }
    return { hash: hash >>> 0, text };
  } catch {
    return undefined;
  }
}
