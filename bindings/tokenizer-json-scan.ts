/**
 * @fileoverview Reads the parts of a tokenizer.json's bytes that a Vocabulary needs, skipping the
 * BPE `model.merges` list without building it. The merges are most of the file (Llama 3: 6 of
 * 9 MB; Gemma 3: most of 33 MB) and parsing them into strings was most of the time to load a
 * vocabulary. Each value kept is parsed by JSON.parse from its own slice (the vocab by a scanner of
 * its own); the skipped merges are not checked beyond where they end (`mergesEndAtTail`): specc
 * does not use them. Anything unexpected returns undefined, and the caller parses the whole text
 * (which also gives the precise JSON error).
 */

const QUOTE = 0x22, BACKSLASH = 0x5c, LBRACE = 0x7b, RBRACE = 0x7d, LBRACKET = 0x5b, RBRACKET = 0x5d, COMMA = 0x2c, COLON = 0x3a;

class Unexpected extends Error {}

function ws(b: Uint8Array, i: number): number {
  for (let c = b[i]; c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09; c = b[++i]);
  return i;
}

/** The index after the string starting at `i` (b[i] is a quote). A plain loop: faster than indexOf here. */
function skipString(b: Uint8Array, i: number): number {
  const n = b.length;
  for (let j = i + 1; j < n; j++) {
    const c = b[j];
    if (c === QUOTE) return j + 1;
    if (c === BACKSLASH) j++;
  }
  throw new Unexpected();
}

/** The index after the value starting at `i`. */
function skipValue(b: Uint8Array, i: number): number {
  const c = b[i];
  if (c === QUOTE) return skipString(b, i);
  if (c === LBRACE || c === LBRACKET) {
    // One flat loop (strings inline): this runs cold over megabytes, so it must be simple to JIT.
    const n = b.length;
    let depth = 0;
    while (i < n) {
      const x = b[i++]!;
      if (x === QUOTE) {
        while (i < n) {
          const y = b[i++]!;
          if (y === QUOTE) break;
          if (y === BACKSLASH) i++;
        }
      } else if (x === LBRACE || x === LBRACKET) depth++;
      else if (x === RBRACE || x === RBRACKET) { if (--depth === 0) return i; }
    }
    throw new Unexpected();
  }
  const start = i;
  for (let x = b[i]; x !== undefined && x !== COMMA && x !== RBRACE && x !== RBRACKET && x !== 0x20 && x !== 0x0a && x !== 0x0d && x !== 0x09; x = b[++i]);
  if (i === start) throw new Unexpected();
  return i;
}

/**
 * Calls `each(key, start, end)` for the members of the object at `i`; returns the index after it.
 * `end(key, start)` may give a value's end without walking it (-1: walk it).
 */
function members(b: Uint8Array, i: number, dec: TextDecoder, each: (key: string, start: number, end: number) => void, end?: (key: string, start: number) => number): number {
  if (b[i] !== LBRACE) throw new Unexpected();
  i = ws(b, i + 1);
  if (b[i] === RBRACE) return i + 1;
  for (;;) {
    if (b[i] !== QUOTE) throw new Unexpected();
    const ke = skipString(b, i);
    const key = JSON.parse(dec.decode(b.subarray(i, ke))) as string;
    if (key === "__proto__") throw new Unexpected(); // JSON.parse makes it an own property; assignment would not
    i = ws(b, ke);
    if (b[i] !== COLON) throw new Unexpected();
    const vs = ws(b, i + 1);
    const known = end ? end(key, vs) : -1;
    const ve = known >= 0 ? known : skipValue(b, vs);
    each(key, vs, ve);
    i = ws(b, ve);
    if (b[i] === COMMA) { i = ws(b, i + 1); continue; }
    if (b[i] === RBRACE) return i + 1;
    throw new Unexpected();
  }
}

