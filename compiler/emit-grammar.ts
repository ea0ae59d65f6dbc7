/**
 * @fileoverview `specc compile --emit ebnf|gbnf`: the spec's exact language as a right-linear
 * grammar in the notation llama.cpp (GBNF) and XGrammar (EBNF) read, so users of those engines can
 * run the same constraint — and so benchmarks compare engines on identical input.
 *
 * The byte DFA works on UTF-8 bytes; those grammars work on code points. Each rule is one DFA state;
 * its alternatives are code-point ranges leading to the state reached after the character's whole
 * UTF-8 sequence. Continuation bytes are grouped by byte class, so the enumeration stays small.
 * An env-input marker's state continues with opaque environment text (`env ::= [^]*`-style any
 * characters), then the after-env state: the engines resolve where env text ends by
 * nondeterminism, exactly as the host does by calling feedEnv.
 *
 * Where the grammar is looser than the spec (measured by bench/, see bench/results/RESULTS.md):
 * code points cannot express ill-formed UTF-8, which specc's free text allows byte by byte; a
 * grammar has no token boundary, so it cannot forbid a token that completes an env-input marker and
 * carries more text; and after the first env text the `env` rule can keep absorbing output, which
 * the host's feedEnv boundary rules out.
 */
import { ByteFlag, type ByteDfa } from "./ir.js";

export type GrammarDialect = "ebnf" | "gbnf";

const MAX_CP = 0x10ffff;

interface Range { lo: number; hi: number; to: number }

/** All (code point range → target) pairs of a state, merged and sorted. */
function cpTransitions(d: ByteDfa, s: number): Range[] {
  const step = (st: number, b: number) => (st < 0 ? -1 : d.trans[st * d.nClasses + d.classMap[b]!]!);
  const out: Range[] = [];
  const push = (lo: number, hi: number, to: number) => {
    if (to < 0) return;
    const last = out[out.length - 1];
    if (last && last.to === to && last.hi + 1 === lo) last.hi = hi;
    else out.push({ lo, hi, to });
  };
  // Continuation bytes grouped by class: [representative, sorted members].
  const contGroups = new Map<number, number[]>();
  for (let b = 0x80; b <= 0xbf; b++) {
    const c = d.classMap[b]!;
    let g = contGroups.get(c);
    if (!g) contGroups.set(c, (g = []));
    g.push(b);
  }
  const groups = [...contGroups.values()];
  // 1-byte characters.
  for (let b = 0; b < 0x80; b++) push(b, b, step(s, b));
  // Multi-byte: for each lead byte, walk continuation classes; collect code points by target.
  const leads: [number, number, number][] = [[0xc2, 0xdf, 1], [0xe0, 0xef, 2], [0xf0, 0xf4, 3]];
  for (const [lo, hi, nCont] of leads) {
    for (let lead = lo; lead <= hi; lead++) {
      const s1 = step(s, lead);
      if (s1 < 0) continue;
      const found: Range[] = [];
      /** Code points of lead + one member of each group, as few ranges as the structure allows. */
      const enumerate = (leadByte: number, lists: number[][], to: number) => {
        const full = lists.map((l) => l.length === 64);
        const walk = (k: number, acc: number[]) => {
          const restFull = full.slice(k + 1).every(Boolean);
          const members = lists[k]!;
          for (let i = 0; i < members.length; ) {
            let j = i;
            if (restFull) while (j + 1 < members.length && members[j + 1] === members[j]! + 1) j++;
            if (restFull || k === lists.length - 1) {
              const pad = lists.length - 1 - k;
              // With every later position a full run, the raw values are one contiguous interval;
              // clamping drops overlong forms, surrogates and values past U+10FFFF.
              const len = lists.length + 1;
              let lo = rawDecode([leadByte, ...acc, members[i]!, ...Array(pad).fill(0x80)]);
              let hi = rawDecode([leadByte, ...acc, members[j]!, ...Array(pad).fill(0xbf)]);
              lo = Math.max(lo, len === 2 ? 0x80 : len === 3 ? 0x800 : 0x10000);
              hi = Math.min(hi, MAX_CP);
              if (lo <= hi && (hi < 0xd800 || lo > 0xdfff)) found.push({ lo, hi, to });
              else if (lo <= hi) {
                if (lo < 0xd800) found.push({ lo, hi: 0xd7ff, to });
                if (hi > 0xdfff) found.push({ lo: 0xe000, hi, to });
              }
            } else {
              walk(k + 1, [...acc, members[i]!]);
            }
            i = j + 1;
          }
        };
        walk(0, []);
      };
      // Continuation groups that lead to the same state are merged, so the common case (every
      // continuation byte is free text) is one full run per position.
      const rec = (st: number, depth: number, prefix: number[][]) => {
        if (depth === nCont) { enumerate(lead, prefix, st); return; }
        const byTarget = new Map<number, number[]>();
        for (const g of groups) {
          const t = step(st, g[0]!);
          if (t < 0) continue;
          const l = byTarget.get(t);
          if (l) l.push(...g); else byTarget.set(t, [...g]);
        }
        for (const [t, members] of byTarget) rec(t, depth + 1, [...prefix, members.sort((a, b) => a - b)]);
      };
      rec(s1, 0, []);
      found.sort((a, b) => a.lo - b.lo);
      for (const f of found) push(f.lo, f.hi, f.to);
    }
  }
  return out;
}

