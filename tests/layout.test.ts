/**
 * The layout, checked: no import cycles anywhere (madge, an independent tool from npm, the same
 * check as `npm run check:cycles`), and imports go one way only — cli → agents → bindings →
 * compiler (the runtime is AssemblyScript, built on its own). The benchmark harness may use
 * everything but the CLI. Dynamic `import()` and type-only imports count as imports.
 *
 * The AssemblyScript runtime is checked apart: madge cannot parse its files (decorators on
 * functions) and sees no imports in them, so scripts/runtime-cycles.mjs reads them with
 * TypeScript's `preProcessFile`. There, too, no cycles, and each module imports only the modules
 * runtime-wasm/index.ts lists above it.
 */
import { readFileSync } from "node:fs";
import madge from "madge";
import { describe, expect, it } from "vitest";
// @ts-expect-error: a plain .mjs script without types
import { findCycles, runtimeImports } from "../scripts/runtime-cycles.mjs";

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

describe("runtime-wasm layout", () => {
  const graph = runtimeImports() as Record<string, string[]>;

  it("reads the runtime's imports (madge sees none of them)", async () => {
    expect(graph["matcher.ts"]).toContain("records.ts");
    expect(graph["pushdown-masks.ts"]).toContain("pushdown.ts");
    const seen = (await madge("runtime-wasm", { fileExtensions: ["ts"] })).obj();
    expect(seen["matcher.ts"]).toEqual([]); // why the script exists: if madge learns to read them, use it
  });

  it("finds a cycle when there is one", () => {
    expect(findCycles({ "a.ts": ["b.ts"], "b.ts": ["c.ts"], "c.ts": ["a.ts"] })).toEqual([["a.ts", "b.ts", "c.ts", "a.ts"]]);
    expect(findCycles({ "a.ts": ["b.ts"], "b.ts": [] })).toEqual([]);
  });

  it("has no import cycles", () => {
    expect(findCycles(graph)).toEqual([]);
  });

  it("each module imports only modules listed above it in index.ts", () => {
    const order = [...readFileSync("runtime-wasm/index.ts", "utf8").matchAll(/^ \* - ([a-z-]+\.ts):/gm)].map((m) => m[1]!);
    expect(new Set(order)).toEqual(new Set(Object.keys(graph).filter((f) => f !== "index.ts")));
    const wrong: string[] = [];
    for (const [f, targets] of Object.entries(graph)) {
      if (f === "index.ts") continue;
      for (const t of targets) if (order.indexOf(t) >= order.indexOf(f)) wrong.push(`${f} → ${t}`);
    }
    expect(wrong).toEqual([]);
  });
});
