/**
 * @fileoverview `specc check`: are these transcripts conformant (a spec, a grammar or a compiled .wasm)?
 * Also few-shot examples in a prompt (--examples) and AgentSpec rule files (.rules).
 */
import { parseArgs } from "node:util";
import { decodeSource } from "../compiler/frontend/parse.js";
import { parseTrace, runTrace } from "../compiler/trace.js";
import { COMPILE_OPTIONS, EXIT, InputError, UsageError, compileFile, compileOptions, loadEngine, oneFile, readInput, type Io } from "./common.js";

export async function cmdCheck(args: string[], io: Io, sources: Map<string, string>): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: {
    trace: { type: "string", multiple: true }, json: { type: "boolean", default: false },
    examples: { type: "string", multiple: true }, from: { type: "string" },
    "known-predicates": { type: "boolean", default: false }, ...COMPILE_OPTIONS } });
  const file = oneFile(positionals, "spec or .wasm file");
  if (file.endsWith(".rules")) {
    const { checkRulesFile } = await import("../compiler/rules/index.js");
    const text = decodeSource(file, readInput(file));
    sources.set(file, text);
    const known = values["known-predicates"] ? Object.keys((await import("../agents/rules-predicates.js")).defaultPredicates) : undefined;
    io.out(checkRulesFile(text, file, known).summary);
    return EXIT.ok;
  }
  if (values.examples?.length) return checkPromptExamples(file, values.examples, values.from, !!values.json, io, sources);
  if (!values.trace?.length) throw new UsageError("missing --trace FILE (or --examples PROMPT.txt)");
  const { engine, markers, names, tokens } = await loadEngine(file, sources, compileOptions(values, io));
  const name = (i: number) => (i < 0 ? "(start)" : names[i]!);
  // A grammar has no spec states (every spec has one at least): report in terms of the text.
  const grammar = names.length === 0;
  const { allowedBytesLabel } = await import("../compiler/render.js");
  // A token marker's byte is shown as its token, e.g. [\t\n\r ] or <think>.
  const tokenOf = new Map(tokens.map((t) => [t.byte, t.text]));
  const expectedText = (state: number) => allowedBytesLabel(engine, state)
    .replace(/\\x([0-9A-Fa-f]{2})/g, (m, h: string) => { const t = tokenOf.get(parseInt(h, 16)); return t === undefined ? m : ` ${t} (token) `; });
  let failed = 0;
  const results: unknown[] = [];
  for (const tf of values.trace) {
    const traceText = new TextDecoder().decode(readInput(tf));
    const trace = parseTrace(traceText, tf);
    const v = runTrace(engine, trace, markers, tokens);
    if (v.verdict !== "conforms") failed++;
    if (values.json) {
      results.push({ trace: tf, ...v, ...("specState" in v ? { specState: name(v.specState), expected: v.expected.map((i) => markers[i]) } : {}) });
      continue;
    }
    if (v.verdict === "conforms") io.out(grammar ? `${tf}: conforms (a sentence of the grammar)` : `${tf}: conforms (ends in ${name(engine.specState(v.state))})`);
    else if (v.verdict === "incomplete") {
      io.out(grammar ? `${tf}: incomplete — the text is not a complete sentence yet; it may continue with ${expectedText(v.state)}`
        : `${tf}: incomplete — the run stops in ${name(v.specState)}; it may continue with ${v.expected.map((i) => JSON.stringify(markers[i])).join(", ") || "nothing"}`);
    } else if (grammar) {
      const seg = trace.segments[v.segment]!;
      io.out(`${tf}: violation in segment ${v.segment} (${seg.by}) at offset ${v.offset}: ${v.reason === "env-not-expected" ? "environment text in a grammar's output" : "text not allowed here"}`);
      io.out(`  expected: ${expectedText(v.state)}`);
      const lo = Math.max(0, v.offset - 40);
      const pre = JSON.stringify(seg.text.slice(lo, v.offset)).slice(1, -1);
      io.out(`  | ${JSON.stringify(seg.text.slice(lo, v.offset + 20)).slice(1, -1)}`);
      io.out(`  | ${" ".repeat(pre.length)}^`);
    } else {
      const seg = trace.segments[v.segment]!;
      const why = v.reason === "env-not-expected" ? "environment text where none is expected (no env-input marker precedes it)" : "text not allowed here";
      io.out(`${tf}: violation in segment ${v.segment} (${seg.by}) at offset ${v.offset}: ${why}`);
      io.out(`  state: ${name(v.specState)}; valid next markers: ${v.expected.map((i) => JSON.stringify(markers[i])).join(", ") || "none"}`);
      const allowed = expectedText(v.state);
      if (allowed.length < 40 && !allowed.startsWith("[^")) io.out(`  text allowed here: ${allowed}`); // constrained content (one-of, grammar)
      const lo = Math.max(0, v.offset - 40);
      const snippet = seg.text.slice(lo, v.offset + 20);
      const pre = JSON.stringify(seg.text.slice(lo, v.offset)).slice(1, -1);
      io.out(`  | ${JSON.stringify(snippet).slice(1, -1)}`);
      io.out(`  | ${" ".repeat(pre.length)}^`);
    }
  }
  if (values.json) io.out(JSON.stringify(results.length === 1 ? results[0] : results, null, 2));
  return failed ? EXIT.nonconforming : EXIT.ok;
}

/** `specc check SPEC --examples prompt.txt`: each few-shot example's first violation (seed 001). */
async function checkPromptExamples(file: string, prompts: string[], from: string | undefined, json: boolean, io: Io, sources: Map<string, string>): Promise<number> {
  const { checkExamples, formatExamplesReport } = await import("../agents/examples-check.js");
  let spec: Parameters<typeof checkExamples>[0];
  if (file.endsWith(".wasm")) {
    const { Spec } = await import("../bindings/spec.js");
    try { spec = await Spec.load(readInput(file)); } catch (e) {
      if (e instanceof InputError) throw e;
      throw new InputError(`${file}: ${(e as Error).message}`);
    }
  } else spec = compileFile(file, sources);
  let bad = 0;
  const all: unknown[] = [];
  for (const pf of prompts) {
    const reports = checkExamples(spec, new TextDecoder().decode(readInput(pf)), from ? { from } : {});
    bad += reports.filter((r) => r.verdict !== "conforms").length;
    if (json) all.push({ prompt: pf, examples: reports.map(({ trace: _t, ...r }) => r) });
    else io.out(formatExamplesReport(reports, { file: pf }));
  }
  if (json) io.out(JSON.stringify(all.length === 1 ? all[0] : all, null, 2));
  return bad ? EXIT.nonconforming : EXIT.ok;
}
