/**
 * @fileoverview AST (ast.ts) → CFG IR (cfg.ts): rule names resolved, literals and character
 * classes turned into UTF-8 byte symbols (utf8.ts), and every EBNF operator desugared into fresh
 * helper rules, right-recursive so the later pushdown automaton never meets left recursion of
 * our own making:
 *
 *   S*      →  h           h ::= S h | ε
 *   S+      →  S h         h ::= S h | ε
 *   S?      →  h           h ::= S | ε
 *   S{m}    →  S … S (m times, inline)
 *   S{m,}   →  S … S h     h ::= S h | ε
 *   S{m,n}  →  S … S h1    h1 ::= S h2 | ε … h(n-m) ::= S | ε
 *   ( … )   →  inline when it has one alternative, else a helper rule
 *
 * A rule whose whole body is one class, group, S* or S? takes those alternatives itself instead of
 * pointing at a helper (so `ws ::= [ \t]*` stays ws ::= [ \t] ws | ε, and print → parse → print
 * is a fixpoint); a class that needs several UTF-8 byte sequences is one helper shared by all uses.
 *
 * S stands for the symbols of the element (a string's bytes, a one-alternative group's sequence,
 * or one symbol). Errors are collected, then the first is thrown with the rest attached as `more`
 * (as compiler/lower.ts does for specs); limits throw at once (SpecLimitError).
 */
import { SpecError, SpecLimitError, suggest } from "../diagnostics.js";
import type { Span } from "../ir.js";
import type { GExpr, GSeq, GrammarAst } from "./ast.js";
import { byteLit, byteSym, ruleSym, type CfgLimits, type CfgRule, type RuleOrigin, type Sym } from "./cfg.js";
import { complementCodePoints, encodeUtf8, normalizeCodePoints, utf8Sequences, type CpRange } from "./utf8.js";

/** Hands out helper names `<base>-<n>` that collide with no rule name, written or generated. */
export class NameGen {
  private readonly used: Set<string>;
  private readonly next = new Map<string, number>();
  constructor(names: Iterable<string>) {
    this.used = new Set(names);
  }
  fresh(base: string): string {
    let k = this.next.get(base) ?? 1;
    while (this.used.has(`${base}-${k}`)) k++;
    this.next.set(base, k + 1);
    const name = `${base}-${k}`;
    this.used.add(name);
    return name;
  }
}

export interface Lowered {
  rules: CfgRule[];
  start: number;
  names: NameGen;
}

export function lowerGrammar(ast: GrammarAst, start: string, limits: CfgLimits): Lowered {
  return new Lowering(ast, limits).run(start);
}

const unwrap = (e: GExpr): GExpr => {
  while (e.kind === "group" && e.alts.length === 1 && e.alts[0]!.items.length === 1) e = e.alts[0]!.items[0]!;
  return e;
};

/**
 * A repetition with its nested repetitions simplified, bottom-up (the same object when nothing
 * changes, so lowering the result again is a no-op). Both rules are equalities of languages:
 *   - a star repeated is the star: (F*){m,n} = F* for n ≥ 1 (F*·F* = F*, ε ∈ F*);
 *   - (E{0,a}){m,b} = E{0,a·b} for a single non-empty literal or character class E (every factor
 *     may be empty, so every count from 0 to a·b is reached): one chain of a·b optional steps instead
 *     of b chains of a, whose ε-closures multiply.
 */
function simplifyRepeat(e: Extract<GExpr, { kind: "repeat" }>): GExpr {
  const inner = unwrap(e.body);
  const body = inner.kind === "repeat" ? unwrap(simplifyRepeat(inner)) : inner;
  if (body.kind === "repeat" && e.max !== 0) {
    if (body.min === 0 && body.max === null) return body;
    const b = unwrap(body.body);
    const single = (b.kind === "literal" && b.codePoints.length > 0) || b.kind === "class" || b.kind === "any";
    if (single && body.min === 0 && body.max !== null && body.max > 0 && e.max !== null) {
      const max = body.max * e.max;
      return { ...body, max, op: `{0,${max}}`, span: e.span, opSpan: e.opSpan };
    }
  }
  return body === inner ? e : { ...e, body };
}

function isStarOrOpt(e: GExpr): e is Extract<GExpr, { kind: "repeat" }> {
  return e.kind === "repeat" && e.min === 0 && (e.max === null || e.max === 1);
}

/** out.push(...xs) without the engine's limit on the number of call arguments. */
function append<T>(out: T[], xs: readonly T[]): void {
  for (const x of xs) out.push(x);
}

