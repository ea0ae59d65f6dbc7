/**
 * @fileoverview The one place that runs nearley over tokens we lexed ourselves (moo, with our own
 * checks first). Every front end — agent specs, grammars, rules — hands its compiled grammar and
 * token list here and gets a parser whose `feed("")` parses the whole list.
 */
import nearley from "nearley";

export function nearleyParser<T extends { type?: string }>(compiled: nearley.CompiledRules, toks: readonly T[]): nearley.Parser {
  const grammar = nearley.Grammar.fromCompiled(compiled);
  let i = 0;
  const stream = {
    reset() { i = 0; },
    next: () => (i < toks.length ? toks[i++] : undefined),
    save: () => ({}),
    formatError: (t: T) => `unexpected ${t.type}`,
    has: () => true,
  };
  (grammar as unknown as { lexer: unknown }).lexer = stream;
  return new nearley.Parser(grammar);
}