/**
 * Where the merges list starting at `start` ends, without walking its megabytes (a cold walk costs
 * ~100 ms on Llama 3), when the file has the layout the tokenizers library writes: `merges` last
 * in `model`, `model` last in the file, so the file ends `] } }` and the last `]` closes the merges.
 * Checked: the list opens with `[` and its last element closes with `"` or `]`. Otherwise -1 (walk it).
 */
function mergesEndAtTail(b: Uint8Array, start: number): number {
  if (b[start] !== LBRACKET) return -1;
  let i = b.length - 1;
  const back = () => { while (i > start && (b[i] === 0x20 || b[i] === 0x0a || b[i] === 0x0d || b[i] === 0x09)) i--; };
  back();
  if (b[i] !== RBRACE) return -1;
  i--; back();
  if (b[i] !== RBRACE) return -1;
  i--; back();
  if (b[i] !== RBRACKET) return -1;
  const close = i;
  i--; back();
  if (b[i] !== QUOTE && b[i] !== RBRACKET && i !== start) return -1;
  return close + 1;
}

/**
 * The tokenizer.json in `bytes` as an object without `model.merges`, or undefined when it does
 * not look like a JSON object (the caller then parses it whole and reports the error).
 */
/** Ids from here on are left to the full parse, whose builder refuses them (vocab.ts MAX_VOCAB_SIZE). */
const SCAN_MAX_ID = 1 << 24;

export function scanTokenizerJson(bytes: Uint8Array): Record<string, unknown> | undefined {
  const dec = new TextDecoder();
  const parse = (s: number, e: number): unknown => JSON.parse(dec.decode(bytes.subarray(s, e)));
  try {
    let i = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
    const root: Record<string, unknown> = {};
    // `model` is read member by member where it starts (walking past it first would walk the
    // merges, most of the file: 30 of Gemma 3's 33 MB).
    let model: Record<string, unknown> | undefined;
    i = members(bytes, ws(bytes, i), dec, (key, s, e) => {
      root[key] = key === "model" && model ? model : parse(s, e);
    }, (key, s) => {
      if (key === "model") model = undefined; // a later "model" wins, as in JSON.parse
      if (key !== "model" || bytes[s] !== LBRACE) return -1;
      const m: Record<string, unknown> = {};
      let raw: RawVocab | undefined;
      const end = members(bytes, s, dec, (k, ms, me) => {
        if (k === "merges") return;
        m[k] = k === "vocab" && raw ? raw : parse(ms, me);
      }, (k, ms) => {
        if (k === "merges" && m["vocab"] !== undefined) return mergesEndAtTail(bytes, ms);
        if (k === "vocab" && bytes[ms] === LBRACE) { const r = scanRawVocab(bytes, ms); raw = r.vocab; return r.end; }
        return -1;
      });
      model = m;
      return end;
    });
    if (ws(bytes, i) !== bytes.length) return undefined;
    return root;
  } catch (e) {
    if (e instanceof Unexpected || e instanceof SyntaxError) return undefined;
    throw e;
  }
}

/**
 * A BPE `model.vocab` (`{"piece": id, ...}`) left as byte ranges of the file: no 100k-key object
 * (slow to create and to enumerate), no strings. vocab.ts turns a piece's UTF-8 bytes into token
 * bytes directly; `piece(id)` decodes one where a string is needed.
 */
export class RawVocab {
  private readonly dec = new TextDecoder();
  constructor(
    readonly data: Uint8Array,
    /** Byte range of each id's key (inside the quotes); start -1: no such id. */
    readonly start: Int32Array,
    readonly end: Uint32Array,
    /** 1 where the key has a backslash escape (decode it with `piece`). */
    readonly escaped: Uint8Array,
  ) {}

  get size(): number { return this.start.length; }

  piece(id: number): string | undefined {
    const s = this.start[id]!;
    if (s < 0) return undefined;
    const raw = this.dec.decode(this.data.subarray(s, this.end[id]));
    return this.escaped[id] ? (JSON.parse(`"${raw}"`) as string) : raw;
  }

