/**
 * The layout, checked: no import cycles anywhere (madge, an independent tool from npm, the same
 * check as `npm run check:cycles`), and imports go one way only — cli → agents → bindings →
 * compiler (the runtime is AssemblyScript, built on its own). The benchmark harness may use
 * everything but the CLI. Dynamic `import()` and type-only imports count as imports.
 */
import madge from "madge";
import { describe, expect, it } from "vitest";

const FOLDERS = ["compiler", "bindings", "agents", "cli", "bench", "tests", "examples"];

/** Which top-level folders each folder's files may import (besides their own). */
const MAY_IMPORT: Record<string, string[]> = {
  compiler: [],
  bindings: ["compiler"],
  agents: ["bindings", "compiler"],
  bench: ["agents", "bindings", "compiler", "tests"],
  cli: ["bench", "agents", "bindings", "compiler"],
  examples: ["agents", "bindings", "compiler"],
  tests: FOLDERS,
};

describe("layout", async () => {
  const graph = await madge(FOLDERS, { fileExtensions: ["ts"], tsConfig: "tsconfig.json", excludeRegExp: [/\.generated\.ts$/, /node_modules/] });
  const deps = graph.obj();

  it("madge reads the whole tree", () => {
    expect(Object.keys(deps).length).toBeGreaterThan(100);
    expect(deps["cli/main.ts"]).toContain("cli/compile.ts");
  });

  it("has no import cycles", () => {
    expect(graph.circular()).toEqual([]);
  });

  it("imports go one way: cli → agents → bindings → compiler", () => {
    const wrong: string[] = [];
    for (const [file, targets] of Object.entries(deps)) {
      const from = file.split("/")[0]!;
      for (const t of targets) {
        const to = t.split("/")[0]!;
        if (to !== from && FOLDERS.includes(to) && !MAY_IMPORT[from]!.includes(to)) wrong.push(`${file} → ${t}`);
      }
    }
    expect(wrong).toEqual([]);
  });
});
