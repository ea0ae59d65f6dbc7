/**
 * Builds build/runtime.wasm when it is missing (what `npm run build:runtime` does), so a bare
 * `vitest run` in a fresh checkout works; `npm test` builds it anyway.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export async function ensureRuntime(): Promise<void> {
  const root = fileURLToPath(new URL("../..", import.meta.url));
  if (existsSync(join(root, "build", "runtime.wasm"))) return;
  const asc = (await import("assemblyscript/asc")).default;
  const { error } = await asc.main(["runtime-wasm/index.ts", "--config", "asconfig.json", "--target", "release"], {
    stdout: process.stdout,
    stderr: process.stderr,
  } as never);
  if (error) throw error;
}
