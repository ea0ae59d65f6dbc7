import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { compileSource } from "../../compiler/compile.js";
import type { Compiled, SpecIR, StateDfa } from "../../compiler/ir.js";
import { byteDot, byteSetLabel, dotString, renderSvg, stateDot } from "../../compiler/render.js";

const example = (name: string): Compiled => {
  const file = fileURLToPath(new URL(`../../examples/${name}`, import.meta.url));
  return compileSource(readFileSync(file, "utf8"), file);
};

/** node id → its attribute text, and the edges as "from->to" strings, parsed back from our DOT. */
function parseDot(dot: string): { nodes: Map<string, string>; edges: string[] } {
  const nodes = new Map<string, string>();
  const edges: string[] = [];
  for (const line of dot.split("\n")) {
    const e = /^\s+(\w+) -> (\w+)/.exec(line);
    if (e) { edges.push(`${e[1]}->${e[2]}`); continue; }
    const n = /^\s+(\w+) \[(.*)\];$/.exec(line);
    if (n && !["graph", "node", "edge"].includes(n[1]!)) nodes.set(n[1]!, n[2]!);
  }
  return { nodes, edges };
}

/** The id of the node whose (first label line) name is `name`. */
function nodeNamed(dot: string, name: string): string {
  const { nodes } = parseDot(dot);
  const hits = [...nodes].filter(([, attrs]) => attrs.startsWith(`label=<${name}<BR/>`));
  expect(hits, `exactly one node named ${name}`).toHaveLength(1);
  return hits[0]![0];
}

