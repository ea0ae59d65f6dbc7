/**
 * @fileoverview One fuzz target in a worker thread (run.ts starts it): runs its inputs from a
 * given index until the deadline, writing the index being run into the shared progress array (so
 * the driver can name a hanging input), and posts the result.
 */
import { parentPort, workerData } from "node:worker_threads";
import { TARGETS, fuzzLoop } from "./targets.js";

const { target, seed, from, count, deadline, progress } = workerData as {
  target: string; seed: number; from: number; count: number; deadline: number; progress: SharedArrayBuffer;
};
const t = TARGETS.find((x) => x.name === target)!;
const r = await fuzzLoop(t, seed, from, count, deadline, new Int32Array(progress));
parentPort!.postMessage(r);
