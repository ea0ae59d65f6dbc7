/**
 * Token-mask benchmark (DESIGN.md §5): Llama 3.1's tokenizer (128,256 tokens) and the example specs.
 *
 *   npx tsx bench/mask.bench.ts [--iterations N] [--spec examples/react.agent] [--trace FILE]
 *
 * Replays a real transcript token by token (its LLM segments tokenized with the real tokenizer,
 * env segments fed with feedEnv, prompt text from its first marker on fed with feedText) and times
 * every warm `fillMask` (including the 16 KB copy into the caller's Int32Array) with
 * process.hrtime.bigint, then reports the cold first visit of each state, the full precompute,
 * a batch of 256 matchers, and per-matcher memory. Targets: warm p50 ≤ 2 µs, p99 ≤ 10 µs;
 * precompute < 1 s; batch of 256 ≤ 2 ms.
 */
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { compileSource, compileToWasm } from "../compiler/compile.js";
import { buildTokenTrie, Spec, Vocabulary, type Matcher } from "../bindings/index.js";
import { loadPackageTokenizer, loadTokenizerJson } from "../tests/helpers/tokenizers.js";

const root = fileURLToPath(new URL("..", import.meta.url));
const { values } = parseArgs({
  options: {
    iterations: { type: "string", default: "300" },
    spec: { type: "string", default: "examples/react.agent" },
    trace: { type: "string", default: "tests/fixtures/traces/001-fig7-react-hotpotqa-colorado.json" },
  },
});
const ITER = Number(values.iterations);

const now = (): bigint => process.hrtime.bigint();
const ms = (ns: bigint | number): string => (Number(ns) / 1e6).toFixed(1) + " ms";
const us = (ns: number): string => (ns / 1e3).toFixed(2) + " µs";

function pct(sorted: Float64Array, p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}
function summary(samples: Float64Array): { p50: number; p90: number; p99: number; max: number; mean: number } {
  const s = samples.slice().sort();
  let sum = 0;
  for (const x of s) sum += x;
  return { p50: pct(s, 50), p90: pct(s, 90), p99: pct(s, 99), max: s[s.length - 1]!, mean: sum / s.length };
}

const rows: [string, string, string][] = [];
const row = (what: string, value: string, target = ""): void => {
  rows.push([what, value, target]);
};

// ---- Setup ------------------------------------------------------------------------------------------

let t0 = now();
const vocab = Vocabulary.fromTokenizerJsonObject(loadTokenizerJson("llama3_1"));
row("vocabulary (tokenizer.json → bytes)", `${vocab.size} tokens, ${ms(now() - t0)}`);
t0 = now();
const trie = buildTokenTrie(vocab);
row("token trie (TS, sort + DFS)", `${trie.nNodes} nodes, depth ≤ ${trie.maxDepth}, ${ms(now() - t0)}`);

const specPath = join(root, values.spec);
const compiled = compileSource(readFileSync(specPath, "utf8"), values.spec);
const wasm = compileToWasm(compiled);
row(".wasm size (runtime + tables)", `${wasm.length} B (bare runtime ${statSync(join(root, "build/runtime.wasm")).size} B)`, "≤ 64 KB");
t0 = now();
const spec = await Spec.load(wasm, { vocab });
row("Spec.load with vocabulary (copy + validate)", ms(now() - t0));

// ---- Cold: first visit of each state, full precompute -----------------------------------------------

{
  const nStates = spec.stateCount;
  const cold = new Float64Array(nStates);
  for (let s = 0; s < nStates; s++) {
    const a = now();
    spec.exports.mask_id(s);
    cold[s] = Number(now() - a);
  }
  const c = summary(cold);
  row(`cold first visit (${nStates} states, lazy)`, `p50 ${us(c.p50)}, p99 ${us(c.p99)}, max ${us(c.max)}`);
}
const fresh = await Spec.load(wasm, { vocab });
t0 = now();
const distinct = fresh.precompute();
const precomputeNs = now() - t0;
row(`full precompute (${compiled.byteDfa.nStates} states)`, `${ms(precomputeNs)}, ${distinct} distinct masks (incl. all-zero)`, "< 1 s");

