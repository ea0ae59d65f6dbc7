/**
 * @fileoverview What the fuzzer feeds and what counts as a defect (issue 14). One target per front
 * end and loader: agent specs, GBNF grammars, JSON Schemas, AgentSpec rules, transcripts, compiled
 * .wasm files, prepared vocabularies (`specc vocab`) and tokenizer.json files. Each input comes from a seed (the shipped examples) by
 * seeded byte-level mutations, so input `i` of a run is reproducible from the run's seed alone.
 *
 * An input is fine when it compiles (loads) or is refused with the front end's own error
 * (`SpecError`, `VocabularyError`); anything else thrown is a defect ("crash"), as is a .wasm that
 * (or prepared vocabulary) that loads although its bytes were damaged, or a mask that differs
 * from the brute-force walk of the loaded tables and vocabulary. Hangs and memory blow-ups are caught by the driver (run.ts), not here.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Spec } from "../../bindings/spec.js";
import { Vocabulary, VocabularyError } from "../../bindings/vocab.js";
import { resealPrepared } from "../../bindings/prepared-vocab.js";
import { compileGrammarSource, compileSource, compileToWasm, type Limits } from "../../compiler/compile.js";
import { SpecError } from "../../compiler/diagnostics.js";
import { decodeSource } from "../../compiler/frontend/parse.js";
import { compileJsonSchema } from "../../compiler/jsonschema/index.js";
import { seededRandom } from "../../compiler/random.js";
import { parseRules } from "../../compiler/rules/index.js";
import { runBytes } from "../../compiler/automata/bytes.js";
import { byteDfaEngine, parseTrace, runTrace } from "../../compiler/trace.js";
import { parseTables, TABLE_BASE } from "../../compiler/tables.js";
import { seal, unseal } from "../../compiler/seal.js";

/** Small limits: the fuzzer looks for crashes, not for the largest automaton that still fits. */
const LIMITS: Limits = { maxByteStates: 5000, maxDfaStates: 2000, maxNfaStates: 2000, maxGrammarStates: 5000 };
const enc = new TextEncoder();
const dec = new TextDecoder();

/** A defect: what an input must never do. */
export class FuzzDefect extends Error {
  constructor(message: string) {
    super(message);
    this.name = "FuzzDefect";
  }
}

export interface Target {
  name: string;
  seeds: Uint8Array[];
  /** Words the mutator splices in (the front end's keywords and punctuation). */
  dictionary: string[];
  /** "ok" or "refused"; throws FuzzDefect (or anything unexpected) for a defect. */
  run(input: Uint8Array): Promise<"ok" | "refused"> | "ok" | "refused";
}

const expected = (e: unknown): boolean => e instanceof SpecError || e instanceof VocabularyError;

function guard(f: () => unknown): "ok" | "refused" {
  try {
    f();
    return "ok";
  } catch (e) {
    if (expected(e)) return "refused";
    throw e;
  }
}

function filesIn(dir: string, ext: string): Uint8Array[] {
  return readdirSync(dir).filter((f) => f.endsWith(ext)).map((f) => readFileSync(join(dir, f)));
}

// ---- mutation ------------------------------------------------------------------------------------

/** Input `i` of a run: a seeded mutation (1 to 8 edits) of one seed, sometimes spliced with another. */
export function makeInput(t: Target, seed: number, i: number): Uint8Array {
  const r = seededRandom((seed * 1_000_003 + i) >>> 0);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  let b = Array.from(pick(t.seeds));
  const edits = 1 + Math.floor(r() * 8);
  for (let k = 0; k < edits; k++) {
    const at = Math.floor(r() * (b.length + 1));
    const op = r();
    if (op < 0.2) b.splice(at, 1 + Math.floor(r() * 8));
    else if (op < 0.45) b.splice(at, 0, ...enc.encode(pick(t.dictionary)));
    else if (op < 0.6) b.splice(at, 0, Math.floor(r() * 256));
    else if (op < 0.75 && b.length) b[Math.min(at, b.length - 1)] ^= 1 << Math.floor(r() * 8);
    else if (op < 0.85) { const len = Math.floor(r() * 40); b.splice(at, 0, ...b.slice(at, at + len)); }
    else if (op < 0.92) b = b.slice(0, at);
    else { const o = Array.from(pick(t.seeds)); const from = Math.floor(r() * o.length); b.splice(at, 0, ...o.slice(from, from + Math.floor(r() * 200))); }
  }
  return Uint8Array.from(b);
}

// ---- the text front ends -------------------------------------------------------------------------

