/**
 * @fileoverview Instantiates a specc .wasm through one compiled runtime shared by every spec.
 *
 * Every .wasm specc writes is the same runtime plus one data segment that holds the spec's tables
 * at TABLE_BASE (compiler/emit-wasm.ts). Compiled as it is, each spec is a new module: one more
 * compile, and its code starts again in V8's baseline tier, so the vocabulary's trie build and the
 * first masks of every spec run unoptimized. Here the tables' segment is taken out and the rest,
 * the runtime, is compiled once (per distinct runtime), with its memory made an import. Each spec
 * gets a fresh memory with its tables written in before the runtime's start function runs: what
 * instantiating the whole module does, since the tables' bytes overlap no other segment.
 *
 * A module of any other shape (custom sections such as a baked vocabulary, imports, segments this
 * reader does not know) is instantiated as it is, and fails or succeeds as it would have.
 *
 * A spec's memory, once its Spec is disposed (`release`), is kept for the next spec of the same
 * runtime: zeroed, it is the fresh memory that spec would have had, only already grown, and the
 * pages already mapped. A fresh memory costs ~3 ms a load in first touches of its pages (the
 * vocabulary is ~8 MB of them), and dropping one a schema keeps the collector busy.
 */
import { crc32, unseal } from "../compiler/seal.js";
import { TABLE_BASE } from "../compiler/tables.js";
import {
  concat, encodeModule, parseSections, readU32Leb, SEC_CUSTOM, SEC_DATA, SEC_DATACOUNT, SEC_IMPORT, SEC_MEMORY,
  SECTION_ORDER, u32Leb, type Section,
} from "../compiler/wasm-binary.js";

export interface Instantiated {
  instance: WebAssembly.Instance;
  /** The module instantiated: the shared runtime, or the whole .wasm when it could not be split. */
  module: WebAssembly.Module;
  /** Whether the shared runtime was used. */
  shared: boolean;
  /** Gives the memory back for a later spec of the same runtime (shared only; call once, when nothing uses the instance any more). */
  release?: () => void;
}

/** A .wasm split into its runtime (memory imported, tables' segment removed) and its tables. */
interface Split {
  runtime: Uint8Array<ArrayBuffer>;
  tables: Uint8Array;
  /** The memory's limits in pages, as the module declared them. */
  initial: number;
  maximum?: number;
}

const IMPORT_MODULE = "specc";
const IMPORT_NAME = "memory";
const PAGE = 65536;

/** Compiled runtimes by the CRC-32 of their bytes (a handful at most: one per specc version in use). */
const runtimes = new Map<number, { bytes: Uint8Array<ArrayBuffer>; module: Promise<WebAssembly.Module> }[]>();
const MAX_RUNTIMES = 8;
let cached = 0;

/** Released memories, per runtime and declared maximum: a few, none past MAX_POOLED_BYTES (zeroing it would cost more than it saves). */
const pools = new WeakMap<WebAssembly.Module, Map<number | undefined, WebAssembly.Memory[]>>();
const POOL_SIZE = 4;
const MAX_POOLED_BYTES = 64 << 20;

function poolOf(module: WebAssembly.Module, maximum: number | undefined): WebAssembly.Memory[] {
  let byMax = pools.get(module);
  if (!byMax) pools.set(module, (byMax = new Map()));
  let pool = byMax.get(maximum);
  if (!pool) byMax.set(maximum, (pool = []));
  return pool;
}

/** A memory of at least `initial` pages, all zero: a released one when there is one, else a new one. */
function memoryFor(pool: WebAssembly.Memory[], initial: number, maximum: number | undefined): WebAssembly.Memory {
  const reused = pool.pop();
  if (!reused) return new WebAssembly.Memory(maximum === undefined ? { initial } : { initial, maximum });
  const pages = reused.buffer.byteLength / PAGE;
  if (pages < initial) reused.grow(initial - pages);
  new Uint8Array(reused.buffer).fill(0);
  return reused;
}

function name(s: string): number[] {
  const b = new TextEncoder().encode(s);
  return [...u32Leb(b.length), ...b];
}

/** Active segments of a data section: memory 0, `i32.const` offsets; null for any other form. */
function dataSegments(body: Uint8Array): { offset: number; start: number; end: number; data: Uint8Array }[] | null {
  const n = readU32Leb(body, 0, "data count");
  let pos = n.next;
  const out = [];
  for (let i = 0; i < n.value; i++) {
    const start = pos;
    if (body[pos++] !== 0x00 || body[pos++] !== 0x41) return null; // active, memory 0, i32.const
    let offset = 0, shift = 0, b: number;
    do {
      b = body[pos++]!;
      offset |= (b & 0x7f) << shift;
      shift += 7;
    } while (b & 0x80 && shift < 35);
    if (b & 0x80 || (shift < 32 && b & 0x40) || offset < 0 || body[pos++] !== 0x0b) return null; // negative or malformed
    const len = readU32Leb(body, pos, "data segment size");
    pos = len.next + len.value;
    if (pos > body.length) return null;
    out.push({ offset, start, end: pos, data: body.subarray(len.next, pos) });
  }
  return pos === body.length ? out : null;
}

