/**
 * @fileoverview Left recursion: detection, and automatic removal into an equivalent grammar without
 * it (the default), or rejection with a diagnostic naming the cycle (`leftRecursion: "reject"`).
 *
 * Why rewrite rather than reject: left recursion is the natural way to write left-associative
 * operators (`expr ::= expr "-" term | term`), llama.cpp rejects it and XGrammar handles it only
 * with its Earley matcher, so accepting it is where specc can be better than both; and the future
 * pushdown automaton (a predictive, top-down machine) needs a grammar without it. The rewrite
 * changes derivation trees, never the language, and that is all a decoding constraint needs; the
 * property tests check it on random grammars against the Earley recognizer run on the original
 * (earley.ts handles left recursion as is).
 *
 * The algorithm, per strongly connected component of the left-corner graph (analyze.ts):
 *
 *  1. Hidden left recursion (A ::= N B … with N ⇒ ε and B back in the component) is first made
 *     visible: each alternative X1 … Xk of the component's rules is replaced by its
 *     "non-nullable-first" forms, one per i with X1 … X(i-1) nullable:  Xi⁺ X(i+1) … Xk
 *     (Xi⁺ = Xi when Xi cannot derive ε; else a new rule deriving L(Xi) minus ε, built the same
 *     way), plus ε if every Xi is nullable. The language is unchanged, and afterwards every
 *     left corner is a first symbol.
 *  2. Paull's algorithm on a component without hidden edges: order its rules A1 … An; for each
 *     Ai, substitute Aj's alternatives for a leading Aj (j < i), then remove direct recursion:
 *         A ::= A α1 | … | β1 | …   →   A ::= β1 A' | …     A' ::= α1⁺ A' | … | ε
 *     where αi⁺ are the non-empty forms of αi (so A' is not hidden-left-recursive itself) and
 *     A ::= A (α empty) is dropped: it adds nothing to the language.
 *  3. Repeat on the result (step 1 may create new rules whose own recursion needs step 2) for a
 *     bounded number of rounds; limits on rules and symbols bound the growth (Paull's substitution
 *     can multiply alternatives). What remains left-recursive then is reported (E0712).
 *
 * New rules are helpers named `<rule>-<n>` (origin "left-recursion"). Rules the rewrite leaves
 * unused or unable to finish (a ⁺ of a rule that only derives ε) are pruned.
 */
import { SpecError, SpecLimitError } from "../diagnostics.js";
import { compact, describeCycle, leftCorners, nullableRules, productiveRules, reachableRules, shortestCycle, stronglyConnected } from "./analyze.js";
import { countSymbols, ruleSym, type CfgLimits, type CfgRule, type Sym } from "./cfg.js";
import type { NameGen } from "./lower.js";

export type LeftRecursionMode = "rewrite" | "reject" | "keep";

export interface LeftRecursiveComponent {
  rules: number[];
  /** Some left-corner edge inside the component goes through a nullable prefix. */
  hidden: boolean;
  /** A shortest left-recursive cycle, first = last. */
  cycle: number[];
}

export function leftRecursiveComponents(rules: readonly CfgRule[]): LeftRecursiveComponent[] {
  const nullable = nullableRules(rules);
  const lc = leftCorners(rules, nullable);
  const succ = (v: number) => lc[v]!.map((e) => e.to);
  const out: LeftRecursiveComponent[] = [];
  for (const comp of stronglyConnected(rules.length, succ)) {
    const inComp = new Set(comp);
    const first = comp[0]!;
    if (comp.length === 1 && !lc[first]!.some((e) => e.to === first)) continue;
    const hidden = comp.some((v) => lc[v]!.some((e) => e.hidden && inComp.has(e.to)));
    out.push({ rules: comp, hidden, cycle: shortestCycle(first, succ, (w) => inComp.has(w)) ?? [first, first] });
  }
  return out.sort((a, b) => a.rules[0]! - b.rules[0]!);
}

