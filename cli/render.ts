/**
 * @fileoverview `specc render`: the agent's state diagram (or a grammar's rule graph, or the byte automaton)
 * as SVG (in-process Graphviz) or DOT.
 */
import { parseArgs } from "node:util";
import { writeAtomic } from "../compiler/io.js";
import { COMPILE_OPTIONS, EXIT, InputError, UsageError, compileFile, compileOptions, isCompiledGrammar, oneFile, type Io } from "./common.js";

export async function cmdRender(args: string[], io: Io, sources: Map<string, string>): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: {
    out: { type: "string", short: "o" }, level: { type: "string", default: "states" }, ...COMPILE_OPTIONS } });
  const file = oneFile(positionals, "spec file");
  if (values.level !== "states" && values.level !== "bytes") throw new UsageError(`--level must be states or bytes, not '${values.level}'`);
  const out = values.out ?? file.replace(/\.[^./]*$/, "") + ".svg";
  const c = compileFile(file, sources, compileOptions(values, io));
  const { stateDot, byteDot, ruleDot, renderSvg } = await import("../compiler/render.js");
  let dot: string;
  try {
    dot = values.level === "bytes" ? byteDot(c.ir, c.byteDfa) : isCompiledGrammar(c) ? ruleDot(c.grammar.cfg, c.ir.name) : stateDot(c.ir, c.minStateDfa);
  } catch (e) {
    throw new InputError(`${file}: ${(e as Error).message}`);
  }
  const data = out.endsWith(".dot") ? dot : await renderSvg(dot);
  writeAtomic(out, data);
  io.out(`${out}: ${values.level === "bytes" ? `byte automaton, ${c.byteDfa.nStates} states` : isCompiledGrammar(c) ? `rule graph of grammar ${c.ir.name}` : `state diagram of ${c.ir.name}`}`);
  return EXIT.ok;
}
