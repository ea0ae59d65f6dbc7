/**
 * Smoke test of the A/B driver (bench/maskbench/ab.ts), so that it does not rot: the same build
 * (dist/, which `npm test` builds first) as A and B, on a few sample schemas, one round. No timing
 * is asserted: only that every stage is reported, and that the two builds' .wasm agree. The B/A
 * ratio may take any number of digits: one round on a busy machine can put it past 10.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../../bench/harness/common.js";
import { fixedSample, loadMaskBench, maskBenchPath } from "../../bench/maskbench/data.js";

describe("maskbench:ab", () => {
  it("times every stage of two builds over a band of the sample, and compares their .wasm", () => {
    const out = execFileSync(process.execPath, ["--import", "tsx", "bench/maskbench/ab.ts", "dist", "dist", "--sample", "12", "--band", "0-1", "--rounds", "1"],
      { cwd: repoRoot(), encoding: "utf8" });
    expect(out).toMatch(/\.wasm differs for 0 of (\d+)/);
    const n = Number(/of (\d+) in the sample that both compile/.exec(out)![1]);
    expect(n).toBeGreaterThan(5);
    for (const stage of ["convert", "parse", "pda", "emit", "load"]) expect(out).toMatch(new RegExp(`^${stage}\\s+\\d+\\.\\d+\\s+\\d+\\.\\d+\\s+\\d+\\.\\d+\\s+[01]/1$`, "m"));
  }, 120_000);

  it("--names: the schemas a file lists, all of them", () => {
    const names = fixedSample(loadMaskBench(maskBenchPath(repoRoot())), 40).slice(0, 3).map((c) => c.name);
    const file = join(mkdtempSync(join(tmpdir(), "ab-")), "names.txt");
    writeFileSync(file, names.join("\n") + "\n");
    const out = execFileSync(process.execPath, ["--import", "tsx", "bench/maskbench/ab.ts", "dist", "dist", "--names", file, "--rounds", "1"],
      { cwd: repoRoot(), encoding: "utf8" });
    expect(out).toMatch(/^3 schemas \(band 0-1 of 3 named that both compile\)/m);
  }, 120_000);
});