export function leftRecursionErrors(rules: readonly CfgRule[], rewritable: boolean): SpecError[] {
  return leftRecursiveComponents(rules).map((c) => {
    const r = rules[c.cycle[0]!]!;
    const at = rules[r.owner]!;
    return new SpecError("E0712", `left recursion: ${describeCycle(rules, c.cycle)}${c.hidden ? " (through a part that can match the empty string)" : ""}`, at.span,
      rewritable
        ? "write it right-recursively, e.g. expr ::= term (\"+\" term)*, or let specc rewrite it (the default, leftRecursion: \"rewrite\")"
        : "specc could not rewrite this recursion; write it right-recursively, e.g. expr ::= term (\"+\" term)*");
  });
}

const MAX_ROUNDS = 12;

/**
 * Rewrites `rules` in place (appending helpers) until no rule is left-recursive; returns the new start.
 * `rules` are as parseGrammar leaves them: every one reachable and productive.
 */
export function removeLeftRecursion(rules: CfgRule[], start: number, names: NameGen, limits: CfgLimits): { rules: CfgRule[]; start: number } {
  const rw = new Rewriter(rules, names, limits);
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const comps = leftRecursiveComponents(rules);
    // Nothing rewritten: the rules are as parseGrammar left them, every one reachable and
    // productive (compact, productivityErrors), so pruning would change nothing.
    if (comps.length === 0) return round === 0 ? { rules, start } : prune(rules, start);
    rw.beginRound();
    for (const c of comps) {
      if (c.hidden) rw.expose(c.rules);
      else rw.paull(c.rules);
      rw.checkLimits();
    }
  }
  const errors = leftRecursionErrors(rules, false);
  if (errors.length === 0) return prune(rules, start);
  const [first, ...more] = errors;
  (first as SpecError & { more?: SpecError[] }).more = more;
  throw first;
}

/** Drops alternatives that use a rule with no finite derivation, then unused rules. */
function prune(rules: CfgRule[], start: number): { rules: CfgRule[]; start: number } {
  const productive = productiveRules(rules);
  for (const r of rules) r.alts = r.alts.filter((a) => a.every((s) => s.kind !== "rule" || productive[s.rule]));
  const reach = reachableRules(rules, start);
  return compact(rules, rules.map((_, i) => reach[i]! && productive[i]!), start);
}

function altKey(a: readonly Sym[]): string {
  return a.map((s) => (s.kind === "rule" ? `r${s.rule}` : `b${s.ranges.map(([lo, hi]) => `${lo}-${hi}`).join(",")}`)).join(" ");
}

