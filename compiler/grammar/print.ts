/**
 * @fileoverview Cfg → GBNF text that llama.cpp, XGrammar and specc all parse back to a grammar with
 * the same language (round-trip tested), so a grammar specc has normalized (desugared, left
 * recursion removed) can be handed to the peer engines as is.
 *
 * Bytes are turned back into characters: runs of single bytes that form UTF-8 characters become
 * string literals; a byte set or a UTF-8 byte-range sequence becomes a character class (the inverse
 * of utf8.ts); a rule whose alternatives are each one character class is printed as one class (as
 * the negated class when that is shorter), which is how lowering made it. Escapes are the ones both
 * engines read the same way: \" \\ \n \r \t, \[ \] in classes, and \uHHHH / \UHHHHHHHH for the
 * rest (never \xHH, which XGrammar reads greedily). Line breaks only follow `::=` or `|`, where
 * llama.cpp allows them. The start rule comes first.
 */
import type { ByteSym, Cfg, Sym } from "./cfg.js";
import { complementCodePoints, decodeOne, decodeUtf8Sequence, normalizeCodePoints, type CpRange } from "./utf8.js";

type Piece = { kind: "chars"; cps: number[] } | { kind: "class"; ranges: CpRange[] } | { kind: "ref"; name: string };

export interface PrintOptions {
  /** A `#` comment line put first (each line of it prefixed with "# "). */
  header?: string;
  /** Longest line before alternatives go one per line (default 100). */
  width?: number;
}

export function printGbnf(cfg: Cfg, opts: PrintOptions = {}): string {
  const width = opts.width ?? 100;
  const lines: string[] = [];
  if (opts.header) for (const l of opts.header.split("\n")) lines.push(`# ${l}`.trimEnd());
  // Both peer engines start at `root`; a grammar started elsewhere gets `root ::= <start>` when
  // that name is free, and a comment naming the start rule otherwise.
  const startName = cfg.rules[cfg.start]!.name;
  if (startName !== "root") {
    if (cfg.rules.some((r) => r.name === "root")) lines.push(`# start: ${startName}`);
    else lines.push(`root ::= ${startName}`);
  }
  const order = [cfg.start, ...cfg.rules.map((_, i) => i).filter((i) => i !== cfg.start)];
  for (const i of order) {
    const rule = cfg.rules[i]!;
    const asClass = wholeClass(rule.alts);
    const alts = asClass ? [printPieces([{ kind: "class", ranges: asClass }])] : rule.alts.map((a) => printPieces(pieces(a, cfg)));
    const head = `${rule.name} ::= `;
    const one = head + (alts.length === 0 ? "[]" : alts.join(" | "));
    if (one.length <= width || alts.length <= 1) lines.push(one);
    else lines.push(`${head}${alts.map((a, k) => (k === 0 ? a : `  ${a}`)).join(" |\n")}`);
  }
  return `${lines.join("\n")}\n`;
}

/** The code points of a rule whose every alternative is exactly one character, or undefined. */
function wholeClass(alts: readonly Sym[][]): CpRange[] | undefined {
  if (alts.length === 0) return undefined;
  const ranges: CpRange[] = [];
  for (const a of alts) {
    const r = oneChar(a);
    if (!r) return undefined;
    ranges.push(...r);
  }
  return alts.length > 1 || ranges.length > 1 ? normalizeCodePoints(ranges) : undefined;
}

function oneChar(a: readonly Sym[]): CpRange[] | undefined {
  if (a.length === 0 || a.some((s) => s.kind !== "bytes")) return undefined;
  const syms = a as readonly ByteSym[];
  if (syms.length === 1) return asciiSet(syms[0]!);
  const seq = singleRanges(syms);
  const r = seq && decodeUtf8Sequence(seq);
  return r ? [r] : undefined;
}

function asciiSet(s: ByteSym): CpRange[] | undefined {
  return s.ranges.every(([, hi]) => hi < 0x80) ? s.ranges.map(([lo, hi]) => [lo, hi] as const) : undefined;
}

function singleRanges(syms: readonly ByteSym[]): [number, number][] | undefined {
  if (!syms.every((s) => s.ranges.length === 1)) return undefined;
  return syms.map((s) => [s.ranges[0]![0], s.ranges[0]![1]]);
}