  /** The id of the key equal to `name`, or -1. */
  find(name: string): number {
    const want = new TextEncoder().encode(name);
    for (let id = 0; id < this.start.length; id++) {
      const s = this.start[id]!;
      if (s < 0) continue;
      if (this.escaped[id]) { if (this.piece(id) === name) return id; continue; }
      if (this.end[id]! - s !== want.length) continue;
      let k = 0;
      while (k < want.length && this.data[s + k] === want[k]) k++;
      if (k === want.length) return id;
    }
    return -1;
  }
}

/** Scans the vocab object at `i`: its raw vocabulary and the index after it. */
function scanRawVocab(b: Uint8Array, i: number): { vocab: RawVocab; end: number } {
  const n = b.length;
  // Typed arrays grown by doubling: pushing 4 × 262k numbers onto plain arrays cost Gemma 3 55 ms.
  let cap = 1 << 15;
  let starts = new Uint32Array(cap), ends = new Uint32Array(cap), ids = new Uint32Array(cap), esc = new Uint8Array(cap);
  const grow = <T extends Uint32Array | Uint8Array>(a: T): T => { const g = new (a.constructor as new (n: number) => T)(cap); g.set(a); return g; };
  let count = 0;
  const sp = (j: number) => { for (let c = b[j]; c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09; c = b[++j]); return j; };
  i = sp(i + 1);
  let max = -1;
  if (b[i] !== RBRACE) {
    for (;;) {
      if (b[i] !== QUOTE) throw new Unexpected();
      let j = i + 1;
      let e = 0;
      for (;; j++) {
        if (j >= n) throw new Unexpected();
        const c = b[j];
        if (c === QUOTE) break;
        if (c === BACKSLASH) { e = 1; j++; }
      }
      if (count === cap) {
        cap *= 2;
        starts = grow(starts); ends = grow(ends); ids = grow(ids); esc = grow(esc);
      }
      starts[count] = i + 1;
      ends[count] = j;
      esc[count] = e;
      i = sp(j + 1);
      if (b[i] !== COLON) throw new Unexpected();
      i = sp(i + 1);
      let id = 0;
      const start = i;
      for (let c = b[i]!; c >= 0x30 && c <= 0x39; c = b[++i]!) id = id * 10 + (c - 0x30);
      // Anything but a plain non-negative integer (a leading zero, a fraction, a huge number) is
      // left to the full parse and the builder's checks.
      if (i === start || i - start > 9 || (b[start] === 0x30 && i - start > 1)) throw new Unexpected();
      // An id beyond any vocabulary (the builder refuses those) must not size the arrays below.
      if (id >= SCAN_MAX_ID) throw new Unexpected();
      ids[count++] = id;
      if (id > max) max = id;
      i = sp(i);
      if (b[i] === COMMA) { i = sp(i + 1); continue; }
      if (b[i] === RBRACE) break;
      throw new Unexpected();
    }
  }
  const start = new Int32Array(max + 1).fill(-1);
  const end = new Uint32Array(max + 1);
  const escaped = new Uint8Array(max + 1);
  // An id twice: the later key wins, as when enumerating the parsed object. (A key twice keeps
  // both ids here where JSON.parse keeps the last; tokenizers never write one.)
  for (let k = 0; k < count; k++) {
    const id = ids[k]!;
    start[id] = starts[k]!;
    end[id] = ends[k]!;
    escaped[id] = esc[k]!;
  }
  const vocab = new RawVocab(b, start, end, escaped);
  // Keys with escapes are decoded lazily; a malformed escape must fail here, inside the scan's
  // error handling (then the whole-file parse words the error), not later.
  for (let id = 0; id <= max; id++) if (escaped[id] && start[id]! >= 0) vocab.piece(id);
  return { vocab, end: i + 1 };
}
