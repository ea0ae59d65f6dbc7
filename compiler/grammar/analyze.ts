/**
 * @fileoverview Grammar analyses, one small function each, and the diagnostics built on them:
 *
 *   nullable      rules that derive ε                     (Earley's Aycock–Horspool fix, left recursion)
 *   productive    rules with at least one finite derivation (E0710 never terminates, E0711 empty language)
 *   reachable     rules reachable from the start           (E0709 unreachable: a WARNING, see below)
 *   left corners  A → B when A ::= α B β with α nullable  (left-recursion.ts)
 *   SCCs          Tarjan, iterative (no recursion depth limit on big grammars)
 *
 * Unreachable rules are warnings, not errors: llama.cpp and XGrammar accept them, and grammar files
 * are often shared libraries of rules (`ws`, `string`, …) of which one grammar uses a few. They are
 * dropped from the Cfg, so nothing downstream compiles them. A reachable rule that can never finish
 * is an error: in a decoder it is a dead end (DESIGN.md §2 requires dead-end freedom), and if it is
 * the start rule the grammar's language is empty.
 */
import { SpecError } from "../diagnostics.js";
import type { CfgRule, Sym } from "./cfg.js";

export function nullableRules(rules: readonly CfgRule[]): boolean[] {
  // ε needs every symbol of some alternative to be a nullable rule (a byte set never is).
  return leastFixpoint(rules, (s) => s.kind === "rule");
}

export function productiveRules(rules: readonly CfgRule[]): boolean[] {
  // A finite derivation needs every symbol of some alternative to be productive (a non-empty byte set is).
  return leastFixpoint(rules, (s) => s.kind === "rule" || s.ranges.length > 0);
}

/**
 * The rules with some alternative whose symbols all hold, where a rule symbol holds when its rule
 * is in the set and a byte set holds by `bytesHold`; the least such set. Worklist with a counter of
 * pending rule symbols per alternative, so it is linear in the grammar's size (a chain of 10,000
 * rules would take 10,000 passes of a naive fixpoint).
 */
function leastFixpoint(rules: readonly CfgRule[], usable: (s: Sym) => boolean): boolean[] {
  const R = rules.length;
  const holds = new Array<boolean>(R).fill(false);
  // Per rule, the usable alternatives that use it (once per use), as CSR arrays: counted in one
  // pass, filled in a second (an array per rule lived as long as the grammar).
  const userAt = new Int32Array(R + 1);
  let nAlts = 0;
  for (const r of rules) {
    for (const a of r.alts) {
      if (!a.every(usable)) continue;
      nAlts++;
      for (const s of a) if (s.kind === "rule") userAt[s.rule + 1]!++;
    }
  }
  for (let i = 0; i < R; i++) userAt[i + 1]! += userAt[i]!;
  const users = new Int32Array(userAt[R]!);
  const fill = userAt.slice(0, R);
  const pending = new Int32Array(nAlts);
  const altRule = new Int32Array(nAlts);
  const work: number[] = [];
  let k = 0;
  for (let i = 0; i < R; i++) {
    for (const a of rules[i]!.alts) {
      if (!a.every(usable)) continue;
      altRule[k] = i;
      let n = 0;
      for (const s of a) if (s.kind === "rule") { users[fill[s.rule]!++] = k; n++; }
      pending[k] = n;
      if (n === 0 && !holds[i]) { holds[i] = true; work.push(i); }
      k++;
    }
  }
  while (work.length) {
    const r = work.pop()!;
    for (let u = userAt[r]!; u < userAt[r + 1]!; u++) {
      const alt = users[u]!;
      if (--pending[alt]! === 0) {
        const i = altRule[alt]!;
        if (!holds[i]) { holds[i] = true; work.push(i); }
      }
    }
  }
  return holds;
}

export function reachableRules(rules: readonly CfgRule[], start: number): boolean[] {
  const seen = rules.map(() => false);
  const stack = [start];
  seen[start] = true;
  while (stack.length > 0) {
    const r = stack.pop()!;
    for (const a of rules[r]!.alts) {
      for (const s of a) {
        if (s.kind === "rule" && !seen[s.rule]) {
          seen[s.rule] = true;
          stack.push(s.rule);
        }
      }
    }
  }
  return seen;
}

