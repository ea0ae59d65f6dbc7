/**
 * The travel tools (travel.tools.json) as a chunk-mode agent against an OpenAI-compatible
 * completions server: examples/react-typed.agent's ReAct loop, the model behind HTTP, specc's
 * decoding monitor checking each chunk, cutting it at the first violation and completing what the
 * model leaves unfinished (a tool name, JSON arguments) to the shortest valid text. Each tool's
 * handler gets its arguments parsed and valid for its schema; a rule blocks bookings for more than
 * four travellers by argument value.
 *
 *   npx tsx examples/tools/chunk-agent.ts URL MODEL        # any OpenAI-compatible completions server
 *
 * For a local one, the test suite's loopback server serves the tiny model (from a clone of the
 * repository): `npx tsx tests/helpers/openai-server.ts` prints its URL, then run this with that URL
 * and the model name it prints. The tiny story model writes no JSON, so most of its tool calls are
 * the monitor's completions; a real instruction-tuned model writes them itself.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { httpCompletions, runChunked } from "../../agents/chunk.js";
import { RuleEnforcer } from "../../agents/rules.js";
import { typedTools } from "../../agents/tools.js";
import { compileSource } from "../../compiler/compile.js";
import { parseRules } from "../../compiler/rules/index.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const specFile = `${root}examples/react-typed.agent`;
// Two rounds at most, so a model that never writes "Final Answer:" still ends.
const spec = compileSource(readFileSync(specFile, "utf8").replace("(until\n", "(until_2\n"), specFile);

const rules = parseRules("rule @small_groups\ntrigger Travel.book_flight\ncheck\n  large_group\nenforce\n  stop\nend\n", "travel.rules");
const enforcer = new RuleEnforcer(rules, { predicates: { large_group: (s) => ((s.call.args["travellers"] as unknown[]) ?? []).length > 4 } });

const tools = typedTools({
  nameState: "Action", argsState: "Action-Input",
  handlers: {
    search_flights: (a) => ({ flights: [{ id: "LH400", from: a["origin"], to: a["destination"], date: a["date"] }] }),
    book_flight: (a) => `booked ${String(a["flight_id"])} for ${(a["travellers"] as unknown[]).length} traveller(s)`,
    get_weather: (a) => `sunny in ${String(a["city"])}`,
  },
  guard: { enforcer, toolkit: "Travel" },
});

const [url, model] = process.argv.slice(2);
if (!url || !model) {
  console.error("usage: npx tsx examples/tools/chunk-agent.ts URL MODEL   (e.g. after `npx tsx tests/helpers/openai-server.ts`)");
  process.exit(2);
}
try {
  const run = await runChunked({
    spec, complete: httpCompletions(url, model),
    context: "Plan a trip. Use Thought / Action / Action Input / Observation, then Final Answer.\n",
    prompt: "Question: Can Lily fly from Frankfurt to New York on 2026-12-01?\n",
    tools: { Observation: tools }, chunkTokens: 16, maxChunksPerState: 1, choose: "first",
  });
  for (const s of run.transcript.segments) console.log(s.by === "env" ? `[env]${s.text}` : s.text);
  console.log(`\nverdict: ${run.verdict} · ${run.requests} requests · ${run.corrections.length} corrections`);
  for (const c of run.toolCalls) console.log(`call ${c.name} ${JSON.stringify(c.arguments)} → ${c.result}`);
} catch (e) {
  console.error(`chunk-agent: ${(e as Error).message}`);
  process.exitCode = 1;
}
