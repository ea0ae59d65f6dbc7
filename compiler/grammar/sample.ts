/**
 * @fileoverview Random sentences of a Cfg, for property tests (the Earley oracle, the future PDA
 * masks, round trips): a random derivation that, past a depth budget, always takes an alternative
 * of least height, so it terminates on every grammar whose rules all have finite derivations (the
 * ones parseGrammar returns). Deterministic for a given `random`.
 */
import { productiveRules } from "./analyze.js";
import type { ByteSym, Cfg, Sym } from "./cfg.js";

export interface SampleOptions {
  /** Uniform [0, 1). Pass a seeded generator for reproducible output. */
  random: () => number;
  /** Derivation depth after which the shortest way out is always taken (default 12). */
  depth?: number;
  /** Stop (and return undefined) beyond this many bytes (default 10_000). */
  maxBytes?: number;
}

/** Height of the smallest derivation tree of each rule (Infinity when it has none). */
export function ruleHeights(cfg: Cfg): number[] {
  const h = cfg.rules.map(() => Infinity);
  const altHeight = (a: readonly Sym[]) => 1 + a.reduce((m, s) => Math.max(m, s.kind === "rule" ? h[s.rule]! : 0), 0);
  let changed = true;
  while (changed) {
    changed = false;
    cfg.rules.forEach((r, i) => {
      for (const a of r.alts) {
        const v = altHeight(a);
        if (v < h[i]!) { h[i] = v; changed = true; }
      }
    });
  }
  return h;
}

export function sampleSentence(cfg: Cfg, opts: SampleOptions): Uint8Array | undefined {
  const depthBudget = opts.depth ?? 12;
  const maxBytes = opts.maxBytes ?? 10_000;
  const h = ruleHeights(cfg);
  const productive = productiveRules(cfg.rules);
  const altHeight = (a: readonly Sym[]) => 1 + a.reduce((m, s) => Math.max(m, s.kind === "rule" ? h[s.rule]! : 0), 0);
  const out: number[] = [];
  // Explicit stack of (symbol, depth) so deep grammars cannot overflow the JS stack.
  const stack: { sym: Sym; depth: number }[] = [{ sym: { kind: "rule", rule: cfg.start }, depth: 0 }];
  while (stack.length > 0) {
    const { sym, depth } = stack.pop()!;
    if (sym.kind === "bytes") {
      out.push(pickByte(sym, opts.random));
      if (out.length > maxBytes) return undefined;
      continue;
    }
    const alts = cfg.rules[sym.rule]!.alts.filter((a) => a.every((s) => s.kind !== "rule" || productive[s.rule]));
    if (alts.length === 0) return undefined;
    let choices = alts;
    if (depth >= depthBudget) {
      const best = alts.reduce((m, a) => Math.min(m, altHeight(a)), Infinity);
      choices = alts.filter((a) => altHeight(a) === best);
    }
    const alt = choices[Math.floor(opts.random() * choices.length)]!;
    for (let k = alt.length - 1; k >= 0; k--) stack.push({ sym: alt[k]!, depth: depth + 1 });
  }
  return Uint8Array.from(out);
}

function pickByte(s: ByteSym, random: () => number): number {
  let total = 0;
  for (const [lo, hi] of s.ranges) total += hi - lo + 1;
  let k = Math.floor(random() * total);
  for (const [lo, hi] of s.ranges) {
    if (k <= hi - lo) return lo + k;
    k -= hi - lo + 1;
  }
  return s.ranges[0]![0];
}

export { seededRandom } from "../random.js";
