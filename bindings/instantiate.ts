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
 * runtime: the bytes its spec may have written zeroed (below the heap's top, as `heap_mark` tells),
 * it is the fresh memory that spec would have had, only already grown, and the pages already
 * mapped. A fresh memory costs ~3 ms a load in first touches of its pages (the vocabulary is ~8 MB
 * of them), and dropping one a schema keeps the collector busy. A vocabulary the spec attached
 * whole from the bindings' cache is left in place (`MemorySlot`): the next spec of that
 * vocabulary finds its regions at the same addresses (`vocab_reserve`) and writes none of them,
 * which was most of a small schema's load (zeroing and copying ~8 MB).
 */
import { crc32, unseal } from "../compiler/seal.js";
import { MAX_TABLES_BYTES, TABLE_BASE } from "../compiler/tables.js";
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
  /** The memory's vocabulary in place, for the bindings' attach (shared only). */
  slot?: MemorySlot;
}

/** A vocabulary left in a memory by the spec that had it: whose it is and where it lies. */
export interface KeptVocab {
  /** Who wrote it (the bindings' cache entry of the vocabulary) and in which form. */
  key: object;
  heights: boolean;
  /** `vocab_region(0..7)` as they were. */
  regions: readonly number[];
  /** The bytes it covers, its blocks' headers included: [start, end). */
  start: number;
  end: number;
}

/**
 * A memory's vocabulary in place. `kept`: what the spec that had the memory before left in it
 * (undefined once it was zeroed or overwritten). `attached`: set by the binding when this spec's
 * vocabulary was written whole from its cache, so that the next spec may keep it.
 */
export interface MemorySlot {
  kept?: KeptVocab;
  attached?: KeptVocab;
}

/** Zeroes [start, end) of a memory (clamped to it). */
export function zeroRange(memory: WebAssembly.Memory, start: number, end: number): void {
  const b = memory.buffer;
  const e = Math.min(end, b.byteLength);
  if (e > start) new Uint8Array(b, start, e - start).fill(0);
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

/**
 * A released memory: all zero but the `dirty` ranges ([from, to) pairs, what its spec may have
 * written) and a vocabulary it may have left in place.
 */
interface Pooled {
  memory: WebAssembly.Memory;
  dirty: number[];
  kept?: KeptVocab;
}

/** Released memories, per runtime and declared maximum: a few, none past MAX_POOLED_BYTES (zeroing it would cost more than it saves). */
const pools = new WeakMap<WebAssembly.Module, Map<number | undefined, Pooled[]>>();
const POOL_SIZE = 4;
const MAX_POOLED_BYTES = 64 << 20;

function poolOf(module: WebAssembly.Module, maximum: number | undefined): Pooled[] {
  let byMax = pools.get(module);
  if (!byMax) pools.set(module, (byMax = new Map()));
  let pool = byMax.get(maximum);
  if (!pool) byMax.set(maximum, (pool = []));
  return pool;
}

/**
 * A memory of at least `initial` pages, all zero but a kept vocabulary: a released one when there
 * is one, else a new one.
 */
function memoryFor(pool: Pooled[], initial: number, maximum: number | undefined): { memory: WebAssembly.Memory; kept?: KeptVocab } {
  const reused = pool.pop();
  if (!reused) return { memory: new WebAssembly.Memory(maximum === undefined ? { initial } : { initial, maximum }) };
  const { memory, dirty } = reused;
  const pages = memory.buffer.byteLength / PAGE;
  if (pages < initial) memory.grow(initial - pages);
  for (let i = 0; i < dirty.length; i += 2) zeroRange(memory, dirty[i]!, dirty[i + 1]!);
  return { memory, kept: reused.kept };
}

/** The start of the runtime's own memory: below it, only the tables are written (docs/abi.md). */
const RUNTIME_BASE = TABLE_BASE + MAX_TABLES_BYTES;

/**
 * What an instance done with its memory may have written there, as `Pooled.dirty`: the tables, and
 * the runtime's blocks, from its base to its heap's top (`heap_mark`), but the gap below a
 * vocabulary and a vocabulary left in place. Without `heap_mark` (an older runtime), all of it.
 */
function written(instance: WebAssembly.Instance, memory: WebAssembly.Memory, tablesEnd: number, slot: MemorySlot): Pooled {
  const ex = instance.exports as { heap_mark?: (k: number) => number; vocab_region?: (k: number) => number };
  if (typeof ex.heap_mark !== "function" || typeof ex.vocab_region !== "function") return { memory, dirty: [0, memory.buffer.byteLength] };
  const top = ex.heap_mark(1); // every block, and every block's header, lies below it
  const pre = ex.heap_mark(0); // the top before the vocabulary's regions, 0 without them
  const dirty = [0, tablesEnd, RUNTIME_BASE, pre > 0 ? pre : top];
  if (pre > 0) {
    if (slot.attached) {
      dirty.push(slot.attached.end, top);
      return { memory, dirty, kept: slot.attached };
    }
    let first = top;
    for (let k = 0; k < 5; k++) {
      const at = ex.vocab_region(k);
      if (at > 0 && at < first) first = at;
    }
    dirty.push(first - 4, top);
  }
  const { kept } = slot;
  if (kept && top > kept.start) {
    dirty.push(kept.start, kept.end); // the runtime's blocks reached it
    return { memory, dirty };
  }
  return { memory, dirty, kept };
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
      const { memory, kept } = memoryFor(pool, parts.initial, parts.maximum);
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
      const slot: MemorySlot = { kept };
      if (kept) {
        const mark = (instance.exports as { heap_mark?: (k: number) => number }).heap_mark;
        if (typeof mark !== "function" || mark(1) > kept.start) {
          // The start function's blocks reached the kept vocabulary (the largest grammars), so it
          // read bytes that are not a fresh memory's: over again, on a memory all zero.
          new Uint8Array(memory.buffer).fill(0);
          new Uint8Array(memory.buffer).set(parts.tables, TABLE_BASE);
          instance = new WebAssembly.Instance(module, imports);
          slot.kept = undefined;
        }
      }
      const tablesEnd = TABLE_BASE + parts.tables.length;
      let released = false;
      const release = (): void => {
        if (released) return;
        released = true;
        if (pool.length < POOL_SIZE && memory.buffer.byteLength <= MAX_POOLED_BYTES) pool.push(written(instance, memory, tablesEnd, slot));
      };
      return { instance, module, shared: true, release, slot };
    }
  }
  const { instance, module } = await WebAssembly.instantiate(bytes, {});
  return { instance, module, shared: false };
}
