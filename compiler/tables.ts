/**
 * @fileoverview Serialization of a ByteDfa (plus its spec states) into the binary table format of
 * docs/abi.md, and the validating parser for it.
 *
 * The tables are what the WebAssembly runtime reads at TABLE_BASE; `parseTables` is used by the
 * bindings (to validate a .wasm's tables once, so that the runtime never reads out of bounds) and by
 * the tests (round trip). Output is deterministic: same input, same bytes.
 */

import { TOKEN_BYTES } from "./tokens.js";
import { SpecLimitError } from "./diagnostics.js";
import { IdTable } from "./grammar/id-table.js";
import type { ByteDfa, StateIR } from "./ir.js";

/** Address of the tables in linear memory. */
export const TABLE_BASE = 16;
export const TABLES_MAGIC = 0x43435053; // bytes "S P C C"
export const TABLES_VERSION = 3;
export const TABLES_BOM = 0xfeff;
export const HEADER_SIZE = 64;
/** The runtime's static data starts at 2 MiB; the tables live in [TABLE_BASE, 2 MiB). */
export const MAX_TABLES_BYTES = 2 * 1024 * 1024 - TABLE_BASE;
/** u16 entries use 0xFFFF as "none", so counts must stay below it. */
export const MAX_U16_COUNT = 0xffff;
const NONE16 = 0xffff;
const SPEC_RECORD = 20;
const KNOWN_STATE_FLAGS = 0x7;
/** Spec-state flags: bit 0 env-input, bit 1 token marker, bits 8–15 the token marker's byte. */
const KNOWN_SPEC_FLAGS = 0xff03;

/**
 * The tables would not fit the runtime (`E0502 table size limit`). A `SpecLimitError` of the
 * diagnostics catalog (so `formatDiagnostic` prints it), with code E0502 instead of E0501: unlike
 * the compile limits this one cannot be raised by an option.
 */
export class TableLimitError extends SpecLimitError {
  override readonly code = "E0502" as const;
  override readonly hint: string;
  /**
   * @param limit which limit: "states", "spec states" or "table bytes"
   * @param value the value that exceeded it; `max` the largest allowed value
   */
  constructor(limit: string, value: number, max: number, message: string) {
    super(limit, value, max, null);
    this.name = "TableLimitError";
    this.message = `table size limit: ${message}`;
    this.hint = "the runtime keeps the tables below 2 MiB with u16 state numbers: simplify the spec (fewer states, fewer distinct byte classes)";
  }
}

/** What `parseTables` gives back for each spec state. */
export interface TableSpecState {
  name: string;
  marker: string;
  env: boolean;
  /** A token marker (`(:token ...)`): the byte the automaton reads for it (compiler/tokens.ts); `marker` is its text. */
  tokenByte?: number;
}

const align4 = (n: number): number => (n + 3) & ~3;

function checkDfa(dfa: ByteDfa, nSpec: number): void {
  const bad = (what: string): never => {
    throw new Error(`serializeTables: malformed ByteDfa: ${what}`);
  };
  const { nStates, nClasses } = dfa;
  if (!Number.isInteger(nStates) || nStates < 1) bad(`nStates = ${nStates}`);
  if (!Number.isInteger(nClasses) || nClasses < 1 || nClasses > 256) bad(`nClasses = ${nClasses}`);
  if (dfa.classMap.length !== 256) bad(`classMap has ${dfa.classMap.length} entries, not 256`);
  for (let b = 0; b < 256; b++) if (dfa.classMap[b]! >= nClasses) bad(`classMap[${b}] = ${dfa.classMap[b]}`);
  if (!Number.isInteger(dfa.initial) || dfa.initial < 0 || dfa.initial >= nStates) bad(`initial = ${dfa.initial}`);
  if (dfa.trans.length !== nStates * nClasses) bad(`trans has ${dfa.trans.length} entries`);
  for (let i = 0; i < dfa.trans.length; i++) {
    const t = dfa.trans[i]!;
    if (t < -1 || t >= nStates) bad(`trans[${i}] = ${t}`);
  }
  if (dfa.calls) {
    if (dfa.calls.length !== nStates) bad(`calls has ${dfa.calls.length} entries`);
    for (let s = 0; s < nStates; s++) {
      for (const [st, rt] of dfa.calls[s]!) if (!(st >= 0 && st < nStates && rt >= 0 && rt < nStates)) bad(`calls[${s}] = [${st}, ${rt}]`);
    }
  }
  for (const [name, arr] of [["flags", dfa.flags], ["specState", dfa.specState], ["envNext", dfa.envNext]] as const) {
    if (arr.length !== nStates) bad(`${name} has ${arr.length} entries`);
  }
  if (dfa.nextMarkers.length !== nStates) bad(`nextMarkers has ${dfa.nextMarkers.length} entries`);
  for (let s = 0; s < nStates; s++) {
    if (dfa.flags[s]! & ~KNOWN_STATE_FLAGS) bad(`flags[${s}] = ${dfa.flags[s]}`);
    const sp = dfa.specState[s]!;
    if (sp < -1 || sp >= nSpec) bad(`specState[${s}] = ${sp}`);
    const en = dfa.envNext[s]!;
    if (en < -1 || en >= nStates) bad(`envNext[${s}] = ${en}`);
    for (const id of dfa.nextMarkers[s]!) {
      if (!Number.isInteger(id) || id < 0 || id >= nSpec) bad(`nextMarkers[${s}] contains ${id}`);
    }
  }
}

