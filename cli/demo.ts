/**
 * @fileoverview `specc demo`: the main job (agents/demo.ts): compile, render and run a constrained decode.
 */
import { parseArgs } from "node:util";
import type { Io } from "./common.js";

export async function cmdDemo(args: string[], io: Io): Promise<number> {
  const { values } = parseArgs({ args, options: { out: { type: "string", default: "demo-out" } } });
  const { runDemo } = await import("../agents/demo.js");
  return runDemo(values.out!, io);
}
