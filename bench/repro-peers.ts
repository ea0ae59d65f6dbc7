/**
 * Minimal reproductions of what the benchmark found in the peers and in emit-grammar's output.
 *
 *   npx tsx bench/repro-peers.ts
 *
 * 1. @mlc-ai/web-xgrammar 0.1.27: a positive character class with non-ASCII code points is
 *    compiled from its range bounds cast to one byte (grammar_functor.cc,
 *    GrammarFSMBuilderImpl::CharacterClass), so it matches the wrong characters. Negated classes
 *    are built correctly. Every free-text class that emit-grammar writes is such a class.
 * 2. llama.cpp (node-llama-cpp 3.21.1): its GBNF parser rejects the escape `\^` inside a character
 *    class ("unknown escape"), which emit-grammar writes for '^' (react-brackets.agent's grammar);
 *    `\x5e` works. (`\-` is accepted.)
 */
import { loadXGrammar, gbnfParseErrorInChild } from "./harness/index.js";

const x = await loadXGrammar();
const vocab = ["A", "é", "中", "ࠀ", "</s>"];
const info = await x.TokenizerInfo.createTokenizerInfo(vocab, "raw", false, undefined, [4]);
const compiler = await x.GrammarCompiler.createGrammarCompiler(info, false);
console.log(`XGrammar ${vocab.length}-token vocabulary ${JSON.stringify(vocab)}; first tokens each grammar allows:`);
for (const [g, expected] of [
  ['root ::= [\\u0800-\\u087f]', ["ࠀ"]],
  ['root ::= [a-zé]', ["é"]],
  ['root ::= [\\x80-\\xff]', ["é"]],
  ['root ::= [\\x00-@B-\\ud7ff\\ue000-\\U0010ffff]', ["é", "中", "ࠀ"]],
  ['root ::= [^A]', ["é", "中", "ࠀ"]],
] as [string, string[]][]) {
  const cg = await compiler.compileGrammar(g);
  const m = await x.GrammarMatcher.createGrammarMatcher(cg);
  const mask = await m.getNextTokenBitmask();
  const allowed = vocab.filter((_, i) => (mask[0]! >>> i) & 1);
  const ok = JSON.stringify(allowed) === JSON.stringify(expected);
  console.log(`  ${g.padEnd(46)} allows ${JSON.stringify(allowed).padEnd(20)} expected ${JSON.stringify(expected).padEnd(20)} ${ok ? "ok" : "WRONG"}`);
  m.dispose();
  cg.dispose();
}
compiler.dispose();
info.dispose();

console.log("\nllama.cpp GBNF (node-llama-cpp, in a child process):");
for (const g of ['root ::= [a\\^]', 'root ::= [a\\-]', 'root ::= [a\\x5e\\x2d]']) {
  const err = gbnfParseErrorInChild(g);
  console.log(`  ${g.padEnd(24)} ${err === null ? "accepted" : `REFUSED: ${err}`}`);
}