const unentity = (s: string) =>
  s.replace(/&#(\d+);/g, (_, d: string) => String.fromCodePoint(Number(d))).replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&quot;/g, '"').replace(/&amp;/g, "&");
const svgTexts = (svg: string) => [...svg.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((m) => unentity(m[1]!));

describe("stateDot", () => {
  it("draws react.agent as the papers do: the loop back to Thought, Answer final, Observation env", () => {
    const c = example("react.agent");
    const dot = stateDot(c.ir, c.minStateDfa);
    const { nodes, edges } = parseDot(dot);
    expect(dot).toMatch(/rankdir=LR/);
    const id = (n: string) => nodeNamed(dot, n);
    const [th, act, inp, obs, ft, ans] = ["Thought", "Action", "Action-Input", "Observation", "Final-Thought", "Answer"].map(id);
    expect(nodes.size).toBe(7); // six spec states, each once, plus start
    expect(nodes.get("start")).toMatch(/shape=point/);
    expect(new Set(edges)).toEqual(new Set([
      `start->${th}`, `start->${ft}`, `${th}->${act}`, `${act}->${inp}`, `${inp}->${obs}`,
      `${obs}->${th}`, `${obs}->${ft}`, `${ft}->${ans}`,
    ]));
    expect(nodes.get(ans!)).toMatch(/peripheries=2/);
    for (const n of [th, act, inp, obs, ft]) expect(nodes.get(n!)).not.toMatch(/peripheries/);
    expect(nodes.get(obs!)).toMatch(/dashed/);
    expect(nodes.get(obs!)).toMatch(/tooltip="env-input"/);
    expect(nodes.get(th!)).not.toMatch(/dashed|env-input/);
    // The marker is the smaller second line.
    expect(nodes.get(inp!)).toContain(`<FONT POINT-SIZE="10" COLOR="#555555">Action Input:</FONT>`);
  });

  it("draws the seed-000 bracket variant with Ques first and the Obs → Tht back edge", () => {
    const c = example("react-brackets.agent");
    const dot = stateDot(c.ir, c.minStateDfa);
    const { edges, nodes } = parseDot(dot);
    const id = (n: string) => nodeNamed(dot, n);
    expect(edges).toContain(`start->${id("Ques")}`);
    expect(edges.filter((e) => e.startsWith("start->"))).toHaveLength(1);
    expect(edges).toContain(`${id("Obs")}->${id("Tht")}`);
    expect(edges).toContain(`${id("Obs")}->${id("Final-Tht")}`);
    expect(edges).toContain(`${id("Ques")}->${id("Final-Tht")}`);
    expect(nodes.get(id("Ans"))).toMatch(/peripheries=2/);
    expect(nodes.get(id("Tht"))).toContain("[Thought]");
  });

  it("draws chat-bot.agent's always-loop: User (env, final) back to Chat-Bot", () => {
    const c = example("chat-bot.agent");
    const dot = stateDot(c.ir, c.minStateDfa);
    const { edges, nodes } = parseDot(dot);
    const bot = nodeNamed(dot, "Chat-Bot"), user = nodeNamed(dot, "User");
    expect(new Set(edges)).toEqual(new Set([`start->${bot}`, `${bot}->${user}`, `${user}->${bot}`]));
    expect(nodes.get(user)).toMatch(/peripheries=2/);
    expect(nodes.get(user)).toMatch(/tooltip="env-input"/);
    expect(nodes.get(bot)).not.toMatch(/peripheries/);
  });

  it("unrolls a bounded loop (react-tools.agent, until_3) with iteration hints", () => {
    const c = example("react-tools.agent");
    const dot = stateDot(c.ir, c.minStateDfa);
    const { edges, nodes } = parseDot(dot);
    const id = (n: string) => nodeNamed(dot, n);
    const th = [1, 2, 3].map((k) => id(`thought ·${k}`));
    const obs = [1, 2, 3].map((k) => id(`observation ·${k}`));
    const ft = id("final-thought"), ans = id("answer");
    expect(edges).toContain(`start->${th[0]}`);
    expect(edges).toContain(`start->${ft}`);
    expect(edges).toContain(`${obs[0]}->${th[1]}`);
    expect(edges).toContain(`${obs[1]}->${th[2]}`);
    for (const o of obs) expect(edges).toContain(`${o}->${ft}`);
    expect(edges.some((e) => e.startsWith(`${obs[2]}->`) && e !== `${obs[2]}->${ft}`)).toBe(false);
    expect(nodes.get(ans)).toMatch(/peripheries=2/);
    // the tool constraint shows as a third line
    expect(nodes.get(id("action ·1"))).toContain("<I>Search | Lookup</I>");
    expect(nodes.size).toBe(1 + 3 * 4 + 2);
  });

  it("is deterministic", () => {
    for (const f of ["react.agent", "react-tools.agent"]) {
      const a = example(f), b = example(f);
      expect(stateDot(a.ir, a.minStateDfa)).toBe(stateDot(b.ir, b.minStateDfa));
    }
  });

  it("escapes names and markers (quotes, backslashes, markup, control characters, non-ASCII)", async () => {
    const span = { file: "t", line: 1, col: 1, offset: 0, end: 0 };
    const ir: SpecIR = {
      name: 'we"ird\\agent',
      file: "t",
      states: [
        { id: 0, name: "A<&>\"'", marker: 'say "hi" \\ <b>\n', env: false, content: { kind: "any" }, span },
        { id: 1, name: "观察", marker: "[观察]", env: true, content: { kind: "any" }, span },
      ],
      behavior: { op: "state", state: 0, span },
      constraints: [],
    };
    // A → B → A … accepting after A.
    const dfa: StateDfa = { nStates: 3, nSyms: 2, initial: 0, accepting: [false, true, false], delta: Int32Array.from([1, -1, -1, 2, 1, -1]) };
    const dot = stateDot(ir, dfa);
    expect(dot).toContain(`digraph "we\\"ird\\\\agent" {`);
    expect(dot).toContain("A&lt;&amp;&gt;&quot;&#39;");
    expect(dot).toContain("say &quot;hi&quot; \\ &lt;b&gt;\\n");
    expect(dot).toContain("观察");
    expect(dot).not.toContain("\n<");
    expect(dotString('a"b\\c\nd')).toBe('"a\\"b\\\\c\\nd"');
    const texts = svgTexts(await renderSvg(dot)); // Graphviz accepts it and shows the text verbatim
    expect(texts).toContain("A<&>\"'");
    expect(texts).toContain('say "hi" \\ <b>\\n');
    expect(texts).toContain("[观察]");
    expect(texts).toContain('we"ird\\agent');
  });
});

describe("byteDot", () => {
  it("draws react.agent's byte automaton with flags, grouped byte-class edges and env edges", () => {
    const c = example("react.agent");
    const d = c.byteDfa;
    const dot = byteDot(c.ir, d);
    const { nodes, edges } = parseDot(dot);
    expect(nodes.size).toBe(d.nStates + 1);
    expect(edges).toContain(`start->b${d.initial}`);
    // one edge per (from, to) pair
    const byteEdges = dot.split("\n").filter((l) => /^\s+b\d+ -> b\d+ \[label="(?!env")/.test(l)).map((l) => l.trim().split(" [")[0]);
    expect(new Set(byteEdges).size).toBe(byteEdges.length);
    expect(dot).toMatch(/label="env", style=dashed/);
    expect(dot).toMatch(/label="other"/);
    expect(dot).toContain(`label="'T'"`);
    expect(dot).toMatch(/style="rounded,dashed"/); // yield
    expect(dot).toMatch(/style="rounded,dotted"/); // after env
    expect(dot).toMatch(/peripheries=2/);
    expect(dot).toContain(`label="${d.initial}\\n–"`);
    expect(byteDot(c.ir, d)).toBe(dot);
  });

  it("refuses huge automata and points to --level states", () => {
    const c = example("react.agent");
    expect(() => byteDot(c.ir, c.byteDfa, { maxNodes: 10 })).toThrow(/--level states/);
  });

  it("labels byte sets compactly", () => {
    const range = (a: number, b: number) => Array.from({ length: b - a + 1 }, (_, i) => a + i);
    expect(byteSetLabel([0x54])).toBe("'T'");
    expect(byteSetLabel([0x0a])).toBe("\\n");
    expect(byteSetLabel(range(0x41, 0x5a))).toBe("[A-Z]");
    expect(byteSetLabel([0x09, 0x0a, 0x0d, 0x20])).toBe("[\\t\\n\\r ]");
    expect(byteSetLabel(range(0, 255).filter((b) => b !== 0x0a))).toBe("[^\\n]");
    expect(byteSetLabel(range(0, 255))).toBe("any");
    expect(byteSetLabel([0x2d, 0x5d])).toBe("[\\-\\]]");
  });
});

describe("renderSvg", () => {
  it("lays out the state diagrams as well-formed SVG naming every state", async () => {
    for (const f of ["react.agent", "react-brackets.agent", "chat-bot.agent", "react-tools.agent"]) {
      const c = example(f);
      const svg = await renderSvg(stateDot(c.ir, c.minStateDfa));
      expect(svg.startsWith("<?xml") || svg.includes("<svg")).toBe(true);
      expect(svg).toMatch(/<\/svg>\s*$/);
      const texts = svgTexts(svg);
      for (const s of c.ir.states) expect(texts.some((t) => t === s.name || t.startsWith(`${s.name} ·`)), `${f}: ${s.name}`).toBe(true);
      expect(texts).toContain(c.ir.name);
    }
  });

  it("renders the byte automaton too", async () => {
    const c = example("chat-bot.agent");
    const svg = await renderSvg(byteDot(c.ir, c.byteDfa));
    expect(svg).toContain("<svg");
    expect(svgTexts(svg)).toContain("env");
  });
});