// ---- Replay ------------------------------------------------------------------------------------------

type Step = { kind: "token"; id: number } | { kind: "env"; text: string } | { kind: "text"; text: string };
const trace = JSON.parse(readFileSync(join(root, values.trace), "utf8")) as { segments: { by: string; text: string }[] };
const { encode } = await loadPackageTokenizer("llama3_1");
const markers = spec.states.map((s) => s.marker);
const steps: Step[] = [];
for (const seg of trace.segments) {
  if (seg.by === "env") steps.push({ kind: "env", text: seg.text });
  else if (seg.by === "prompt") {
    const at = Math.min(...markers.map((m) => (seg.text.indexOf(m) < 0 ? Infinity : seg.text.indexOf(m))));
    if (at !== Infinity) steps.push({ kind: "text", text: seg.text.slice(at) });
  } else for (const id of encode(seg.text)) steps.push({ kind: "token", id });
}
const nTokens = steps.filter((s) => s.kind === "token").length;

function replay(m: Matcher, onToken: (m: Matcher) => void): void {
  m.reset();
  for (const st of steps) {
    if (st.kind === "env") m.feedEnv(st.text);
    else if (st.kind === "text") m.feedText(st.text);
    else {
      onToken(m);
      const r = m.commit(st.id);
      if (r === "rejected") throw new Error(`replay: token ${st.id} rejected`);
    }
  }
}

const bitmask = new Int32Array(spec.maskWords);
const m = spec.matcher();
replay(m, (x) => x.fillMask(bitmask)); // warm-up: every visited state's mask is computed
for (let i = 0; i < 20; i++) replay(m, (x) => x.fillMask(bitmask)); // JIT warm-up

// Timer overhead (two hrtime.bigint calls back to back).
const overhead = new Float64Array(50_000);
for (let i = 0; i < overhead.length; i++) {
  const a = now();
  overhead[i] = Number(now() - a);
}
const oh = summary(overhead).p50;

function timeReplay(label: string, f: (m: Matcher) => void, target = ""): void {
  const samples = new Float64Array(nTokens * ITER);
  let k = 0;
  for (let it = 0; it < ITER; it++) {
    replay(m, (x) => {
      const a = now();
      f(x);
      samples[k++] = Number(now() - a);
    });
  }
  const s = summary(samples.subarray(0, k));
  row(label, `p50 ${us(s.p50)}, p90 ${us(s.p90)}, p99 ${us(s.p99)}, max ${us(s.max)}  (${k} samples)`, target);
}

row("replay", `${values.trace.split("/").pop()}: ${nTokens} LLM tokens, ${steps.length - nTokens} env/prompt steps; timer overhead p50 ${us(oh)} (included below)`);
timeReplay("warm fillMask (16 KB into an Int32Array)", (x) => x.fillMask(bitmask), "p50 ≤ 2 µs, p99 ≤ 10 µs");
let sink = 0;
timeReplay("warm maskView (zero-copy view)", (x) => {
  sink ^= x.maskView()[0]!;
});
{
  const ex = spec.exports;
  const out = ex.out_ptr(spec.maskWords * 4);
  timeReplay("warm m_fill_mask (wasm memory.copy) + Int32Array.set", (x) => {
    ex.m_fill_mask(x.handle, out);
    bitmask.set(new Int32Array(ex.memory.buffer, out, spec.maskWords));
  });
}
{
  // commit alone
  const samples = new Float64Array(nTokens * ITER);
  let k = 0;
  for (let it = 0; it < ITER; it++) {
    m.reset();
    for (const st of steps) {
      if (st.kind === "env") m.feedEnv(st.text);
      else if (st.kind === "text") m.feedText(st.text);
      else {
        const a = now();
        m.commit(st.id);
        samples[k++] = Number(now() - a);
      }
    }
  }
  const s = summary(samples.subarray(0, k));
  row("commit(tokenId)", `p50 ${us(s.p50)}, p99 ${us(s.p99)}`);
}
{
  const a = now();
  for (let it = 0; it < ITER; it++) replay(m, (x) => x.fillMask(bitmask));
  const per = Number(now() - a) / (ITER * nTokens);
  row("decode step, amortized (fillMask + commit, no timers)", us(per));
}

