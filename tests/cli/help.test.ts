/**
 * `specc CMD --help` / `-h`: every command answers with its own usage on stdout and exit 0, even
 * with other (possibly invalid) arguments around it (issue 15).
 */
import { describe, expect, it } from "vitest";
import { EXIT, main } from "../../cli/main.js";

const COMMANDS = ["compile", "render", "check", "replay", "sample", "bench", "plan", "demo", "playground", "vocab"];

async function run(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = "";
  let err = "";
  const code = await main(argv, { out: (s) => (out += s + "\n"), err: (s) => (err += s + "\n") });
  return { code, out, err };
}

describe("specc CMD --help", () => {
  for (const cmd of COMMANDS) {
    for (const flag of ["--help", "-h"]) {
      it(`${cmd} ${flag} prints ${cmd}'s usage and exits 0`, async () => {
        const r = await run([cmd, flag]);
        expect(r.code).toBe(EXIT.ok);
        expect(r.err).toBe("");
        expect(r.out).toMatch(cmd === "plan" ? /usage: specc plan/ : new RegExp(`^  specc ${cmd} `, "m"));
        // Only this command's lines, not the whole list.
        for (const other of COMMANDS.filter((c) => c !== cmd)) expect(r.out).not.toMatch(new RegExp(`^  specc ${other} `, "m"));
      });
    }
  }

  it("--help wins over arguments the command would reject", async () => {
    const r = await run(["bench", "--no-such-option", "--help"]);
    expect(r.code).toBe(EXIT.ok);
    expect(r.out).toMatch(/^  specc bench /m);
  });

  it("an unknown option without --help is still a usage error", async () => {
    const r = await run(["bench", "--no-such-option"]);
    expect(r.code).toBe(EXIT.usage);
  });
});
