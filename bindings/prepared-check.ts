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
  isTextPermutation(order: number, n: number, kinds: number, size: number, seen: number): number;
}

/** Where the parts of a prepared file lie (byte offsets into it), and its counts. */
export interface PreparedParts {
  /** Where the checksummed 32-bit words start, how many there are, and the hash before them. */
  words: number;
  nWords: number;
  hash: number;
  offsets: number;
  order: number;
  kinds: number;
  size: number;
  nText: number;
}

export interface PreparedVerdict {
  /** The hash after the words. */
  hash: number;
  /** The number of text tokens, or -1 where an offset decreases or a kind is not 0 or 1. */
  text: number;
  /** Whether the order lists distinct text tokens. */
  permutation: boolean;
}

let compiled: WebAssembly.Module | undefined;
const BASE = 65536;

/**
 * The checks on `data`, or undefined where WebAssembly cannot run them here (the caller then
 * runs them in JavaScript). Each call has an instance of its own, so the copy of the file is
 * garbage once it returns.
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
    const pages = Math.ceil((BASE + data.length + p.size) / 65536);
    x.memory.grow(pages - x.memory.buffer.byteLength / 65536);
    new Uint8Array(x.memory.buffer).set(data, BASE);
    return {
      hash: x.wordSum(BASE + p.words, p.nWords, p.hash) >>> 0,
      text: x.textTokens(BASE + p.offsets, BASE + p.kinds, p.size),
      permutation: x.isTextPermutation(BASE + p.order, p.nText, BASE + p.kinds, p.size, BASE + data.length) !== 0,
    };
  } catch {
    return undefined;
  }
}
