/**
 * @fileoverview The `specc` command line. Thin: each command parses its flags (node:util
 * parseArgs, no dependency needed), calls the compiler or the bindings, and reports. All
 * failures become a diagnostic and an exit code — never a stack trace:
 *   0 success · 1 the trace does not conform · 2 usage error · 3 error in the input (spec, trace,
 *   .wasm) · 70 internal error (a bug in specc: please report it)
 * Output files are written to a temporary file and renamed, so a failure leaves nothing behind.
 * One module per command beside this file; cli/ is the one part of specc that imports every other.
 */
import { SpecError, formatDiagnostic } from "../compiler/diagnostics.js";
import { cmdBench } from "./bench.js";
import { cmdCheck } from "./check.js";
import { EXIT, InputError, UsageError, type Io } from "./common.js";
import { cmdCompile } from "./compile.js";
import { cmdDemo } from "./demo.js";
import { runPlanCommand } from "./plan.js";
import { cmdPlayground } from "./playground.js";
import { cmdVocab } from "./vocab.js";
import { cmdRender } from "./render.js";
import { cmdReplay } from "./replay.js";
import { cmdSample } from "./sample.js";

export { EXIT };

const USAGE = `specc — compile agent specs into automata and a WebAssembly runtime for constrained decoding

SPEC is an agent spec (.agent) or a grammar (.gbnf/.ebnf: the whole output must be a sentence of
its rule root, or of --start RULE). A grammar compiles to a pushdown automaton, exact at any
nesting depth; with --max-depth N, to a plain DFA exact up to N nested recursive calls
(parentheses in arithmetic, arrays/objects in JSON). Grammars inside agent states use the DFA
(their :max-depth, else --max-depth, else 8). SPEC may also be a JSON Schema (.schema.json, or any
JSON file with --json-schema): the output must be a JSON text the schema accepts; a keyword specc
cannot enforce exactly is an error unless --lenient (a warning per relaxed keyword); --compact
allows no whitespace between tokens; --any-order lets objects of up to 5 properties list them in
any order (default: the order of "properties").

usage:
  specc compile SPEC -o OUT.wasm         compile a spec into a self-contained .wasm
                [--emit ebnf|gbnf]       … or write its exact language as an XGrammar/llama.cpp grammar
                [--vocab tokenizer.json] bake a vocabulary and every state's mask into the .wasm
                                         (custom sections specc.vocab, specc.masks)
                [--max-depth N]          compile grammars to a DFA with this nesting bound (every command
                                         that compiles takes it, and --max-grammar-states N, default 100000)
  specc render  SPEC -o OUT.svg|OUT.dot  draw the agent's state diagram (a grammar: its rule graph)
                                         [--level states|bytes]
  specc check   SPEC|OUT.wasm --trace T.json [--json]
                                         is this transcript conformant? (exit 0 yes, 1 no)
  specc check   SPEC|OUT.wasm --examples PROMPT.txt [--from TEXT] [--json]
                                         validate the few-shot examples of a prompt against the spec
  specc check   RULES.rules [--known-predicates]
                                         parse and check AgentSpec rules (with --known-predicates: only
                                         the predicates specc ships may be used)
  specc replay  SPEC|OUT.wasm --vocab tokenizer.json --trace T.json [--json]
                                         replay a transcript token by token: did the mask allow each token?
  specc sample  SPEC|OUT.wasm --vocab tokenizer.json [--n N] [--seed S] [--max-state-tokens K] [--out DIR] [--json]
                                         conformant transcripts from seeded random logits under the masks
  specc bench   SPEC --vocab tokenizer.json [--against xgrammar] [--trace T.json] [--iterations N] [--json]
                                         mask latency, compile time, sizes and memory on a real vocabulary,
                                         side by side with XGrammar (same process, same tokens)
  specc plan    GRAMMAR.gbnf --task TEXT [--chooser first|random|script|llm] [--json]
                                         Formal-LLM planning: expand the grammar choice by choice,
                                         each tool at most once, backtracking on dead ends
  specc demo    [--out DIR]              compile, render and run the bundled ReAct example
  specc vocab   tokenizer.json -o NAME.vocab
                                         a prepared vocabulary that loads in milliseconds; compile --vocab
                                         and Vocabulary.fromTokenizerJson accept it for a tokenizer.json
  specc playground [SPEC] [--port N]     serve the playground page on 127.0.0.1 (its URL is the first
                                         line printed): edit a spec with live diagnostics, its diagram,
                                         a transcript stepped token by token; until Ctrl-C

exit codes: 0 ok, 1 trace does not conform, 2 usage error, 3 error in an input file, 70 internal error`;

