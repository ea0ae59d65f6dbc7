/**
 * @fileoverview What the compiler needs from its host, without importing Node: the compiler and the
 * bindings run in browsers too (issue 15), so nothing on the compile/mask path may `import`
 * node:fs. Where Node is the host, its built-ins are reached through `process.getBuiltinModule`
 * (Node ≥ 20.16), which bundlers leave alone; elsewhere a file read fails with a clear message
 * saying what to pass instead. File writing and the CLI's I/O stay in compiler/io.ts (Node only).
 */
import { RUNTIME_WASM_BASE64 } from "./runtime-wasm.generated.js";

/** A Node built-in module (`nodeBuiltin<typeof import("node:fs")>("node:fs")`) when the host is Node, else undefined. */
export function nodeBuiltin<T>(id: `node:${string}`): T | undefined {
  const proc = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process;
  return proc?.getBuiltinModule?.(id) as T | undefined;
}

/** Reads a whole file synchronously; throws (to be reported by the caller) where there is no file system. */
export function readFileBytes(path: string): Uint8Array {
  const fs = nodeBuiltin<typeof import("node:fs")>("node:fs");
  if (!fs) throw new Error(`cannot read ${path}: no file system here (outside Node, pass the file's contents instead)`);
  return fs.readFileSync(path);
}

let runtime: Uint8Array | undefined;

/** The prebuilt runtime's bytes (build/runtime.wasm, embedded at build time). */
export function runtimeWasmBytes(): Uint8Array {
  if (!runtime) {
    const bin = atob(RUNTIME_WASM_BASE64);
    runtime = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) runtime[i] = bin.charCodeAt(i);
  }
  return runtime.slice();
}

type NodePath = typeof import("node:path");

/** Node's path module when the host is Node; elsewhere the POSIX subset the compiler uses (paths are only names there). */
export function hostPath(): Pick<NodePath, "dirname" | "isAbsolute" | "join"> {
  const p = nodeBuiltin<NodePath>("node:path");
  if (p) return p;
  const dirname = (f: string) => (f.includes("/") ? f.slice(0, f.lastIndexOf("/")) || "/" : ".");
  const isAbsolute = (f: string) => f.startsWith("/");
  const join = (...parts: string[]) => {
    const out: string[] = [];
    for (const seg of parts.join("/").split("/")) {
      if (seg === "..") { if (out.length && out[out.length - 1] !== ".." && out[out.length - 1] !== "") out.pop(); else out.push(seg); }
      else if (seg !== "." && (seg !== "" || out.length === 0)) out.push(seg);
    }
    return out.join("/") || ".";
  };
  return { dirname, isAbsolute, join };
}
