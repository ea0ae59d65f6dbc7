/**
 * @fileoverview Node file helpers shared by the CLI (cli/) and the demo (agents/demo.ts): read an
 * input file, write an output atomically. A failure is an `InputError` (exit 3 in the CLI), never a
 * half-written file. Not on the compile or mask path (the compiler and bindings take bytes), so a
 * browser build never needs it.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";

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

/**
 * Makes sure `dir` is a directory, creating it and missing parents one level at a time. Why not
 * `mkdirSync(dir, { recursive: true })`: on some special file systems (e.g. `/proc/x`) Node's
 * recursive mkdir retries forever; here every level is tried once and a failure is an
 * `InputError` ("cannot write …", exit 3) at once.
 */
export function ensureDir(dir: string): void {
  const missing: string[] = [];
  let d = resolve(dir);
  for (;;) {
    let st;
    try { st = statSync(d); } catch { st = undefined; }
    if (st) {
      if (!st.isDirectory()) throw new InputError(`cannot write ${dir}: ${d} is not a directory`);
      break;
    }
    missing.push(d);
    const up = dirname(d);
    if (up === d) break;
    d = up;
  }
  for (const m of missing.reverse()) {
    try { mkdirSync(m); } catch (e) {
      if ((e as { code?: string }).code !== "EEXIST") throw new InputError(`cannot write ${dir}: ${(e as Error).message}`);
    }
  }
}
