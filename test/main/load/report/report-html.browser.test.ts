/**
 * report.html in a real browser: headless Chromium driven by playwright-core (which downloads no
 * browser). The Chromium comes from npm: the devDependency @sparticuz/chromium ships one for x64
 * Linux, unpacked into the temp folder on first use (see chromiumPath for the fallbacks). A real
 * `runLoad()` (the built dist/, real workers, the built-in mock with faults) writes the report; the
 * page opens from file:// with no console error and no page error, and a screenshot shows every
 * chart: each chart's box holds coloured (data) pixels, not only the white background and grey
 * axes. The same for the report of `mergeReports()` over two such runs.
 *
 * This test does not skip: without a Chromium it fails and says what to do. The system libraries
 * that Chromium links to are installed by `npm test` (scripts/test-prereqs.mjs).
 */
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { type Browser, chromium, type Page } from "playwright-core";
import { PNG } from "pngjs";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { type LoadReport, mergeReports, runLoad } from "../../../../dist/main/load/index.js";
import { requirePrerequisites } from "../../../../scripts/test-prereqs.mjs";
import { CHART_IDS, SWEEP_CHART_IDS } from "../../../../src/main/load/report/report-html.js";
import { tempDir } from "../../../fixtures/bounded.js";
import { chromiumPath } from "../../../fixtures/chromium.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

beforeAll(() => requirePrerequisites("browser"));

/** Pixels inside `box` whose colour is clearly not grey or white (Chart.js axes and text are grey). */
function colouredPixels(png: PNG, box: { x: number; y: number; width: number; height: number }): number {
  let count = 0;
  const x0 = Math.max(0, Math.floor(box.x));
  const y0 = Math.max(0, Math.floor(box.y));
  const x1 = Math.min(png.width, Math.ceil(box.x + box.width));
  const y1 = Math.min(png.height, Math.ceil(box.y + box.height));
  for (let y = y0; y < y1; y++) {
    for (let x = x0; x < x1; x++) {
      const i = (y * png.width + x) * 4;
      const r = png.data[i] ?? 0;
      const g = png.data[i + 1] ?? 0;
      const b = png.data[i + 2] ?? 0;
      if (Math.max(r, g, b) - Math.min(r, g, b) > 60) count++;
    }
  }
  return count;
}

/** Runs `runLoad` against the mock with faults (seed `seed`) and an SLO into a new folder. */
async function loadRun(seed: number, sampleIntervalMs = 50): Promise<{ dir: string; report: LoadReport }> {
  const dir = tempDir(cleanups, "lifeline-load-html-");
  const result = await runLoad({
    sessions: 3,
    prompts: 4,
    faults: [
      { step: 503, probability: 0.3 },
      { step: "reset", probability: 0.1 },
    ],
    seed,
    mock: { tokens: 8, tokenDelayMs: 2 },
    lifelineDir: false,
    settings: { retry: { baseDelayMs: 5 } },
    slo: "ttft<=10s,e2e<=30s",
    sampleIntervalMs,
    outDir: dir,
  });
  expect(result.report.totals.requests.failed, "the run needs failures to draw every chart").toBeGreaterThan(0);
  return { dir, report: result.report };
}

/**
 * Opens `html` in headless Chromium and checks it: no console or page error, nothing fetched,
 * every chart drawn with data pixels. Resolves to the page, for more checks.
 */
async function checkPage(html: string, dir: string): Promise<Page> {
  const executablePath = await chromiumPath();
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
      problems.push(`fetched ${request.url()} (the report must be self-contained)`);
  });
  await page.goto(pathToFileURL(html).href);
  await page.waitForFunction('document.body.dataset.rendered === "true"', undefined, { timeout: 10_000 });

  const screenshot = await page.screenshot({ fullPage: true, path: join(dir, "screenshot.png") });
  const png = PNG.sync.read(screenshot);
  // Page code as text: the tests are type-checked without the DOM library.
  const charts = await page.evaluate<{ id: string; box: { x: number; y: number; width: number; height: number } }[]>(`
    [...document.querySelectorAll("figure.chart")].map((figure) => {
      const rect = figure.querySelector(".box").getBoundingClientRect();
      return {
        id: figure.dataset.chart,
        box: { x: rect.x + window.scrollX, y: rect.y + window.scrollY, width: rect.width, height: rect.height },
      };
    })
  `);
  expect(charts.map((chart) => chart.id)).toEqual([...CHART_IDS]);
  const empty = charts.filter((chart) => colouredPixels(png, chart.box) < 50).map((chart) => chart.id);
  expect(empty, `charts without data pixels in ${which} (see ${join(dir, "screenshot.png")})`).toEqual([]);
  expect(problems, which).toEqual([]);
  return page;
}

