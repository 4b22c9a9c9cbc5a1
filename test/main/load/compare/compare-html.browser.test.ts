/**
 * compare.html in a real browser (headless Chromium, as report-html.browser.test.ts): two real
 * `runLoad()` runs (the built dist/, the built-in mock; B's mock 15 times slower per token) are
 * compared, and the page opens from file:// with no console or page error and nothing fetched,
 * has one verdict cell per figure carrying the comparison's verdict, and both charts hold
 * coloured (data) pixels.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { type Browser, chromium } from "playwright-core";
import { PNG } from "pngjs";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { compareReports, readLoadReport, runLoad } from "../../../../dist/main/load/index.js";
import { requirePrerequisites } from "../../../../scripts/test-prereqs.mjs";
import { COMPARE_CHART_IDS, renderCompareHtml } from "../../../../src/main/load/compare/compare-html.js";
import { tempDir } from "../../../fixtures/bounded.js";
import { chromiumPath } from "../../../fixtures/chromium.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

beforeAll(() => requirePrerequisites("browser"));

type Box = { x: number; y: number; width: number; height: number };

/** Pixels inside `box` whose colour is clearly not grey or white. */
function colouredPixels(png: PNG, box: Box): number {
  let count = 0;
  for (let y = Math.max(0, Math.floor(box.y)); y < Math.min(png.height, Math.ceil(box.y + box.height)); y++) {
    for (let x = Math.max(0, Math.floor(box.x)); x < Math.min(png.width, Math.ceil(box.x + box.width)); x++) {
      const i = (y * png.width + x) * 4;
      const r = png.data[i] ?? 0;
      const g = png.data[i + 1] ?? 0;
      const b = png.data[i + 2] ?? 0;
      if (Math.max(r, g, b) - Math.min(r, g, b) > 60) count++;
    }
  }
  return count;
}

describe("compare.html in headless Chromium", () => {
  it("shows a verdict cell for every figure, as compare.json has it, and data in both charts", async () => {
    const executablePath = await chromiumPath();
    const dir = tempDir(cleanups, "lifeline-compare-html-");
    for (const [name, tokenDelayMs] of [
      ["a", 2],
      ["b", 30],
    ] as const) {
      await runLoad({
        sessions: 3,
        prompts: 4,
        faults: [{ step: 503, probability: 0.3 }],
        seed: 5,
        mock: { tokens: 8, tokenDelayMs },
        lifelineDir: false,
        settings: { retry: { baseDelayMs: 5 } },
        outDir: join(dir, name),
      });
    }
    const comparison = compareReports(await readLoadReport(join(dir, "a")), await readLoadReport(join(dir, "b")));
    const html = join(dir, "compare.html");
    writeFileSync(html, await renderCompareHtml(comparison));

    const browser: Browser = await chromium.launch({ executablePath, headless: true, args: ["--no-sandbox"] });
    cleanups.push(() => browser.close());
    const which = `Chromium ${browser.version()} at ${executablePath}`;
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const problems: string[] = [];
    page.on("console", (message) => {
      if (message.type() === "error") problems.push(`console: ${message.text()}`);
    });
    page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
    page.on("request", (request) => {
      if (!request.url().startsWith("file:"))
        problems.push(`fetched ${request.url()} (the page must be self-contained)`);
    });
    await page.goto(pathToFileURL(html).href);
    await page.waitForFunction('document.body.dataset.rendered === "true"', undefined, { timeout: 10_000 });

    // Page code as text: the tests are type-checked without the DOM library.
    const cells = await page.evaluate<{ id: string; verdict: string; text: string }[]>(`
      [...document.querySelectorAll("#figures tr[data-figure]")].map((row) => {
        const cell = row.querySelector("td.verdict");
        return { id: row.dataset.figure, verdict: cell.dataset.verdict, text: cell.textContent };
      })
    `);
    expect(cells.map((cell) => [cell.id, cell.verdict])).toEqual(
      comparison.figures.map((figure) => [figure.id, figure.verdict ?? "absent"]),
    );
    const e2e = cells.find((cell) => cell.id === "latency.e2eMs.p50");
    expect(e2e?.text).toMatch(/^(better|worse|within noise) \[/);

    const screenshot = await page.screenshot({ fullPage: true, path: join(dir, "screenshot.png") });
    const png = PNG.sync.read(screenshot);
    const charts = await page.evaluate<{ id: string; box: Box }[]>(`
      [...document.querySelectorAll("figure.chart")].map((figure) => {
        const rect = figure.querySelector(".box").getBoundingClientRect();
        return { id: figure.dataset.chart, box: { x: rect.x + window.scrollX, y: rect.y + window.scrollY, width: rect.width, height: rect.height } };
      })
    `);
    expect(charts.map((chart) => chart.id)).toEqual([...COMPARE_CHART_IDS]);
    const empty = charts.filter((chart) => colouredPixels(png, chart.box) < 50).map((chart) => chart.id);
    expect(empty, `charts without data pixels in ${which} (see ${join(dir, "screenshot.png")})`).toEqual([]);
    expect(problems, which).toEqual([]);
  }, 90_000);
});
