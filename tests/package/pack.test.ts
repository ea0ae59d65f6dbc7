/**
 * specc as a user outside this repository gets it (issue 15): `npm pack`, install the tarball into
 * a fresh project, run the CLI from there (`specc compile`, `render`, `--help`), import the API
 * (`specc`, `specc/compiler`, `specc/agents`) from an ESM TypeScript file type-checked with
 * `tsc --strict`, and compute a mask on a real vocabulary. The suite has built dist/ and build/
 * already (`npm test` builds first), so the pack skips `prepack`. Installing needs the npm
 * registry for the dependencies' metadata (`--prefer-offline`: tarballs come from the cache).
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "..", "..");
const tsc = join(root, "node_modules", "typescript", "bin", "tsc");
const tokenizer = join(root, "node_modules", "@lenml", "tokenizer-llama3_1", "models", "tokenizer.json");
let dir = "";
let specc = "";

const run = (cmd: string, args: string[], cwd = dir) => execFileSync(cmd, args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], timeout: 120_000 });

describe("the npm package, installed elsewhere", () => {
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "specc-pkg-"));
    const tgz = run("npm", ["pack", "--ignore-scripts", "--silent", "--pack-destination", dir], root).trim().split("\n").pop()!;
    writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "consumer", version: "1.0.0", type: "module", private: true }));
    run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts", join(dir, tgz)]);
    specc = join(dir, "node_modules", "specc", "bin", "specc.js");
  }, 180_000);
  afterAll(() => { if (dir) rmSync(dir, { recursive: true, force: true }); });

  it("ships the runtime and no build step on install", () => {
    const pkg = JSON.parse(readFileSync(join(dir, "node_modules", "specc", "package.json"), "utf8")) as { scripts: Record<string, string>; exports: Record<string, unknown> };
    expect(existsSync(join(dir, "node_modules", "specc", "build", "runtime.wasm"))).toBe(true);
    expect(pkg.scripts["prepare"]).toBeUndefined();
    expect(Object.keys(pkg.exports)).toEqual(expect.arrayContaining([".", "./compiler", "./agents"]));
  });

  it("runs specc compile, render and --help from the installed bin", () => {
    writeFileSync(join(dir, "react.agent"), readFileSync(join(root, "examples", "react.agent")));
    expect(run("node", [specc, "compile", "react.agent", "-o", "react.wasm"])).toMatch(/react\.wasm: \d+ bytes/);
    expect(readFileSync(join(dir, "react.wasm")).subarray(0, 4)).toEqual(Buffer.from([0, 0x61, 0x73, 0x6d]));
    run("node", [specc, "render", "react.agent", "-o", "react.svg"]);
    expect(readFileSync(join(dir, "react.svg"), "utf8")).toMatch(/<svg[\s>]/);
    expect(run("node", [specc, "bench", "--help"])).toMatch(/^ {2}specc bench /m);
  });

  it("imports the API from strict TypeScript and computes a mask", () => {
    writeFileSync(join(dir, "use.ts"), `
import { Spec, Vocabulary } from "specc";
import { compileSource, compileToWasm, SpecError } from "specc/compiler";
import { RuleEnforcer } from "specc/agents";

const vocab = await Vocabulary.fromTokenizerJson(process.argv[2]!);
const spec = await Spec.load(compileToWasm(compileSource(${JSON.stringify(readFileSync(join(root, "examples", "react.agent"), "utf8"))}, "react.agent")), { vocab });
const mask: Int32Array = spec.matcher().maskView();
let allowed = 0;
for (const w of mask) for (let x = w >>> 0; x; x &= x - 1) allowed++;
let code = "";
try { compileSource("(define", "bad.agent"); } catch (e) { if (e instanceof SpecError) code = e.code; }
console.log(JSON.stringify({ vocab: vocab.size, allowed, code, enforcer: typeof RuleEnforcer }));
`);
    writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({
      compilerOptions: { target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", strict: true, skipLibCheck: false, outDir: "out", typeRoots: [join(root, "node_modules", "@types")], types: ["node"] },
      files: ["use.ts"],
    }));
    run("node", [tsc, "-p", "tsconfig.json"]);
    const r = JSON.parse(run("node", [join("out", "use.js"), tokenizer])) as { vocab: number; allowed: number; code: string; enforcer: string };
    expect(r.vocab).toBe(128256);
    // At the start of react.agent only the first marker's prefixes ("Thought:") and whitespace are allowed.
    expect(r.allowed).toBeGreaterThan(0);
    expect(r.allowed).toBeLessThan(r.vocab / 10);
    expect(r.code).toMatch(/^E\d{4}$/);
    expect(r.enforcer).toBe("function");
  });
});