class Lowering {
  private readonly errors: SpecError[] = [];
  private readonly rules: CfgRule[] = [];
  private readonly ids = new Map<string, number>();
  private readonly names: NameGen;
  private symbols = 0;
  private readonly classHelpers = new Map<string, number>();
  /** What a class contributes, by its text: its helper, or the symbols of a one-symbol class. */
  private readonly classWritten = new Map<string, number | Sym[]>();

  constructor(private readonly ast: GrammarAst, private readonly limits: CfgLimits) {
    this.names = new NameGen(ast.rules.map((r) => r.name));
  }

  run(startName: string): Lowered {
    const file = this.ast.file;
    const defs = [];
    for (const r of this.ast.rules) {
      const first = this.ids.get(r.name);
      if (first !== undefined) {
        const s = this.rules[first]!.span!;
        this.errors.push(new SpecError("E0704", `duplicate rule ${r.name} (first defined at ${s.line}:${s.col})`, r.nameSpan,
          "define each rule once; join its alternatives with |"));
        continue;
      }
      const id = this.rules.length;
      this.ids.set(r.name, id);
      this.rules.push({ name: r.name, alts: [], origin: "user", owner: id, span: r.nameSpan });
      defs.push({ id, rule: r });
    }
    if (this.ast.rules.length > this.limits.maxRules) throw new SpecLimitError("maxRules", this.ast.rules.length, this.limits.maxRules);
    for (const { id, rule } of defs) {
      const only = rule.alts.length === 1 && rule.alts[0]!.items.length === 1 ? rule.alts[0]!.items[0]! : undefined;
      // A rule that is just a class or a group takes its alternatives directly (no helper), which
      // also makes printing and re-parsing a fixpoint.
      const direct = only && (only.kind === "class" || only.kind === "any" || only.kind === "group" || isStarOrOpt(only)) ? this.altsOf(only, id) : undefined;
      this.setAlts(id, direct ?? rule.alts.map((a) => this.seq(a, id)));
    }
    const start = this.ids.get(startName);
    if (start === undefined) {
      const at: Span = { file, line: 1, col: 1, offset: 0, end: 0 };
      this.errors.push(this.ast.rules.length === 0
        ? new SpecError("E0706", "the grammar defines no rules", at, 'a grammar is a list of rules starting with root ::= …, e.g. root ::= "yes" | "no"')
        : new SpecError("E0706", `no rule named ${startName}: it is the grammar's start symbol`, at,
          suggest(startName, [...this.ids.keys()]) ?? `define ${startName} ::= …, or choose another start rule`));
    }
    if (this.errors.length > 0) {
      const [first, ...more] = this.errors;
      (first as SpecError & { more?: SpecError[] }).more = more;
      throw first;
    }
    return { rules: this.rules, start: start!, names: this.names };
  }

  private setAlts(id: number, alts: Sym[][]): void {
    this.rules[id]!.alts = alts;
    for (const a of alts) this.symbols += a.length + 1;
    if (this.symbols > this.limits.maxSymbols) throw new SpecLimitError("maxSymbols", this.symbols, this.limits.maxSymbols, this.rules[id]!.span);
  }

  private helper(owner: number, origin: RuleOrigin, span: Span, alts: Sym[][]): number {
    const id = this.rules.length;
    if (id + 1 > this.limits.maxRules) throw new SpecLimitError("maxRules", id + 1, this.limits.maxRules, span);
    this.rules.push({ name: this.names.fresh(this.rules[owner]!.name), alts: [], origin, owner, span });
    this.setAlts(id, alts);
    return id;
  }

  private seq(s: GSeq, owner: number): Sym[] {
    const out: Sym[] = [];
    for (const it of s.items) append(out, this.item(it, owner));
    return out;
  }

  /** The alternatives an element stands for (used when it becomes a rule of its own). */
  private altsOf(e: GExpr, owner: number): Sym[][] {
    if (e.kind === "class" || e.kind === "any") return this.classAlts(e);
    if (e.kind === "group") return e.alts.map((a) => this.seq(a, owner));
    if (isStarOrOpt(e)) {
      // `r ::= S*` is r ::= S r | ε and `r ::= S?` is r ::= S | ε: the rule is its own helper.
      const body = this.item(e.body, owner);
      if (body.length === 0) return [[]];
      return e.max === null ? [[...body, ruleSym(owner)], []] : [body, []];
    }
    return [this.item(e, owner)];
  }

