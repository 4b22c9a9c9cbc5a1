/**
 * RPC `export_html` in a real browser: headless Chromium (test/fixtures/chromium.ts) opens the page
 * a real `lifeline --mode rpc` child wrote for a prompt that failed once (a 503 from the mock model
 * server) and was retried. The page renders from file:// with no console or page error and no
 * fetch, the failed attempt and the retry are visible, and user text holding a `<script>` is
 * shown as text, never run; and the commands a client ran with `bash`, as pi's page shows them.
 * Run `npm run build` first.
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { type Browser, chromium, type Page } from "playwright-core";
import { beforeAll, describe, expect, it } from "vitest";
import { requirePrerequisites } from "../../../scripts/test-prereqs.mjs";
import { chromiumPath } from "../../fixtures/chromium.js";
import { mockServerSuite } from "../../fixtures/mock-server-suite.js";
import { mockModelsJson } from "../../fixtures/models.mjs";
import { spawnRpc } from "../../fixtures/rpc-child.js";

const suite = mockServerSuite();
const { cleanups } = suite;

beforeAll(() => requirePrerequisites("browser"));

/** Opens `path` in headless Chromium; the page, and the problems it shows (errors, any fetch but the file). */
async function openPage(path: string): Promise<{ page: Page; problems: string[] }> {
  const executablePath = await chromiumPath();
  const browser: Browser = await chromium.launch({ executablePath, headless: true, args: ["--no-sandbox"] });
  cleanups.push(() => browser.close());
  const page = await browser.newPage({ viewport: { width: 1000, height: 800 } });
  const problems: string[] = [];
  page.on("console", (message) => {
    if (message.type() === "error") problems.push(`console: ${message.text()}`);
  });
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  page.on("request", (request) => {
    if (!request.url().startsWith("file:")) problems.push(`fetched ${request.url()}`);
  });
  await page.goto(pathToFileURL(path).href);
  return { page, problems };
}

/** Each article's text and classes of the page at `path`, and the page's problems. */
async function articlesOf(
  path: string,
): Promise<{ articles: { text: string; classes: string }[]; problems: string[] }> {
  const { page, problems } = await openPage(path);
  const articles = await page.evaluate<{ text: string; classes: string }[]>(`
    [...document.querySelectorAll("article")].map((article) => ({ text: article.innerText, classes: article.className }))
  `);
  return { articles, problems };
}

describe("export_html in headless Chromium", () => {
  it("renders the transcript offline with the failed attempt and its retry visible, and user <script> as text", async () => {
    const text = 'Hi <script>window.__ran = true; console.error("ran")</script> & bye';
    suite.server.setScript({ reply: "All good.", conversations: [{ match: "Hi", steps: [503, "ok"] }] });
    const rpc = spawnRpc(cleanups, {
      models: mockModelsJson(suite.server.url),
      args: ["--provider", "mock", "--model", "mock-1"],
    });
    await rpc.request({ type: "prompt", message: text });
    await rpc.waitFor((record) => record.type === "agent_settled", "agent_settled");
    const response = await rpc.request({ type: "export_html", outputPath: "transcript.html" });
    expect(response).toMatchObject({ success: true, data: { path: "transcript.html" } });
    const path = join(rpc.dir, "transcript.html");

    const { page, problems } = await openPage(path);

    // Page code as text: the tests are type-checked without the DOM library.
    const articles = await page.evaluate<{ text: string; classes: string; visible: boolean }[]>(`
      [...document.querySelectorAll("article")].map((article) => {
        const rect = article.getBoundingClientRect();
        return { text: article.innerText, classes: article.className, visible: rect.width > 0 && rect.height > 0 };
      })
    `);
    expect(articles.map((article) => article.classes)).toEqual([
      "message user",
      "message assistant failed",
      "message assistant retry",
    ]);
    expect(articles.every((article) => article.visible)).toBe(true);
    expect(articles[0]?.text).toContain(text);
    expect(articles[1]?.text).toContain("Failed attempt 1");
    expect(articles[1]?.text).toContain("503 The engine is currently overloaded, please try again later.");
    expect(articles[2]?.text).toContain("Retry after 1 failed attempt");
    expect(articles[2]?.text).toContain("All good.");
    expect(await page.evaluate<unknown>("window.__ran")).toBeUndefined();
    expect(problems).toEqual([]);
  }, 60_000);

  it("shows each bash command with its output, exit code, cancellation and truncation note, as pi's page does (regression: an empty bashExecution block)", async () => {
    const rpc = spawnRpc(cleanups, { args: ["--no-session"] });
    const failed = await rpc.request({ type: "bash", command: "printf 'first line\\nsecond <b>line</b>\\n'; exit 3" });
    expect(failed).toMatchObject({ success: true, data: { exitCode: 3 } });
    const long = await rpc.request({ type: "bash", command: "seq 1 3000" }, 20_000);
    const { fullOutputPath, output } = long.data as { fullOutputPath: string; output: string };
    cleanups.push(() => rmSync(fullOutputPath, { force: true }));
    expect(long).toMatchObject({ success: true, data: { exitCode: 0, truncated: true } });
    const from = rpc.records.length;
    rpc.send({ id: "sleep", type: "bash", command: "sleep 30" });
    await rpc.request({ type: "get_state" });
    await rpc.request({ type: "abort_bash" });
    const cancelled = await rpc.waitFor((record) => record.id === "sleep", "the cancelled bash", from);
    expect(cancelled).toMatchObject({ success: true, data: { cancelled: true } });
    await rpc.request({ type: "export_html", outputPath: "bash.html" });

    const { articles, problems } = await articlesOf(join(rpc.dir, "bash.html"));
    expect(articles.map((article) => article.classes)).toEqual([
      "message bashExecution failed",
      "message bashExecution",
      "message bashExecution failed",
    ]);
    const [exited, truncated, killed] = articles.map((article) =>
      article.text
        .split("\n")
        .map((line) => line.trim())
        .filter((line) => line !== ""),
    );
    expect(exited).toEqual([
      "BASH",
      "$ printf 'first line\\nsecond <b>line</b>\\n'; exit 3",
      "first line",
      "second <b>line</b>",
      "(exit 3)",
    ]);
    // The tail pi keeps (the bash response's output, ending in 3000), whole, then where the rest is.
    expect(output.endsWith("\n3000\n")).toBe(true);
    expect(truncated).toEqual([
      "BASH",
      "$ seq 1 3000",
      ...output.split("\n").filter((line) => line !== ""),
      `Output truncated. Full output: ${fullOutputPath}`,
    ]);
    expect(killed).toEqual(["BASH", "$ sleep 30", "(cancelled)"]);
    expect(problems).toEqual([]);
  }, 60_000);
});
