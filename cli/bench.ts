/**
 * @fileoverview `specc bench`: one spec on one vocabulary through the benchmark harness (bench/harness),
 * side by side with the peers it names.
 */
import { parseArgs } from "node:util";
import { COMPILE_OPTIONS, UsageError, compileFile, compileOptions, oneFile, type Io } from "./common.js";

export async function cmdBench(args: string[], io: Io, sources: Map<string, string>): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: {
    vocab: { type: "string" }, against: { type: "string", multiple: true }, trace: { type: "string" },
    iterations: { type: "string" }, json: { type: "boolean", default: false }, ...COMPILE_OPTIONS } });
  const file = oneFile(positionals, "spec file");
  if (!values.vocab) throw new UsageError("missing --vocab tokenizer.json");
  const opts = compileOptions(values, io);
  const { runBench } = await import("../bench/harness/index.js");
  return runBench({
    spec: file, vocab: values.vocab, trace: values.trace, json: values.json,
    against: values.against?.flatMap((a) => a.split(",")),
    iterations: values.iterations === undefined ? undefined : Number(values.iterations),
    io, compile: (p) => compileFile(p, sources, opts),
  });
}
