/**
 * @fileoverview Node file helpers shared by the CLI (cli/) and the demo (agents/demo.ts): read an
 * input file, write an output atomically. A failure is an `InputError` (exit 3 in the CLI), never a
 * half-written file. Not on the compile or mask path (the compiler and bindings take bytes), so a
 * browser build never needs it.
 */
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";

/** An input or output file that cannot be used: the CLI prints the message and exits 3. */
export class InputError extends Error {}

export function readInput(path: string): Uint8Array {
  if (!existsSync(path)) throw new InputError(`${path}: no such file`);
  try { return readFileSync(path); } catch (e) { throw new InputError(`${path}: ${(e as Error).message}`); }
}

/** Writes `data` to `path` atomically: a temp file in the same folder, then a rename. */
export function writeAtomic(path: string, data: Uint8Array | string): void {
  const tmp = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
  try {
    writeFileSync(tmp, data);
    renameSync(tmp, path);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw new InputError(`cannot write ${path}: ${(e as Error).message}`);
  }
}
