/**
 * @fileoverview Content constraints as small byte DFAs: what the text between a state's marker and
 * the next marker may be. `any` (free text), `ws` (only whitespace: before the first marker and
 * right after an environment's text) and `oneOf` (seeds' :output-constrs — one of the strings with
 * whitespace around it). Each is a `ContentDfa` so the byte-level product treats them alike.
 */
import type { ContentIR } from "../ir.js";

export interface ContentDfa {
  start: number;
  /** Next state, or -1 if the byte cannot appear here. */
  step(state: number, byte: number): number;
  accepting(state: number): boolean;
  /** Bytes the DFA tells apart from others (used to compute byte classes). */
  significant: number[];
}

export const WS_BYTES = [0x20, 0x09, 0x0a, 0x0d];
const isWs = (b: number) => b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d;

export const anyContent: ContentDfa = { start: 0, step: () => 0, accepting: () => true, significant: [] };

export const wsContent: ContentDfa = {
  start: 0, step: (s, b) => (isWs(b) ? 0 : -1), accepting: () => true, significant: WS_BYTES,
};

/**
 * ws* (o1 | o2 | ...) ws*. NFA positions: 0 = leading ws, 1 = trailing ws, 2.. = trie nodes; the
 * DFA state is a set of positions (an option may itself contain whitespace, e.g. "Web Search"),
 * determinized lazily and memoized.
 */
export function oneOfContent(options: string[]): ContentDfa {
  const enc = new TextEncoder();
  const children: Map<number, number>[] = [new Map(), new Map(), new Map()];
  const terminal: boolean[] = [false, true, false];
  for (const o of options) {
    let n = 2;
    for (const b of enc.encode(o)) {
      let c = children[n]!.get(b);
      if (c === undefined) { c = children.length; children.push(new Map()); terminal.push(false); children[n]!.set(b, c); }
      n = c;
    }
    terminal[n] = true;
  }
  const nfaStep = (p: number, b: number, out: Set<number>) => {
    if (p === 0) {
      if (isWs(b)) out.add(0);
      const c = children[2]!.get(b);
      if (c !== undefined) out.add(c);
      return;
    }
    if (p === 1) { if (isWs(b)) out.add(1); return; }
    const c = children[p]!.get(b);
    if (c !== undefined) out.add(c);
    if (terminal[p] && isWs(b)) out.add(1);
  };
  const sets: number[][] = [[0]];
  const ids = new Map<string, number>([["0", 0]]);
  const memo = new Map<number, number>();
  const significant = new Set<number>(WS_BYTES);
  for (const o of options) for (const b of enc.encode(o)) significant.add(b);
  return {
    start: 0,
    step(s, b) {
      const mk = s * 256 + b;
      const hit = memo.get(mk);
      if (hit !== undefined) return hit;
      const out = new Set<number>();
      for (const p of sets[s]!) nfaStep(p, b, out);
      let id = -1;
      if (out.size) {
        const key = [...out].sort((x, y) => x - y).join(",");
        id = ids.get(key) ?? -1;
        if (id < 0) { id = sets.length; ids.set(key, id); sets.push([...out]); }
      }
      memo.set(mk, id);
      return id;
    },
    accepting: (s) => sets[s]!.some((p) => terminal[p]),
    significant: [...significant].sort((a, b) => a - b),
  };
}

export function contentDfa(c: ContentIR): ContentDfa {
  return c.kind === "any" ? anyContent : oneOfContent(c.options);
}
