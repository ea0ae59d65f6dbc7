/**
 * @fileoverview Where the bindings' inputs come from, in Node and in browsers alike: bytes, a fetch
 * `Response`, a URL (http(s), data:, blob:, or file: in Node) or a string — a file path in Node, a
 * URL (relative to the page) elsewhere. No Node module is imported (compiler/host.ts explains why).
 */
import { nodeBuiltin } from "../compiler/host.js";

/** What `Spec.load` and `Vocabulary.fromTokenizerJson` accept for a file. */
export type ByteSource = string | URL | Response | Uint8Array | ArrayBuffer;

/** A readable name for error messages. */
export function sourceName(src: ByteSource): string {
  if (typeof src === "string") return src;
  if (src instanceof URL) return src.href;
  if (typeof Response !== "undefined" && src instanceof Response) return src.url || "the given response";
  return "the given bytes";
}

/** The bytes of `src` (a fresh copy backed by a plain ArrayBuffer for bytes given directly). */
export async function readBytes(src: ByteSource): Promise<Uint8Array<ArrayBuffer>> {
  if (src instanceof Uint8Array) return new Uint8Array(src);
  if (src instanceof ArrayBuffer) return new Uint8Array(src.slice(0));
  if (typeof Response !== "undefined" && src instanceof Response) {
    if (!src.ok) throw new Error(`HTTP ${src.status} ${src.statusText}`.trim());
    return new Uint8Array(await src.arrayBuffer());
  }
  const loc = src as string | URL;
  const fsp = nodeBuiltin<typeof import("node:fs/promises")>("node:fs/promises");
  if (fsp && (typeof loc === "string" || loc.protocol === "file:")) return new Uint8Array(await fsp.readFile(loc));
  if (typeof fetch !== "function") throw new Error("no file system and no fetch here: pass the bytes instead");
  return readBytes(await fetch(loc));
}
