/**
 * @fileoverview `specc sample`: conformant transcripts from seeded random logits under the masks.
 */
import { join } from "node:path";
import { parseArgs } from "node:util";
import { ensureDir, writeAtomic } from "../compiler/io.js";
import { COMPILE_OPTIONS, EXIT, UsageError, compileOptions, loadWithVocab, oneFile, type Io } from "./common.js";

export async function cmdSample(args: string[], io: Io, sources: Map<string, string>): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: {
    vocab: { type: "string" }, n: { type: "string", default: "1" }, seed: { type: "string", default: "1" },
    "max-state-tokens": { type: "string", default: "32" }, out: { type: "string" }, json: { type: "boolean", default: false }, ...COMPILE_OPTIONS } });
  const file = oneFile(positionals, "spec or .wasm file");
  const int = (v: string, name: string, min: number) => {
    const x = Number(v);
    if (!Number.isInteger(x) || x < min) throw new UsageError(`--${name} must be an integer ≥ ${min}, not '${v}'`);
    return x;
  };
  const n = int(values.n!, "n", 1), seed = int(values.seed!, "seed", 0), k = int(values["max-state-tokens"]!, "max-state-tokens", 1);
  const { spec, vocab } = await loadWithVocab(file, values.vocab, sources, compileOptions(values, io));
  const { sampleTraces } = await import("../bindings/replay.js");
  const traces = sampleTraces(spec, vocab, { n, seed, maxStateTokens: k });
  if (values.out) {
    ensureDir(values.out);
    traces.forEach((t, i) => writeAtomic(join(values.out!, `sample-${String(i).padStart(4, "0")}.json`), JSON.stringify(t, null, 2) + "\n"));
    io.out(`${values.out}: ${traces.length} transcripts`);
  } else if (values.json || n > 1) {
    io.out(JSON.stringify(n === 1 ? traces[0] : traces, null, 2));
  } else {
    for (const s of traces[0]!.segments) io.out(s.by === "env" ? `[env] ${JSON.stringify(s.text)}` : s.text);
  }
  return EXIT.ok;
}
