/**
 * The browser bundles (dist/browser, built by scripts/bundle.mjs in `npm run build`) need nothing
 * from Node (issue 15): no file imports a Node built-in, and in a process where Node's built-ins
 * cannot be reached (`process.getBuiltinModule` removed, the only door compiler/host.ts uses) the
 * bundle still compiles a spec, loads it from bytes with a vocabulary from a parsed
 * tokenizer.json, and computes a mask; a grammar file it cannot read is a diagnostic, not a crash.
 */
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { builtinModules } from "node:module";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "..", "..");
const dir = join(root, "dist", "browser");
const walk = (d: string): string[] => readdirSync(d).flatMap((f) => (statSync(join(d, f)).isDirectory() ? walk(join(d, f)) : [join(d, f)]));

describe("the browser bundle", () => {
  it("imports no Node built-in", () => {
    const files = walk(dir).filter((f) => f.endsWith(".js"));
    expect(files.map((f) => f.slice(dir.length + 1))).toEqual(expect.arrayContaining(["index.js", "compiler.js"]));
    const names = builtinModules.flatMap((m) => [m, `node:${m}`]).map((m) => m.replace(/[/]/g, "\\/"));
    // Static imports and re-exports, dynamic imports and requires of any built-in, with or without `node:`.
    const importOf = new RegExp(`(?:\\bfrom\\s*|\\bimport\\s*\\(?\\s*|\\brequire\\s*\\(\\s*)["'\`](?:${names.join("|")})["'\`]`);
    const offenders = files.filter((f) => importOf.test(readFileSync(f, "utf8")));
    expect(offenders).toEqual([]);
    // The pattern does catch one.
    expect(importOf.test(`import{readFile as r}from"node:fs/promises";`)).toBe(true);
    expect(importOf.test(`await import("fs")`)).toBe(true);
  });

  it("compiles and masks with Node's built-ins out of reach", () => {
    // The harness reads the inputs with node:fs; the bundle gets only their contents.
    const script = `
      import { readFileSync } from "node:fs";
      const tok = JSON.parse(readFileSync(process.argv[1], "utf8"));
      const react = readFileSync(process.argv[2], "utf8");
      delete process.getBuiltinModule;
      const { compileSource, compileToWasm, SpecError } = await import(${JSON.stringify(join(dir, "compiler.js"))});
      const { Spec, Vocabulary } = await import(${JSON.stringify(join(dir, "index.js"))});
      const vocab = await Vocabulary.fromTokenizerJson(tok);
      const wasm = compileToWasm(compileSource(react, "react.agent"));
      const spec = await Spec.load(wasm, { vocab });
      const m = spec.matcher();
      let allowed = 0;
      for (const w of m.maskView()) for (let x = w >>> 0; x; x &= x - 1) allowed++;
      let fileErr = "";
      try { compileSource('(define g (:states (A (:text "a:") (:grammar "x.gbnf"))) (:behavior A))', "g.agent"); }
      catch (e) { fileErr = e instanceof SpecError ? e.code + " " + e.message : "crash: " + e; }
      console.log(JSON.stringify({ size: vocab.size, allowed, fileErr }));`;
    const tokenizer = join(root, "node_modules", "@lenml", "tokenizer-llama2", "models", "tokenizer.json");
    const react = join(root, "examples", "react.agent");
    const out = execFileSync(process.execPath, ["--input-type=module", "-e", script, tokenizer, react], { encoding: "utf8" });
    const r = JSON.parse(out) as { size: number; allowed: number; fileErr: string };
    expect(r.size).toBe(32000);
    expect(r.allowed).toBeGreaterThan(0);
    expect(r.allowed).toBeLessThan(r.size / 10);
    expect(r.fileErr).toMatch(/^E0213 cannot read grammar file x\.gbnf: .*no file system/);
  });
});