  /** The symbols an element contributes to the sequence it appears in. */
  private item(e: GExpr, owner: number): Sym[] {
    switch (e.kind) {
      case "literal": {
        const out: Sym[] = [];
        for (const cp of e.codePoints) for (const b of encodeUtf8(cp)) out.push(byteLit(b));
        return out;
      }
      case "class":
      case "any": {
        // A class written as before is the helper it became then (its UTF-8 sequences are not
        // computed and keyed again: a JSON Schema grammar writes the string character class many
        // times, and that was a fifth of the lowering).
        const written = e.kind === "any" ? "." : e.text;
        const known = this.classWritten.get(written);
        if (known !== undefined) return typeof known === "number" ? [ruleSym(known)] : known.slice();
        const set = this.classSet(e);
        // A class that needs several byte sequences becomes one helper, shared by every use of its
        // set of characters (which its sequences are a function of).
        const key = set.join(";");
        let h = this.classHelpers.get(key);
        if (h === undefined) {
          const alts = this.classAlts(e, set);
          if (alts.length === 0) return [];
          if (alts.length === 1) {
            this.classWritten.set(written, alts[0]!);
            return alts[0]!.slice();
          }
          this.classHelpers.set(key, (h = this.helper(owner, "class", e.span, alts)));
        }
        this.classWritten.set(written, h);
        return [ruleSym(h)];
      }
      case "ref": {
        const id = this.ids.get(e.name);
        if (id === undefined) {
          this.errors.push(new SpecError("E0705", `undefined rule ${e.name}`, e.span,
            suggest(e.name, [...this.ids.keys()]) ?? `define it: ${e.name} ::= …`));
          return [];
        }
        return [ruleSym(id)];
      }
      case "group": {
        if (e.alts.length === 1) return this.seq(e.alts[0]!, owner);
        return [ruleSym(this.helper(owner, "group", e.span, e.alts.map((a) => this.seq(a, owner))))];
      }
      case "repeat":
        return this.repeat(e, owner);
    }
  }

  private repeat(e: Extract<GExpr, { kind: "repeat" }>, owner: number): Sym[] {
    const { min, max } = e;
    if (max !== null && max < min) {
      this.errors.push(new SpecError("E0707", `bad repetition bounds ${e.op}: the minimum ${min} is larger than the maximum ${max}`, e.opSpan,
        `write {${max},${min}}`));
      return [];
    }
    // Nested repetitions simplified first (simplifyRepeat): exact, and it keeps llama.cpp's "hang"
    // test grammar (((([^x]*){0,99}){0,99})…) and its kin linear instead of a product of levels.
    const simple = simplifyRepeat(e);
    if (simple !== e) return this.item(simple, owner);
    const biggest = Math.max(min, max ?? 0);
    if (biggest > this.limits.maxRepeat) throw new SpecLimitError("maxRepeat", biggest, this.limits.maxRepeat, e.opSpan);
    const body = this.item(e.body, owner);
    if (body.length === 0) return []; // ε repeated is ε (an error, if any, is already recorded)
    // The expansion's size, checked before it is built.
    const size = body.length * min + (max === null ? body.length + 2 : (max - min) * (body.length + 3));
    if (this.symbols + size > this.limits.maxSymbols) throw new SpecLimitError("maxSymbols", this.symbols + size, this.limits.maxSymbols, e.opSpan);
    const out: Sym[] = [];
    for (let k = 0; k < min; k++) append(out, body);
    if (max === null) {
      const h = this.helper(owner, "repeat", e.span, []);
      this.setAlts(h, [[...body, ruleSym(h)], []]);
      out.push(ruleSym(h));
    } else if (max > min) {
      let tail: number | undefined;
      for (let k = 0; k < max - min; k++) {
        tail = this.helper(owner, "repeat", e.span, [tail === undefined ? [...body] : [...body, ruleSym(tail)], []]);
      }
      out.push(ruleSym(tail!));
    }
    return out;
  }

  /** The characters a class matches, normalized. */
  private classSet(e: Extract<GExpr, { kind: "class" | "any" }>): CpRange[] {
    if (e.kind === "any") return complementCodePoints([]);
    return e.negated ? complementCodePoints(e.ranges) : normalizeCodePoints(e.ranges);
  }

  private classAlts(e: Extract<GExpr, { kind: "class" | "any" }>, set = this.classSet(e)): Sym[][] {
    if (set.length === 0) {
      this.errors.push(new SpecError("E0708", e.kind === "class" && e.negated
        ? "this negated character class excludes every character, so it matches nothing"
        : "empty character class: it matches nothing", e.span,
      "a class lists the characters it matches, e.g. [a-z0-9]"));
      return [];
    }
    const seqs = utf8Sequences(set);
    const single = seqs.filter((s) => s.length === 1).map((s) => s[0]!);
    const alts: Sym[][] = [];
    if (single.length > 0) alts.push([byteSym(single)]);
    for (const s of seqs) if (s.length > 1) alts.push(s.map((r) => byteSym([r])));
    return alts;
  }
}
