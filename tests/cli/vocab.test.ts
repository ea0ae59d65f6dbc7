/**
 * `specc vocab`: a prepared vocabulary file from a tokenizer.json, identical to the vocabulary it
 * came from when loaded, accepted by `specc compile --vocab`; a bad tokenizer.json is an input
 * error (exit 3) with the reason, not a stack trace.
 */
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { EXIT, main } from "../../cli/main.js";
import { Vocabulary } from "../../bindings/vocab.js";
import { tokenizerJsonPath } from "../helpers/tokenizers.js";

async function run(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = "", err = "";
  const code = await main(argv, { out: (s) => (out += s + "\n"), err: (s) => (err += s + "\n") });
  return { code, out, err };
}

describe("specc vocab", () => {
  const dir = mkdtempSync(join(tmpdir(), "specc-vocab-"));

  it("writes a prepared vocabulary that loads as the same vocabulary and compiles with --vocab", async () => {
    const out = join(dir, "llama2.vocab");
    const r = await run(["vocab", tokenizerJsonPath("llama2"), "-o", out]);
    expect(r.code).toBe(EXIT.ok);
    expect(r.out).toMatch(/llama2\.vocab: 32000 tokens \(sentencepiece, adds a prefix space\), \d+ bytes/);
    const a = await Vocabulary.fromTokenizerJson(out);
    const b = await Vocabulary.fromTokenizerJson(tokenizerJsonPath("llama2"));
    expect([a.size, a.family, a.eos]).toEqual([b.size, b.family, b.eos]);
    for (const id of [0, 1, 2, 3, 100, 1000, 31999]) expect(a.tokenBytes(id)).toEqual(b.tokenBytes(id));
    const wasm = join(dir, "react.wasm");
    const c = await run(["compile", join(import.meta.dirname, "../../examples/react.agent"), "-o", wasm, "--vocab", out]);
    expect(c.code).toBe(EXIT.ok);
    expect(readFileSync(wasm).length).toBeGreaterThan(100_000); // the vocabulary is baked in
  });

  it("reports a file that is not a tokenizer.json", async () => {
    const bad = join(dir, "bad.json");
    writeFileSync(bad, "{ not json");
    const r = await run(["vocab", bad, "-o", join(dir, "bad.vocab")]);
    expect(r.code).toBe(EXIT.input);
    expect(r.err).toMatch(/bad\.json: .*not JSON/);
    expect(r.err).not.toMatch(/\n\s+at /);
  });
});