// ---- Batch of 256 -----------------------------------------------------------------------------------

{
  // 256 matchers spread over the transcript's positions.
  const positions: number[] = [];
  replay(m, (x) => positions.push(x.state));
  const batch = Array.from({ length: 256 }, (_, i) => {
    const b = spec.matcher();
    b.state = positions[Math.floor((i * positions.length) / 256)]!;
    return b;
  });
  const out = new Int32Array(256 * spec.maskWords);
  for (let i = 0; i < 50; i++) spec.fillMasks(batch, out);
  const samples = new Float64Array(Math.max(200, ITER));
  for (let i = 0; i < samples.length; i++) {
    const a = now();
    spec.fillMasks(batch, out);
    samples[i] = Number(now() - a);
  }
  const s = summary(samples);
  row("batch of 256: Spec.fillMasks (4 MB out)", `p50 ${us(s.p50)}, p99 ${us(s.p99)}`, "≤ 2 ms");
  const ex = spec.exports;
  const handles = ex.out_ptr(256 * 4 + 256 * spec.maskWords * 4);
  new Int32Array(ex.memory.buffer, handles, 256).set(batch.map((b) => b.handle));
  const outPtr = handles + 256 * 4;
  for (let i = 0; i < samples.length; i++) {
    const a = now();
    ex.fill_masks(handles, 256, outPtr);
    samples[i] = Number(now() - a);
  }
  const r = summary(samples);
  row("batch of 256: raw fill_masks (into wasm memory)", `p50 ${us(r.p50)}, p99 ${us(r.p99)}`);
}

// ---- Memory -------------------------------------------------------------------------------------------

{
  const before = spec.exports.memory.buffer.byteLength;
  globalThis.gc?.();
  const heap0 = process.memoryUsage().heapUsed;
  const many: Matcher[] = [];
  for (let i = 0; i < 100_000; i++) many.push(spec.matcher());
  globalThis.gc?.();
  const heap1 = process.memoryUsage().heapUsed;
  const grown = spec.exports.memory.buffer.byteLength - before;
  row(
    "per matcher",
    `52 B in wasm (state, done, counter, budget, 8-token rollback ring); JS wrapper ≈ ${Math.round((heap1 - heap0) / many.length)} B${globalThis.gc ? "" : " (run with --expose-gc for a steadier figure)"}; memory grew ${(grown / 1024).toFixed(0)} KB for 100k`,
    "a few dozen bytes",
  );
  const masksBytes = distinct * spec.maskWords * 4;
  row("mask cache", `${distinct} × ${spec.maskWords * 4} B = ${(masksBytes / 1024).toFixed(0)} KB (vs ${compiled.byteDfa.nStates} states × 16 KB unshared)`);
}

// ---- Distinct masks per example --------------------------------------------------------------------------

for (const name of ["react", "react-brackets", "react-tools", "chat-bot", "reflexion", "react-zh"]) {
  const c = compileSource(readFileSync(join(root, "examples", `${name}.agent`), "utf8"), name);
  const sp = await Spec.load(compileToWasm(c), { vocab });
  const a = now();
  const d = sp.precompute();
  row(`  ${name}.agent`, `${c.byteDfa.nStates} states → ${d} distinct masks, precompute ${ms(now() - a)}`);
}

// ---- Report ------------------------------------------------------------------------------------------------

const w0 = Math.max(...rows.map((r) => r[0].length));
const w1 = Math.max(...rows.map((r) => r[1].length));
console.log(`specc mask benchmark — ${values.spec}, Llama 3.1 tokenizer, node ${process.version}, ${ITER} replays\n`);
for (const [a, b, c] of rows) console.log(`${a.padEnd(w0)}  ${b.padEnd(w1)}  ${c}`);
if (sink === 42) console.log("");
