/**
 * @fileoverview The one catalog of diagnostics: every error specc reports has a stable code here,
 * carries a source span, and is printed like a compiler prints errors — file:line:col, the source
 * line, a caret under the offending text, and a hint when we know the fix.
 *
 * Codes: E01xx lexical/syntax, E02xx spec structure, E03xx behavior/semantics, E04xx automaton
 * analyses (dead ends, empty language), E05xx limits, E06xx input files (traces, .wasm).
 */
/** A source region. `line` and `col` are 1-based; `offset`/`end` are UTF-16 indices into the text. */
export interface Span {
  file: string;
  line: number;
  col: number;
  offset: number;
  end: number;
}

export const Codes = {
  E0101: "unbalanced parentheses",
  E0102: "unterminated string",
  E0103: "unexpected character",
  E0104: "syntax error",
  E0105: "empty input",
  E0106: "input is not text",
  E0201: "expected a definition",
  E0202: "unknown section",
  E0203: "malformed state",
  E0204: "duplicate state",
  E0205: "duplicate marker",
  E0206: "empty marker",
  E0207: "unknown flag",
  E0208: "unused state",
  E0209: "missing section",
  E0210: "malformed content constraint",
  E0211: "malformed constraint",
  E0212: "env-input marker inside another marker",
  E0213: "cannot read grammar file",
  E0214: "malformed tools list",
  E0215: "tool content without a tools list",
  E0216: "malformed token marker",
  E0301: "unknown operator",
  E0302: "wrong number of arguments",
  E0303: "undefined state",
  E0304: "bad loop bounds",
  E0401: "dead end",
  E0402: "empty language",
  E0403: "unreachable state",
  E0404: "stack content entered mid-scan",
  E0501: "limit exceeded",
  E0502: "table size limit",
  E0601: "bad trace file",
  E0602: "bad wasm file",
  E0701: "grammar syntax error",
  E0702: "unterminated grammar literal",
  E0703: "bad escape in grammar literal",
  E0704: "duplicate grammar rule",
  E0705: "undefined grammar rule",
  E0706: "unknown start rule",
  E0707: "bad repetition bounds",
  E0708: "empty character class",
  E0709: "unreachable grammar rule",
  E0710: "grammar rule never terminates",
  E0711: "empty grammar language",
  E0712: "left recursion",
  E0713: "grammar not portable to llama.cpp or XGrammar",
  // E08xx: rules (AgentSpec, seed 003; compiler/rules/, agents/rules.ts)
  E0801: "rules syntax error",
  E0802: "missing end",
  E0803: "missing enforce",
  E0804: "unknown enforcement",
  E0805: "malformed trigger",
  E0806: "malformed invoke_action arguments",
  E0807: "duplicate rule id",
  E0808: "empty rules input",
  E0809: "unknown predicate",
  E0810: "rules lexical error",
  E0811: "malformed enforcement",
  E0812: "missing enforcement handler",
  E0813: "malformed rule header",
  E0814: "malformed predicate",
  // E09xx: JSON Schema (compiler/jsonschema/)
  E0901: "not valid JSON",
  E0902: "JSON Schema keyword not supported",
  E0903: "malformed JSON Schema",
  E0904: "unsatisfiable JSON Schema",
  E0905: "unresolvable $ref",
} as const;
export type Code = keyof typeof Codes;

/** A diagnostic attached to source text. */
export class SpecError extends Error {
  constructor(
    readonly code: Code,
    message: string,
    readonly span: Span | null,
    readonly hint?: string,
  ) {
    super(message);
    this.name = "SpecError";
  }
}

/** A stage exceeded an explicit limit (states, PDA size, loop expansion...). */
export class SpecLimitError extends SpecError {
  constructor(readonly limit: string, readonly value: number, readonly max: number, span: Span | null = null) {
    super("E0501", `limit exceeded: ${limit} would be ${value}, the limit is ${max}`, span,
      `simplify the spec or raise the limit (option ${limit})`);
    this.name = "SpecLimitError";
  }
}

/** Builds a span from a UTF-16 offset range of `text`. */
export function spanAt(file: string, text: string, offset: number, end = offset + 1): Span {
  const starts = lineStarts(text);
  const m = Math.max(0, Math.min(offset, text.length));
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid]! <= m) lo = mid;
    else hi = mid - 1;
  }
  return { file, line: lo + 1, col: m - starts[lo]! + 1, offset, end: Math.max(end, offset) };
}

/** Offsets where lines start, for the last text asked about (front ends ask thousands of times per file). */
let lastText: string | undefined;
let lastStarts: number[] = [0];
function lineStarts(text: string): number[] {
  if (text !== lastText) {
    lastStarts = [0];
    for (let i = text.indexOf("\n"); i >= 0; i = text.indexOf("\n", i + 1)) lastStarts.push(i + 1);
    lastText = text;
  }
  return lastStarts;
}

/** Renders a diagnostic the way compilers do. `text` is the source the span points into. */
export function formatDiagnostic(err: SpecError, text?: string): string {
  const head = `error[${err.code}]: ${err.message}`;
  const s = err.span;
  if (!s) return err.hint ? `${head}\n  = hint: ${err.hint}` : head;
  const out = [`${s.file}:${s.line}:${s.col}: ${head}`];
  if (text !== undefined) {
    const lines = text.split("\n");
    const src = (lines[s.line - 1] ?? "").replace(/\r$/, "").replace(/\t/g, " ");
    const gutter = String(s.line).length;
    const width = Math.max(1, Math.min(s.end - s.offset, src.length - (s.col - 1)));
    out.push(`${" ".repeat(gutter)} |`);
    out.push(`${s.line} | ${src}`);
    out.push(`${" ".repeat(gutter)} | ${" ".repeat(Math.max(0, s.col - 1))}${"^".repeat(width)}`);
  }
  if (err.hint) out.push(`  = hint: ${err.hint}`);
  return out.join("\n");
}

/** "did you mean X?" for the closest candidate within edit distance 2. */
export function suggest(word: string, candidates: string[]): string | undefined {
  let best: string | undefined;
  let bestD = 3;
  for (const c of candidates) {
    const d = editDistance(word.toLowerCase(), c.toLowerCase());
    if (d < bestD) { bestD = d; best = c; }
  }
  return best !== undefined && word !== "" ? `did you mean ${best}?` : undefined;
}

function editDistance(a: string, b: string): number {
  const dp = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = dp[0]!;
    dp[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = dp[j]!;
      dp[j] = Math.min(dp[j]! + 1, dp[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = tmp;
    }
  }
  return dp[b.length]!;
}
