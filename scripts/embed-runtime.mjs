// Embeds the built WebAssembly modules as base64 in generated TypeScript, so the code that needs
// them gets their bytes without reading a file: the same code runs in Node, in a bundle and in a
// browser. Run by `npm run build:runtime`, right after asc.
//   build/runtime.wasm        → compiler/runtime-wasm.generated.ts  (the runtime every spec embeds)
//   build/prepared-check.wasm → bindings/prepared-check.generated.ts (the prepared vocabulary's checks)
import { readFileSync, writeFileSync } from "node:fs";

const embed = (wasmPath, outPath, name, what) => {
  const wasm = readFileSync(wasmPath);
  writeFileSync(outPath,
    `// Generated from ${wasmPath} by scripts/embed-runtime.mjs — do not edit.\n` +
    `/** ${what} (${wasm.length} bytes), base64. */\n` +
    `export const ${name} = ${JSON.stringify(wasm.toString("base64"))};\n`);
};
embed("build/runtime.wasm", "compiler/runtime-wasm.generated.ts", "RUNTIME_WASM_BASE64", "The prebuilt runtime");
embed("build/prepared-check.wasm", "bindings/prepared-check.generated.ts", "PREPARED_CHECK_WASM_BASE64", "The prepared vocabulary's checks");