/** The value a UTF-8-shaped byte sequence encodes, without validity checks (callers clamp). */
function rawDecode(b: number[]): number {
  if (b.length === 2) return ((b[0]! & 0x1f) << 6) | (b[1]! & 0x3f);
  if (b.length === 3) return ((b[0]! & 0x0f) << 12) | ((b[1]! & 0x3f) << 6) | (b[2]! & 0x3f);
  return ((b[0]! & 0x07) << 18) | ((b[1]! & 0x3f) << 12) | ((b[2]! & 0x3f) << 6) | (b[3]! & 0x3f);
}

function esc(cp: number): string {
  // Class metacharacters and other bytes as \u00HH: llama.cpp refuses "\^" inside a class, and
  // \xHH is ambiguous — XGrammar reads every hex digit after \x, so `[\x5cbf]` would be U+5CBF
  // there (llama.cpp reads two). \u takes exactly four digits in both.
  if (cp === 0x5d || cp === 0x5b || cp === 0x5c || cp === 0x5e || cp === 0x2d || cp === 0x22) return "\\u" + cp.toString(16).padStart(4, "0");
  if (cp >= 0x20 && cp < 0x7f) return String.fromCharCode(cp);
  if (cp <= 0xffff) return "\\u" + cp.toString(16).padStart(4, "0");
  return "\\U" + cp.toString(16).padStart(8, "0");
}

/**
 * A character class for code-point ranges. A class that holds every non-ASCII scalar value (free
 * text, the inside of a JSON string) is written negated, `[^…the ASCII it lacks…]`: the same set,
 * and the form @mlc-ai/web-xgrammar 0.1.27 builds correctly — it casts the code points of a
 * positive class's ranges to one byte, so `[a\u00e9]` misses "é" and `[\ue000-\U0010ffff]`
 * matches control characters (bench/repro-peers.ts).
 */
function charClass(ranges: readonly Range[], dialect: GrammarDialect): string {
  const sorted = [...ranges].sort((a, b) => a.lo - b.lo);
  let next = 0x80;
  for (const r of sorted) {
    if (r.hi < 0x80) continue;
    if (Math.max(r.lo, 0x80) > next && !(next === 0xd800 && r.lo === 0xe000)) break;
    next = Math.max(next, r.hi + 1);
  }
  if (next > 0x10ffff) {
    const ascii = new Uint8Array(128);
    for (const r of sorted) for (let c = r.lo; c <= Math.min(r.hi, 0x7f); c++) ascii[c] = 1;
    let out = "";
    for (let c = 0; c < 128; c++) {
      if (ascii[c]) continue;
      let d = c;
      while (d + 1 < 128 && !ascii[d + 1]) d++;
      out += d === c ? esc(c) : `${esc(c)}-${esc(d)}`;
      c = d;
    }
    // Nothing excluded: "any character". XGrammar reads the empty negated class `[^]` (and would
    // miscompile the positive full range); llama.cpp's GBNF refuses `[^]` and builds the range right.
    if (out === "") return dialect === "ebnf" ? "[^]" : "[\\u0000-\\U0010ffff]";
    return `[^${out}]`;
  }
  return `[${sorted.map((r) => (r.lo === r.hi ? esc(r.lo) : `${esc(r.lo)}-${esc(r.hi)}`)).join("")}]`;
}

/**
 * The grammar text. `root` is the initial state; every accepting state may end. A rule `sN` derives
 * what state N reads until its machine ends, so a pushdown automaton's call edge [start, ret] is
 * simply the alternative `s<start> s<ret>`.
 */
export function emitGrammar(d: ByteDfa, dialect: GrammarDialect, title = "spec"): string {
  const name = (s: number) => `s${s}`;
  const lines = [
    `# ${title}: the exact language of the compiled spec, generated by specc (${dialect}).`,
    `# One rule per state of the byte automaton; env-input text is any characters (the host's feedEnv).`,
    `root ::= ${name(d.initial)}`,
  ];
  let needsEnv = false;
  for (let s = 0; s < d.nStates; s++) {
    const alts: string[] = [];
    const byTarget = new Map<number, Range[]>();
    for (const r of cpTransitions(d, s)) {
      let l = byTarget.get(r.to);
      if (!l) byTarget.set(r.to, (l = []));
      l.push(r);
    }
    for (const [to, ranges] of [...byTarget].sort((a, b) => a[0] - b[0])) {
      alts.push(`${charClass(ranges, dialect)} ${name(to)}`);
    }
    // A pushdown grammar's call edge: the called machine's sentence, then the return state's rest.
    for (const [start, ret] of d.calls?.[s] ?? []) alts.push(`${name(start)} ${name(ret)}`);
    if (d.envNext[s]! >= 0) { alts.push(`env ${name(d.envNext[s]!)}`); needsEnv = true; }
    if (d.flags[s]! & ByteFlag.Accepting) alts.push(`""`);
    lines.push(`${name(s)} ::= ${alts.length ? alts.join(" | ") : `""`}`);
  }
  if (needsEnv) lines.push(`env ::= ${charClass([{ lo: 0, hi: MAX_CP, to: 0 }], dialect)}*`);
  return lines.join("\n") + "\n";
}
