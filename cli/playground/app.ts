/**
 * @fileoverview The playground page's script (bundled for the browser by scripts/bundle.mjs into
 * dist/playground/app.js; served by cli/playground.ts). regex101 for agent specs: the spec or
 * grammar is compiled in the page on every edit (the browser bundle of compiler/ and bindings/,
 * no server round trip), diagnostics shown at file:line:col, the state diagram drawn with
 * Graphviz (WebAssembly, in the page) with the matcher's current state highlighted, and a
 * transcript stepped token by token with a real tokenizer: per token, whether the mask allowed
 * it, how many tokens the mask allows, the forced (jump-forward) text and the mask's latency.
 *
 * Transcript convention (as `specc replay`'s segments, written as plain text): text before the
 * first marker is prompt context and skipped; LLM text is tokenized up to and including the next
 * env-input marker; then, while the matcher yields, the text up to the next marker is the
 * environment's reply (fed with `feedEnv`, not tokenized).
 */
import { TokenizerLoader } from "@lenml/tokenizers";
import { compileGrammarSource, compileSource, compileToWasm, formatDiagnostic, isGrammarFile, renderSvg, ruleDot, SpecError, stateDot, type Compiled, type CompiledGrammar } from "../../compiler/index.js";
import { exactEncoder } from "../../bindings/exact-encoder.js";
import { Spec, Vocabulary, type Matcher } from "../../bindings/index.js";

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const source = $<HTMLTextAreaElement>("source");
const nameInput = $<HTMLInputElement>("name");
const diagnostics = $<HTMLPreElement>("diagnostics");
const diagram = $<HTMLDivElement>("diagram");
const transcript = $<HTMLTextAreaElement>("transcript");
const statusEl = $<HTMLSpanElement>("status");
const tbody = $<HTMLTableElement>("steps").tBodies[0]!;
const download = $<HTMLButtonElement>("download");
const dec = new TextDecoder();

interface Tok { name: string; vocab: Vocabulary; encode: (text: string) => number[] }
let tok: Tok | undefined;
let compiled: { c: Compiled; wasm: Uint8Array; name: string } | undefined;
let spec: Spec | undefined;
let compileSeq = 0;

// ───────────── compile on every edit ─────────────

function showDiagnostics(errors: SpecError[] | string | null, text: string): void {
  if (errors === null) {
    diagnostics.className = "ok";
    diagnostics.textContent = "✓ compiles";
    return;
  }
  diagnostics.className = "bad";
  diagnostics.textContent = typeof errors === "string" ? errors : errors.map((e) => formatDiagnostic(e, e.span?.file === nameInput.value ? text : undefined)).join("\n\n");
}

async function recompile(): Promise<void> {
  const seq = ++compileSeq;
  const text = source.value;
  const name = nameInput.value.trim() || "spec.agent";
  let c: Compiled;
  try {
    c = isGrammarFile(name) ? compileGrammarSource(text, name) : compileSource(text, name);
  } catch (e) {
    if (e instanceof SpecError) showDiagnostics([e, ...((e as SpecError & { more?: SpecError[] }).more ?? [])], text);
    else showDiagnostics(`internal error: ${(e as Error).message}`, text);
    // The last good diagram stays, dimmed; nothing runs against a spec that no longer compiles.
    download.disabled = true;
    diagram.classList.add("stale");
    compiled = undefined;
    await loadSpec();
    return;
  }
  diagram.classList.remove("stale");
  showDiagnostics(null, text);
  const wasm = compileToWasm(c);
  compiled = { c, wasm, name };
  download.disabled = false;
  const dot = "grammar" in c ? ruleDot((c as CompiledGrammar).grammar.cfg, c.ir.name) : stateDot(c.ir, c.minStateDfa);
  const svg = await renderSvg(dot);
  if (seq !== compileSeq) return; // a newer edit won
  diagram.innerHTML = svg;
  await loadSpec();
}