/**
 * Serialize `dfa` and the spec `states` (in id order) into the format of docs/abi.md.
 * Throws `TableLimitError` (a `SpecLimitError`, code E0502) when the tables would not fit the runtime's limits and a plain `Error`
 * when `dfa` is internally inconsistent (a compiler bug).
 */
export function serializeTables(dfa: ByteDfa, states: StateIR[]): Uint8Array {
  const nSpec = states.length;
  if (dfa.nStates >= MAX_U16_COUNT) {
    throw new TableLimitError(
      "states",
      dfa.nStates,
      MAX_U16_COUNT - 1,
      `the byte-level DFA has ${dfa.nStates} states; at most ${MAX_U16_COUNT - 1} fit the u16 tables`,
    );
  }
  if (nSpec >= MAX_U16_COUNT) {
    throw new TableLimitError(
      "spec states",
      nSpec,
      MAX_U16_COUNT - 1,
      `the spec has ${nSpec} states; at most ${MAX_U16_COUNT - 1} fit the u16 tables`,
    );
  }
  checkDfa(dfa, nSpec);
  const { nStates, nClasses } = dfa;

  // Deduplicate nextMarkers sets, numbered in order of first use.
  const setIndex = new Map<string, number>();
  const sets: number[][] = [];
  const stateSet = new Array<number>(nStates);
  for (let s = 0; s < nStates; s++) {
    const ids = dfa.nextMarkers[s]!;
    const key = ids.length === 0 ? "" : ids.join(",");
    let idx = setIndex.get(key);
    if (idx === undefined) {
      idx = sets.length;
      setIndex.set(key, idx);
      sets.push(ids.slice());
    }
    stateSet[s] = idx;
  }

  const enc = new TextEncoder();
  const markers = states.map((st) => enc.encode(st.marker));
  const names = states.map((st) => enc.encode(st.name));

  // Transition rows, compressed (format 2): per state a default target and the classes that differ
  // from it; identical rows are stored once. The runtime expands them into a dense table at
  // instantiation, so the file stays small and the hot path stays one load per byte.
  // Distinct rows, one after another in `pool` as u16s (default, n, n × (class, target)), row i
  // from rowStart[i] (a typed array per row, and a DataView to write and compare it, were a third
  // of this function).
  let pool = new Uint16Array(Math.max(64, 4 * nStates));
  let used = 0;
  const rowStart: number[] = [];
  const rowOf = new Int32Array(nStates);
  {
    // Rows are compared by a hash of (default, exceptions), then element by element (id-table.ts:
    // a Map of bucket arrays keyed by the hash was a fifth of this function).
    const seen = new IdTable();
    let qDef = 0, qExc = 0;
    const count = new Int32Array(nStates + 1); // per target (NONE16 counted at nStates)
    const row = new Int32Array(nClasses);
    const exc = new Int32Array(2 * nClasses); // (class, target) pairs of the row
    const trans = dfa.trans;
    const sameRow = (i: number): boolean => {
      const o = rowStart[i]!;
      if (pool[o] !== qDef || pool[o + 1] !== qExc) return false;
      for (let j = 0; j < 2 * qExc; j++) if (pool[o + 2 + j] !== exc[j]) return false;
      return true;
    };
    for (let s = 0; s < nStates; s++) {
      // The most frequent target is the default (ties: the smaller target, NONE16 largest), kept
      // as the counts grow: the target that first reaches the largest count, or a smaller one
      // that reaches it too.
      let def = NONE16, best = -1;
      for (let c = 0; c < nClasses; c++) {
        const u = trans[s * nClasses + c]!;
        const t = u < 0 ? NONE16 : u;
        row[c] = t;
        const n = ++count[u < 0 ? nStates : u]!;
        if (n > best || (n === best && t < def)) { def = t; best = n; }
      }
      let nExc = 0;
      let h = def | 0;
      for (let c = 0; c < nClasses; c++) {
        const t = row[c]!;
        count[t === NONE16 ? nStates : t] = 0;
        if (t !== def) { exc[2 * nExc] = c; exc[2 * nExc + 1] = t; nExc++; h = Math.imul(h ^ c, 0x9e3779b1) ^ t; }
      }
      h = Math.imul(h ^ nExc, 0x85ebca6b);
      qDef = def; qExc = nExc;
      let idx = seen.find(h, sameRow);
      if (idx < 0) {
        idx = rowStart.length;
        seen.add(h, idx);
        if (used + 2 + 2 * nExc > pool.length) {
          const grown = new Uint16Array(Math.max(2 * pool.length, used + 2 + 2 * nExc));
          grown.set(pool);
          pool = grown;
        }
        rowStart.push(used);
        pool[used] = def;
        pool[used + 1] = nExc;
        for (let j = 0; j < 2 * nExc; j++) pool[used + 2 + j] = exc[j]!;
        used += 2 + 2 * nExc;
      }
      rowOf[s] = idx;
    }
  }

  // Layout.
  const offClassmap = HEADER_SIZE;
  const offTrans = offClassmap + 256;
  const rowsAt = offTrans + 4 * nStates; // the rows, as they lie in the pool
  const offInfo = align4(rowsAt + 2 * used);
  const offSets = offInfo + 8 * nStates;
  let p = offSets + 4 * sets.length;
  const setOffs = sets.map((ids) => {
    const o = p;
    p += 2 + 2 * ids.length;
    return o;
  });
  const offSpec = align4(p);
  p = offSpec + SPEC_RECORD * nSpec;
  // Call edges (format 3, pushdown grammars only): u32 index[nStates + 1] into (u16 start, u16 ret) pairs.
  const callPairs = dfa.calls ? dfa.calls.reduce((n, c) => n + c.length, 0) : 0;
  const offCalls = callPairs > 0 ? p : 0;
  if (callPairs > 0) p += 4 * (nStates + 1) + 4 * callPairs;
  const strOffs = states.map((_, i) => {
    const m = p;
    p += markers[i]!.length;
    const n = p;
    p += names[i]!.length;
    return [m, n] as const;
  });
  const total = align4(p);
  if (total > MAX_TABLES_BYTES) {
    throw new TableLimitError(
      "table bytes",
      total,
      MAX_TABLES_BYTES,
      `the tables need ${total} bytes (${nStates} states × ${nClasses} byte classes); the limit is ${MAX_TABLES_BYTES} bytes (2 MiB - 16)`,
    );
  }

  const out = new Uint8Array(total);
  const v = new DataView(out.buffer);
  v.setUint32(0, TABLES_MAGIC, true);
  v.setUint16(4, TABLES_VERSION, true);
  v.setUint16(6, TABLES_BOM, true);
  v.setUint32(8, total, true);
  v.setUint32(12, nStates, true);
  v.setUint32(16, nClasses, true);
  v.setUint32(20, dfa.initial, true);
  v.setUint32(24, nSpec, true);
  v.setUint32(28, offClassmap, true);
  v.setUint32(32, offTrans, true);
  v.setUint32(36, offInfo, true);
  v.setUint32(40, offSets, true);
  v.setUint32(44, sets.length, true);
  v.setUint32(48, offSpec, true);
  v.setUint32(52, offCalls, true);
  v.setUint32(56, callPairs, true);
  // 60..63 reserved, already 0.
  if (callPairs > 0) {
    let k = 0;
    const pairs = offCalls + 4 * (nStates + 1);
    for (let s = 0; s < nStates; s++) {
      v.setUint32(offCalls + 4 * s, k, true);
      for (const [st, rt] of dfa.calls![s]!) { v.setUint16(pairs + 4 * k, st, true); v.setUint16(pairs + 4 * k + 2, rt, true); k++; }
    }
    v.setUint32(offCalls + 4 * nStates, k, true);
  }

  out.set(dfa.classMap, offClassmap);
  for (let s = 0; s < nStates; s++) v.setUint32(offTrans + 4 * s, rowsAt + 2 * rowStart[rowOf[s]!]!, true);
  for (let i = 0; i < used; i++) { out[rowsAt + 2 * i] = pool[i]! & 0xff; out[rowsAt + 2 * i + 1] = pool[i]! >>> 8; }
  for (let s = 0; s < nStates; s++) {
    const o = offInfo + 8 * s;
    const sp = dfa.specState[s]!;
    const en = dfa.envNext[s]!;
    v.setUint16(o, dfa.flags[s]!, true);
    v.setUint16(o + 2, sp < 0 ? NONE16 : sp, true);
    v.setUint16(o + 4, en < 0 ? NONE16 : en, true);
    v.setUint16(o + 6, stateSet[s]!, true);
  }
  sets.forEach((ids, k) => {
    const o = setOffs[k]!;
    v.setUint32(offSets + 4 * k, o, true);
    v.setUint16(o, ids.length, true);
    ids.forEach((id, j) => v.setUint16(o + 2 + 2 * j, id, true));
  });
  states.forEach((st, i) => {
    const o = offSpec + SPEC_RECORD * i;
    const [mOff, nOff] = strOffs[i]!;
    v.setUint32(o, mOff, true);
    v.setUint32(o + 4, markers[i]!.length, true);
    v.setUint32(o + 8, nOff, true);
    v.setUint32(o + 12, names[i]!.length, true);
    v.setUint32(o + 16, (st.env ? 1 : 0) | (st.tokenByte !== undefined ? 2 | (st.tokenByte << 8) : 0), true);
    out.set(markers[i]!, mOff);
    out.set(names[i]!, nOff);
  });
  return out;
}