/** The runtime and tables of a specc .wasm, or null when it is not of that shape. */
function split(wasm: Uint8Array): Split | null {
  let sections: Section[];
  try {
    sections = parseSections(unseal(wasm));
  } catch {
    return null;
  }
  if (sections.some((s) => s.id === SEC_CUSTOM || s.id === SEC_IMPORT)) return null;
  const memory = sections.filter((s) => s.id === SEC_MEMORY);
  const data = sections.filter((s) => s.id === SEC_DATA);
  if (memory.length !== 1 || data.length !== 1) return null;
  // One memory: flags 0 (min) or 1 (min, max); shared or 64-bit memories are left alone.
  const mem = memory[0]!.body;
  if (mem[0] !== 1 || (mem[1] !== 0 && mem[1] !== 1)) return null;
  const min = readU32Leb(mem, 2, "memory minimum");
  const max = mem[1] === 1 ? readU32Leb(mem, min.next, "memory maximum") : undefined;
  if ((max ? max.next : min.next) !== mem.length) return null;
  const segments = dataSegments(data[0]!.body);
  const tables = segments?.[segments.length - 1];
  if (!segments || !tables || tables.offset !== TABLE_BASE) return null;
  const end = TABLE_BASE + tables.data.length;
  if (end > min.value * PAGE) return null;
  const rest = segments.slice(0, -1);
  if (rest.some((s) => s.offset < end && s.offset + s.data.length > TABLE_BASE)) return null;
  // The import that replaces the memory: ("specc" "memory" (memory limits)), the same limits.
  const imports: Section = { id: SEC_IMPORT, body: concat([[1], name(IMPORT_MODULE), name(IMPORT_NAME), [0x02], mem.subarray(1)]) };
  const out: Section[] = [];
  for (const s of sections) {
    if (s.id === SEC_MEMORY) continue;
    if (s.id === SEC_DATA) {
      if (rest.length > 0) out.push({ id: SEC_DATA, body: concat([u32Leb(rest.length), ...rest.map((r) => s.body.subarray(r.start, r.end))]) });
    } else if (s.id === SEC_DATACOUNT) {
      if (rest.length > 0) out.push({ id: SEC_DATACOUNT, body: Uint8Array.from(u32Leb(rest.length)) });
    } else out.push(s);
  }
  const rank = (id: number): number => SECTION_ORDER.indexOf(id);
  const at = out.findIndex((s) => rank(s.id) > rank(SEC_IMPORT));
  out.splice(at < 0 ? out.length : at, 0, imports);
  return { runtime: encodeModule(out), tables: tables.data, initial: min.value, maximum: max?.value };
}

/** Byte equality, four bytes a step where both arrays start on a word boundary (as fresh ones do). */
function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let i = 0;
  if (a.byteOffset % 4 === 0 && b.byteOffset % 4 === 0) {
    const w = a.length >>> 2;
    const wa = new Int32Array(a.buffer, a.byteOffset, w), wb = new Int32Array(b.buffer, b.byteOffset, w);
    for (; i < w; i++) if (wa[i] !== wb[i]) return false;
    i = w << 2;
  }
  for (; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** The runtime used last: most loads are of the same one, found by comparing bytes, without a CRC. */
let lastRuntime: { bytes: Uint8Array<ArrayBuffer>; module: Promise<WebAssembly.Module> } | undefined;

/** The compiled runtime for these bytes: compiled on first use, then shared. */
function runtimeModule(bytes: Uint8Array<ArrayBuffer>): Promise<WebAssembly.Module> {
  if (lastRuntime && sameBytes(lastRuntime.bytes, bytes)) return lastRuntime.module;
  const key = crc32(bytes);
  const list = runtimes.get(key) ?? [];
  const hit = list.find((r) => sameBytes(r.bytes, bytes));
  if (hit) return (lastRuntime = hit).module;
  if (cached >= MAX_RUNTIMES) {
    runtimes.clear();
    cached = 0;
  }
  const module = WebAssembly.compile(bytes);
  // A runtime that fails to compile is not kept: the next load tries again (and fails the same way).
  module.catch(() => {
    runtimes.delete(key);
    if (lastRuntime?.module === module) lastRuntime = undefined;
  });
  list.push((lastRuntime = { bytes, module }));
  runtimes.set(key, list);
  cached++;
  return module;
}

/**
 * Instantiates a specc .wasm (its seal already checked): through the shared runtime where it has
 * the shape specc writes, otherwise as it is.
 */
export async function instantiateSpec(bytes: Uint8Array<ArrayBuffer>): Promise<Instantiated> {
  let parts: Split | null = null;
  try {
    parts = split(bytes);
  } catch {
    // Malformed: instantiating it as it is reports why.
  }
  if (parts) {
    let module: WebAssembly.Module | undefined;
    try {
      module = await runtimeModule(parts.runtime);
    } catch {
      // Not a module this engine compiles: instantiating the whole .wasm reports why.
    }
    if (module) {
      const pool = poolOf(module, parts.maximum);
      const memory = memoryFor(pool, parts.initial, parts.maximum);
      new Uint8Array(memory.buffer).set(parts.tables, TABLE_BASE);
      const imports = { [IMPORT_MODULE]: { [IMPORT_NAME]: memory } };
      // Synchronously: the module is compiled already, and Node's asynchronous instantiate of it
      // waited ~10 ms a load on the event loop (most of a small schema's time to first mask). A
      // browser that refuses a synchronous instance on its main thread (a RangeError) gets the
      // asynchronous one.
      let instance: WebAssembly.Instance;
      try {
        instance = new WebAssembly.Instance(module, imports);
      } catch (e) {
        if (!(e instanceof RangeError)) throw e;
        instance = await WebAssembly.instantiate(module, imports);
      }
      let released = false;
      const release = (): void => {
        if (released) return;
        released = true;
        if (pool.length < POOL_SIZE && memory.buffer.byteLength <= MAX_POOLED_BYTES) pool.push(memory);
      };
      return { instance, module, shared: true, release };
    }
  }
  const { instance, module } = await WebAssembly.instantiate(bytes, {});
  return { instance, module, shared: false };
}