const COMMANDS = ["compile", "render", "check", "replay", "sample", "bench", "plan", "demo", "playground", "vocab"] as const;

/** One command's part of USAGE (its `specc CMD` lines and their continuations), for `specc CMD --help`. */
export function commandUsage(cmd: string): string {
  const lines = USAGE.split("\n");
  const out: string[] = [];
  let inCmd = false;
  for (const l of lines) {
    if (/^  specc \w/.test(l)) inCmd = l.startsWith(`  specc ${cmd} `);
    else if (!/^ {16,}/.test(l)) inCmd = false;
    if (inCmd) out.push(l);
  }
  const intro = USAGE.slice(USAGE.indexOf("\n\n") + 2, USAGE.indexOf("\n\nusage:"));
  return `usage:\n${out.join("\n")}\n\n${intro}\n\n${USAGE.slice(USAGE.lastIndexOf("exit codes:"))}`;
}

export async function main(argv: string[], io: Io = { out: (s) => process.stdout.write(s + "\n"), err: (s) => process.stderr.write(s + "\n") }): Promise<number> {
  const [cmd, ...rest] = argv;
  const sources = new Map<string, string>();
  // `specc CMD --help` / `-h` (before the command's own option parsing, so it always works).
  if (cmd !== "plan" && (COMMANDS as readonly string[]).includes(cmd ?? "") && rest.some((a) => a === "--help" || a === "-h")) {
    io.out(commandUsage(cmd!));
    return EXIT.ok;
  }
  try {
    switch (cmd) {
      case "compile": return await cmdCompile(rest, io, sources);
      case "render": return await cmdRender(rest, io, sources);
      case "check": return await cmdCheck(rest, io, sources);
      case "demo": return await cmdDemo(rest, io);
      case "replay": return await cmdReplay(rest, io, sources);
      case "sample": return await cmdSample(rest, io, sources);
      case "plan": return await runPlanCommand(rest, io);
      case "bench": return await cmdBench(rest, io, sources);
      case "playground": return await cmdPlayground(rest, io);
      case "vocab": return await cmdVocab(rest, io);
      case undefined: case "-h": case "--help": case "help":
        io.out(USAGE);
        return cmd === undefined ? EXIT.usage : EXIT.ok;
      default:
        throw new UsageError(`unknown command '${cmd}'`);
    }
  } catch (e) {
    if (e instanceof UsageError || (e as { code?: string }).code?.startsWith?.("ERR_PARSE_ARGS")) {
      io.err(`error: ${(e as Error).message}\n\n${USAGE}`);
      return EXIT.usage;
    }
    if (e instanceof SpecError) {
      const src = e.span ? sources.get(e.span.file) : undefined;
      io.err(formatDiagnostic(e, src));
      for (const m of (e as SpecError & { more?: SpecError[] }).more ?? []) io.err(formatDiagnostic(m, m.span ? sources.get(m.span.file) : undefined));
      return EXIT.input;
    }
    if (e instanceof InputError) {
      io.err(`error: ${e.message}`);
      return EXIT.input;
    }
    io.err(`internal error: ${(e as Error)?.stack ?? String(e)}\nThis is a bug in specc; please report it with the input that caused it.`);
    return EXIT.internal;
  }
}
