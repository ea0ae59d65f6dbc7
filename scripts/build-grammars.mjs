// Compiles every nearley grammar (compiler/**/*.ne) to a sibling *.generated.ts: nearleyc's output
// turned into an ES module (`export default` the compiled rules), so that tsc compiles it with the
// rest, vitest and esbuild load it as any module, and the compiler needs no `require` (no
// node:module) — it runs in a browser. Run by `npm run build` (build:grammar).
import { execFileSync } from "node:child_process";
import { readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const walk = (d) => readdirSync(d).flatMap((f) => (statSync(join(d, f)).isDirectory() ? walk(join(d, f)) : [join(d, f)]));
for (const ne of walk("compiler").filter((f) => f.endsWith(".ne"))) {
  const js = execFileSync(process.execPath, ["node_modules/nearley/bin/nearleyc.js", ne], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
  // nearleyc wraps the grammar in an IIFE that assigns module.exports (or window.grammar); keep its
  // body and export the grammar object instead.
  const start = js.indexOf("(function () {");
  const end = js.lastIndexOf("if (typeof module !== 'undefined'");
  if (start < 0 || end < 0) throw new Error(`build-grammars: unexpected nearleyc output for ${ne}`);
  const body = js.slice(start + "(function () {".length, end);
  const out = ne.replace(/\.ne$/, ".generated.ts");
  writeFileSync(out, `// @ts-nocheck\n// Generated from ${ne.split("/").pop()} by scripts/build-grammars.mjs (nearleyc) — do not edit.\n` +
    `import type { CompiledRules } from "nearley";\n${body}\nconst compiled: CompiledRules = grammar;\nexport default compiled;\n`);
  rmSync(ne.replace(/\.ne$/, ".generated.cjs"), { force: true }); // the former CommonJS output
}