export interface LeftCorner {
  to: number;
  /** Some occurrence is reached through a non-empty nullable prefix (A ::= N B … with N ⇒ ε): "hidden". */
  hidden: boolean;
}

/** For each rule, the rules that can begin one of its derivations. */
export function leftCorners(rules: readonly CfgRule[], nullable: readonly boolean[]): LeftCorner[][] {
  return rules.map((r) => {
    const out = new Map<number, boolean>();
    for (const a of r.alts) {
      for (let k = 0; k < a.length; k++) {
        const s = a[k]!;
        if (s.kind !== "rule") break;
        const hidden = k > 0;
        out.set(s.rule, (out.get(s.rule) ?? false) || hidden);
        if (!nullable[s.rule]) break;
      }
    }
    return [...out].map(([to, hidden]) => ({ to, hidden }));
  });
}

/**
 * Strongly connected components of a graph in CSR form (vertex v's successors are
 * `to[start[v]]` … `to[start[v + 1] - 1]`): per vertex the number of its component, numbered in
 * the order Tarjan's algorithm completes them, and how many there are. Iterative, typed arrays
 * only: the grammar call graphs it runs on have thousands of rules.
 */
export function componentsOf(n: number, start: Int32Array, to: Int32Array): { comp: Int32Array; count: number } {
  const index = new Int32Array(n).fill(-1);
  const low = new Int32Array(n);
  const comp = new Int32Array(n).fill(-1);
  const stack = new Int32Array(n);
  const frameV = new Int32Array(n);
  const frameI = new Int32Array(n);
  let sp = 0, fp = 0, counter = 0, count = 0;
  for (let root = 0; root < n; root++) {
    if (index[root] !== -1) continue;
    index[root] = low[root] = counter++;
    stack[sp++] = root;
    frameV[fp] = root;
    frameI[fp++] = start[root]!;
    while (fp > 0) {
      const v = frameV[fp - 1]!;
      const i = frameI[fp - 1]!;
      if (i < start[v + 1]!) {
        frameI[fp - 1] = i + 1;
        const w = to[i]!;
        if (index[w] === -1) {
          index[w] = low[w] = counter++;
          stack[sp++] = w;
          frameV[fp] = w;
          frameI[fp++] = start[w]!;
        } else if (comp[w] === -1 && index[w]! < low[v]!) low[v] = index[w]!; // visited, no component yet: on the stack
        continue;
      }
      fp--;
      if (fp > 0) {
        const parent = frameV[fp - 1]!;
        if (low[v]! < low[parent]!) low[parent] = low[v]!;
      }
      if (low[v] === index[v]) {
        let w: number;
        do {
          w = stack[--sp]!;
          comp[w] = count;
        } while (w !== v);
        count++;
      }
    }
  }
  return { comp, count };
}

/**
 * Strongly connected components as lists of vertices (each ascending), in the order Tarjan's
 * algorithm completes them: `componentsOf` over the successor lists laid out as CSR.
 */
export function stronglyConnected(n: number, succ: (v: number) => readonly number[]): number[][] {
  const lists = Array.from({ length: n }, (_, v) => succ(v));
  const start = new Int32Array(n + 1);
  for (let v = 0; v < n; v++) start[v + 1] = start[v]! + lists[v]!.length;
  const to = new Int32Array(start[n]!);
  for (let v = 0; v < n; v++) to.set(lists[v]!, start[v]!);
  const { comp, count } = componentsOf(n, start, to);
  const out: number[][] = Array.from({ length: count }, () => []);
  for (let v = 0; v < n; v++) out[comp[v]!]!.push(v);
  return out;
}

/** A shortest cycle through `from` using only edges inside `within`, as rule indices (first = last). */
export function shortestCycle(from: number, succ: (v: number) => readonly number[], within: (v: number) => boolean): number[] | undefined {
  const prev = new Map<number, number>();
  const queue = [from];
  for (let qi = 0; qi < queue.length; qi++) {
    const v = queue[qi]!;
    for (const w of succ(v)) {
      if (!within(w)) continue;
      if (w === from) {
        const path = [from];
        for (let x = v; x !== from; x = prev.get(x)!) path.push(x);
        path.push(from);
        return path.reverse();
      }
      if (!prev.has(w)) {
        prev.set(w, v);
        queue.push(w);
      }
    }
  }
  return undefined;
}

