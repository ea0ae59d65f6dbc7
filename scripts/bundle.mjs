// Builds the browser bundles with esbuild (run by `npm run build`, after tsc):
//   dist/browser/index.js     the runtime API (bindings/index.ts), what `import "specc"` gets in a bundler
//   dist/browser/compiler.js  the compiler (compiler/index.ts), `import "specc/compiler"`
// ES modules for browsers, chunks shared between the two (and Graphviz, loaded on first render, in a
// chunk of its own). `platform: "browser"` makes any import of a Node built-in a build error: the
// compile/mask path must not need one (tests/package/browser.test.ts checks the output as well).
import { build } from "esbuild";
import { rmSync } from "node:fs";

rmSync("dist/browser", { recursive: true, force: true });
await build({
  entryPoints: { index: "bindings/index.ts", compiler: "compiler/index.ts" },
  outdir: "dist/browser",
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "browser",
  target: "es2022",
  minify: true,
  legalComments: "eof",
  chunkNames: "chunks/[name]-[hash]",
  logLevel: "warning",
});
