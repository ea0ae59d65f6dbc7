import { ensureRuntime } from "../helpers/runtime.js";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { ByteFlag, type ByteDfa, type StateIR } from "../../compiler/ir.js";
import { SpecLimitError, formatDiagnostic } from "../../compiler/diagnostics.js";
import {
  MAX_TABLES_BYTES,
  TABLE_BASE,
  TableLimitError,
  parseTables,
  serializeTables,
} from "../../compiler/tables.js";
import { emitWasm, loadRuntimeWasm } from "../../compiler/emit-wasm.js";
import { crc32, seal } from "../../compiler/seal.js";
import { crc32 as zlibCrc32 } from "node:zlib";
import { Spec, buildTokenTrie, type TokenTrie } from "../../bindings/spec.js";
import { instantiateSpec } from "../../bindings/instantiate.js";
import { Vocabulary } from "../../bindings/vocab.js";
import { compileGrammarSource, compileSource, compileToWasm } from "../../compiler/compile.js";
import { tokenizerJsonPath } from "../helpers/tokenizers.js";

// ---- A toy spec, by hand -------------------------------------------------------------------------
//
// Spec states: 0 "think" (marker "A:"), 1 "frage-ü" (marker "B:", env-input).
// Output language: "A:" [a-z ]* ( "B:" <env> " "* "A:" [a-z ]* )*, accepting after an "A:" body.
//
// Byte classes: 0 other, 1 'A', 2 'B', 3 ':', 4 a-z, 5 ' '.
// s0 -A-> s1 -:-> s2 (accepting, spec 0) [a-z ]-> s2, -B-> s3 -:-> s4 (yield, spec 1, envNext s5)
// s5 (after-env, spec 1) -' '-> s5, -A-> s6 -:-> s2.

const CA = 1, CB = 2, COLON = 3, LOWER = 4, SPACE = 5; // class 0: every other byte
const N_CLASSES = 6;

function toyDfa(): ByteDfa {
  const classMap = new Uint8Array(256);
  classMap["A".charCodeAt(0)] = CA;
  classMap["B".charCodeAt(0)] = CB;
  classMap[":".charCodeAt(0)] = COLON;
  for (let b = 0x61; b <= 0x7a; b++) classMap[b] = LOWER;
  classMap[0x20] = SPACE;
  const nStates = 7;
  const trans = new Int32Array(nStates * N_CLASSES).fill(-1);
  const t = (s: number, c: number, to: number): void => {
    trans[s * N_CLASSES + c] = to;
  };
  t(0, CA, 1);
  t(1, COLON, 2);
  t(2, LOWER, 2);
  t(2, SPACE, 2);
  t(2, CB, 3);
  t(3, COLON, 4);
  t(5, SPACE, 5);
  t(5, CA, 6);
  t(6, COLON, 2);
  return {
    nStates,
    nClasses: N_CLASSES,
    classMap,
    initial: 0,
    trans,
    flags: Uint8Array.from([0, 0, ByteFlag.Accepting, 0, ByteFlag.Yield, ByteFlag.AfterEnv, 0]),
    specState: Int32Array.from([-1, -1, 0, 0, 1, 1, 1]),
    envNext: Int32Array.from([-1, -1, -1, -1, 5, -1, -1]),
    nextMarkers: [[0], [0], [1], [1], [], [0], [0]],
  };
}

const span = { file: "toy.spec", line: 1, col: 1, offset: 0, end: 0 };
function toyStates(): StateIR[] {
  return [
    { id: 0, name: "think", marker: "A:", env: false, content: { kind: "any" }, span },
    { id: 1, name: "frage-ü", marker: "B:", env: true, content: { kind: "any" }, span },
  ];
}

const TOY_NAMES = ["think", "frage-ü"];

/** A minimal module: one memory of one page, exported as "memory"; optional data-count section. */
function tinyModule(withDataCount: boolean): Uint8Array {
  const memory = [5, 3, 1, 0x00, 1];
  const exp = [7, 10, 1, 6, ..."memory".split("").map((c) => c.charCodeAt(0)), 2, 0];
  const dataCount = withDataCount ? [12, 1, 0] : [];
  const custom = [0, 5, 4, ..."name".split("").map((c) => c.charCodeAt(0))]; // empty "name" section
  return Uint8Array.from([0, 97, 115, 109, 1, 0, 0, 0, ...memory, ...exp, ...dataCount, ...custom]);
}

const ABI1_EXPORTS = [
  "abi_version", "tables_ok", "buf_ptr", "buf_cap", "state_count", "class_count", "initial_state",
  "spec_count", "step", "state_flags", "state_spec", "state_env_next", "next_count", "next_at",
  "spec_marker_ptr", "spec_marker_len", "spec_name_ptr", "spec_name_len", "spec_flags", "m_new",
  "m_reset", "m_state", "m_set_state", "m_feed", "m_feed_env", "m_spec", "m_accepting", "m_yielding",
];
const ABI2_EXPORTS = [
  ...ABI1_EXPORTS,
  "vocab_alloc", "vocab_region", "vocab_ready", "vocab_size", "vocab_max_depth", "mask_words",
  "mask_id", "mask_ptr", "mask_at", "mask_count", "precompute_all", "out_ptr", "m_done", "m_count",
  "m_set_budget", "m_budget", "m_mask", "m_mask_ptr", "m_fill_mask", "fill_masks", "m_commit",
  "m_rollback", "m_history",
];

/**
 * A module with a memory and the given exports: `abi_version` returns `version`, every other export
 * is bound to one function that returns 1 (so `tables_ok()` says yes).
 */
function fakeSpecModule(version: number, names: string[] = ABI2_EXPORTS): Uint8Array {
  const enc = new TextEncoder();
  const section = (id: number, body: number[]): number[] => [id, ...leb(body.length), ...body];
  const leb = (n: number): number[] => (n < 128 ? [n] : [(n & 0x7f) | 0x80, ...leb(n >> 7)]);
  const name = (n: string): number[] => [n.length, ...enc.encode(n)];
  const exports = [...name("memory"), 2, 0, ...names.flatMap((n) => [...name(n), 0, n === "abi_version" ? 0 : 1])];
  // Sealed (compiler/seal.ts), as if specc had written it: the checks after the seal are under test.
  return seal(Uint8Array.from([
    0, 97, 115, 109, 1, 0, 0, 0,
    ...section(1, [1, 0x60, 0, 1, 0x7f]), // type 0: () -> i32
    ...section(3, [2, 0, 0]), // two functions of type 0
    ...section(5, [1, 0, 1]), // memory, 1 page
    ...section(7, [...leb(names.length + 1), ...exports]),
    ...section(10, [2, 4, 0, 0x41, version, 0x0b, 4, 0, 0x41, 1, 0x0b]), // i32.const version; i32.const 1
  ]));
}

/** Section ids of a module, in order. */
function sectionIds(wasm: Uint8Array): number[] {
  const ids: number[] = [];
  let p = 8;
  while (p < wasm.length) {
    ids.push(wasm[p++]!);
    let size = 0, shift = 0, b = 0;
    do {
      b = wasm[p++]!;
      size |= (b & 0x7f) << shift;
      shift += 7;
    } while (b & 0x80);
    p += size;
  }
  return ids;
}

