/**
 * @fileoverview The MaskBench worker (run.ts starts it): loads the vocabulary, the tokenizer and
 * XGrammar's TokenizerInfo once, then evaluates one schema per message with each engine asked for
 * (engines.ts) and posts the results. The driver terminates and restarts it when a schema runs past
 * its time budget or the worker dies (an exhausted heap).
 */
import { parentPort, workerData } from "node:worker_threads";
import { loadVocab } from "../harness/common.js";
import { prepareXGrammarVocab, type XGrammarVocab } from "../harness/xgrammar.js";
import type { MaskBenchCase } from "./data.js";
import { runSpecc, runXGrammar, tokenizeCase, type EngineResult, type SchemaCompiler } from "./engines.js";
import { speccSchemaCompiler } from "./specc-compiler.js";

export interface WorkerInit { vocabPath: string; engines: ("specc" | "xgrammar")[] }
export interface WorkerRequest { case: MaskBenchCase; engines: ("specc" | "xgrammar")[] }
export interface WorkerReply { name: string; engine: "specc" | "xgrammar"; result: EngineResult }

const init = workerData as WorkerInit;
const vocab = await loadVocab(init.vocabPath);
let xv: XGrammarVocab | undefined;
if (init.engines.includes("xgrammar")) xv = await prepareXGrammarVocab(vocab);
const compile: SchemaCompiler = await speccSchemaCompiler();
parentPort!.postMessage({ ready: true });

parentPort!.on("message", (req: WorkerRequest) => {
  void (async () => {
    const instances = tokenizeCase(req.case, vocab);
    for (const engine of req.engines) {
      let result: EngineResult;
      try {
        result = engine === "specc" ? await runSpecc(req.case, vocab, compile, instances) : await runXGrammar(req.case, xv!, vocab.vocab.eos[0]!, instances);
      } catch (e) {
        result = { verdict: "crash", error: String((e as Error)?.stack ?? e).split("\n").slice(0, 3).join(" | ") };
      }
      parentPort!.postMessage({ name: req.case.name, engine, result } satisfies WorkerReply);
    }
    parentPort!.postMessage({ done: req.case.name });
  })();
});
