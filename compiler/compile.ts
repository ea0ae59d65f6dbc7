/**
 * @fileoverview The compiler's one entry: source text → every automaton of the pipeline.
 * Each stage lives in its own module; this file only wires them and carries the limits.
 */
import { buildByteDfa, minimizeByteDfa } from "./automata/bytes.js";
import { constrainAndTrim, determinize, minimizeStateDfa } from "./automata/dfa.js";
import { buildNfa } from "./automata/nfa.js";
import { emitWasm, loadRuntimeWasm } from "./emit-wasm.js";
import { decodeSource, parseSExprs } from "./frontend/parse.js";
import type { Compiled, SpecIR } from "./ir.js";
import { lower } from "./lower.js";
import { serializeTables } from "./tables.js";

export interface Limits {
  maxNfaStates?: number;
  maxDfaStates?: number;
  maxByteStates?: number;
}

/** Parses and lowers a spec. Throws SpecError (with a span) on any problem. */
export function parseSpec(text: string, file = "<input>"): SpecIR {
  return lower(parseSExprs(file, text), file);
}

/** Reads a spec from raw bytes (rejecting binary input with a diagnostic). */
export function parseSpecBytes(bytes: Uint8Array, file: string): { ir: SpecIR; text: string } {
  const text = decodeSource(file, bytes);
  return { ir: parseSpec(text, file), text };
}

export function compileIR(ir: SpecIR, limits: Limits = {}): Compiled {
  const nfa = buildNfa(ir.behavior, limits.maxNfaStates);
  const stateDfa = constrainAndTrim(determinize(nfa, ir.states.length, limits.maxDfaStates), ir, limits.maxDfaStates);
  const minStateDfa = minimizeStateDfa(stateDfa);
  const rawByteDfa = () => buildByteDfa(ir, stateDfa, { maxStates: limits.maxByteStates });
  const byteDfa = minimizeByteDfa(buildByteDfa(ir, minStateDfa, { maxStates: limits.maxByteStates }));
  return { ir, nfa, stateDfa, minStateDfa, rawByteDfa, byteDfa };
}

export function compileSource(text: string, file = "<input>", limits: Limits = {}): Compiled {
  return compileIR(parseSpec(text, file), limits);
}

/** The self-contained .wasm: the AssemblyScript runtime plus the spec's tables. */
export function compileToWasm(c: Compiled): Uint8Array {
  return emitWasm(loadRuntimeWasm(), serializeTables(c.byteDfa, c.ir.states));
}