/**
 * Parse and fully validate tables (exactly `total length` bytes, starting at the magic). Every
 * count, offset, length and table entry is checked; malformed input throws an `Error` that says
 * what is wrong, never reads out of bounds.
 */
export function parseTables(bytes: Uint8Array): { dfa: ByteDfa; states: TableSpecState[] } {
  const fail = (msg: string): never => {
    throw new Error(`invalid specc tables: ${msg}`);
  };
  const len = bytes.length;
  if (len < 4) fail(`truncated: ${len} bytes, the header alone needs ${HEADER_SIZE}`);
  const v = new DataView(bytes.buffer, bytes.byteOffset, len);
  const magic = v.getUint32(0, true);
  if (magic !== TABLES_MAGIC) {
    fail(`bad magic 0x${magic.toString(16).padStart(8, "0")} (expected 0x${TABLES_MAGIC.toString(16)}, "SPCC")`);
  }
  if (len < HEADER_SIZE) fail(`truncated: ${len} bytes, the header alone needs ${HEADER_SIZE}`);
  const bom = v.getUint16(6, true);
  if (bom === 0xfffe) fail("byte-order mark reads 0xFFFE: the tables were written with the wrong byte order");
  if (bom !== TABLES_BOM) fail(`bad byte-order mark 0x${bom.toString(16)} (expected 0xFEFF)`);
  const version = v.getUint16(4, true);
  if (version !== TABLES_VERSION) fail(`format version ${version}, this specc reads version ${TABLES_VERSION}`);
  const total = v.getUint32(8, true);
  if (total > MAX_TABLES_BYTES) fail(`total length ${total} exceeds the limit of ${MAX_TABLES_BYTES} bytes`);
  if (len < total) fail(`truncated: the header says ${total} bytes, got ${len}`);
  if (len > total) fail(`${len - total} trailing bytes after the ${total} bytes the header announces`);
  for (let o = 60; o < HEADER_SIZE; o += 4) if (v.getUint32(o, true) !== 0) fail(`reserved header word at ${o} is not 0`);

  const nStates = v.getUint32(12, true);
  const nClasses = v.getUint32(16, true);
  const initial = v.getUint32(20, true);
  const nSpec = v.getUint32(24, true);
  const offClassmap = v.getUint32(28, true);
  const offTrans = v.getUint32(32, true);
  const offInfo = v.getUint32(36, true);
  const offSets = v.getUint32(40, true);
  const nSets = v.getUint32(44, true);
  const offSpec = v.getUint32(48, true);
  if (nStates < 1 || nStates >= MAX_U16_COUNT) fail(`nStates = ${nStates} (must be 1..${MAX_U16_COUNT - 1})`);
  if (nClasses < 1 || nClasses > 256) fail(`nClasses = ${nClasses} (must be 1..256)`);
  if (initial >= nStates) fail(`initial state ${initial} >= nStates ${nStates}`);
  if (nSpec >= MAX_U16_COUNT) fail(`nSpec = ${nSpec} (must be < ${MAX_U16_COUNT})`);
  if (nSets < 1 || nSets > nStates) fail(`nSets = ${nSets} (must be 1..nStates)`);

  /** [off, off + size) must lie inside the tables, after the header. */
  const region = (what: string, off: number, size: number): void => {
    if (off < HEADER_SIZE || off + size > total) {
      fail(`${what} [${off}, ${off + size}) lies outside the tables [${HEADER_SIZE}, ${total})`);
    }
  };
  region("classmap", offClassmap, 256);
  region("transition rows", offTrans, 4 * nStates);
  region("state info", offInfo, 8 * nStates);
  region("set offsets", offSets, 4 * nSets);
  region("spec records", offSpec, SPEC_RECORD * nSpec);

  const offCalls = v.getUint32(52, true);
  const nCallPairs = v.getUint32(56, true);
  if ((offCalls === 0) !== (nCallPairs === 0)) fail(`call table offset ${offCalls} with ${nCallPairs} call pairs`);
  if (nCallPairs > 0) region("call table", offCalls, 4 * (nStates + 1) + 4 * nCallPairs);

  const classMap = bytes.slice(offClassmap, offClassmap + 256);
  for (let b = 0; b < 256; b++) if (classMap[b]! >= nClasses) fail(`classmap[${b}] = ${classMap[b]} >= nClasses ${nClasses}`);

  const trans = new Int32Array(nStates * nClasses);
  // (Messages are built only on failure: this loop runs over every transition at each Spec.load.)
  const target = (t: number, s: number, c: number): number => {
    if (t === NONE16) return -1;
    if (t >= nStates) fail(`${c < 0 ? `the default transition of state ${s}` : `transition ${s}/${c}`} goes to state ${t} >= nStates ${nStates}`);
    return t;
  };
  for (let s = 0; s < nStates; s++) {
    const o = v.getUint32(offTrans + 4 * s, true);
    if (o < HEADER_SIZE || o + 4 > total) region(`row of state ${s}`, o, 4);
    const def = target(v.getUint16(o, true), s, -1);
    const nExc = v.getUint16(o + 2, true);
    if (o + 4 + 4 * nExc > total) region(`row of state ${s}`, o, 4 + 4 * nExc);
    trans.fill(def, s * nClasses, (s + 1) * nClasses);
    for (let j = 0; j < nExc; j++) {
      const c = v.getUint16(o + 4 + 4 * j, true);
      if (c >= nClasses) fail(`row of state ${s} names class ${c} >= nClasses ${nClasses}`);
      trans[s * nClasses + c] = target(v.getUint16(o + 6 + 4 * j, true), s, c);
    }
  }

  const sets: number[][] = [];
  for (let k = 0; k < nSets; k++) {
    const o = v.getUint32(offSets + 4 * k, true);
    if (o < HEADER_SIZE || o + 2 > total) region(`set ${k} header`, o, 2);
    const count = v.getUint16(o, true);
    if (o + 2 + 2 * count > total) region(`set ${k}`, o, 2 + 2 * count);
    const ids: number[] = [];
    for (let j = 0; j < count; j++) {
      const id = v.getUint16(o + 2 + 2 * j, true);
      if (id >= nSpec) fail(`set ${k} contains spec state ${id} >= nSpec ${nSpec}`);
      ids.push(id);
    }
    sets.push(ids);
  }

  const flags = new Uint8Array(nStates);
  const specState = new Int32Array(nStates);
  const envNext = new Int32Array(nStates);
  const nextMarkers: number[][] = [];
  for (let s = 0; s < nStates; s++) {
    const o = offInfo + 8 * s;
    const f = v.getUint16(o, true);
    if (f & ~KNOWN_STATE_FLAGS) fail(`state ${s} has unknown flag bits 0x${f.toString(16)}`);
    flags[s] = f;
    const sp = v.getUint16(o + 2, true);
    if (sp !== NONE16 && sp >= nSpec) fail(`state ${s} has spec state ${sp} >= nSpec ${nSpec}`);
    specState[s] = sp === NONE16 ? -1 : sp;
    const en = v.getUint16(o + 4, true);
    if (en !== NONE16 && en >= nStates) fail(`state ${s} has envNext ${en} >= nStates ${nStates}`);
    envNext[s] = en === NONE16 ? -1 : en;
    const set = v.getUint16(o + 6, true);
    if (set >= nSets) fail(`state ${s} uses set ${set} >= nSets ${nSets}`);
    nextMarkers.push(sets[set]!.slice());
  }

  let calls: [number, number][][] | undefined;
  if (nCallPairs > 0) {
    calls = [];
    const pairs = offCalls + 4 * (nStates + 1);
    let prev = 0;
    for (let s = 0; s < nStates; s++) {
      const a = v.getUint32(offCalls + 4 * s, true);
      const b = v.getUint32(offCalls + 4 * s + 4, true);
      if (a !== prev || b < a || b > nCallPairs) fail(`call index of state ${s} is [${a}, ${b}) (must continue at ${prev}, within ${nCallPairs})`);
      prev = b;
      const list: [number, number][] = [];
      for (let k = a; k < b; k++) {
        const st = v.getUint16(pairs + 4 * k, true);
        const rt = v.getUint16(pairs + 4 * k + 2, true);
        if (st >= nStates || rt >= nStates) fail(`call ${k} of state ${s} names state ${Math.max(st, rt)} >= nStates ${nStates}`);
        list.push([st, rt]);
      }
      calls.push(list);
    }
    if (prev !== nCallPairs) fail(`the call index ends at ${prev}, not at ${nCallPairs}`);
  }

  const dec = new TextDecoder("utf-8", { fatal: true });
  const str = (what: string, off: number, size: number): string => {
    region(what, off, size);
    try {
      return dec.decode(bytes.subarray(off, off + size));
    } catch {
      return fail(`${what} is not valid UTF-8`);
    }
  };
  const states: TableSpecState[] = [];
  for (let i = 0; i < nSpec; i++) {
    const o = offSpec + SPEC_RECORD * i;
    const marker = str(`marker of spec state ${i}`, v.getUint32(o, true), v.getUint32(o + 4, true));
    const name = str(`name of spec state ${i}`, v.getUint32(o + 8, true), v.getUint32(o + 12, true));
    const sf = v.getUint32(o + 16, true);
    if (sf & ~KNOWN_SPEC_FLAGS) fail(`spec state ${i} has unknown flag bits 0x${sf.toString(16)}`);
    const tokenByte = sf & 2 ? sf >>> 8 : undefined;
    if (tokenByte === undefined ? sf >>> 8 !== 0 : !TOKEN_BYTES.includes(tokenByte)) fail(`spec state ${i} has a bad token-marker byte 0x${(sf >>> 8).toString(16)}`);
    states.push({ name, marker, env: (sf & 1) !== 0, ...(tokenByte === undefined ? {} : { tokenByte }) });
  }

  return {
    dfa: { nStates, nClasses, classMap, initial, trans, flags, specState, envNext, nextMarkers, ...(calls ? { calls } : {}) },
    states,
  };
}
