/**
 * `specc playground` in a real browser (issue 15): headless Chromium from Debian driven by
 * playwright-core. Starts the built CLI (bin/specc.js, `npm test` builds first) on a free port,
 * checks the first line is the URL, then in the page: a spec with an error shows its diagnostic at
 * file:line:col, the fixed spec shows the diagram, a transcript steps token by token with
 * per-token results and the current state highlighted, a forbidden token is flagged, a dropped
 * tokenizer.json replaces the default one, the .wasm downloads; a screenshot is saved
 * (SPECC_SCREENSHOT, or the temp folder). Without Chromium the tests skip, saying how to install it.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { BrowserContext, Page } from "playwright-core";
import { tokenizerJsonPath } from "../helpers/tokenizers.js";

const root = join(import.meta.dirname, "..", "..");
const chromium = [process.env["SPECC_CHROMIUM"], "/usr/bin/chromium", "/usr/bin/chromium-browser"].find((p) => p && existsSync(p));
if (!chromium) console.warn("tests/cli/playground.test.ts skipped: no Chromium found. Install it with `apt-get install -y chromium` (Debian/Ubuntu), or set SPECC_CHROMIUM to its path.");

const BROKEN = `(define react-agent
  (:states
    (Thought (:text "Thought:"))
    (Action (:text "Action:")))
  (:behavior (next Thought Actoin)))`;
const FIXED = BROKEN.replace("Actoin", "Action");

describe.skipIf(!chromium)("specc playground in Chromium", () => {
  let server: ChildProcess;
  let url = "";
  let firstLine = "";
  let ctx: BrowserContext;
  let page: Page;
  let profile = "";
  const pageErrors: string[] = [];

  beforeAll(async () => {
    server = spawn(process.execPath, [join(root, "bin", "specc.js"), "playground", "--port", "0"], { stdio: ["ignore", "pipe", "pipe"] });
    firstLine = await new Promise<string>((ok, fail) => {
      let buf = "";
      server.stdout!.on("data", (d: Buffer) => { buf += d; if (buf.includes("\n")) ok(buf.split("\n")[0]!); });
      server.once("exit", (code) => fail(new Error(`specc playground exited (${code}) before printing its URL`)));
    });
    url = firstLine.trim();
    const { chromium: pw } = await import("playwright-core");
    profile = mkdtempSync(join(tmpdir(), "specc-chromium-"));
    ctx = await pw.launchPersistentContext(profile, {
      executablePath: chromium!, headless: true, acceptDownloads: true, viewport: { width: 1280, height: 1000 },
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
    });
    page = ctx.pages()[0] ?? (await ctx.newPage());
    page.on("pageerror", (e) => pageErrors.push(e.message));
    await page.goto(url);
    await page.waitForSelector("body[data-ready='1']", { timeout: 60_000 });
  }, 120_000);

  afterAll(async () => {
    await ctx?.close();
    server?.kill("SIGINT");
    if (profile) rmSync(profile, { recursive: true, force: true });
  });

  it("prints its URL first", () => {
    expect(firstLine).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
  });

  it("shows a diagnostic at line:col, then the diagram once the spec is fixed", async () => {
    await page.fill("#name", "react.agent");
    await page.fill("#source", BROKEN);
    await expect.poll(() => page.textContent("#diagnostics"), { timeout: 20_000 }).toMatch(/react\.agent:5:28: error\[E\d{4}\]/);
    expect(await page.textContent("#diagnostics")).toMatch(/Actoin/);
    expect(await page.isDisabled("#download")).toBe(true);
    expect(await page.textContent("#status")).toBe("fix the spec to step a transcript");
    await page.fill("#source", FIXED);
    await expect.poll(() => page.textContent("#diagnostics"), { timeout: 20_000 }).toBe("✓ compiles");
    // The start point and the two states.
    await expect.poll(() => page.locator("#diagram svg g.node title").allTextContents(), { timeout: 20_000 }).toEqual(["start", expect.stringMatching(/_s0$/), expect.stringMatching(/_s1$/)]);
  });

  it("steps a transcript token by token", async () => {
    await page.fill("#transcript", "Thought: go\nAction: stop");
    await page.waitForSelector("#status:has-text('ready')");
    for (let i = 0; i < 3; i++) await page.click("#step");
    const rows = await page.locator("#steps tbody tr").evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent ?? "")));
    expect(rows).toHaveLength(3);
    for (const r of rows) {
      expect(r[3]).toBe("allowed");
      expect(Number(r[4])).toBeGreaterThan(0);      // tokens the mask allows
      expect(Number(r[6])).toBeGreaterThanOrEqual(0); // mask latency, µs
    }
    // At the start only "Thought:" fits: the mask allows few tokens, and once "Th" is in, the rest is forced.
    expect(Number(rows[0]![4])).toBeLessThan(100);
    expect(rows[0]![2]).toBe('"Th"');
    expect(rows[0]![5]).toBe('"ought:"');
    await page.click("#run");
    await expect.poll(() => page.textContent("#status")).toBe("end of transcript: accepted");
    expect(await page.locator("#diagram g.node.current title").textContent()).toMatch(/_s1$/); // Action
  });

  it("flags the first forbidden token", async () => {
    await page.fill("#transcript", "Thought: go\nThought: again");
    await page.click("#run");
    await expect.poll(() => page.textContent("#status")).toMatch(/is forbidden by the mask/);
    expect(await page.locator("#steps tbody tr.forbidden").count()).toBe(1);
  });

  it("takes a dropped tokenizer.json instead of the default", async () => {
    await page.setInputFiles("#tokfile", tokenizerJsonPath("llama3_1"));
    await expect.poll(() => page.textContent("#tokname"), { timeout: 60_000 }).toBe("tokenizer.json (128256 tokens)");
    await page.fill("#transcript", "Thought: go\nAction: stop");
    await page.click("#run");
    await expect.poll(() => page.textContent("#status")).toBe("end of transcript: accepted");
  });

  it("downloads the compiled .wasm and saves a screenshot", async () => {
    const [download] = await Promise.all([page.waitForEvent("download"), page.click("#download")]);
    expect(download.suggestedFilename()).toBe("react.wasm");
    const bytes = readFileSync((await download.path())!);
    expect([...bytes.subarray(0, 4)]).toEqual([0, 0x61, 0x73, 0x6d]);
    const shot = process.env["SPECC_SCREENSHOT"] ?? join(tmpdir(), "specc-playground.png");
    await page.screenshot({ path: shot, fullPage: true });
    expect(statSync(shot).size).toBeGreaterThan(10_000);
    console.log(`playground screenshot: ${shot}`);
    expect(pageErrors).toEqual([]);
  });
});
