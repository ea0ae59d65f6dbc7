/**
 * @fileoverview Import cycles in runtime-wasm/ (issue 11), the part of the tree madge cannot check:
 * AssemblyScript puts decorators on functions (`@inline function`), which TypeScript's parser
 * rejects, and madge then silently reports no imports for those files. The imports are read here
 * with TypeScript's own `preProcessFile`, which only scans import statements, and the graph is
 * searched for cycles. `npm run check:cycles` runs it after madge; tests/layout.test.ts too.
 *
 *   node scripts/runtime-cycles.mjs   → prints the cycles and exits 1, or "no cycles" and exits 0
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import ts from "typescript";

const DIR = "runtime-wasm";

/** For each runtime module (file name), the runtime modules it imports, read by TypeScript. */
export function runtimeImports(dir = DIR) {
  const graph = {};
  for (const f of readdirSync(dir).filter((f) => f.endsWith(".ts")).sort()) {
    const { importedFiles } = ts.preProcessFile(readFileSync(join(dir, f), "utf8"), true, true);
    graph[f] = importedFiles.map((i) => i.fileName).filter((n) => n.startsWith("./")).map((n) => `${n.slice(2).replace(/\.ts$/, "")}.ts`);
  }
  return graph;
}

/** Every elementary cycle's first occurrence in a depth-first search, as a list of files. */
export function findCycles(graph) {
  const cycles = [];
  const state = new Map(); // 1 = on the stack, 2 = done
  const stack = [];
  const visit = (f) => {
    state.set(f, 1);
    stack.push(f);
    for (const t of graph[f] ?? []) {
      if (state.get(t) === 1) cycles.push([...stack.slice(stack.indexOf(t)), t]);
      else if (!state.has(t)) visit(t);
    }
    stack.pop();
    state.set(f, 2);
  };
  for (const f of Object.keys(graph)) if (!state.has(f)) visit(f);
  return cycles;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const cycles = findCycles(runtimeImports());
  if (cycles.length) {
    console.error(`runtime-wasm: ${cycles.length} import cycle(s):\n${cycles.map((c) => `  ${c.join(" → ")}`).join("\n")}`);
    process.exit(1);
  }
  console.log("runtime-wasm: no import cycles");
}
