/**
 * @fileoverview `specc replay`: a transcript token by token with the real tokenizer: did the mask allow each
 * token, how many tokens did it allow, how long did it take.
 */
import { parseArgs } from "node:util";
import { parseTrace } from "../compiler/trace.js";
import { COMPILE_OPTIONS, EXIT, UsageError, compileOptions, loadWithVocab, oneFile, readInput, type Io } from "./common.js";

export async function cmdReplay(args: string[], io: Io, sources: Map<string, string>): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: {
    vocab: { type: "string" }, trace: { type: "string" }, json: { type: "boolean", default: false }, ...COMPILE_OPTIONS } });
  const file = oneFile(positionals, "spec or .wasm file");
  if (!values.trace) throw new UsageError("missing --trace FILE");
  const trace = parseTrace(new TextDecoder().decode(readInput(values.trace)), values.trace);
  const { spec, vocab } = await loadWithVocab(file, values.vocab, sources, compileOptions(values, io));
  const { encoderFor } = await import("../bindings/encode.js");
  const encode = await encoderFor(values.vocab!);
  const { replayTrace } = await import("../bindings/replay.js");
  const r = replayTrace(spec, vocab, encode, trace);
  if (values.json) {
    io.out(JSON.stringify(r, null, 2));
  } else {
    io.out("  # | seg | token  | text                 | allowed | popcount | mask ns | status");
    r.steps.forEach((s, i) => io.out(`${String(i).padStart(3)} | ${String(s.segment).padStart(3)} | ${String(s.token).padStart(6)} | ${JSON.stringify(s.text).slice(0, 20).padEnd(20)} | ${s.allowed ? "yes" : "NO "}     | ${String(s.popcount).padStart(8)} | ${String(s.maskNs).padStart(7)} | ${s.status}`));
    const ns = r.steps.map((s) => s.maskNs).sort((a, b) => a - b);
    const pct = (q: number) => (ns.length ? ns[Math.min(ns.length - 1, Math.floor(q * ns.length))]! : 0);
    io.out(`${r.steps.length} tokens; fillMask p50 ${(pct(0.5) / 1000).toFixed(2)} µs, p99 ${(pct(0.99) / 1000).toFixed(2)} µs (including the first visit of each state)`);
    if (r.error) io.out(`error: ${r.error}`);
    else if (r.firstForbidden >= 0) io.out(`token ${r.firstForbidden} (${JSON.stringify(r.steps[r.firstForbidden]!.text)}) was forbidden by the mask`);
    else io.out(r.accepted ? "every token was allowed; the run is complete" : "every token was allowed; the run is incomplete");
  }
  return r.firstForbidden >= 0 || r.error ? EXIT.nonconforming : EXIT.ok;
}
