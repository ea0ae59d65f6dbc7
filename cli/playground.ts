/**
 * @fileoverview `specc playground [SPEC] [--port N]`: serves the playground page from 127.0.0.1
 * until interrupted, and prints its URL as the first line. The page (cli/playground/index.html +
 * app.ts, bundled into dist/playground/ by scripts/bundle.mjs with the default tokenizer, Llama 2's)
 * compiles and steps everything in the browser; this server only hands out those static files and
 * `init.json` (the spec to start with: SPEC, or examples/react.agent with a sample transcript).
 */
import { createServer } from "node:http";
import { existsSync, readFileSync, statSync } from "node:fs";
import { basename, dirname, extname, join, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { decodeSource } from "../compiler/frontend/parse.js";
import { readInput } from "../compiler/io.js";
import { EXIT, InputError, UsageError, type Io } from "./common.js";

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".wasm": "application/wasm",
};

const REACT_TRANSCRIPT = `Question: Who is Milhouse named after?
Thought: I need to search Milhouse and find who it is named after.
Action: Search
Action Input: Milhouse
Observation: Milhouse Van Houten is a character in The Simpsons, named after Richard Nixon's middle name.
Final Thought: Milhouse was named after U.S. president Richard Nixon.
Answer: Richard Nixon`;

/** The folder holding specc's package.json, found by walking up from this module (dist/cli or cli). */
function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const pkg = join(dir, "package.json");
    if (existsSync(pkg) && (JSON.parse(readFileSync(pkg, "utf8")) as { name?: string }).name === "specc") return dir;
    const up = dirname(dir);
    if (up === dir) throw new InputError("cannot find specc's package.json above " + fileURLToPath(import.meta.url));
    dir = up;
  }
}

export async function cmdPlayground(args: string[], io: Io, signal?: AbortSignal): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { port: { type: "string", default: "7357" } } });
  if (positionals.length > 1) throw new UsageError(`expected at most one spec file, got ${positionals.length}`);
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`--port must be an integer from 0 to 65535, not '${values.port}'`);
  const root = packageRoot();
  const pageDir = join(root, "dist", "playground");
  if (!existsSync(join(pageDir, "index.html"))) throw new InputError(`the playground page is not built (${pageDir}): run \`npm run build\``);
  const specPath = positionals[0] ?? join(root, "examples", "react.agent");
  const init = JSON.stringify({
    name: basename(specPath),
    text: decodeSource(specPath, readInput(specPath)),
    transcript: positionals[0] ? "" : REACT_TRANSCRIPT,
    tokenizer: "Llama 2",
  });

  const server = createServer((req, res) => {
    const send = (code: number, body: string | Uint8Array, type = "text/plain; charset=utf-8") => {
      // Cross-origin isolation gives the page fine-grained performance.now() for the mask latency.
      res.writeHead(code, { "content-type": type, "cache-control": "no-store", "cross-origin-opener-policy": "same-origin", "cross-origin-embedder-policy": "require-corp" });
      res.end(body);
    };
    const path = decodeURIComponent(new URL(req.url ?? "/", "http://x").pathname);
    if (req.method !== "GET" && req.method !== "HEAD") return send(405, "method not allowed");
    if (path === "/init.json") return send(200, init, TYPES[".json"]);
    const file = resolve(pageDir, "." + (path === "/" ? "/index.html" : path));
    if (!file.startsWith(pageDir + sep) || !existsSync(file) || !statSync(file).isFile()) return send(404, `not found: ${path}`);
    return send(200, readFileSync(file), TYPES[extname(file)] ?? "application/octet-stream");
  });
  await new Promise<void>((ok, fail) => {
    server.once("error", (e: NodeJS.ErrnoException) =>
      fail(e.code === "EADDRINUSE" ? new UsageError(`port ${port} is in use: pick another with --port N (0: any free port)`) : e));
    server.listen(port, "127.0.0.1", ok);
  });
  const addr = server.address();
  const url = `http://127.0.0.1:${typeof addr === "object" && addr ? addr.port : port}/`;
  io.out(url);
  io.out(`serving the specc playground for ${specPath}; Ctrl-C stops it`);
  await new Promise<void>((done) => {
    const stop = () => { server.close(() => done()); server.closeAllConnections(); };
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
    signal?.addEventListener("abort", stop, { once: true });
  });
  return EXIT.ok;
}
