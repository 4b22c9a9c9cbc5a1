/**
 * `lifeline load` as users run it: real child processes of the built `dist/main/cli.js` (run
 * `npm run build` first) with real worker threads, against the built-in mock server (in its own
 * thread) or against a mock server this test runs, so that the report's figures can be checked
 * against the server's own request counters. Exit codes 0, 99, 2 and 130 (Ctrl+C, partial
 * report). Each child has its own LIFELINE_DIR (fast retries) and working directory, and is
 * killed if it has not exited within its bound.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { LoadReport } from "../../../dist/main/load/index.js";
import { startMockServer } from "../../../dist/mock-server/index.js";
import { within } from "../../fixtures/bounded.js";
import { type LoadRun, runLoadChild, type StartedLoad, startLoadChild } from "../../fixtures/load-child.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function startLoad(args: readonly string[], options: { models?: string } = {}): StartedLoad {
  return startLoadChild(cleanups, args, options);
}

function runLoad(args: readonly string[], options: { models?: string } = {}): Promise<LoadRun> {
  return runLoadChild(cleanups, args, options);
}

/** Command-line words of `lines` (no quoting needed by these tests). */
function words(...lines: string[]): string[] {
  return lines.join(" ").split(" ");
}

function readReport(dir: string): LoadReport {
  return JSON.parse(readFileSync(join(dir, "report.json"), "utf8")) as LoadReport;
}

describe("lifeline load against the built-in mock", () => {
  it("requests sent equal the requests the mock received, and every fault the mock served shows in the report", async () => {
    const run = await runLoad(
      words(
        "--sessions 4 --prompts 3 --faults 503:0.2,429:0.1,reset:0.05 --seed 3 --mock-tokens 8 --mock-token-delay 1ms",
        "--out out --threshold failure_rate<=1 --threshold amplification>=1",
      ),
    );
    expect(run.code, run.stderr).toBe(0);
    const report = readReport(join(run.cwd, "out"));
    const { totals, mock } = report;
    expect(report.status).toBe("completed");
    expect(mock).not.toBeNull();
    // The end-to-end check: what the host sent is what the server's own counter received.
    expect(totals.requests.sent).toBe(mock?.received);
    expect(totals.prompts).toEqual({
      sent: 12,
      succeeded: 12 - totals.prompts.failed,
      failed: totals.prompts.failed,
      cancelled: 0,
    });
    // No tools: every request beyond a prompt's first is one of its retries.
    expect(totals.retries).toBe(totals.requests.sent - totals.prompts.sent);
    expect(totals.amplification).toBeCloseTo(totals.requests.sent / 12, 3);
    // The mock's own record of the faults it served, kind by kind.
    expect(totals.requests.failuresByKind.http_503 ?? 0).toBe(mock?.steps["503"] ?? 0);
    expect(totals.requests.failuresByKind.http_429 ?? 0).toBe(mock?.steps["429"] ?? 0);
    expect(totals.requests.failuresByKind.connection ?? 0).toBe(mock?.steps.reset ?? 0);
    expect(totals.requests.failed).toBeGreaterThan(0);
    expect(mock?.steps.ok).toBe(totals.requests.sent - totals.requests.failed);
    // Every answer has 8 tokens; TTFT, ITL and e2e have one sample per successful request.
    expect(totals.outputTokens).toBe(8 * (mock?.steps.ok ?? 0));
    expect(report.latency.e2eMs.count).toBe(mock?.steps.ok);
    expect(report.latency.ttftMs.count).toBe(mock?.steps.ok);
    expect(report.thresholds.map((t) => [t.expression, t.passed])).toEqual([
      ["failure_rate<=1", true],
      ["amplification>=1", true],
    ]);
    const records = readFileSync(join(run.cwd, "out", "records.jsonl"), "utf8")
      .trim()
      .split("\n");
    expect(records).toHaveLength(totals.requests.sent + totals.prompts.sent);
    expect(existsSync(join(run.cwd, "out", "report.html"))).toBe(true);
    expect(run.stdout).toContain(`requests  ${totals.requests.sent} sent (mock received ${mock?.received})`);
  });

  it("a threshold that does not hold exits 99, and the report says which", async () => {
    const run = await runLoad([
      "--sessions",
      "2",
      "--prompts",
      "1",
      "--mock-tokens",
      "4",
      "--threshold",
      "amplification<1",
    ]);
    expect(run.code, run.stderr).toBe(99);
    const [dir] = readdirSync(run.cwd).filter((name) => name.startsWith("lifeline-load-"));
    expect(dir, "the default report folder lifeline-load-<timestamp>").toBeDefined();
    const report = readReport(join(run.cwd, dir as string));
    expect(report.thresholds).toEqual([
      expect.objectContaining({ expression: "amplification<1", actual: 1, passed: false }),
    ]);
    expect(run.stdout).toMatch(/FAIL amplification<1 {2}\(actual 1\)/);
  });

  it("with both --duration and --prompts the duration ends the run first when it comes first", async () => {
    const run = await runLoad(
      words("--sessions 2 --prompts 100000 --duration 1s --mock-tokens 4 --mock-token-delay 20ms --out out"),
    );
    expect(run.code, run.stderr).toBe(0);
    const report = readReport(join(run.cwd, "out"));
    expect(report.status).toBe("completed");
    expect(report.totals.prompts.sent).toBeLessThan(200_000);
    expect(report.totals.prompts.sent).toBeGreaterThan(0);
  });

  it("--ramp-up and --think-time with more than 10 sessions run to the end without a MaxListenersExceededWarning", async () => {
    const run = await runLoad(
      words("--sessions 12 --prompts 2 --ramp-up 200ms --think-time 20ms --mock-tokens 2 --out out"),
    );
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).not.toContain("MaxListenersExceededWarning");
    expect(readReport(join(run.cwd, "out")).totals.prompts.succeeded).toBe(24);
  });

  it("Ctrl+C (SIGINT) stops the run, still writes a partial report, and exits 130", async () => {
    const started = startLoad(["--sessions", "2", "--duration", "5m", "--mock-token-delay", "20ms", "--out", "out"]);
    // A plain progress line (stderr is no terminal) once requests have ended.
    await within(started.stderrMatches(/requests [1-9]/), 20_000, "a progress line with requests");
    started.child.kill("SIGINT");
    const run = await within(started.done, 20_000, "lifeline load to stop after SIGINT");
    expect(run.code, run.stderr).toBe(130);
    const report = readReport(join(run.cwd, "out"));
    expect(report.status).toBe("interrupted");
    expect(report.totals.requests.sent).toBeGreaterThan(0);
    // Requests cut by Ctrl+C are sent and aborted; those aborted before reaching the mock are not received.
    const aborted = report.totals.requests.failuresByKind.aborted ?? 0;
    expect(report.mock?.received).toBeLessThanOrEqual(report.totals.requests.sent);
    expect(report.mock?.received).toBeGreaterThanOrEqual(report.totals.requests.sent - aborted);
    expect(report.totals.prompts.sent).toBe(
      report.totals.prompts.succeeded + report.totals.prompts.failed + report.totals.prompts.cancelled,
    );
    expect(existsSync(join(run.cwd, "out", "report.html"))).toBe(true);
  });
});