type Exports = Record<string, (...args: number[]) => number> & { memory: WebAssembly.Memory };

async function instantiate(bytes: Uint8Array): Promise<Exports> {
  const { instance } = await WebAssembly.instantiate(new Uint8Array(bytes), {});
  return instance.exports as unknown as Exports;
}

let runtime: Uint8Array;
let tables: Uint8Array;
let wasm: Uint8Array;

beforeAll(async () => {
  await ensureRuntime();
  runtime = loadRuntimeWasm();
  tables = serializeTables(toyDfa(), toyStates());
  wasm = emitWasm(runtime, tables);
}, 60_000);

// ---- Tables ----------------------------------------------------------------------------------------

describe("serializeTables / parseTables", () => {
  it("round-trips", () => {
    const parsed = parseTables(tables);
    expect(parsed.dfa).toEqual(toyDfa());
    expect(parsed.states).toEqual(toyStates().map(({ name, marker, env }) => ({ name, marker, env })));
  });

  it("writes the header of docs/abi.md and dedupes nextMarkers sets", () => {
    const v = new DataView(tables.buffer, tables.byteOffset, tables.length);
    expect([...tables.subarray(0, 4)]).toEqual([0x53, 0x50, 0x43, 0x43]); // "SPCC"
    expect(v.getUint32(0, true)).toBe(0x43435053);
    expect(v.getUint16(4, true)).toBe(3);
    expect(v.getUint16(6, true)).toBe(0xfeff);
    expect(v.getUint32(8, true)).toBe(tables.length);
    expect(v.getUint32(12, true)).toBe(7);
    expect(v.getUint32(16, true)).toBe(N_CLASSES);
    expect(v.getUint32(24, true)).toBe(2);
    expect(v.getUint32(44, true)).toBe(3); // {0}, {1}, {}
    expect([v.getUint32(52, true), v.getUint32(56, true), v.getUint32(60, true)]).toEqual([0, 0, 0]);
  });

  it("is deterministic", () => {
    expect(serializeTables(toyDfa(), toyStates())).toEqual(tables);
  });

  it("throws E0502 when the DFA has too many states", () => {
    const nStates = 0xffff;
    const big: ByteDfa = {
      nStates,
      nClasses: 1,
      classMap: new Uint8Array(256),
      initial: 0,
      trans: new Int32Array(nStates).fill(-1),
      flags: new Uint8Array(nStates),
      specState: new Int32Array(nStates).fill(-1),
      envNext: new Int32Array(nStates).fill(-1),
      nextMarkers: Array.from({ length: nStates }, () => []),
    };
    let err: unknown;
    try {
      serializeTables(big, []);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(TableLimitError);
    expect(err).toBeInstanceOf(SpecLimitError);
    expect((err as TableLimitError).code).toBe("E0502");
    expect((err as TableLimitError).limit).toBe("states");
    expect((err as TableLimitError).value).toBe(0xffff);
    expect(formatDiagnostic(err as TableLimitError)).toMatch(/^error\[E0502\]: table size limit: .*65535 states/);
  });

  it("throws E0502 when the tables exceed 2 MiB - 16 bytes", () => {
    const nStates = 20_000;
    const nClasses = 60; // rows that all differ: ~4.8 MB of compressed transitions
    const classMap = new Uint8Array(256);
    for (let b = 0; b < 256; b++) classMap[b] = b % nClasses;
    const big: ByteDfa = {
      nStates,
      nClasses,
      classMap,
      initial: 0,
      trans: Int32Array.from({ length: nStates * nClasses }, (_, i) => (Math.floor(i / nClasses) + (i % nClasses)) % nStates),
      flags: new Uint8Array(nStates),
      specState: new Int32Array(nStates).fill(-1),
      envNext: new Int32Array(nStates).fill(-1),
      nextMarkers: Array.from({ length: nStates }, () => []),
    };
    let err: unknown;
    try {
      serializeTables(big, []);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(TableLimitError);
    expect((err as TableLimitError).code).toBe("E0502");
    expect((err as TableLimitError).limit).toBe("table bytes");
    expect((err as TableLimitError).max).toBe(MAX_TABLES_BYTES);
    expect((err as TableLimitError).value).toBeGreaterThan(MAX_TABLES_BYTES);
  });

  it("rejects a malformed ByteDfa with a plain Error", () => {
    const dfa = toyDfa();
    dfa.trans[3] = 99;
    expect(() => serializeTables(dfa, toyStates())).toThrow(/malformed ByteDfa/);
  });

  const patched = (f: (v: DataView, b: Uint8Array) => void): Uint8Array => {
    const b = tables.slice();
    f(new DataView(b.buffer), b);
    return b;
  };

  it("rejects a wrong magic", () => {
    expect(() => parseTables(patched((_, b) => (b[0] = 0x58)))).toThrow(/bad magic/);
    expect(() => parseTables(Uint8Array.from([0, 97, 115, 109, 1, 0, 0, 0]))).toThrow(/bad magic/);
  });

  it("rejects truncated input", () => {
    expect(() => parseTables(new Uint8Array(0))).toThrow(/truncated/);
    expect(() => parseTables(tables.subarray(0, 10))).toThrow(/truncated/);
    expect(() => parseTables(tables.subarray(0, tables.length - 1))).toThrow(/truncated/);
  });

  it("rejects trailing bytes", () => {
    const longer = new Uint8Array(tables.length + 4);
    longer.set(tables);
    expect(() => parseTables(longer)).toThrow(/trailing/);
  });

  it("rejects a wrong version", () => {
    expect(() => parseTables(patched((v) => v.setUint16(4, 2, true)))).toThrow(/version 2/);
    expect(() => parseTables(patched((v) => v.setUint16(4, 4, true)))).toThrow(/version 4/);
  });

  it("rejects a wrong byte order", () => {
    expect(() => parseTables(patched((v) => v.setUint16(6, 0xfeff, false)))).toThrow(/byte order/);
    expect(() => parseTables(patched((v) => v.setUint16(6, 0x1234, true)))).toThrow(/byte-order mark/);
  });

  it("rejects out-of-range offsets and entries", () => {
    expect(() => parseTables(patched((v) => v.setUint32(32, 0xfffffff0, true)))).toThrow(/transition rows .* outside/);
    expect(() => parseTables(patched((v) => v.setUint32(28, 8, true)))).toThrow(/classmap .* outside/);
    expect(() => parseTables(patched((v) => v.setUint32(12, 0xffff, true)))).toThrow(/nStates/);
    expect(() => parseTables(patched((v) => v.setUint32(20, 7, true)))).toThrow(/initial/);
    const dv = new DataView(tables.buffer, tables.byteOffset);
    const row0 = dv.getUint32(dv.getUint32(32, true), true); // state 0's row: u16 default, u16 count, …
    expect(() => parseTables(patched((v) => v.setUint16(row0, 7, true)))).toThrow(/the default transition of state 0 goes to state 7 >= nStates/);
    expect(() => parseTables(patched((v) => v.setUint32(dv.getUint32(32, true), 7, true)))).toThrow(/row of state 0 .* outside/);
    expect(() => parseTables(patched((v) => v.setUint16(row0 + 2, 0xffff, true)))).toThrow(/row of state 0 \[\d+, \d+\) lies outside/);
    // A state's first listed transition (class, target) sent past the last state.
    const nStates = dv.getUint32(12, true);
    const s = Array.from({ length: nStates }, (_, k) => k).find((k) => dv.getUint16(dv.getUint32(dv.getUint32(32, true) + 4 * k, true) + 2, true) > 0)!;
    const row = dv.getUint32(dv.getUint32(32, true) + 4 * s, true);
    const cls = dv.getUint16(row + 4, true);
    expect(() => parseTables(patched((v) => v.setUint16(row + 6, nStates, true)))).toThrow(new RegExp(`transition ${s}/${cls} goes to state ${nStates} >= nStates`));
  });

  it("never reads out of bounds: any single corrupted byte parses or throws a clear Error", () => {
    for (let i = 0; i < tables.length; i++) {
      for (const x of [0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff, tables[i]! ^ 0x10]) {
        const b = tables.slice();
        b[i] = x;
        try {
          parseTables(b);
        } catch (e) {
          expect(e).toBeInstanceOf(Error);
          expect((e as Error).message).toMatch(/^invalid specc tables: /);
        }
      }
    }
  });
});

// ---- emitWasm ------------------------------------------------------------------------------------

describe("emitWasm", () => {
  it("loads the prebuilt runtime, which imports nothing", () => {
    const mod = new WebAssembly.Module(new Uint8Array(runtime));
    expect(WebAssembly.Module.imports(mod)).toEqual([]);
    expect(WebAssembly.Module.exports(mod).map((e) => e.name)).toContain("m_feed");
  });

  it("produces a module that instantiates with {} and carries the tables at TABLE_BASE", async () => {
    expect(WebAssembly.validate(new Uint8Array(wasm))).toBe(true);
    expect(WebAssembly.Module.imports(new WebAssembly.Module(new Uint8Array(wasm)))).toEqual([]);
    const ex = await instantiate(wasm);
    expect(ex.tables_ok!()).toBe(1);
    expect(new Uint8Array(ex.memory.buffer, TABLE_BASE, tables.length)).toEqual(tables);
  });

  it("the bare runtime has no tables", async () => {
    const ex = await instantiate(runtime);
    expect(ex.tables_ok!()).toBe(0);
    expect(ex.m_new!()).toBe(-1);
  });

  it("is deterministic", () => {
    expect(emitWasm(runtime, tables)).toEqual(wasm);
    expect(emitWasm(loadRuntimeWasm(), serializeTables(toyDfa(), toyStates()))).toEqual(wasm);
  });

  it("creates a data section before trailing custom sections", async () => {
    const out = emitWasm(tinyModule(false), Uint8Array.from([1, 2, 3]));
    expect(sectionIds(out)).toEqual([5, 7, 11, 0, 0]); // …, the module's custom section, the seal
    const ex = await instantiate(out);
    expect([...new Uint8Array(ex.memory.buffer, 15, 5)]).toEqual([0, 1, 2, 3, 0]);
  });

  it("updates the data-count section", async () => {
    const out = emitWasm(tinyModule(true), Uint8Array.from([9]));
    expect(sectionIds(out)).toEqual([5, 7, 12, 11, 0, 0]);
    expect(WebAssembly.validate(new Uint8Array(out))).toBe(true);
    const ex = await instantiate(out);
    expect(new Uint8Array(ex.memory.buffer)[16]).toBe(9);
    // Adding a second segment to a module that already has one.
    const twice = emitWasm(out, Uint8Array.from([7, 7]));
    expect(sectionIds(twice)).toEqual([5, 7, 12, 11, 0, 0]); // one seal: the old one is replaced
    expect(WebAssembly.validate(new Uint8Array(twice))).toBe(true);
  });

  it("rejects something that is not wasm", () => {
    expect(() => emitWasm(Uint8Array.from([1, 2, 3, 4, 5, 6, 7, 8]), tables)).toThrow(/not a WebAssembly binary/);
  });
});

// ---- The numeric ABI -----------------------------------------------------------------------------

describe("runtime exports", () => {
  it("match the tables for every state and byte", async () => {
    const ex = await instantiate(wasm);
    const dfa = toyDfa();
    expect(ex.abi_version!()).toBe(2);
    expect(ex.state_count!()).toBe(dfa.nStates);
    expect(ex.class_count!()).toBe(dfa.nClasses);
    expect(ex.initial_state!()).toBe(dfa.initial);
    expect(ex.spec_count!()).toBe(2);
    for (let s = 0; s < dfa.nStates; s++) {
      for (let b = 0; b < 256; b++) {
        expect(ex.step!(s, b)).toBe(dfa.trans[s * dfa.nClasses + dfa.classMap[b]!]);
      }
      expect(ex.state_flags!(s)).toBe(dfa.flags[s]);
      expect(ex.state_spec!(s)).toBe(dfa.specState[s]);
      expect(ex.state_env_next!(s)).toBe(dfa.envNext[s]);
      const next = Array.from({ length: ex.next_count!(s) }, (_, i) => ex.next_at!(s, i));
      expect(next).toEqual(dfa.nextMarkers[s]);
      expect(ex.next_at!(s, next.length)).toBe(-1);
    }
    // Out-of-range arguments are answered, not trapped on.
    expect(ex.step!(-1, 65)).toBe(-1);
    expect(ex.step!(dfa.nStates, 65)).toBe(-1);
    expect(ex.step!(0, 256)).toBe(-1);
    expect(ex.state_spec!(99)).toBe(-1);
    const dec = new TextDecoder();
    const str = (p: number, n: number): string => dec.decode(new Uint8Array(ex.memory.buffer, p, n));
    toyStates().forEach((st, i) => {
      expect(str(ex.spec_marker_ptr!(i), ex.spec_marker_len!(i))).toBe(st.marker);
      expect(str(ex.spec_name_ptr!(i), ex.spec_name_len!(i))).toBe(st.name);
      expect(ex.spec_flags!(i)).toBe(st.env ? 1 : 0);
    });
  });

  it("m_feed rejects with -(1 + index) and leaves the matcher unchanged", async () => {
    const ex = await instantiate(wasm);
    const m = ex.m_new!();
    expect(m).toBeGreaterThanOrEqual(0);
    const put = (s: string): [number, number] => {
      const b = new TextEncoder().encode(s);
      new Uint8Array(ex.memory.buffer, ex.buf_ptr!(), b.length).set(b);
      return [ex.buf_ptr!(), b.length];
    };
    expect(ex.buf_cap!()).toBeGreaterThanOrEqual(1024);
    expect(ex.m_feed!(m, ...put("A:X"))).toBe(-3);
    expect(ex.m_state!(m)).toBe(0); // not 2: nothing of a rejected call is kept
    expect(ex.m_feed!(m, ...put("A:ab"))).toBe(0);
    expect(ex.m_state!(m)).toBe(2);
    expect(ex.m_feed!(m, ...put("cdX"))).toBe(-3);
    expect(ex.m_state!(m)).toBe(2);
    expect(ex.m_feed!(m, ...put("B:"))).toBe(1);
    expect(ex.m_yielding!(m)).toBe(1);
    expect(ex.m_feed!(m, ...put(" "))).toBe(-1); // nothing after a yield
    expect(ex.m_feed!(m, 0, 0)).toBe(1);
    expect(ex.m_feed_env!(m, ...put("env"))).toBe(0);
    expect(ex.m_state!(m)).toBe(5);
    expect(ex.m_feed_env!(m, ...put("env"))).toBe(-1);
    expect(ex.m_state!(m)).toBe(5);
    expect(ex.m_set_state!(m, 7)).toBe(-1);
    expect(ex.m_set_state!(m, -1)).toBe(-1);
    expect(ex.m_state!(m)).toBe(5);
    // Many matchers: the record region grows and old handles keep their state.
    const ms = Array.from({ length: 100 }, () => ex.m_new!());
    expect(new Set(ms).size).toBe(100);
    ms.forEach((h, i) => expect(ex.m_set_state!(h, i % 7)).toBe(0));
    ms.forEach((h, i) => expect(ex.m_state!(h)).toBe(i % 7));
    expect(ex.m_state!(m)).toBe(5);
    // A handle m_new never returned traps.
    expect(() => ex.m_state!(1000)).toThrow(WebAssembly.RuntimeError);
  });
});

// ---- Spec / Matcher ------------------------------------------------------------------------------

describe("Spec / Matcher", () => {
  it("loads and exposes the spec states", async () => {
    const spec = await Spec.load(wasm);
    expect(spec.states).toEqual([
      { name: "think", marker: "A:", env: false },
      { name: "frage-ü", marker: "B:", env: true },
    ]);
    const fromBuffer = await Spec.load(wasm.slice().buffer);
    expect(fromBuffer.states.map((s) => s.name)).toEqual(TOY_NAMES);
  });

  it("loads from a file path", async () => {
    const dir = mkdtempSync(join(tmpdir(), "specc-runtime-"));
    try {
      const file = join(dir, "toy.wasm");
      writeFileSync(file, wasm);
      const spec = await Spec.load(file);
      expect(spec.matcher().feed("A:hi").ok).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("feeds, rejects with the offset and leaves the matcher unchanged", async () => {
    const m = (await Spec.load(wasm)).matcher();
    expect(m.specState).toBeNull();
    expect(m.validNext()).toEqual(["think"]);
    expect(m.accepting).toBe(false);
    expect(m.feed("A:hel1o")).toEqual({ ok: false, offset: 5 });
    expect(m.state).toBe(0);
    expect(m.specState).toBeNull();
    expect(m.feed("A:hello")).toEqual({ ok: true, status: "continue" });
    expect(m.specState).toBe("think");
    expect(m.accepting).toBe(true);
    expect(m.validNext()).toEqual(["frage-ü"]);
    const before = m.state;
    expect(m.feed("wor1d")).toEqual({ ok: false, offset: 3 });
    expect(m.state).toBe(before);
    expect(m.feed(new TextEncoder().encode(" world"))).toEqual({ ok: true, status: "continue" });
    // Non-ASCII: offsets are UTF-8 byte offsets.
    expect(m.feed("é")).toEqual({ ok: false, offset: 0 });
    expect(m.feed("ab é")).toEqual({ ok: false, offset: 3 });
  });

  it("yields on an env-input marker and resumes after feedEnv", async () => {
    const m = (await Spec.load(wasm)).matcher();
    expect(() => m.feedEnv("too early")).toThrow(/not yielding/);
    expect(m.feed("A:look B:")).toEqual({ ok: true, status: "yield" });
    expect(m.yielding).toBe(true);
    expect(m.specState).toBe("frage-ü");
    expect(m.validNext()).toEqual([]);
    expect(m.feed("x")).toEqual({ ok: false, offset: 0 });
    expect(m.yielding).toBe(true);
    m.feedEnv("whatever the environment says, even A: or B: or é");
    expect(m.yielding).toBe(false);
    expect(() => m.feedEnv("again")).toThrow(/not yielding/);
    expect(m.validNext()).toEqual(["think"]);
    expect(m.accepting).toBe(false);
    expect(m.feed("  A:done")).toEqual({ ok: true, status: "continue" });
    expect(m.accepting).toBe(true);
    m.reset();
    expect(m.specState).toBeNull();
    expect(m.state).toBe(0);
  });

  it("snapshots and restores", async () => {
    const spec = await Spec.load(wasm);
    const m = spec.matcher();
    const other = spec.matcher();
    m.feed("A:abc");
    const snap = m.state;
    m.feed(" B:");
    expect(m.yielding).toBe(true);
    m.state = snap;
    expect(m.yielding).toBe(false);
    expect(m.feed(" more")).toEqual({ ok: true, status: "continue" });
    other.state = snap; // a snapshot is valid for any matcher of the same spec
    expect(other.specState).toBe("think");
    expect(() => (m.state = 7)).toThrow(RangeError);
    expect(() => (m.state = -1)).toThrow(RangeError);
    expect(() => (m.state = 1.5)).toThrow(RangeError);
  });

  it("feeds text longer than the scratch buffer, with whole-input offsets", async () => {
    const spec = await Spec.load(wasm);
    const cap = spec.exports.buf_cap();
    const m = spec.matcher();
    const body = "a".repeat(3 * cap + 5);
    expect(m.feed("A:" + body)).toEqual({ ok: true, status: "continue" });
    const before = m.state;
    expect(m.feed(body + "Z" + body)).toEqual({ ok: false, offset: body.length });
    expect(m.state).toBe(before);
    // A rejection in a later chunk restores the state from before the first chunk.
    const m2 = spec.matcher();
    expect(m2.feed("A:" + "b".repeat(cap) + " B:" + "c")).toEqual({ ok: false, offset: 2 + cap + 3 });
    expect(m2.state).toBe(0);
    // A yield that ends exactly at a chunk boundary; a later byte is rejected.
    const m3 = spec.matcher();
    const text = "A:" + "d".repeat(cap - 4) + "B:";
    expect(new TextEncoder().encode(text).length).toBe(cap);
    expect(m3.feed(text)).toEqual({ ok: true, status: "yield" });
    m3.reset();
    expect(m3.feed(text + "e")).toEqual({ ok: false, offset: cap });
    expect(m3.state).toBe(0);
  });

  it("the seal's CRC-32 is zlib's, at every length and offset (slicing by 8 and the byte tail)", () => {
    const data = new Uint8Array(40_011);
    let x = 12345;
    for (let i = 0; i < data.length; i++) data[i] = (x = (x * 1103515245 + 12345) >>> 0) >>> 24;
    for (let off = 0; off < 9; off++) {
      for (const len of [0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1000, 40_000 - off]) {
        const view = data.subarray(off, off + len);
        expect(crc32(view), `offset ${off}, length ${len}`).toBe(zlibCrc32(view));
        expect(crc32(data, len)).toBe(zlibCrc32(data.subarray(0, len)));
      }
    }
    expect(crc32(new TextEncoder().encode("123456789"))).toBe(0xcbf43926);
  });

  it("rejects a wasm that is not specc's", async () => {
    await expect(Spec.load(Uint8Array.from([0, 97, 115, 109, 1, 0, 0, 0]))).rejects.toThrow(/cannot be used: it has no specc seal/);
    await expect(Spec.load(seal(Uint8Array.from([0, 97, 115, 109, 1, 0, 0, 0])))).rejects.toThrow(
      /not a specc \.wasm: missing exports memory, abi_version/,
    );
    await expect(Spec.load(Uint8Array.from([1, 2, 3]))).rejects.toThrow(/no specc seal/);
    await expect(Spec.load(seal(Uint8Array.from([1, 2, 3, 4, 5, 6, 7, 8])))).rejects.toThrow(/not a specc \.wasm/);
    await expect(Spec.load(runtime)).rejects.toThrow(/no specc seal/);
    await expect(Spec.load(seal(runtime))).rejects.toThrow(/no valid specc tables/);
  });

  it("refuses a sealed .wasm whose bytes changed after sealing, naming the damage", async () => {
    const flipped = wasm.slice();
    flipped[200]! ^= 0x10; // in the runtime's code
    await expect(Spec.load(flipped)).rejects.toThrow(/does not match its seal \(the file is damaged/);
    await expect(Spec.load(flipped)).rejects.toMatchObject({ code: "E0602" });
    await expect(Spec.load(wasm.subarray(0, wasm.length - 1))).rejects.toThrow(/no specc seal/);
  });

  it("rejects a different ABI version", async () => {
    await expect(Spec.load(fakeSpecModule(1, ABI1_EXPORTS))).rejects.toThrow(/ABI version 1; this binding supports version 2/);
    await expect(Spec.load(fakeSpecModule(3))).rejects.toThrow(/ABI version 3; this binding supports version 2/);
    await expect(Spec.load(fakeSpecModule(1))).rejects.toMatchObject({ code: "E0602" });
    // Version 2 claimed without the version-2 exports.
    await expect(Spec.load(fakeSpecModule(2, ABI1_EXPORTS))).rejects.toThrow(/claims ABI version 2 but lacks exports vocab_alloc/);
    // Right version, tables_ok() says yes, but memory holds no tables: the binding's own check.
    await expect(Spec.load(fakeSpecModule(2))).rejects.toThrow(/invalid specc tables/);
  });

  it("rejects a different format version", async () => {
    const v2 = tables.slice();
    new DataView(v2.buffer).setUint16(4, 2, true); // format 2 (no call table), from before the pushdown runtime
    await expect(Spec.load(emitWasm(runtime, v2))).rejects.toThrow(/no valid specc tables/);
  });

  it("rejects corrupt tables that pass the runtime's header check", async () => {
    const bad = tables.slice();
    new DataView(bad.buffer).setUint32(48, 0xfffffff0, true); // off_spec: the runtime does not read it at load
    await expect(Spec.load(emitWasm(runtime, bad))).rejects.toThrow(/invalid specc tables/);
    const rows = tables.slice();
    new DataView(rows.buffer).setUint32(32, 0xfffffff0, true); // off_trans: the runtime's own expansion refuses it
    await expect(Spec.load(emitWasm(runtime, rows))).rejects.toThrow(/no valid specc tables/);
  });
});

// ---- ABI 2: vocabulary, masks, commit (raw exports) -------------------------------------------------

describe("vocabulary ABI", () => {
  const t = (s: string): Uint8Array => new TextEncoder().encode(s);
  // ids: 0 "A", 1 "A:", 2 ":", 3 "ab", 4 " ", 5 "B:", 6 "B: x", 7 <special>, 8 <eos>, 9 "a", 10 "ab" (duplicate), 11 "é"
  const toyVocab = (): Vocabulary =>
    Vocabulary.fromTokenBytes([t("A"), t("A:"), t(":"), t("ab"), t(" "), t("B:"), t("B: x"), null, null, t("a"), t("ab"), t("é")], { eos: [8] });

  /**
   * A fresh instance with the toy vocabulary written (optionally corrupted) but not yet validated:
   * the trie too, or (`idsOnly`) only the sorted token ids, from which `vocab_ready` builds it.
   */
  async function written(corrupt?: (trie: TokenTrie) => void, idsOnly = false): Promise<Exports> {
    const ex = await instantiate(wasm);
    const trie = buildTokenTrie(toyVocab());
    corrupt?.(trie);
    expect(ex.vocab_alloc!(12, idsOnly ? 0 : trie.nNodes, trie.trieIds.length, trie.tokBytes.length)).toBe(0);
    if (idsOnly) expect(ex.vocab_region!(0)).toBe(0); // no node region until the runtime builds it
    const buf = ex.memory.buffer;
    if (!idsOnly) new Uint32Array(buf, ex.vocab_region!(0), trie.nodes.length).set(trie.nodes);
    new Uint32Array(buf, ex.vocab_region!(1), trie.trieIds.length).set(trie.trieIds);
    new Uint32Array(buf, ex.vocab_region!(2), trie.tokOff.length).set(trie.tokOff);
    new Uint8Array(buf, ex.vocab_region!(3), trie.tokBytes.length).set(trie.tokBytes);
    new Uint8Array(buf, ex.vocab_region!(4), trie.tokKind.length).set(trie.tokKind);
    return ex;
  }

  it("vocab_alloc refuses a bare runtime, bad sizes and a second vocabulary", async () => {
    expect((await instantiate(runtime)).vocab_alloc!(10, 1, 0, 0)).toBe(-1);
    const ex = await instantiate(wasm);
    expect(ex.vocab_region!(0)).toBe(0);
    expect(ex.vocab_ready!()).toBe(-1);
    expect(ex.vocab_alloc!(0, 1, 0, 0)).toBe(-1);
    expect(ex.vocab_alloc!(10, -1, 0, 0)).toBe(-1);
    expect(ex.vocab_alloc!(10, (1 << 24) + 1, 0, 0)).toBe(-1);
    expect(ex.vocab_alloc!(10, 1, 11, 0)).toBe(-1);
    expect(ex.vocab_alloc!(10, 1, 0, -1)).toBe(-1);
    expect(ex.vocab_alloc!((1 << 24) + 1, 1, 0, 0)).toBe(-1);
    const m = ex.m_new!();
    expect(ex.m_commit!(m, 0)).toBe(-1); // no vocabulary yet
    expect(ex.m_mask!(m)).toBe(-1);
    expect(ex.mask_ptr!(0)).toBe(0);
    expect(ex.precompute_all!()).toBe(-1);
    expect(ex.mask_words!()).toBe(0);
    const ok = await written();
    expect(ok.vocab_ready!()).toBe(0);
    expect(ok.vocab_ready!()).toBe(-1);
    expect(ok.vocab_alloc!(10, 1, 0, 0)).toBe(-1);
    expect(ok.vocab_size!()).toBe(12);
    expect(ok.mask_words!()).toBe(1);
    expect(ok.vocab_max_depth!()).toBe(4);
  });

  it("vocab_ready validates everything the host wrote", async () => {
    const cases: [number, (trie: TokenTrie) => void][] = [
      [-2, (tr) => (tr.tokOff[3] = 100)],
      [-2, (tr) => (tr.tokOff[12] = 0)],
      [-3, (tr) => (tr.tokKind[0] = 3)],
      [-4, (tr) => (tr.nodes[1] = 2)], // root skip
      [-4, (tr) => (tr.nodes[3 * 2] = (tr.nodes[3 * 2]! & 0xff) | (5 << 8))], // depth jump
      [-4, (tr) => (tr.nodes[3 * 1 + 1] = tr.nodes[3 * 1 + 1]! + 1)], // wrong skip
      [-5, (tr) => (tr.nodes[3 * 2 + 2] = 9)], // ranges not monotonic
      [-5, (tr) => (tr.nodes[3 * tr.nNodes + 2] = 0)], // sentinel
      [-6, (tr) => (tr.trieIds[0] = 99)], // id out of range
      [-6, (tr) => (tr.trieIds[0] = 7)], // a special token in the trie
      [-6, (tr) => ([tr.trieIds[0], tr.trieIds[1]] = [tr.trieIds[1]!, tr.trieIds[0]!])], // bytes differ from the path
      [-6, (tr) => (tr.nodes[3 * 1] = (tr.nodes[3 * 1]! & ~0xff) | 0x42)], // node byte differs from the tokens
    ];
    for (const [code, corrupt] of cases) {
      const ex = await written(corrupt);
      expect(ex.vocab_ready!(), corrupt.toString()).toBe(code);
      expect(ex.vocab_size!()).toBe(0);
    }
    // A text token the trie does not list: make special id 7 a text token.
    const ex = await written((tr) => (tr.tokKind[7] = 0));
    expect(ex.vocab_ready!()).toBe(-7);
  });

  const writtenIds = (corrupt?: (trie: TokenTrie) => void) => written(corrupt, true);

  /** Where two trie node arrays first differ ("" if nowhere): a diff of a real vocabulary's ~800,000
   * numbers would keep the reporter busy for minutes. */
  const firstDifference = (got: ArrayLike<number>, want: ArrayLike<number>): string => {
    if (got.length !== want.length) return `length ${got.length} vs ${want.length}`;
    for (let i = 0; i < got.length; i++) {
      if (got[i] !== want[i]) return `record ${Math.floor(i / 3)} word ${i % 3}: ${got[i]} vs ${want[i]}`;
    }
    return "";
  };

  it("vocab_ready builds the trie the bindings would write from the sorted ids alone", async () => {
    const trie = buildTokenTrie(toyVocab());
    const built = await writtenIds();
    expect(built.vocab_ready!()).toBe(0);
    expect(built.vocab_max_depth!()).toBe(trie.maxDepth);
    const host = await written();
    expect(host.vocab_ready!()).toBe(0);
    // Node for node: the same records, the sentinel included.
    const nodes = (ex: Exports) => Array.from(new Uint32Array(ex.memory.buffer, ex.vocab_region!(0), trie.nodes.length));
    expect(nodes(built)).toEqual(nodes(host));
    expect(nodes(built).filter((_, i) => i % 3 !== 0)).toEqual(Array.from(trie.nodes).filter((_, i) => i % 3 !== 0));
    // And the same masks along a path.
    const walk = (ex: Exports) => {
      const m = ex.m_new!();
      const out: number[] = [];
      for (const id of [1, 10, 5]) {
        const at = ex.m_mask_ptr!(m); // (first: computing the mask may grow the memory)
        out.push(new Int32Array(ex.memory.buffer, at, 1)[0]!);
        out.push(ex.m_commit!(m, id));
      }
      return out;
    };
    expect(walk(built)).toEqual(walk(host));
  });

  it("builds the trie of a real vocabulary node for node as the bindings would (Gemma 3: the memory grows while it fills)", async () => {
    const vocab = await Vocabulary.fromTokenizerJson(tokenizerJsonPath("gemma3"));
    const spec = await Spec.load(compileToWasm(compileSource(readFileSync("examples/react.agent", "utf8"), "examples/react.agent")), { vocab });
    const ex = spec.exports;
    const trie = buildTokenTrie(spec.vocab!); // the vocabulary as bound to the spec's token markers
    expect(ex.vocab_max_depth!()).toBe(trie.maxDepth);
    const got = new Uint32Array(ex.memory.buffer, ex.vocab_region!(0), trie.nodes.length);
    // The same records (bytes, depths, skips, token ranges): the runtime reads a node's class
    // through the class map and never rewrites the trie.
    expect(firstDifference(got, trie.nodes)).toBe("");
  });

  it("a second and third Spec with the same vocabulary adopt the trie built once, with the same nodes and masks (Llama 3)", async () => {
    const vocab = await Vocabulary.fromTokenizerJson(tokenizerJsonPath("llama3_1"));
    const wasm = compileToWasm(compileSource(readFileSync("examples/tool-json.agent", "utf8"), "examples/tool-json.agent"));
    // First: the runtime builds the trie; second: the binding's trie, checked (vocab_ready);
    // third: the same trie adopted unchecked (vocab_adopt).
    const specs = [await Spec.load(wasm, { vocab }), await Spec.load(wasm, { vocab }), await Spec.load(wasm, { vocab })];
    const nodes = specs.map((s) => Array.from(new Uint32Array(s.exports.memory.buffer, s.exports.vocab_region!(0), 3 * (buildTokenTrie(s.vocab!).nNodes + 1))));
    expect(firstDifference(nodes[1]!, nodes[0]!)).toBe("");
    expect(firstDifference(nodes[2]!, nodes[0]!)).toBe("");
    const text = new TextEncoder().encode('Thought: x\nAction: web_search\nAction Input: {"a": [1, {"b": "c"}]}\n');
    const ms = specs.map((s) => s.matcher());
    for (let i = 0; i <= text.length; i += 7) {
      const masks = specs.map((s, k) => { const m = new Int32Array(s.maskWords); ms[k]!.fillMask(m); return m; });
      expect(masks[1]).toEqual(masks[0]);
      expect(masks[2]).toEqual(masks[0]);
      for (const m of ms) expect(m.feed(text.subarray(i, i + 7)).ok).toBe(true);
    }
  });

  it("from the third Spec on, the nodes' derived bits are the copy a binding kept of the second's: the same bits and masks, pushdown and DFA", async () => {
    const vocab = await Vocabulary.fromTokenizerJson(tokenizerJsonPath("llama3_1"));
    const pda = compileToWasm(compileSource(readFileSync("examples/tool-json.agent", "utf8"), "examples/tool-json.agent"));
    const dfa = compileToWasm(compileSource(readFileSync("examples/react.agent", "utf8"), "examples/react.agent"));
    const text = new TextEncoder().encode('Thought: x\nAction: web_search\nAction Input: {"a": [1, {"b": "c d e"}], "f": "\\u00e9 ok"}\n');
    const bitsOf = (s: Spec) => {
      const ex = s.exports, n = buildTokenTrie(s.vocab!).nNodes, bytes = ((n + 31) >>> 5) << 2;
      const at = (k: number, len: number) => (ex.vocab_region!(k) ? Array.from(new Uint8Array(ex.memory.buffer, ex.vocab_region!(k), len)) : null);
      return [at(5, bytes), at(6, bytes), at(7, n)];
    };
    const masksOf = (s: Spec) => {
      const m = s.matcher(), out: Int32Array[] = [];
      for (let i = 0; i <= text.length; i += 5) {
        out.push(m.maskView().slice());
        if (!m.feed(text.subarray(i, i + 5)).ok) break;
      }
      return out;
    };
    // 1: the runtime builds the trie; 2: the binding's trie, checked, and its bits kept; 3, 5: bits
    // given (with heights); 4: bits given to a DFA spec (no heights).
    const specs = [];
    for (const w of [pda, pda, pda, dfa, pda]) specs.push(await Spec.load(w, { vocab }));
    const [p1, p2, p3, d4, p5] = specs as [Spec, Spec, Spec, Spec, Spec];
    const want = bitsOf(p2);
    expect(want.every((b) => b !== null && b.some((x) => x !== 0))).toBe(true);
    expect(bitsOf(p1)).toEqual(want);
    expect(bitsOf(p3)).toEqual(want);
    expect(bitsOf(p5)).toEqual(want);
    expect(bitsOf(d4)).toEqual([want[0], want[1], null]);
    const masks = masksOf(p1);
    expect(masks.length).toBeGreaterThan(15);
    for (const s of [p2, p3, p5]) expect(masksOf(s)).toEqual(masks);
    const dfaFresh = await Spec.load(dfa, { vocab: await Vocabulary.fromTokenizerJson(tokenizerJsonPath("llama3_1")) }); // another vocabulary object: nothing cached
    expect(masksOf(d4)).toEqual(masksOf(dfaFresh));
  });

  it("vocab_adopt uses the derived bits it is given: wrong ones give wrong masks", async () => {
    const vocab = await Vocabulary.fromTokenizerJson(tokenizerJsonPath("llama3_1"));
    // One line: every plain byte keeps the state, so the walk allows plain subtrees whole.
    const wasm = compileToWasm(compileGrammarSource('root ::= [^\\n]* "\\n"\n', "line.gbnf"));
    const right = await Spec.load(wasm, { vocab });
    const want = right.matcher().maskView().slice();
    // The same vocabulary attached by hand, every node's plain and text bit set.
    const { instance } = await instantiateSpec(wasm);
    const ex = instance.exports as unknown as Exports;
    expect(ex.pda_mode!()).toBe(0);
    const trie = buildTokenTrie(vocab);
    expect(ex.vocab_alloc!(vocab.size, trie.nNodes, trie.trieIds.length, trie.tokBytes.length)).toBe(0);
    let buf = ex.memory.buffer;
    new Uint32Array(buf, ex.vocab_region!(0), trie.nodes.length).set(trie.nodes);
    new Uint32Array(buf, ex.vocab_region!(1), trie.trieIds.length).set(trie.trieIds);
    new Uint32Array(buf, ex.vocab_region!(2), trie.tokOff.length).set(trie.tokOff);
    new Uint8Array(buf, ex.vocab_region!(3), trie.tokBytes.length).set(trie.tokBytes);
    new Uint8Array(buf, ex.vocab_region!(4), trie.tokKind.length).set(trie.tokKind);
    expect(ex.vocab_alloc_derived!()).toBe(0);
    expect(ex.vocab_alloc_derived!()).toBe(-1); // once
    expect(ex.vocab_region!(7)).toBe(0); // DFA mode: no heights
    buf = ex.memory.buffer;
    const bytes = ((trie.nNodes + 31) >>> 5) << 2;
    new Uint8Array(buf, ex.vocab_region!(5), bytes).fill(0xff);
    new Uint8Array(buf, ex.vocab_region!(6), bytes).fill(0xff);
    expect(ex.vocab_adopt!()).toBe(0);
    const at = ex.mask_ptr!(ex.initial_state!()); // (first: computing the mask may grow the memory)
    const got = Array.from(new Int32Array(ex.memory.buffer, at, right.maskWords));
    // A token that starts on the line and goes on after its end (";\n\n") is allowed now: it lies
    // in the subtree of its first byte, which keeps the state.
    const id = Array.from({ length: vocab.size }, (_, i) => vocab.tokenBytes(i))
      .findIndex((b) => !!b && b.length > 2 && b[0]! > 0x20 && b[0]! < 0x7f && b[0] !== 0x22 && b[0] !== 0x5c && b.indexOf(10) > 0 && b.indexOf(10) < b.length - 1);
    expect(id).toBeGreaterThan(0);
    expect(((want[id >> 5]! >>> (id & 31)) & 1)).toBe(0);
    expect(((got[id >> 5]! >>> (id & 31)) & 1)).toBe(1);
  });

  it("vocab_adopt takes only a trie the host wrote", async () => {
    const ex = await writtenIds(() => {});
    expect(ex.vocab_adopt!()).toBe(-1); // no nodes region: nothing to adopt
    const ex2 = await written();
    expect(ex2.vocab_adopt!()).toBe(0);
    expect(ex2.vocab_max_depth!()).toBe(buildTokenTrie(toyVocab()).maxDepth);
  });

  it("vocab_ready refuses ids it cannot build a trie from", async () => {
    const cases: [number, (trie: TokenTrie) => void][] = [
      [-2, (tr) => (tr.tokOff[3] = 100)],
      [-3, (tr) => (tr.tokKind[0] = 3)],
      [-6, (tr) => (tr.trieIds[0] = 99)], // id out of range
      [-6, (tr) => (tr.trieIds[0] = 7)], // a special token
      [-6, (tr) => (tr.trieIds[1] = tr.trieIds[0]!)], // listed twice
      [-7, (tr) => (tr.tokKind[7] = 0)], // a text token not listed
      [-8, (tr) => ([tr.trieIds[0], tr.trieIds[1]] = [tr.trieIds[1]!, tr.trieIds[0]!])], // "A:" before "A"
      [-8, (tr) => tr.trieIds.reverse()],
    ];
    for (const [code, corrupt] of cases) {
      const ex = await writtenIds(corrupt);
      expect(ex.vocab_ready!(), corrupt.toString()).toBe(code);
      expect(ex.vocab_size!()).toBe(0);
    }
  });

  it("masks, commit, done, rollback through the raw exports", async () => {
    const ex = await written();
    expect(ex.vocab_ready!()).toBe(0);
    const m = ex.m_new!();
    const mask = (): number => {
      const at = ex.m_mask_ptr!(m); // (first: computing the mask may grow the memory)
      return new Int32Array(ex.memory.buffer, at, 1)[0]!;
    };
    const bits = (...ids: number[]): number => ids.reduce((a, i) => a | (1 << i), 0);
    expect(mask()).toBe(bits(0, 1)); // "A", "A:"
    expect(ex.m_commit!(m, 3)).toBe(3);
    expect(ex.m_commit!(m, 12)).toBe(3);
    expect(ex.m_commit!(m, -1)).toBe(3);
    expect(ex.m_commit!(m, 7)).toBe(3);
    expect(ex.m_commit!(m, 8)).toBe(3); // EOS, not accepting
    expect(ex.m_state!(m)).toBe(0);
    expect(ex.m_commit!(m, 1)).toBe(0);
    expect(ex.m_state!(m)).toBe(2);
    expect(mask()).toBe(bits(3, 4, 5, 8, 9, 10)); // text, "B:", EOS; not "B: x" (nothing after a yield)
    expect(ex.m_commit!(m, 6)).toBe(3);
    expect(ex.m_commit!(m, 10)).toBe(0);
    expect(ex.m_count!(m)).toBe(1);
    expect(ex.m_commit!(m, 5)).toBe(1);
    expect(ex.m_yielding!(m)).toBe(1);
    expect(ex.m_count!(m)).toBe(0);
    expect(mask()).toBe(0);
    expect(ex.m_history!(m)).toBe(3);
    expect(ex.m_rollback!(m, 4)).toBe(-1);
    expect(ex.m_rollback!(m, 1)).toBe(0);
    expect(ex.m_state!(m)).toBe(2);
    expect(ex.m_count!(m)).toBe(1);
    expect(ex.m_commit!(m, 8)).toBe(2);
    expect(ex.m_done!(m)).toBe(1);
    expect(mask()).toBe(0);
    expect(ex.m_commit!(m, 9)).toBe(3);
    expect(ex.m_commit!(m, 8)).toBe(3);
    expect(ex.m_feed!(m, ex.buf_ptr!(), 1)).toBe(-1);
    expect(ex.m_feed!(m, ex.buf_ptr!(), 0)).toBe(2);
    expect(ex.m_feed_env!(m, ex.buf_ptr!(), 0)).toBe(-1);
    expect(ex.m_rollback!(m, 1)).toBe(0);
    expect(ex.m_done!(m)).toBe(0);
    // m_fill_mask and precompute
    const out = ex.out_ptr!(4);
    expect(ex.m_fill_mask!(m, out)).toBe(ex.m_mask!(m));
    expect(new Int32Array(ex.memory.buffer, out, 1)[0]).toBe(mask());
    const distinct = ex.precompute_all!();
    expect(distinct).toBe(ex.mask_count!());
    for (let s = 0; s < 7; s++) expect(ex.mask_at!(ex.mask_id!(s))).toBe(ex.mask_ptr!(s));
    expect(ex.mask_ptr!(7)).toBe(0);
    expect(ex.mask_at!(distinct)).toBe(0);
    // Reset and set_state clear done, counter and history.
    ex.m_reset!(m);
    expect([ex.m_state!(m), ex.m_done!(m), ex.m_count!(m), ex.m_history!(m)]).toEqual([0, 0, 0, 0]);
  });

  it("Spec.load attaches the vocabulary and rejects a bad one", async () => {
    const spec = await Spec.load(wasm, { vocab: toyVocab() });
    expect(spec.vocabSize).toBe(12);
    const m = spec.matcher();
    expect(m.commit(1)).toBe("continue");
    expect(m.commit(5)).toBe("yield");
    m.feedEnv("whatever");
    expect(m.commit(4)).toBe("continue");
    expect(m.commit(0)).toBe("continue");
    expect(m.commit(2)).toBe("continue");
    expect(m.isAccepting).toBe(true);
    expect(m.commit(8)).toBe("done");
    const bad = { size: 3, eos: [5], flat: () => toyVocab().flat() };
    await expect(Spec.load(wasm, { vocab: bad })).rejects.toThrow(/EOS id 5 is outside/);
    // Special flags are copied as token kinds: a 2 would read as EOS, so it is refused.
    const two = { size: 12, eos: [8], flat: () => ({ ...toyVocab().flat(), special: Uint8Array.from(toyVocab().flat().special, (f, i) => (i === 7 ? 2 : f)) }) };
    await expect(Spec.load(wasm, { vocab: two })).rejects.toThrow(/special flags must be 0 or 1/);
  });
});

// ---- compatibility ------------------------------------------------------------------------------

describe("a .wasm compiled before the runtime built the token trie itself", () => {
  // tests/fixtures/wasm/react-trie-by-host.wasm: examples/react.agent compiled with the runtime of
  // commit 716651b, which refuses vocab_alloc(…, 0 nodes, …); Spec.load then writes the trie.
  it("loads with a real vocabulary and gives the masks of a fresh compile", async () => {
    const oldBytes = readFileSync("tests/fixtures/wasm/react-trie-by-host.wasm");
    expect((await instantiate(oldBytes)).vocab_alloc!(10, 0, 0, 0)).toBe(-1); // it is that old runtime
    const vocab = await Vocabulary.fromTokenizerJson(tokenizerJsonPath("llama2"));
    const old = await Spec.load(oldBytes, { vocab });
    const fresh = await Spec.load(compileToWasm(compileSource(readFileSync("examples/react.agent", "utf8"), "examples/react.agent")), { vocab });
    const a = old.matcher(), b = fresh.matcher();
    const masks = (m: typeof a) => Array.from(m.maskView());
    expect(masks(a)).toEqual(masks(b));
    expect(masks(a).some((w) => w !== 0)).toBe(true);
    for (const text of ["Thought: I should look it up.\n", "Action: ", "Search"]) {
      a.feedText(text);
      b.feedText(text);
      expect(masks(a)).toEqual(masks(b));
    }
  });

  it("building the trie in the runtime takes no more memory than writing it did (Llama 3, Gemma 3)", async () => {
    const oldBytes = readFileSync("tests/fixtures/wasm/react-trie-by-host.wasm");
    const freshBytes = compileToWasm(compileSource(readFileSync("examples/react.agent", "utf8"), "examples/react.agent"));
    for (const name of ["llama3_1", "gemma3"] as const) {
      const vocab = await Vocabulary.fromTokenizerJson(tokenizerJsonPath(name));
      const ex = (await Spec.load(freshBytes, { vocab })).exports;
      // The bytes the runtime can have touched: below its heap's top, but the gap it leaves below
      // the vocabulary (docs/abi.md, `vocab_reserve`), which is address space, never written.
      let first = ex.heap_mark!(1);
      for (let k = 0; k < 5; k++) if (ex.vocab_region(k) > 0) first = Math.min(first, ex.vocab_region(k));
      const built = ex.heap_mark!(1) - (first - ex.heap_mark!(0));
      const written = (await Spec.load(oldBytes, { vocab })).exports.memory.buffer.byteLength;
      expect(built, name).toBeLessThanOrEqual(written);
    }
  });
});