const agent: Target = {
  name: "agent",
  // The examples, and one whose content nests without a file (the fuzzer reads none): it runs on a stack.
  seeds: [...filesIn("examples", ".agent"), enc.encode('(define s (:states (A (:text "A:") (:grammar-text "root ::= \\"[\\" (root (\\",\\" root)*)? \\"]\\" | [a-z]")) ' +
    '(B (:text "]:") (:flags :env-input)) (C (:text "Final:"))) (:behavior (next (until (next A B) A) C)))')],
  dictionary: ["(", ")", "(define", ":states", ":behavior", ":constraints", ":text", ":token", ":flags", ":env-input", ":output-constrs",
    ":grammar-text", ":json-schema-text", ":tool-name", ":tool-args", ":tool-call", ":empty", ":tools", ":max-depth", "next", "or", "until",
    "until_2", "until_1_3", "always", "at-most", "at-least", "eventually", "before", "(tool a)", "(each-tool)", "\"", "\"A:\"", "#", ";", "\n",
    "((((((((", "))))))))", "\"root ::= [a-z]+\"", "\"{\\\"type\\\": \\\"integer\\\"}\"", "64", "65", "999999999999",
    // Content that nests (it runs on a stack) and markers made of its bytes.
    "(:grammar-text \"root ::= \\\"[\\\" (root (\\\",\\\" root)*)? \\\"]\\\" | [a-z]\")", "(:json-schema-text \"{\\\"items\\\": {\\\"$ref\\\": \\\"#\\\"}}\")",
    "(:text \"]:\")", "(:text \"[\")", "(:text \"a\")"],
  run: (b) => guard(() => compileSource(decodeSource("fuzz.agent", b), "fuzz.agent", LIMITS, { readFile: () => { throw Object.assign(new Error("no files in the fuzzer"), { code: "ENOENT" }); } })),
};

const gbnf: Target = {
  name: "gbnf",
  seeds: filesIn("examples/grammars", ".gbnf"),
  dictionary: ["::=", "|", "(", ")", "*", "+", "?", "{0,99}", "{2}", "{,3}", "[^x]", "[a-z]", "\"", "\\\"", "root", "root ::= ", "\n", "#", ".", "\\u00e9", "\\x41"],
  run: (b) => guard(() => compileGrammarSource(decodeSource("fuzz.gbnf", b), "fuzz.gbnf", LIMITS)),
};

const jsonschema: Target = {
  name: "jsonschema",
  seeds: filesIn("examples/schemas", ".json"),
  dictionary: ["{", "}", "[", "]", ",", ":", "\"type\"", "\"object\"", "\"string\"", "\"integer\"", "\"number\"", "\"array\"", "\"$ref\"", "\"#/$defs/a\"",
    "\"$defs\"", "\"properties\"", "\"required\"", "\"items\"", "\"anyOf\"", "\"oneOf\"", "\"allOf\"", "\"enum\"", "\"const\"", "\"pattern\"", "\"(a|b)*c{2,5}\"",
    "\"minimum\"", "\"maximum\"", "\"minLength\"", "\"maxLength\"", "\"format\"", "\"date-time\"", "true", "false", "null", "1e308", "-0", "9999999999"],
  run: (b) => guard(() => compileJsonSchema(decodeSource("fuzz.schema.json", b), "fuzz.schema.json", { limits: LIMITS })),
};

const rules: Target = {
  name: "rules",
  seeds: filesIn("examples/rules", ".rules"),
  dictionary: ["rule", "@r", "trigger", "check", "enforce", "end", "any", "Gmail.SendEmail", "not", "!", "true", "false", "user_inspection",
    "llm_self_reflect(2)", "invoke_action(A, {\"k\": 1})", "stop", "(", ")", "{", "}", "\n", "#"],
  run: (b) => guard(() => parseRules(decodeSource("fuzz.rules", b), "fuzz.rules")),
};

let traceEngine: ReturnType<typeof byteDfaEngine> | undefined;
let traceMarkers: string[] = [];
const trace: Target = {
  name: "trace",
  seeds: filesIn("tests/fixtures/traces", ".json").filter((b) => dec.decode(b).includes("\"segments\"")).slice(0, 20),
  dictionary: ["{", "}", "[", "]", ",", "\"segments\"", "\"by\"", "\"llm\"", "\"env\"", "\"prompt\"", "\"text\"", "\"Thought:\"", "\"Action:\"", "\"Observation:\"", "null", "\\u0000"],
  run: (b) => guard(() => {
    if (!traceEngine) {
      const c = compileSource(readFileSync("examples/react.agent", "utf8"), "examples/react.agent");
      traceEngine = byteDfaEngine(c.byteDfa);
      traceMarkers = c.ir.states.map((s) => s.marker);
    }
    runTrace(traceEngine, parseTrace(dec.decode(b), "fuzz.json"), traceMarkers);
  }),
};