describe("lifeline load --model against a server this test runs", () => {
  it("requests sent equal the requests the server counted, for a model resolved through models.json", async () => {
    const server = await startMockServer({
      script: { reply: "one two three", faults: [{ probability: 0.3, step: 503 }], seed: 11 },
    });
    cleanups.push(() => server.close());
    const models = JSON.stringify({
      providers: {
        mock: { baseUrl: `${server.url}/v1`, api: "openai-completions", apiKey: "dummy", models: [{ id: "mock-1" }] },
      },
    });
    const run = await runLoad(["--model", "mock/mock-1", "--sessions", "3", "--prompts", "2", "--out", "out"], {
      models,
    });
    expect(run.code, run.stderr).toBe(0);
    const report = readReport(join(run.cwd, "out"));
    expect(report.config).toMatchObject({ target: "model", model: "mock/mock-1" });
    expect(report.mock).toBeNull();
    expect(report.totals.requests.sent).toBe(server.stats().total);
    expect(report.totals.requests.failuresByKind.http_503 ?? 0).toBe(server.stats().outcomes.fault);
    expect(report.totals.prompts.sent).toBe(6);
  });
});

describe("bad usage exits 2 with a message naming the option", () => {
  it.each([
    [["--prompts", "1"], /--sessions <n> is required/],
    [["--sessions", "0", "--prompts", "1"], /--sessions "0" must be a whole number from 1/],
    [
      ["--sessions", "1", "--prompts", "1", "--faults", "teapot:0.5"],
      /unknown fault "teapot"; use a status from 400 to 599/,
    ],
    [
      ["--sessions", "1", "--prompts", "1", "--threshold", "p95_latency_ms<1"],
      /unknown metric "p95_latency_ms". Allowed: /,
    ],
    [["--sessions", "1", "--duration", "10x"], /--duration "10x" is not a duration/],
    [["--sessions", "1", "--prompts", "1", "--bogus"], /unknown option '--bogus'/],
    [["--sessions", "1", "--prompts", "1", "--model", "nosuch/model-1"], /Unknown provider "nosuch"/],
  ])("lifeline load %j", async (args, message) => {
    const run = await runLoad(args);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toMatch(message);
    expect(readdirSync(run.cwd)).toEqual([]);
  });
});
