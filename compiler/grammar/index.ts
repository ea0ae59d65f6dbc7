/**
 * @fileoverview The public entry of specc's grammar front end (DESIGN.md §1.2): GBNF/EBNF text in
 * the notation llama.cpp and XGrammar share → a checked, desugared, left-recursion-free CFG over
 * bytes (cfg.ts), plus the printer and the reference recognizer.
 *
 *   const cfg = parseGrammar(text, "json.gbnf");          // throws SpecError / SpecLimitError
 *   recognize(cfg, '{"a": [1, 2]}');                       // true
 *   viablePrefix(cfg, '{"a": [1,');                       // true
 *   printGbnf(cfg);                                        // GBNF that llama.cpp and XGrammar load
 *
 * The pipeline, one file per stage:
 *   lexer.ts (moo) → gbnf.ne (nearley) → parse.ts: AST with spans, syntax errors, portability notes
 *     (read-generated.ts: the same AST, fast, for text a program wrote; parse.ts where it declines)
 *   → lower.ts: names resolved, EBNF operators desugared, classes compiled to UTF-8 (utf8.ts)
 *   → analyze.ts: unreachable rules (warnings, dropped), rules that never finish (errors)
 *   → left-recursion.ts: rewritten away (default), or rejected, or kept (for the oracle)
 *   → Cfg;  earley.ts recognizes, print.ts prints, sample.ts generates.
 *
 * Diagnostics are E07xx in compiler/diagnostics.ts. Errors are thrown (the first one, the others
 * attached as `more`); warnings (E0709 unreachable rule, E0713 not portable to llama.cpp or
 * XGrammar) are returned on `cfg.warnings`, and `strict: true` turns them into errors.
 */
import { SpecError, formatDiagnostic } from "../diagnostics.js";
import { compact, productivityErrors, reachableRules, unreachableWarnings } from "./analyze.js";
import { DEFAULT_LIMITS, type Cfg, type CfgLimits } from "./cfg.js";
import { Earley, toBytes, type Bytes } from "./earley.js";
import { leftRecursionErrors, removeLeftRecursion, type LeftRecursionMode } from "./left-recursion.js";
import { lowerGrammar } from "./lower.js";
import { parseGrammarAst } from "./parse.js";
import { readGeneratedGrammar } from "./read-generated.js";

export type { ByteRange, ByteSym, Cfg, CfgLimits, CfgRule, RuleOrigin, RuleSym, Sym } from "./cfg.js";
export { DEFAULT_LIMITS } from "./cfg.js";
export { Earley, EarleyMatcher } from "./earley.js";
export type { LeftRecursionMode } from "./left-recursion.js";
export { printGbnf, type PrintOptions } from "./print.js";
export { sampleSentence, seededRandom } from "./sample.js";

export interface GrammarOptions {
  /** The start rule (default "root", as in llama.cpp and XGrammar). */
  start?: string;
  /** "rewrite" (default): remove left recursion; "reject": report it (E0712); "keep": leave it (Earley copes). */
  leftRecursion?: LeftRecursionMode;
  /** Report constructs llama.cpp or XGrammar would reject or read differently (E0713 warnings; default true). */
  portability?: boolean;
  /** Treat warnings as errors. */
  strict?: boolean;
  /** false: build no warnings at all (grammar text a program wrote, whose warnings no one reads). */
  warnings?: boolean;
  limits?: Partial<CfgLimits>;
}

export function parseGrammar(text: string, file: string, opts: GrammarOptions = {}): Cfg {
  const limits: CfgLimits = { ...DEFAULT_LIMITS, ...opts.limits };
  // Text a program wrote (no one reads its warnings) goes through the fast reader first; what it
  // does not read, parse.ts does, with its diagnostics.
  const fast = opts.warnings === false ? readGeneratedGrammar(file, text, limits.maxNesting) : null;
  const { ast, portability } = fast ? { ast: fast, portability: [] } : parseGrammarAst(file, text, limits.maxNesting);
  const lowered = lowerGrammar(ast, opts.start ?? "root", limits);
  const warnings: SpecError[] = [];
  const warn = opts.warnings !== false;
  if (warn && opts.portability !== false) {
    for (const p of portability) {
      warnings.push(new SpecError("E0713", p.count > 1 ? `${p.message} (and ${p.count - 1} more like it)` : p.message, p.span));
    }
  }
  const reach = reachableRules(lowered.rules, lowered.start);
  if (warn) warnings.push(...unreachableWarnings(lowered.rules, lowered.start, reach));
  const errors = productivityErrors(lowered.rules, lowered.start, reach);
  throwAll(errors);
  let { rules, start } = compact(lowered.rules, reach, lowered.start);
  const mode = opts.leftRecursion ?? "rewrite";
  if (mode === "reject") throwAll(leftRecursionErrors(rules, true));
  else if (mode === "rewrite") ({ rules, start } = removeLeftRecursion(rules, start, lowered.names, limits));
  warnings.sort((a, b) => (a.span?.offset ?? 0) - (b.span?.offset ?? 0));
  if (opts.strict) throwAll(warnings);
  return { rules, start, warnings };
}

function throwAll(errors: SpecError[]): void {
  if (errors.length === 0) return;
  const [first, ...more] = errors;
  (first as SpecError & { more?: SpecError[] }).more = more;
  throw first;
}

const recognizers = new WeakMap<Cfg, Earley>();

function earley(cfg: Cfg): Earley {
  let e = recognizers.get(cfg);
  if (!e) recognizers.set(cfg, (e = new Earley(cfg)));
  return e;
}

/** Is `input` (bytes, or a string taken as UTF-8) a sentence of the grammar? */
export function recognize(cfg: Cfg, input: Bytes): boolean {
  return earley(cfg).recognize(toBytes(input));
}

/** Can `input` be extended (possibly by nothing) to a sentence of the grammar? */
export function viablePrefix(cfg: Cfg, input: Bytes): boolean {
  return earley(cfg).viablePrefix(toBytes(input));
}

/** Renders a warning like formatDiagnostic renders an error. */
export function formatWarning(w: SpecError, text?: string): string {
  return formatDiagnostic(w, text).replace(/error\[/, "warning[");
}
