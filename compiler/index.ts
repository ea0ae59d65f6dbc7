/**
 * @fileoverview The compiler's public surface (`import … from "specc/compiler"`): source text →
 * checked IR → minimized automata → a .wasm (the prebuilt runtime plus the spec's tables), and the
 * same compiled spec as a diagram, a GBNF/EBNF grammar, or a transcript checker. Everything else in
 * compiler/ is internal and may change.
 */
export {
  compileSource, compileIR, compileToWasm, compileGrammarSource, parseSpec, parseSpecBytes, isGrammarFile,
  GRAMMAR_EXTENSIONS, type Limits, type CompiledGrammar,
} from "./compile.js";
export { SpecError, SpecLimitError, formatDiagnostic, type Span, type Code } from "./diagnostics.js";
export type { Compiled, SpecIR, StateIR, ByteDfa, StateDfa } from "./ir.js";
export { emitGrammar, type GrammarDialect } from "./emit-grammar.js";
export { compileJsonSchema, jsonSchemaToGbnf, type JsonSchemaOptions } from "./jsonschema/index.js";
export { stateDot, byteDot, ruleDot, renderSvg } from "./render.js";
export { parseTrace, runTrace, byteDfaEngine, pdaEngine, type Trace, type Segment, type Verdict, type Engine } from "./trace.js";
