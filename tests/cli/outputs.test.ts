/**
 * Output folders that cannot be made are an immediate "cannot write" (exit 3), never a hang or a
 * stack trace (issue 14: `specc demo --out /proc/x` used to spin in Node's recursive mkdir).
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ensureDir } from "../../compiler/io.js";
import { EXIT, main } from "../../cli/main.js";

async function run(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = "";
  let err = "";
  const code = await main(argv, { out: (s) => (out += s + "\n"), err: (s) => (err += s + "\n") });
  return { code, out, err };
}

describe("output folders", () => {
  it("specc demo --out /proc/x: cannot write, exit 3", async () => {
    const r = await run(["demo", "--out", "/proc/x"]);
    expect(r.code).toBe(EXIT.input);
    expect(r.err).toMatch(/^error: cannot write \/proc\/x/);
  });

  it("specc demo --out under a regular file: cannot write, exit 3", async () => {
    const f = join(mkdtempSync(join(tmpdir(), "specc-out-")), "file");
    writeFileSync(f, "x");
    const r = await run(["demo", "--out", join(f, "sub")]);
    expect(r.code).toBe(EXIT.input);
    expect(r.err).toMatch(/cannot write .*is not a directory/);
  });

  it("ensureDir makes missing parents and accepts existing folders", () => {
    const d = join(mkdtempSync(join(tmpdir(), "specc-out-")), "a", "b", "c");
    ensureDir(d);
    ensureDir(d);
    expect(() => ensureDir(join(d, "..", "..", ".."))).not.toThrow();
  });
});
