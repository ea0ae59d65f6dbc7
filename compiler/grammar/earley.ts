/**
 * @fileoverview The reference recognizer: an Earley parser over bytes. It decides whether a
 * complete byte string is a sentence of a Cfg and whether a byte string is a viable PREFIX of one
 * (some continuation makes it a sentence), and lists the bytes that may come next. It is the
 * oracle the pushdown automaton's token masks will be tested against, so it is written to be
 * obviously correct rather than fast:
 *
 *  - Textbook Earley (predict, scan, complete) over the Cfg as is: left recursion, ambiguity and
 *    cycles need no special treatment.
 *  - ε-rules: the Aycock–Horspool fix. When predicting a nullable rule B at A ::= α • B β, the
 *    item A ::= α B • β is added at once; otherwise an item added to the current set after B's
 *    empty completion was processed would never see it.
 *  - Alternatives that use a rule with no finite derivation are dropped first, so every item that
 *    survives can be completed: a set is non-empty exactly when the input so far is a viable
 *    prefix (parseGrammar already rejects such rules; the pruning keeps the oracle honest on any
 *    Cfg handed to it).
 *
 * Items are (production, dot, origin); a set deduplicates them by a numeric key and indexes the
 * items waiting on each rule, for completion.
 */
import { nullableRules, productiveRules } from "./analyze.js";
import { byteIn, type ByteSym, type Cfg, type Sym } from "./cfg.js";

interface Prod {
  lhs: number;
  rhs: readonly Sym[];
  /** Key base: the items of this production are base + dot. */
  base: number;
}

class ItemSet {
  readonly prod: number[] = [];
  readonly dot: number[] = [];
  readonly origin: number[] = [];
  readonly seen = new Set<number>();
  readonly waiting = new Map<number, number[]>();
  /** Items whose next symbol is a byte set. */
  readonly scan: number[] = [];
}

/** Positions per item key; inputs longer than this are refused (the oracle is for tests). */
const STRIDE = 1 << 22;

export type Bytes = Uint8Array | readonly number[] | string;

export function toBytes(input: Bytes): Uint8Array {
  if (typeof input === "string") return new TextEncoder().encode(input);
  return input instanceof Uint8Array ? input : Uint8Array.from(input);
}

export class Earley {
  readonly prods: Prod[] = [];
  readonly byLhs: number[][];
  readonly nullable: boolean[];

  constructor(readonly cfg: Cfg) {
    const rules = cfg.rules;
    const productive = productiveRules(rules);
    this.nullable = nullableRules(rules);
    this.byLhs = rules.map(() => []);
    let base = 0;
    rules.forEach((r, lhs) => {
      for (const rhs of r.alts) {
        if (!rhs.every((s) => (s.kind === "rule" ? productive[s.rule] : s.ranges.length > 0))) continue;
        this.byLhs[lhs]!.push(this.prods.length);
        this.prods.push({ lhs, rhs, base });
        base += rhs.length + 1;
      }
    });
  }

  matcher(): EarleyMatcher {
    return new EarleyMatcher(this);
  }

  /** Is `input` a complete sentence of the grammar? */
  recognize(input: Bytes): boolean {
    const m = this.matcher();
    return m.feedAll(toBytes(input)) && m.accepts();
  }

  /** Can `input` be continued (possibly by nothing) into a sentence? */
  viablePrefix(input: Bytes): boolean {
    return this.matcher().feedAll(toBytes(input));
  }
}

/** Incremental recognition: feed bytes one at a time, ask what is accepted or allowed next. */
export class EarleyMatcher {
  private readonly sets: ItemSet[] = [];

  constructor(private readonly e: Earley) {
    const s0 = new ItemSet();
    this.sets.push(s0);
    for (const q of e.byLhs[e.cfg.start] ?? []) this.add(s0, q, 0, 0);
    this.process(0);
  }

  /** Bytes consumed so far. */
  get length(): number {
    return this.sets.length - 1;
  }

  /** True while the input so far is a viable prefix. */
  viable(): boolean {
    return this.current().prod.length > 0;
  }

  /** Consumes one byte; false (and dead from then on) when no sentence continues this way. */
  feed(byte: number): boolean {
    const cur = this.current();
    const i = this.sets.length - 1;
    if (i + 1 >= STRIDE) throw new RangeError(`EarleyMatcher: inputs are limited to ${STRIDE - 1} bytes`);
    const next = new ItemSet();
    this.sets.push(next);
    for (const k of cur.scan) {
      const p = cur.prod[k]!;
      const d = cur.dot[k]!;
      if (byteIn(this.e.prods[p]!.rhs[d] as ByteSym, byte)) this.add(next, p, d + 1, cur.origin[k]!);
    }
    this.process(i + 1);
    return next.prod.length > 0;
  }

  feedAll(bytes: Uint8Array): boolean {
    for (const b of bytes) if (!this.feed(b)) return false;
    return this.viable();
  }

  /** Is the input so far a complete sentence? */
  accepts(): boolean {
    const cur = this.current();
    const start = this.e.cfg.start;
    for (let k = 0; k < cur.prod.length; k++) {
      const p = this.e.prods[cur.prod[k]!]!;
      if (p.lhs === start && cur.origin[k] === 0 && cur.dot[k] === p.rhs.length) return true;
    }
    return false;
  }

  /** The bytes that keep the input a viable prefix, ascending. */
  nextBytes(): number[] {
    const cur = this.current();
    const allowed = new Array<boolean>(256).fill(false);
    for (const k of cur.scan) {
      for (const [lo, hi] of (this.e.prods[cur.prod[k]!]!.rhs[cur.dot[k]!] as ByteSym).ranges) {
        for (let b = lo; b <= hi; b++) allowed[b] = true;
      }
    }
    return allowed.flatMap((ok, b) => (ok ? [b] : []));
  }

  private current(): ItemSet {
    return this.sets[this.sets.length - 1]!;
  }

  private add(set: ItemSet, p: number, d: number, o: number): void {
    const prod = this.e.prods[p]!;
    const key = (prod.base + d) * STRIDE + o;
    if (set.seen.has(key)) return;
    set.seen.add(key);
    const k = set.prod.length;
    set.prod.push(p);
    set.dot.push(d);
    set.origin.push(o);
    const next = prod.rhs[d];
    if (next?.kind === "rule") {
      let w = set.waiting.get(next.rule);
      if (!w) set.waiting.set(next.rule, (w = []));
      w.push(k);
    } else if (next) set.scan.push(k);
  }

  private process(i: number): void {
    const set = this.sets[i]!;
    const { prods, byLhs, nullable } = this.e;
    // The set grows while we walk it; items appended are processed in turn.
    for (let k = 0; k < set.prod.length; k++) {
      const p = set.prod[k]!;
      const d = set.dot[k]!;
      const o = set.origin[k]!;
      const prod = prods[p]!;
      if (d === prod.rhs.length) {
        // Complete: advance every item of set o that was waiting for this rule.
        const from = this.sets[o]!;
        const w = from.waiting.get(prod.lhs);
        if (!w) continue;
        for (let j = 0; j < w.length; j++) {
          const it = w[j]!;
          this.add(set, from.prod[it]!, from.dot[it]! + 1, from.origin[it]!);
        }
        continue;
      }
      const sym = prod.rhs[d]!;
      if (sym.kind !== "rule") continue; // scanned by feed()
      for (const q of byLhs[sym.rule]!) this.add(set, q, 0, i);
      if (nullable[sym.rule]) this.add(set, p, d + 1, o); // Aycock–Horspool
    }
  }
}