function pieces(alt: readonly Sym[], cfg: Cfg): Piece[] {
  const out: Piece[] = [];
  const chars = (cp: number) => {
    const last = out[out.length - 1];
    if (last?.kind === "chars") last.cps.push(cp);
    else out.push({ kind: "chars", cps: [cp] });
  };
  for (let k = 0; k < alt.length;) {
    const s = alt[k]!;
    if (s.kind === "rule") {
      out.push({ kind: "ref", name: cfg.rules[s.rule]!.name });
      k++;
      continue;
    }
    const [lo, hi] = s.ranges[0] ?? [0, -1];
    if (s.ranges.length === 1 && lo === hi) {
      // A single byte: a character by itself, or the lead byte of one spelled out byte by byte.
      const n = lo < 0x80 ? 1 : lo >= 0xc2 && lo <= 0xdf ? 2 : lo >= 0xe0 && lo <= 0xef ? 3 : lo >= 0xf0 && lo <= 0xf4 ? 4 : 0;
      const bytes = alt.slice(k, k + n);
      if (n > 0 && bytes.length === n && bytes.every((b) => b.kind === "bytes" && b.ranges.length === 1 && b.ranges[0]![0] === b.ranges[0]![1])) {
        const cp = decodeOne(bytes.map((b) => (b as ByteSym).ranges[0]![0]));
        if (cp !== undefined) {
          chars(cp);
          k += n;
          continue;
        }
      }
    }
    const ascii = asciiSet(s);
    if (ascii) {
      out.push({ kind: "class", ranges: ascii });
      k++;
      continue;
    }
    const n = lo >= 0xc2 && lo <= 0xdf ? 2 : lo >= 0xe0 && lo <= 0xef ? 3 : lo >= 0xf0 && lo <= 0xf4 ? 4 : 0;
    const run = alt.slice(k, k + n);
    const seq = n > 0 && run.length === n && run.every((b) => b.kind === "bytes") ? singleRanges(run as ByteSym[]) : undefined;
    const r = seq && decodeUtf8Sequence(seq);
    if (!r) throw new Error(`printGbnf: symbols at position ${k} are not a UTF-8 character or class; GBNF cannot spell raw bytes`);
    out.push({ kind: "class", ranges: [r] });
    k += n;
  }
  return out;
}

function printPieces(ps: readonly Piece[]): string {
  if (ps.length === 0) return '""';
  return ps.map((p) => {
    if (p.kind === "ref") return p.name;
    if (p.kind === "chars") return `"${p.cps.map((c) => esc(c, false)).join("")}"`;
    return printClass(p.ranges);
  }).join(" ");
}

function printClass(ranges: readonly CpRange[]): string {
  const pos = normalizeCodePoints(ranges);
  const neg = complementCodePoints(pos);
  const body = (rs: readonly CpRange[]) => rs.map(([lo, hi]) => (lo === hi ? esc(lo, true) : hi === lo + 1 ? esc(lo, true) + esc(hi, true) : `${esc(lo, true)}-${esc(hi, true)}`)).join("");
  const a = `[${body(pos)}]`;
  const b = `[^${body(neg)}]`;
  return neg.length > 0 && b.length < a.length ? b : a;
}

function esc(cp: number, inClass: boolean): string {
  switch (cp) {
    case 0x22: return inClass ? '"' : '\\"';
    case 0x5c: return "\\\\";
    case 0x0a: return "\\n";
    case 0x0d: return "\\r";
    case 0x09: return "\\t";
  }
  if (inClass && (cp === 0x5b || cp === 0x5d)) return cp === 0x5b ? "\\[" : "\\]";
  // '-' and '^' mean something in a class; both engines read \u escapes the same way.
  if (inClass && (cp === 0x2d || cp === 0x5e)) return hex(cp);
  const ch = String.fromCodePoint(cp);
  if (cp === 0x20 || (cp > 0x20 && cp < 0x7f)) return ch;
  if (cp < 0xa0 || /[\p{C}\p{Z}\p{M}]/u.test(ch)) return hex(cp);
  return ch;
}

function hex(cp: number): string {
  return cp > 0xffff ? `\\U${cp.toString(16).toUpperCase().padStart(8, "0")}` : `\\u${cp.toString(16).toUpperCase().padStart(4, "0")}`;
}