describe("report.html in headless Chromium", () => {
  it("opens from file:// without console or page errors, and a screenshot shows data in every chart", async () => {
    const { dir, report } = await loadRun(5);
    const page = await checkPage(join(dir, "report.html"), dir);

    // The SLO, verdict, retry and failure tables, filled from report.json.
    const tables = await page.evaluate<Record<string, string[][]>>(`
      Object.fromEntries(["slo", "verdicts", "retries", "failures"].map((id) => [id,
        [...document.getElementById(id).querySelectorAll("tr")].map((tr) => [...tr.children].map((cell) => cell.textContent))]))
    `);
    expect(tables.slo?.map((row) => row[0])).toEqual(["", "requests", "prompts, retries included", "sessions"]);
    expect(tables.slo?.[1]?.slice(1, 3)).toEqual([
      String(report.slo?.requests.total),
      String(report.slo?.requests.conforming),
    ]);
    expect(tables.verdicts?.slice(1, 5).map((row) => row[1])).toEqual(
      [
        report.verdicts.prompts.firstAttempt,
        report.verdicts.prompts.afterRetries,
        report.verdicts.prompts.failedAfterRetries,
        report.verdicts.prompts.failedWithoutRetry,
      ].map(String),
    );
    expect(tables.retries?.find((row) => row[0] === "retries by cause")?.[1]).toMatch(/^(http_503|connection) \d+/);
    expect(tables.failures?.slice(1)).toEqual(report.failures.map((f) => [f.label, String(f.count), f.example]));
  }, 60_000);

  it("a merged report's page draws every chart too, from the merged sketches, and says it is merged", async () => {
    const parts = [(await loadRun(5)).dir, (await loadRun(6)).dir];
    const out = tempDir(cleanups, "lifeline-load-html-merged-");
    const { files } = await mergeReports(parts, { outDir: out });
    const page = await checkPage(files?.html as string, out);
    expect(await page.evaluate<string>('document.getElementById("subtitle").textContent')).toContain(
      "merged from 2 reports",
    );
  }, 90_000);
  it("after a sweep, the page also draws the sweep's curves against the offered rate, with data in each", async () => {
    const executablePath = await chromiumPath();
    const dir = tempDir(cleanups, "lifeline-load-sweep-html-");
    const result = await runLoad({
      sessions: 4,
      sweep: { rates: 2, stepMs: 400 },
      mock: { tokens: 8, tokenDelayMs: 2 },
      lifelineDir: false,
      sampleIntervalMs: 50,
      outDir: dir,
    });
    expect(result.report.sweep?.stages.length, "baseline, probe and at least one rate").toBeGreaterThanOrEqual(2);
    const browser: Browser = await chromium.launch({ executablePath, headless: true, args: ["--no-sandbox"] });
    cleanups.push(() => browser.close());
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const problems: string[] = [];
    page.on("console", (message) => {
      if (message.type() === "error") problems.push(`console: ${message.text()}`);
    });
    page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
    await page.goto(pathToFileURL(result.files?.html as string).href);
    await page.waitForFunction('document.body.dataset.rendered === "true"', undefined, { timeout: 10_000 });
    const png = PNG.sync.read(await page.screenshot({ fullPage: true, path: join(dir, "screenshot.png") }));
    const charts = await page.evaluate<{ id: string; box: { x: number; y: number; width: number; height: number } }[]>(`
      [...document.querySelectorAll("figure.chart")].map((figure) => {
        const rect = figure.querySelector(".box").getBoundingClientRect();
        return {
          id: figure.dataset.chart,
          box: { x: rect.x + window.scrollX, y: rect.y + window.scrollY, width: rect.width, height: rect.height },
        };
      })
    `);
    expect(charts.map((chart) => chart.id)).toEqual([...CHART_IDS, ...SWEEP_CHART_IDS]);
    const sweepCharts = charts.filter((chart) => (SWEEP_CHART_IDS as readonly string[]).includes(chart.id));
    const empty = sweepCharts.filter((chart) => colouredPixels(png, chart.box) < 50).map((chart) => chart.id);
    expect(empty, `sweep charts without data pixels (see ${join(dir, "screenshot.png")})`).toEqual([]);
    expect(problems).toEqual([]);
  }, 60_000);
});
