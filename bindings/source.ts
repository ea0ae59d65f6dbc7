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
  // A path or file: URL first: in Node, touching the global `Response` loads its fetch
  // implementation (~15 ms), which reading a file does not need.
  const fsp = nodeBuiltin<typeof import("node:fs/promises")>("node:fs/promises");
  if (fsp && (typeof src === "string" || (src instanceof URL && src.protocol === "file:"))) return readWhole(fsp, src);
  if (typeof Response !== "undefined" && src instanceof Response) {
    if (!src.ok) throw new Error(`HTTP ${src.status} ${src.statusText}`.trim());
    return new Uint8Array(await src.arrayBuffer());
  }
  if (typeof fetch !== "function") throw new Error("no file system and no fetch here: pass the bytes instead");
  return readBytes(await fetch(src as string | URL));
}

/**
 * A file read with as few reads as its size allows, into one buffer that is returned as is
 * (`readFile` reads 512 KiB at a time and a copy would double that: Gemma 3's tokenizer.json is 33 MB).
 */
async function readWhole(fsp: typeof import("node:fs/promises"), path: string | URL): Promise<Uint8Array<ArrayBuffer>> {
  const fh = await fsp.open(path, "r");
  try {
    const size = (await fh.stat()).size;
    const out = new Uint8Array(size);
    let at = 0;
    while (at < size) {
      const { bytesRead } = await fh.read(out, at, size - at, at);
      if (bytesRead === 0) break;
      at += bytesRead;
    }
    return at === size ? out : out.slice(0, at); // (a file that shrank while being read)
  } finally {
    await fh.close();
  }
}