async function loadSpec(): Promise<void> {
  spec = compiled && tok ? await Spec.load(compiled.wasm, { vocab: tok.vocab }) : undefined;
  resetRun();
}

let timer: ReturnType<typeof setTimeout> | undefined;
const schedule = () => { clearTimeout(timer); timer = setTimeout(() => void recompile(), 200); };
source.addEventListener("input", schedule);
nameInput.addEventListener("input", schedule);

download.addEventListener("click", () => {
  if (!compiled) return;
  const a = document.createElement("a");
  a.href = URL.createObjectURL(new Blob([compiled.wasm as Uint8Array<ArrayBuffer>], { type: "application/wasm" }));
  a.download = compiled.name.replace(/\.[^.]*$/, "") + ".wasm";
  a.click();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
});

// ───────────── tokenizers ─────────────

async function useTokenizer(name: string, json: object, config: object = {}): Promise<void> {
  const vocab = await Vocabulary.fromTokenizerJson(json);
  const t = TokenizerLoader.fromPreTrained({ tokenizerJSON: json, tokenizerConfig: config });
  const encode = exactEncoder((text) => [...t.encode(text, { add_special_tokens: false })], (id) => vocab.tokenBytes(id));
  tok = { name, vocab, encode };
  $("tokname").textContent = `${name} (${vocab.size} tokens)`;
  await loadSpec();
}

async function dropped(file: File): Promise<void> {
  try {
    await useTokenizer(file.name, JSON.parse(await file.text()) as object);
  } catch (e) {
    statusEl.textContent = `${file.name}: ${(e as Error).message}`;
  }
}
const drop = $("drop");
drop.addEventListener("dragover", (e) => { e.preventDefault(); drop.classList.add("over"); });
drop.addEventListener("dragleave", () => drop.classList.remove("over"));
drop.addEventListener("drop", (e) => {
  e.preventDefault();
  drop.classList.remove("over");
  const f = e.dataTransfer?.files[0];
  if (f) void dropped(f);
});
$<HTMLInputElement>("tokfile").addEventListener("change", (e) => {
  const f = (e.target as HTMLInputElement).files?.[0];
  if (f) void dropped(f);
});

// ───────────── stepping a transcript ─────────────

interface Run { m: Matcher; mask: Int32Array; pos: number; started: boolean; chunk: number[] | null; chunkEnd: number; idx: number; n: number; over: boolean }
let run: Run | undefined;

function popcount(mask: Int32Array): number {
  let n = 0;
  for (const w of mask) for (let v = w >>> 0; v; v &= v - 1) n++;
  return n;
}

/** The first occurrence at or after `from` of any of `markers`: its index and end, or null. */
function nextMarker(text: string, from: number, markers: string[]): { at: number; end: number } | null {
  let best: { at: number; end: number } | null = null;
  for (const mk of markers) {
    if (!mk) continue;
    const at = text.indexOf(mk, from);
    if (at >= 0 && (!best || at < best.at || (at === best.at && at + mk.length > best.end))) best = { at, end: at + mk.length };
  }
  return best;
}

function resetRun(): void {
  tbody.replaceChildren();
  run = spec ? { m: spec.matcher(), mask: new Int32Array(spec.maskWords), pos: 0, started: false, chunk: null, chunkEnd: 0, idx: 0, n: 0, over: false } : undefined;
  highlight();
  statusEl.textContent = !compiled ? "fix the spec to step a transcript" : !tok ? "loading the tokenizer…" : "ready";
}

function addRow(cells: (string | number)[], cls = ""): void {
  const tr = tbody.insertRow();
  if (cls) tr.className = cls;
  cells.forEach((c, i) => {
    const td = tr.insertCell();
    td.textContent = String(c);
    if (i === 2) td.className = "tok";
  });
  tr.scrollIntoView({ block: "nearest" });
}