/** How a cycle reads in a message: helper rules shown by the user rule they belong to. */
export function describeCycle(rules: readonly CfgRule[], cycle: readonly number[]): string {
  const names: string[] = [];
  for (const r of cycle) {
    const name = rules[rules[r]!.owner]!.name;
    if (names[names.length - 1] !== name) names.push(name);
  }
  if (names.length === 1) names.push(names[0]!);
  return names.join(" → ");
}

/**
 * E0710 / E0711 for every reachable rule with no finite derivation. The message follows the
 * dependency that keeps the rule from finishing until it loops, e.g. "list → item → list".
 */
export function productivityErrors(rules: readonly CfgRule[], start: number, reachable: readonly boolean[]): SpecError[] {
  const productive = productiveRules(rules);
  const errors: SpecError[] = [];
  const blame = (r: number): number[] => {
    // Follow, from each rule, the first unproductive rule its first alternative needs.
    const path = [r];
    const seen = new Set([r]);
    let cur = r;
    for (;;) {
      const alt = rules[cur]!.alts[0];
      const next = alt?.find((s) => s.kind === "rule" && !productive[s.rule]);
      if (!next || next.kind !== "rule") return path;
      path.push(next.rule);
      if (seen.has(next.rule)) return path.slice(path.indexOf(next.rule));
      seen.add(next.rule);
      cur = next.rule;
    }
  };
  const culprits = rules.map((_, i) => i).filter((i) => reachable[i] && !productive[i]);
  const users = culprits.filter((i) => rules[i]!.origin === "user");
  const report = users.length > 0 ? users : culprits;
  report.sort((a, b) => (a === start ? -1 : b === start ? 1 : a - b));
  for (const r of report) {
    const rule = rules[r]!;
    const owner = rules[rule.owner]!;
    const why = describeCycle(rules, blame(r));
    if (r === start) {
      errors.push(new SpecError("E0711", `the grammar's language is empty: ${rule.name} can never finish a derivation (${why})`, rule.span,
        "give the rule an alternative that ends without recursing, e.g. a base case of literals"));
    } else {
      errors.push(new SpecError("E0710", rule.origin === "user"
        ? `rule ${rule.name} never terminates: every alternative needs a rule that never finishes (${why})`
        : `this part of rule ${owner.name} never terminates (${why})`, rule.span,
      "add an alternative that ends without recursing (a base case)"));
    }
  }
  return errors;
}

export function unreachableWarnings(rules: readonly CfgRule[], start: number, reachable: readonly boolean[]): SpecError[] {
  return rules.flatMap((r, i) => (r.origin === "user" && !reachable[i]
    ? [new SpecError("E0709", `rule ${r.name} is never used: it is not reachable from ${rules[start]!.name}`, r.span,
      "remove it, or refer to it from a rule that is used")]
    : []));
}

/** Keeps the rules marked in `keep`, renumbering references. */
export function compact(rules: readonly CfgRule[], keep: readonly boolean[], start: number): { rules: CfgRule[]; start: number } {
  const map = new Array<number>(rules.length).fill(-1);
  let n = 0;
  rules.forEach((_, i) => { if (keep[i]) map[i] = n++; });
  // A symbol, an alternative and a rule whose numbers do not change are kept as they are (the
  // rules before the first one dropped, and every reference to them).
  const remapAlt = (a: Sym[]): Sym[] => {
    let out: Sym[] | undefined;
    for (let i = 0; i < a.length; i++) {
      const s = a[i]!;
      if (s.kind === "rule" && map[s.rule] !== s.rule) { out ??= a.slice(0, i); out.push({ kind: "rule", rule: map[s.rule]! }); }
      else out?.push(s);
    }
    return out ?? a;
  };
  const out: CfgRule[] = [];
  rules.forEach((r, i) => {
    if (!keep[i]) return;
    const owner = map[r.owner]! >= 0 ? map[r.owner]! : map[i]!;
    let alts = r.alts;
    for (let k = 0; k < r.alts.length; k++) {
      const a = remapAlt(r.alts[k]!);
      if (a === r.alts[k]) continue;
      if (alts === r.alts) alts = r.alts.slice();
      alts[k] = a;
    }
    out.push(owner === r.owner && alts === r.alts ? r : { ...r, owner, alts });
  });
  return { rules: out, start: map[start]! };
}
