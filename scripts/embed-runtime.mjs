// Embeds the built runtime (build/runtime.wasm) into compiler/runtime-wasm.generated.ts as base64,
// so the compiler gets the runtime's bytes without reading a file: the same code compiles specs in
// Node, in a bundle and in a browser. Run by `npm run build:runtime`, right after asc.
import { readFileSync, writeFileSync } from "node:fs";

const wasm = readFileSync("build/runtime.wasm");
writeFileSync("compiler/runtime-wasm.generated.ts",
  `// Generated from build/runtime.wasm by scripts/embed-runtime.mjs — do not edit.\n` +
  `/** The prebuilt runtime (${wasm.length} bytes), base64. */\n` +
  `export const RUNTIME_WASM_BASE64 = ${JSON.stringify(wasm.toString("base64"))};\n`);