function highlight(): void {
  for (const g of diagram.querySelectorAll("g.node.current")) g.classList.remove("current");
  const name = run?.m.specState;
  if (!compiled || !name) return;
  const idx = compiled.c.ir.states.findIndex((s) => s.name === name);
  for (const g of diagram.querySelectorAll("g.node")) {
    if (new RegExp(`^q\\d+_s${idx}$`).test(g.querySelector("title")?.textContent ?? "")) g.classList.add("current");
  }
}

/** One step: a token (or an environment reply). false when the run is over. */
function step(): boolean {
  if (!run || !spec || !tok || run.over) return false;
  const r = run;
  const text = transcript.value;
  const states = spec.states;
  const finish = (msg: string) => { r.over = true; statusEl.textContent = msg; return false; };
  if (!r.started) {
    const first = nextMarker(text, 0, states.map((s) => s.marker));
    r.pos = states.some((s) => s.marker === "") ? 0 : first?.at ?? text.length;
    r.started = true;
  }
  if (r.m.yielding && r.chunk === null) {
    const next = nextMarker(text, r.pos, states.filter((s) => !s.env).map((s) => s.marker));
    const end = next?.at ?? text.length;
    const env = text.slice(r.pos, end);
    r.m.feedEnv(env);
    addRow(["", "env", JSON.stringify(env), "", "", "", "", `env reply → ${r.m.specState ?? ""}`], "env");
    r.pos = end;
    highlight();
    return true;
  }
  if (r.chunk === null) {
    if (r.pos >= text.length) return finish(r.m.isAccepting ? "end of transcript: accepted" : "end of transcript: not in an accepting state");
    const env = nextMarker(text, r.pos, states.filter((s) => s.env).map((s) => s.marker));
    r.chunkEnd = env?.end ?? text.length;
    try {
      r.chunk = tok.encode(text.slice(r.pos, r.chunkEnd));
    } catch (e) {
      return finish(`tokenizer: ${(e as Error).message}`);
    }
    r.idx = 0;
  }
  const id = r.chunk[r.idx]!;
  const t0 = performance.now();
  r.m.fillMask(r.mask);
  const us = (performance.now() - t0) * 1000;
  const allowed = ((r.mask[id >> 5]! >>> (id & 31)) & 1) === 1;
  const bytes = tok.vocab.tokenBytes(id);
  const shown = JSON.stringify(bytes ? dec.decode(bytes) : `<special ${id}>`);
  const count = popcount(r.mask);
  r.n++;
  if (!allowed) {
    addRow([r.n, id, shown, "forbidden", count, "", us.toFixed(1), r.m.specState ?? "(start)"], "forbidden");
    return finish(`token ${r.n} (${shown}) is forbidden by the mask`);
  }
  const status = r.m.commit(id);
  addRow([r.n, id, shown, "allowed", count, JSON.stringify(r.m.forced()), us.toFixed(1), `${r.m.specState ?? "(start)"} · ${status}`]);
  highlight();
  if (++r.idx >= r.chunk.length) { r.pos = r.chunkEnd; r.chunk = null; }
  statusEl.textContent = `${r.n} tokens`;
  return true;
}

$("step").addEventListener("click", () => { step(); });
$("run").addEventListener("click", () => { for (let i = 0; i < 100_000 && step(); i++); });
$("reset").addEventListener("click", resetRun);
transcript.addEventListener("input", resetRun);

// ───────────── start ─────────────

const init = (await (await fetch("./init.json")).json()) as { name: string; text: string; transcript: string; tokenizer: string };
nameInput.value = init.name;
source.value = init.text;
transcript.value = init.transcript;
await recompile();
const [tj, tc] = await Promise.all([fetch("./tokenizer.json").then((r) => r.json()), fetch("./tokenizer_config.json").then((r) => (r.ok ? r.json() : {}))]);
await useTokenizer(init.tokenizer, tj as object, tc as object);
document.body.dataset["ready"] = "1";