// ---- the loaders ---------------------------------------------------------------------------------

/** A small vocabulary over every byte and the examples' marker pieces: attaching it is cheap. */
function smallVocab(): Vocabulary {
  const toks: (Uint8Array | null)[] = [];
  for (let b = 0; b < 256; b++) toks.push(Uint8Array.of(b));
  for (const w of ["Thought:", "Action:", " Search", "Action Input:", "Observation:", "Final", " Answer:", "[Question]", "\n", "  ", "思考", "{\"", "\"}"]) toks.push(enc.encode(w));
  toks.push(null);
  return Vocabulary.fromTokenBytes(toks, { eos: [toks.length - 1] });
}

let vocab: Vocabulary | undefined;
let wasmSeeds: { bytes: Uint8Array }[] | undefined;
function wasmSeedList(): { bytes: Uint8Array }[] {
  return (wasmSeeds ??= ["examples/react.agent", "examples/chat-bot.agent", "examples/react-tools.agent"].map((f) => ({
    bytes: compileToWasm(compileSource(readFileSync(f, "utf8"), f)),
  })).concat([{ bytes: compileToWasm(compileGrammarSource(readFileSync("examples/grammars/arithmetic.gbnf", "utf8"), "arithmetic.gbnf") as never) }]));
}

/** Whether `b` is byte for byte one of `seeds` (a mutation that changed nothing). */
const isSeed = (seeds: Uint8Array[], b: Uint8Array): boolean => seeds.some((s) => s.length === b.length && s.every((x, i) => x === b[i]));

/**
 * Loads a .wasm with the small vocabulary. A load of bytes that are not exactly a seed's is a
 * defect (the seal must catch every damage); `resealed` inputs (damage to the tables, then sealed
 * again, as a hostile builder would) may load, and then every mask must equal the brute-force walk
 * of the tables as parsed.
 */