function dedupe(alts: Sym[][]): Sym[][] {
  const seen = new Set<string>();
  return alts.filter((a) => {
    const k = altKey(a);
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

/**
 * Most symbols Paull's substitutions may write in one compilation. Around a cycle of n rules the
 * rewrite writes ~n³/3 symbols even when the result would stay under maxSymbols for a while; this
 * bounds the time to a refusal (well under a second) instead of tens of seconds.
 */
const LEFT_RECURSION_WORK = 2_000_000;

class Rewriter {
  private work = 0;
  private nullable: boolean[] = [];
  private plus = new Map<number, number>();
  private readonly pending: [number, number][] = [];

  constructor(private readonly rules: CfgRule[], private readonly names: NameGen, private readonly limits: CfgLimits) {}

  beginRound(): void {
    this.nullable = nullableRules(this.rules);
  }

  checkLimits(): void {
    if (this.rules.length > this.limits.maxRules) throw new SpecLimitError("maxRules", this.rules.length, this.limits.maxRules);
    const n = countSymbols(this.rules);
    if (n > this.limits.maxSymbols) throw new SpecLimitError("maxSymbols", n, this.limits.maxSymbols);
  }

  private newRule(like: number, alts: Sym[][], nullable: boolean): number {
    const base = this.rules[like]!;
    const owner = this.rules[base.owner]!;
    const id = this.rules.length;
    this.rules.push({ name: this.names.fresh(owner.name), alts, origin: "left-recursion", owner: base.owner, span: base.span });
    this.nullable[id] = nullable;
    if (this.rules.length > this.limits.maxRules) throw new SpecLimitError("maxRules", this.rules.length, this.limits.maxRules, base.span);
    return id;
  }

  /**
   * X⁺: a rule deriving L(X) without ε (X itself when X is not nullable). Its alternatives are
   * built by flush(), from a worklist rather than by recursion, so long chains of nullable rules
   * cannot exhaust the stack; X⁺ may refer to itself.
   */
  private plusOf(x: number): number {
    if (!this.nullable[x]) return x;
    const known = this.plus.get(x);
    if (known !== undefined) return known;
    const id = this.newRule(x, [], false);
    this.plus.set(x, id);
    this.pending.push([x, id]);
    return id;
  }

  private flush(): void {
    for (let job = this.pending.pop(); job; job = this.pending.pop()) {
      const [x, id] = job;
      this.rules[id]!.alts = dedupe(this.rules[x]!.alts.flatMap((a) => this.forms(a, false)));
    }
  }

  /** The non-nullable-first forms of a sequence; with `withEmpty`, plus ε when it is nullable. */
  private forms(a: readonly Sym[], withEmpty: boolean): Sym[][] {
    const out: Sym[][] = [];
    for (let i = 0; i < a.length; i++) {
      const s = a[i]!;
      if (s.kind === "rule" && this.nullable[s.rule]) {
        out.push([ruleSym(this.plusOf(s.rule)), ...a.slice(i + 1)]);
        continue;
      }
      out.push([s, ...a.slice(i + 1)]);
      return out;
    }
    if (withEmpty) out.push([]);
    return out;
  }

  /** Step 1: rewrite the component's alternatives into non-nullable-first forms. */
  expose(comp: readonly number[]): void {
    for (const r of comp) this.rules[r]!.alts = dedupe(this.rules[r]!.alts.flatMap((a) => this.forms(a, true)));
    this.flush();
  }

  /** Step 2: Paull's algorithm on a component whose left corners are all first symbols. */
  paull(comp: readonly number[]): void {
    // The symbol count is kept up to date substitution by substitution (not recounted: Paull's
    // substitutions are n² on an n-rule cycle, and the limit must be hit in time linear in it).
    let symbols = countSymbols(this.rules);
    const size = (alts: readonly Sym[][]) => alts.reduce((n, a) => n + a.length + 1, 0);
    comp.forEach((ai, i) => {
      const rule = this.rules[ai]!;
      for (let j = 0; j < i; j++) {
        const aj = comp[j]!;
        if (!rule.alts.some((alt) => alt[0]?.kind === "rule" && alt[0].rule === aj)) continue;
        const before = size(rule.alts);
        rule.alts = dedupe(rule.alts.flatMap((alt) => {
          const head = alt[0];
          if (head?.kind !== "rule" || head.rule !== aj) return [alt];
          return this.rules[aj]!.alts.map((delta) => [...delta, ...alt.slice(1)]);
        }));
        const after = size(rule.alts);
        symbols += after - before;
        if (symbols > this.limits.maxSymbols) throw new SpecLimitError("maxSymbols", symbols, this.limits.maxSymbols, rule.span);
        this.work += after;
        if (this.work > LEFT_RECURSION_WORK) {
          const e = new SpecLimitError("leftRecursionWork", this.work, LEFT_RECURSION_WORK, rule.span);
          (e as { hint?: string }).hint = "removing this left recursion (Paull's substitution around a long cycle of rules) grows the grammar " +
            "quadratically: shorten the cycle, or write the recursion on the right";
          throw e;
        }
      }
      this.direct(ai);
    });
  }

  private direct(a: number): void {
    const rule = this.rules[a]!;
    const rec: Sym[][] = [];
    const base: Sym[][] = [];
    for (const alt of rule.alts) {
      const head = alt[0];
      if (head?.kind === "rule" && head.rule === a) {
        if (alt.length > 1) rec.push(alt.slice(1)); // A ::= A alone adds nothing
      } else base.push(alt);
    }
    if (rec.length === 0) {
      rule.alts = base;
      return;
    }
    const tail = this.newRule(a, [], true);
    const tailAlts = rec.flatMap((alpha) => this.forms(alpha, false)).map((f) => [...f, ruleSym(tail)]);
    this.rules[tail]!.alts = dedupe([...tailAlts, []]);
    rule.alts = dedupe(base.map((beta) => [...beta, ruleSym(tail)]));
    this.flush();
  }
}
