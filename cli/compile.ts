/**
 * @fileoverview `specc compile`: a spec or grammar to a self-contained .wasm (optionally with a baked
 * vocabulary and its masks), or its exact language as an XGrammar / llama.cpp grammar (--emit).
 */
import { parseArgs } from "node:util";
import { compileToWasm } from "../compiler/compile.js";
import { writeAtomic } from "../compiler/io.js";
import { PDA_MAX_STACK } from "../compiler/grammar/pda.js";
import { COMPILE_OPTIONS, EXIT, InputError, UsageError, compileFile, compileOptions, isCompiledGrammar, oneFile, type Io } from "./common.js";

export async function cmdCompile(args: string[], io: Io, sources: Map<string, string>): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: {
    out: { type: "string", short: "o" }, emit: { type: "string", default: "wasm" }, vocab: { type: "string" }, ...COMPILE_OPTIONS } });
  const file = oneFile(positionals, "spec file");
  const emit = values.emit!;
  if (!["wasm", "ebnf", "gbnf"].includes(emit)) throw new UsageError(`--emit must be wasm, ebnf or gbnf, not '${emit}'`);
  const out = values.out ?? file.replace(/\.[^./]*$/, "") + "." + emit;
  const c = compileFile(file, sources, compileOptions(values, io));
  if (emit !== "wasm") {
    const { emitGrammar } = await import("../compiler/emit-grammar.js");
    const text = emitGrammar(c.byteDfa, emit as "ebnf" | "gbnf", c.ir.name);
    writeAtomic(out, text);
    io.out(`${out}: ${emit.toUpperCase()} grammar, ${c.byteDfa.nStates + 1} rules (the language of ${c.ir.name}; see docs on env text and ill-formed UTF-8)`);
    return EXIT.ok;
  }
  let wasm = compileToWasm(c);
  if (values.vocab) {
    const { Vocabulary } = await import("../bindings/vocab.js");
    const { serializeVocabulary, VOCAB_SECTION } = await import("../bindings/baked-vocab.js");
    const { appendCustomSection } = await import("../compiler/emit-wasm.js");
    let vocab;
    try { vocab = await Vocabulary.fromTokenizerJson(values.vocab); } catch (e) { throw new InputError(`${values.vocab}: ${(e as Error).message}`); }
    // Token markers: the vocabulary is baked as bound to them (the loader then takes it as it is).
    const { tokenMarkers } = await import("../compiler/tokens.js");
    const tokens = tokenMarkers(c.ir.states);
    let flat = vocab.flat(), eos: readonly number[] = vocab.eos;
    if (tokens.length) {
      const { bindTokenMarkers, TokenMarkerError } = await import("../bindings/token-markers.js");
      try { const bound = bindTokenMarkers(vocab, tokens); flat = bound.flat(); eos = bound.eos; } catch (e) {
        if (e instanceof TokenMarkerError) throw new InputError(`${values.vocab}: ${e.message}`);
        throw e;
      }
    }
    wasm = appendCustomSection(wasm, VOCAB_SECTION, serializeVocabulary(flat, eos));
    // …and every state's mask, computed once here, so loading needs no trie walk. (Not for a
    // pushdown grammar: its masks belong to configurations, which only exist as a run reaches them.)
    if (!c.byteDfa.calls) {
      const { Spec } = await import("../bindings/spec.js");
      const { serializeMasks, MASKS_SECTION } = await import("../bindings/baked-vocab.js");
      const spec = await Spec.load(wasm, { precompute: true });
      const words = spec.maskWords;
      const stateMask = Uint32Array.from({ length: spec.stateCount }, (_, st) => spec.exports.mask_id(st));
      const masks = new Int32Array(spec.distinctMasks * words);
      for (let k = 0; k < spec.distinctMasks; k++) masks.set(spec.maskAt(k), k * words);
      wasm = appendCustomSection(wasm, MASKS_SECTION, serializeMasks({ words, stateMask, masks }));
    }
  }
  writeAtomic(out, wasm);
  if (isCompiledGrammar(c)) {
    const g = c.grammar;
    const head = `${out}: ${wasm.length} bytes · grammar ${c.ir.name} (start ${g.cfg.rules[g.cfg.start]!.name}) · `;
    if (g.mode === "pushdown" && g.calledRules.length > 0) {
      const calls = c.byteDfa.calls!.reduce((n, l) => n + l.length, 0);
      io.out(head + `pushdown automaton ${c.byteDfa.nStates} states × ${c.byteDfa.nClasses} classes, ${calls} call edges into ${g.calledRules.join(", ")} · ` +
        `exact at any nesting depth (stack ≤ ${PDA_MAX_STACK} frames)`);
    } else {
      io.out(head + `byte DFA ${c.byteDfa.nStates} states × ${c.byteDfa.nClasses} classes · ` +
        (g.depthLimited ? `exact up to nesting depth ${g.maxDepth} (deeper nesting is not offered; leave out --max-depth for a pushdown automaton)` : "exact (nothing nests)"));
    }
  } else {
    io.out(`${out}: ${wasm.length} bytes · ${c.ir.states.length} spec states · state DFA ${c.minStateDfa.nStates} · byte DFA ${c.byteDfa.nStates} states × ${c.byteDfa.nClasses} classes`);
  }
  return EXIT.ok;
}
