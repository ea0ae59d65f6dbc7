/**
 * Smoke test of the A/B driver (bench/maskbench/ab.ts), so that it does not rot: the same build
 * (dist/, which `npm test` builds first) as A and B, on a few sample schemas, one round. No timing
 * is asserted: only that every stage is reported, and that the two builds' .wasm agree.
 */
import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../../bench/harness/common.js";

describe("maskbench:ab", () => {
  it("times every stage of two builds over a band of the sample, and compares their .wasm", () => {
    const out = execFileSync(process.execPath, ["--import", "tsx", "bench/maskbench/ab.ts", "dist", "dist", "--sample", "12", "--band", "0-1", "--rounds", "1"],
      { cwd: repoRoot(), encoding: "utf8" });
    expect(out).toMatch(/\.wasm differs for 0 of (\d+)/);
    const n = Number(/of (\d+) the sample both compile/.exec(out)![1]);
    expect(n).toBeGreaterThan(5);
    for (const stage of ["convert", "parse", "pda", "emit", "load"]) expect(out).toMatch(new RegExp(`^${stage}\\s+\\d+\\.\\d+\\s+\\d+\\.\\d+\\s+\\d\\.\\d+\\s+[01]/1$`, "m"));
  }, 120_000);
});
