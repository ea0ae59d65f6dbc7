/**
 * @fileoverview Behavior formula → ε-NFA over spec-state ids (Thompson's construction).
 * Bounded loops are expanded (until_M_N copies the body N times), so the NFA size is capped by an
 * explicit limit that fails with a typed error instead of growing without bound.
 */
import { SpecLimitError } from "../diagnostics.js";
import type { Behavior, Nfa } from "../ir.js";

export const DEFAULT_MAX_NFA_STATES = 20_000;

interface Frag { start: number; end: number }

export function buildNfa(behavior: Behavior, maxStates = DEFAULT_MAX_NFA_STATES): Nfa {
  let n = 0;
  const edges: Nfa["edges"] = [];
  const node = () => {
    if (n >= maxStates) throw new SpecLimitError("maxNfaStates", n + 1, maxStates, behavior.span);
    return n++;
  };
  const eps = (from: number, to: number) => edges.push({ from, sym: -1, to });
  const build = (f: Behavior): Frag => {
    switch (f.op) {
      case "state": {
        const a = node(), b = node();
        edges.push({ from: a, sym: f.state, to: b });
        return { start: a, end: b };
      }
      case "next": {
        const parts = f.args.map(build);
        for (let i = 0; i + 1 < parts.length; i++) eps(parts[i]!.end, parts[i + 1]!.start);
        return { start: parts[0]!.start, end: parts[parts.length - 1]!.end };
      }
      case "or": {
        const a = node(), b = node();
        for (const p of f.args.map(build)) { eps(a, p.start); eps(p.end, b); }
        return { start: a, end: b };
      }
      case "always": {
        const body = build(f.body);
        const b = node();
        eps(body.end, body.start);
        eps(body.end, b);
        return { start: body.start, end: b };
      }
      case "until": {
        const a = node();
        let cur = a;
        for (let i = 0; i < f.min; i++) {
          const body = build(f.body);
          eps(cur, body.start);
          cur = body.end;
        }
        const exit = node();
        if (f.max === null) {
          const body = build(f.body);
          eps(cur, body.start);
          eps(body.end, cur);
          eps(cur, exit);
        } else {
          eps(cur, exit);
          for (let i = f.min; i < f.max; i++) {
            const body = build(f.body);
            eps(cur, body.start);
            eps(body.end, exit);
            cur = body.end;
          }
        }
        const then = build(f.then);
        eps(exit, then.start);
        return { start: a, end: then.end };
      }
    }
  };
  const top = build(behavior);
  return { nStates: n, initial: top.start, accepting: [top.end], edges };
}
