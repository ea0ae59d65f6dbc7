/**
 * A real HTTP server for chunk-mode tests: OpenAI-compatible `POST /v1/completions` (and
 * `GET /v1/models`) on 127.0.0.1 at a free port, served by a GGUF model through node-llama-cpp
 * on CPU (the tiny stories260K.gguf in the tests).
 *
 * It does what OpenAI's legacy completions endpoint does with `prompt`, `max_tokens`, `stop`
 * (a string or up to 4 strings; the stop sequence is left out of the text), `temperature`
 * (0 = greedy; default 1, as OpenAI's) and `logprobs` (per-token log-probabilities of the chosen
 * tokens), and answers `choices[0].text` and `finish_reason` ("stop" | "length"), plus vLLM's
 * `stop_reason` (the stop sequence that matched, null at end of sequence) and `usage`. Requests
 * are served one at a time on one context sequence, which keeps the longest common token prefix
 * of consecutive prompts evaluated (a chunk-mode prompt grows by one chunk per request). Every
 * loop is bounded: `max_tokens` is capped (`maxTokensCap`), and a prompt that does not fit the
 * context with its `max_tokens` is refused with HTTP 400, as OpenAI does.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { vocabularyFromLlamaModel } from "../../bindings/adapters/llama.js";

export interface ServedRequest {
  prompt: string;
  stop: string[];
  max_tokens: number;
  temperature: number;
  finish_reason: string;
  text: string;
}

export interface OpenAIServer {
  /** e.g. "http://127.0.0.1:41234" */
  url: string;
  /** The model name it answers to (any name is accepted). */
  model: string;
  /** Every completion served, in order. */
  requests: ServedRequest[];
  close(): Promise<void>;
}

export interface OpenAIServerOptions {
  modelPath: string;
  contextSize?: number;
  /** Largest max_tokens honoured (default 256). */
  maxTokensCap?: number;
  model?: string;
  /** llama.cpp threads (default 1). */
  threads?: number;
}

class HttpError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