async function loadWasm(b: Uint8Array, resealed: boolean): Promise<"ok" | "refused"> {
  vocab ??= smallVocab();
  let spec: Spec;
  try {
    spec = await Spec.load(b, { vocab });
  } catch (e) {
    if (e instanceof SpecError && e.code === "E0602") return "refused";
    if (e instanceof Error && /^(cannot attach the vocabulary|the spec's token marker)/.test(e.message)) return "refused";
    throw e;
  }
  const seedBytes = wasmSeedList().map((s) => s.bytes);
  if (!resealed && !isSeed(seedBytes, b)) {
    throw new FuzzDefect("a damaged .wasm loaded (the seal did not catch it)");
  }
  return checkMasks(spec);
}

/** Every state's mask (up to 400) against the brute-force walk of the loaded tables and vocabulary. */
function checkMasks(spec: Spec): "ok" {
  if (spec.pushdown) return "ok";
  const dfa = spec.dfa;
  const mem = new Uint8Array(spec.exports.memory.buffer);
  const total = new DataView(spec.exports.memory.buffer).getUint32(TABLE_BASE + 8, true);
  parseTables(mem.slice(TABLE_BASE, TABLE_BASE + total));
  const bound = spec.vocab!.flat();
  const eos = new Set(spec.vocab!.eos);
  for (let s = 0; s < Math.min(dfa.nStates, 400); s++) {
    const got = spec.stateMask(s);
    const accepting = (dfa.flags[s]! & 1) !== 0;
    const yielding = (dfa.flags[s]! & 2) !== 0;
    for (let id = 0; id < spec.vocab!.size; id++) {
      const tb = bound.special[id] ? null : bound.bytes.subarray(bound.offsets[id]!, bound.offsets[id + 1]!);
      // docs/abi.md, "Masks": EOS iff accepting, an empty text token always (only a hostile
      // vocabulary has one), a non-empty one iff the walk of its bytes does not fail.
      const want = tb === null ? eos.has(id) && accepting : tb.length === 0 || (!yielding && walkOk(dfa, s, tb));
      const have = ((got[id >> 5]! >>> (id & 31)) & 1) === 1;
      if (want !== have) throw new FuzzDefect(`mask of state ${s}, token ${id}: runtime ${have}, brute force ${want}`);
    }
  }
  return "ok";
}

/** The runtime's walk: byte by byte, stopping (allowed) at a yield state only at the token's end. */
function walkOk(dfa: Spec["dfa"], s: number, b: Uint8Array): boolean {
  for (let i = 0; i < b.length; i++) {
    if (dfa.flags[s]! & 2) return false; // nothing may follow an env-input marker inside a token
    s = runBytes(dfa, s, b.subarray(i, i + 1));
    if (s < 0) return false;
  }
  return true;
}

const wasm: Target = {
  name: "wasm",
  get seeds() { return wasmSeedList().map((s) => s.bytes); },
  dictionary: ["\u0000asm", "\u0001\u0000\u0000\u0000", "SPCC", "\u00ff\u00ff\u00ff\u00ff\u000f", "specc.seal", "specc.vocab"],
  run: (b) => loadWasm(b, false),
};

/** Damage inside the tables, then sealed again: the table validation must hold on its own. */
const wasmResealed: Target = {
  name: "wasm-resealed",
  get seeds() { return wasmSeedList().map((s) => s.bytes); },
  dictionary: ["\u0000", "\u00ff\u00ff", "\u0001", "\u00ff\u00ff\u00ff\u00ff"],
  run: (b) => loadWasm(b, true),
};

/** The tables' byte range in a .wasm (the data segment's payload starting with the magic "SPCC"). */
export function tablesRange(w: Uint8Array): [number, number] {
  for (let i = 8; i + 12 < w.length; i++) {
    if (w[i] === 0x53 && w[i + 1] === 0x50 && w[i + 2] === 0x43 && w[i + 3] === 0x43) {
      const total = new DataView(w.buffer, w.byteOffset + i + 8, 4).getUint32(0, true);
      if (i + total <= w.length) return [i, i + total];
    }
  }
  return [0, 0];
}

/** Input `i` of the resealed target: 1 to 4 byte changes inside the tables, then sealed. */
export function makeResealedInput(seed: number, i: number): Uint8Array {
  const r = seededRandom((seed * 7_000_003 + i) >>> 0);
  const seeds = wasmSeedList();
  const w = unseal(seeds[Math.floor(r() * seeds.length)]!.bytes).slice();
  const [a, z] = tablesRange(w);
  for (let k = 1 + Math.floor(r() * 4); k > 0; k--) {
    const at = a + Math.floor(r() * (z - a));
    w[at] = r() < 0.5 ? w[at]! ^ (1 << Math.floor(r() * 8)) : Math.floor(r() * 256);
  }
  return seal(w);
}

// ---- prepared vocabularies (specc vocab) --------------------------------------------------------

let vocabSeeds: Uint8Array[] | undefined;
function vocabSeedList(): Uint8Array[] {
  return (vocabSeeds ??= [smallVocab().toPrepared(), ...tokenizerSeeds().map((b) => Vocabulary.fromTokenizerJsonObject(JSON.parse(dec.decode(b))).toPrepared())]);
}

/**
 * Reads a prepared vocabulary and attaches it to examples/react.agent. A damaged file that loads
 * is a defect (the checksum must catch it) unless `resealed` (damage, then the checksum made
 * right again, as a hostile builder would): then loading may succeed, and attaching must either
 * be refused by the runtime's checks or give every mask the brute-force walk gives.
 */
async function loadPrepared(b: Uint8Array, resealed: boolean): Promise<"ok" | "refused"> {
  let v: Vocabulary;
  try {
    v = Vocabulary.fromPrepared(b, "fuzz.vocab");
  } catch (e) {
    if (e instanceof VocabularyError) return "refused";
    throw e;
  }
  if (!resealed && !isSeed(vocabSeedList(), b)) {
    throw new FuzzDefect("a damaged prepared vocabulary loaded (the checksum did not catch it)");
  }
  let spec: Spec;
  try {
    spec = await Spec.load(wasmSeedList()[0]!.bytes, { vocab: v });
  } catch (e) {
    if (e instanceof Error && /^cannot attach the vocabulary/.test(e.message)) return "refused";
    throw e;
  }
  return checkMasks(spec);
}

const preparedVocab: Target = {
  name: "vocab",
  get seeds() { return vocabSeedList(); },
  dictionary: ["SPPV", "\u0003\u0000\u00ff\u00fe", "\u00ff\u00ff\u00ff\u00ff", "\u0000\u0000\u0000\u0000", "[[\"</s>\",2]]"],
  run: (b) => loadPrepared(b, false),
};

/** Damage after the magic, then the checksum made right: the per-token checks must hold on their own. */
const preparedVocabResealed: Target = {
  name: "vocab-resealed",
  get seeds() { return vocabSeedList(); },
  dictionary: [],
  run: (b) => loadPrepared(b, true),
};

/** Input `i` of the resealed vocabulary target: 1 to 4 byte changes past the magic, then resealed. */
export function makeResealedVocabInput(seed: number, i: number): Uint8Array {
  const r = seededRandom((seed * 9_000_011 + i) >>> 0);
  const seeds = vocabSeedList();
  const v = seeds[Math.floor(r() * seeds.length)]!.slice();
  for (let k = 1 + Math.floor(r() * 4); k > 0; k--) {
    const at = 8 + Math.floor(r() * (v.length - 8));
    v[at] = r() < 0.5 ? v[at]! ^ (1 << Math.floor(r() * 8)) : Math.floor(r() * 256);
  }
  return resealPrepared(v);
}

const tokenizerSeeds = (): Uint8Array[] => {
  const tiny = {
    model: { type: "BPE", vocab: { a: 0, b: 1, "Ġ": 2, ab: 3 }, merges: ["a b"] },
    added_tokens: [{ id: 4, content: "</s>", special: true }, { id: 5, content: "<tool_call>", special: false }],
    decoder: { type: "ByteLevel" }, pre_tokenizer: { type: "ByteLevel" },
  };
  const sp = {
    model: { type: "BPE", byte_fallback: true, vocab: { "<unk>": 0, "<s>": 1, "</s>": 2, "▁a": 3, "<0x41>": 4 }, merges: [] },
    added_tokens: [{ id: 2, content: "</s>", special: true }],
    decoder: { type: "Sequence", decoders: [{ type: "Replace", pattern: { String: "▁" }, content: " " }, { type: "ByteFallback" }] },
    normalizer: { type: "Sequence", normalizers: [{ type: "Prepend", prepend: "▁" }] },
  };
  return [enc.encode(JSON.stringify(tiny)), enc.encode(JSON.stringify(sp, null, 1))];
};

const tokenizer: Target = {
  name: "tokenizer",
  seeds: tokenizerSeeds(),
  dictionary: ["{", "}", "[", "]", ",", ":", "\"model\"", "\"vocab\"", "\"added_tokens\"", "\"id\"", "\"content\"", "\"special\"", "true", "null", "-1",
    "4294967296", "1e9", "\"merges\"", "\"decoder\"", "\"ByteLevel\"", "\"<|im_end|>\"", "\"\"", "\\u0000", "\\ud800"],
  run: async (b) => {
    try {
      await Vocabulary.fromTokenizerJson(b);
      return "ok";
    } catch (e) {
      if (e instanceof VocabularyError) return "refused";
      throw e;
    }
  },
};

export const TARGETS: Target[] = [agent, gbnf, jsonschema, rules, trace, wasm, wasmResealed, preparedVocab, preparedVocabResealed, tokenizer];

/** Input `i` of target `t` in a run with `seed`. */
export function inputOf(t: Target, seed: number, i: number): Uint8Array {
  if (t.name === "wasm-resealed") return makeResealedInput(seed, i);
  if (t.name === "vocab-resealed") return makeResealedVocabInput(seed, i);
  return makeInput(t, seed, i);
}

/** An input that takes longer than this to compile or be refused is a defect. */
export const SLOW_MS = 2000;

export interface LoopResult {
  tried: number;
  ok: number;
  refused: number;
  crashes: { i: number; message: string }[];
  slowest: { i: number; ms: number };
}

/**
 * Runs inputs `from .. from + count - 1` of target `t` (or until `deadline`, a Date.now() value).
 * `progress[0]` (shared with the driver's watchdog) holds the index being run.
 */
export async function fuzzLoop(t: Target, seed: number, from: number, count: number, deadline = Infinity, progress?: Int32Array): Promise<LoopResult> {
  const out: LoopResult = { tried: 0, ok: 0, refused: 0, crashes: [], slowest: { i: -1, ms: 0 } };
  for (let i = from; i < from + count && Date.now() < deadline; i++) {
    if (progress) Atomics.store(progress, 0, i);
    const input = inputOf(t, seed, i);
    const t0 = performance.now();
    try {
      const r = await t.run(input);
      if (r === "ok") out.ok++;
      else out.refused++;
    } catch (e) {
      out.crashes.push({ i, message: e instanceof Error ? `${e.name}: ${e.message}`.slice(0, 300) : String(e) });
    }
    const ms = performance.now() - t0;
    if (ms > out.slowest.ms) out.slowest = { i, ms };
    // The bar: compiling or refusing any input takes at most 2 s.
    if (ms > SLOW_MS) out.crashes.push({ i, message: `Slow: ${Math.round(ms)} ms (more than ${SLOW_MS} ms)` });
    out.tried++;
  }
  return out;
}