export async function startOpenAIServer(opts: OpenAIServerOptions): Promise<OpenAIServer> {
  const { getLlama, LlamaLogLevel } = await import("node-llama-cpp");
  const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
  const model = await llama.loadModel({ modelPath: opts.modelPath });
  const contextSize = opts.contextSize ?? 1024;
  // One thread: the model is tiny, and on a small shared machine llama.cpp's spinning worker
  // threads cost far more than they give (measured: 2.4 ms/token with 1 thread, 13–100 ms with 2
  // while other processes run).
  const context = await model.createContext({ threads: opts.threads ?? 1, contextSize, sequences: 1 });
  const seq = context.getSequence();
  const vocab = vocabularyFromLlamaModel(model);
  const cap = opts.maxTokensCap ?? 256;
  const name = opts.model ?? "stories260K";
  const requests: ServedRequest[] = [];

  async function complete(body: Record<string, unknown>) {
    const prompt = body.prompt;
    if (typeof prompt !== "string") throw new HttpError(400, "prompt must be a string (one prompt per request)");
    const stopRaw = body.stop ?? [];
    const stop = (typeof stopRaw === "string" ? [stopRaw] : stopRaw) as unknown[];
    if (!Array.isArray(stop) || stop.length > 4 || stop.some((s) => typeof s !== "string" || !s)) {
      throw new HttpError(400, "stop must be a non-empty string or an array of at most 4 of them");
    }
    const maxTokens = Math.min(cap, body.max_tokens === undefined ? 16 : Number(body.max_tokens));
    if (!Number.isInteger(maxTokens) || maxTokens < 0) throw new HttpError(400, "max_tokens must be a non-negative integer");
    const temperature = body.temperature === undefined ? 1 : Number(body.temperature);
    if (!(temperature >= 0 && temperature <= 2)) throw new HttpError(400, "temperature must be between 0 and 2");
    const wantLogprobs = body.logprobs !== undefined && body.logprobs !== null;

    const tokens = [...model.tokenize(prompt)];
    if (tokens.length === 0) tokens.push(...model.tokenize("\n"));
    if (tokens.length + maxTokens > contextSize) {
      throw new HttpError(400, `This model's maximum context length is ${contextSize} tokens; the prompt has ${tokens.length} and max_tokens is ${maxTokens}`);
    }
    // Keep the evaluated common prefix; at least the last prompt token is evaluated again.
    let keep = Math.min(seq.compareContextTokens(tokens).firstDifferentIndex, tokens.length - 1);
    if (keep < seq.nextTokenIndex) await seq.eraseContextTokenRanges([{ start: keep, end: seq.nextTokenIndex }]);
    keep = seq.nextTokenIndex;

    const bytes: number[] = [];
    const logprobs: number[] = [];
    const dec = new TextDecoder();
    let text = "";
    let finish = "length";
    let stopReason: string | null = null;
    let n = 0;
    if (maxTokens > 0) {
      const gen = seq.evaluateWithMetadata(tokens.slice(keep), { confidence: true }, { temperature, ...(temperature > 0 ? { seed: 1 } : {}) });
      for await (const out of gen) {
        if (vocab.isEos(out.token) || vocab.isSpecial(out.token)) { finish = "stop"; break; }
        n++;
        logprobs.push(Math.log(Math.max(out.confidence ?? 0, 1e-30)));
        for (const b of vocab.tokenBytes(out.token) ?? []) bytes.push(b);
        text = dec.decode(Uint8Array.from(bytes));
        let cut = -1;
        for (const s of stop as string[]) {
          const i = text.indexOf(s);
          if (i >= 0 && (cut < 0 || i < cut)) { cut = i; stopReason = s; }
        }
        if (cut >= 0) { text = text.slice(0, cut); finish = "stop"; break; }
        if (n >= maxTokens) break;
      }
    }
    requests.push({ prompt, stop: stop as string[], max_tokens: maxTokens, temperature, finish_reason: finish, text });
    return {
      id: `cmpl-${requests.length}`,
      object: "text_completion",
      created: Math.floor(Date.now() / 1000),
      model: name,
      choices: [{
        index: 0, text, finish_reason: finish, stop_reason: stopReason,
        logprobs: wantLogprobs ? { token_logprobs: logprobs } : null,
      }],
      usage: { prompt_tokens: tokens.length, completion_tokens: n, total_tokens: tokens.length + n },
    };
  }

  // One request at a time: one sequence, and the tests' runs are sequential anyway.
  let queue: Promise<unknown> = Promise.resolve();
  const serial = <T>(f: () => Promise<T>): Promise<T> => {
    const p = queue.then(f, f);
    queue = p.catch(() => undefined);
    return p;
  };

  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  };
  const readBody = (req: IncomingMessage): Promise<string> =>
    new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      req.on("data", (c: Buffer) => {
        size += c.length;
        if (size > 4 << 20) reject(new HttpError(413, "request body too large"));
        else chunks.push(c);
      });
      req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
      req.on("error", reject);
    });

  const server = createServer((req, res) => {
    void (async () => {
      try {
        if (req.method === "GET" && req.url === "/v1/models") {
          send(res, 200, { object: "list", data: [{ id: name, object: "model", owned_by: "specc-tests" }] });
          return;
        }
        if (req.method !== "POST" || req.url !== "/v1/completions") throw new HttpError(404, `no route ${req.method} ${req.url}`);
        let body: Record<string, unknown>;
        try { body = JSON.parse(await readBody(req)); } catch (e) {
          throw e instanceof HttpError ? e : new HttpError(400, "the body is not JSON");
        }
        send(res, 200, await serial(() => complete(body)));
      } catch (e) {
        const status = e instanceof HttpError ? e.status : 500;
        send(res, status, { error: { message: (e as Error).message, type: status === 500 ? "server_error" : "invalid_request_error" } });
      }
    })();
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    model: name,
    requests,
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await queue;
      seq.dispose();
      await context.dispose();
      await model.dispose();
      await llama.dispose();
    },
  };
}

// Run directly, it serves a model until interrupted (examples/tools/chunk-agent.ts talks to it):
//   npx tsx tests/helpers/openai-server.ts ../shared/models/stories260K.gguf
if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  const modelPath = process.argv[2] ?? new URL("../../../shared/models/stories260K.gguf", import.meta.url).pathname;
  const server = await startOpenAIServer({ modelPath, contextSize: 2048 });
  console.log(`${server.url} (model "${server.model}", ${modelPath}); Ctrl-C stops it`);
  process.on("SIGINT", () => { void server.close().then(() => process.exit(0)); });
}
