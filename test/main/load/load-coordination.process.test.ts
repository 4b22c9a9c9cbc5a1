/**
 * `lifeline load` with the host's coordination (retry budget, provider gate, request permits) and
 * the stream-idle timeout, as users run it: real child processes of the built `dist/main/cli.js`
 * (run `npm run build` first) with real worker threads against the built-in mock server in its
 * own thread. Each flag's effect is read from report.json and from the mock's own counters.
 * Each child has its own LIFELINE_DIR and working directory and is killed past its bound.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { LoadReport, RequestRecord } from "../../../dist/main/load/index.js";
import { type LoadRun, runLoadChild } from "../../fixtures/load-child.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Run extends LoadRun {
  /** The report folder (`--out out` in the child's working directory). */
  out: string;
}

/**
 * Runs `lifeline load <args> --out out` with its own LIFELINE_DIR holding `settings` (retries 5 ms
 * apart unless said otherwise), bounded by `timeoutMs`.
 */
async function load(args: string, settings: object = { retry: { baseDelayMs: 5 } }, timeoutMs = 40_000): Promise<Run> {
  const run = await runLoadChild(cleanups, [...args.split(" "), "--out", "out"], { settings, timeoutMs });
  return { ...run, out: join(run.cwd, "out") };
}

function reportOf(run: Run): LoadReport {
  expect(run.code, run.stderr).toBe(0);
  return JSON.parse(readFileSync(join(run.out, "report.json"), "utf8")) as LoadReport;
}

function requestRecords(run: Run): RequestRecord[] {
  return readFileSync(join(run.out, "records.jsonl"), "utf8")
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as RequestRecord | { type: "prompt" })
    .filter((record): record is RequestRecord => record.type === "request");
}

describe("lifeline load and stalls", () => {
  it("a run with stall faults against the mock ends: stalls fail as stream_idle after the mock's idle timeout and are retried", async () => {
    // No --idle-timeout and none in the settings files: the mock's default (5 s) must end each stall.
    const run = await load(
      "--sessions 6 --prompts 1 --faults stall:0.3 --seed 5 --mock-tokens 8 --mock-token-delay 1ms",
    );
    const report = reportOf(run);
    const { totals, mock } = report;
    expect(report.status).toBe("completed");
    expect(report.config.settings).toEqual({ retry: { provider: { idleTimeoutMs: 5000 } } });
    expect(totals.requests.sent).toBe(mock?.received);
    const stalls = mock?.steps.stall ?? 0;
    expect(stalls).toBeGreaterThan(0);
    expect(totals.requests.failuresByKind).toEqual({ stream_idle: stalls });
    expect(run.stdout).toContain(`stream_idle ${stalls}`);
    // Every stalled request was followed by a retry of the same prompt.
    const records = requestRecords(run);
    for (const stalled of records.filter((record) => record.failure?.kind === "stream_idle")) {
      expect(
        records.some(
          (r) => r.session === stalled.session && r.prompt === stalled.prompt && r.attempt > stalled.attempt,
        ),
        `a retry after the stall of session ${stalled.session}, attempt ${stalled.attempt}`,
      ).toBe(true);
    }
    expect(totals.retries).toBeGreaterThanOrEqual(stalls);
  }, 60_000);

  it("--idle-timeout sets retry.provider.idleTimeoutMs over the settings files", async () => {
    const run = await load(
      "--sessions 2 --prompts 2 --faults stall:0.5 --seed 5 --mock-tokens 4 --mock-token-delay 1ms --idle-timeout 300ms",
      { retry: { baseDelayMs: 5, provider: { idleTimeoutMs: 600_000 } } },
    );
    const report = reportOf(run);
    expect(report.config.settings).toEqual({ retry: { provider: { idleTimeoutMs: 300 } } });
    expect(report.totals.requests.failuresByKind.stream_idle).toBe(report.mock?.steps.stall);
    expect(report.totals.requests.sent).toBe(report.mock?.received);
  }, 60_000);
});

describe("lifeline load and the host's retry coordination", () => {
  it("--retry-budget on refuses retries of a heavily failing run: chains end budget_exhausted and amplification drops", async () => {
    // 120 first attempts with 80 % 503s want about 230 retries; Finagle's budget allows
    // 0.2 × 120 + 10/s × 10 s = 124 within its window.
    const args = "--sessions 40 --prompts 3 --faults 503:0.8 --seed 7 --mock-tokens 2 --mock-token-delay 0ms";
    const without = reportOf(await load(args));
    const withBudget = reportOf(await load(`${args} --retry-budget on`));
    expect(without.totals.retryChains.budget_exhausted ?? 0).toBe(0);
    expect(withBudget.totals.retryChains.budget_exhausted ?? 0).toBeGreaterThan(0);
    // At most 124 retries in any 10 s window (the run normally takes one window).
    expect(withBudget.totals.retries).toBeLessThanOrEqual(124 * Math.ceil(withBudget.durationMs / 10_000));
    expect(withBudget.totals.amplification ?? 0).toBeLessThan(without.totals.amplification ?? 0);
    expect(withBudget.totals.requests.sent).toBe(withBudget.mock?.received);
    expect(withBudget.config.settings).toMatchObject({
      retry: { budget: { ratio: 0.2, minPerSecond: 10, windowMs: 10_000 } },
    });
  }, 90_000);

  it("--coordinate holds every session at the provider gate after a 429 with a retry hint, so fewer requests are sent", async () => {
    const args = "--sessions 8 --duration 3s --faults 429@2s:0.2 --seed 3 --mock-tokens 2 --mock-token-delay 1ms";
    const without = reportOf(await load(args));
    const gated = reportOf(await load(`${args} --coordinate`));
    expect(without.totals.providerGate.waits).toBe(0);
    expect(gated.totals.providerGate.waits).toBeGreaterThan(0);
    expect(gated.totals.providerGate.waitMs).toBeGreaterThan(0);
    expect(gated.totals.requests.failuresByKind.http_429).toBeGreaterThan(0);
    // Without the gate each session finds the limit with its own 429; with it, one 429 holds all.
    expect(gated.totals.requests.sent).toBeLessThan(without.totals.requests.sent / 2);
    expect(gated.totals.requests.sent).toBe(gated.mock?.received);
    expect(without.totals.requests.sent).toBe(without.mock?.received);
  }, 90_000);

  it("--mock-rate-limit makes a provider at its limit; with --coordinate fewer requests reach it and more prompts are answered", async () => {
    // Retries 5 ms apart against 10 requests per 500 ms: on their own, sessions keep hitting the limit.
    const args = "--sessions 20 --prompts 3 --mock-rate-limit 10/500ms --seed 4 --mock-tokens 2 --mock-token-delay 1ms";
    const alone = reportOf(await load(args));
    const gated = reportOf(await load(`${args} --coordinate`));
    expect(alone.config.mock?.rateLimit).toEqual({ requests: 10, windowMs: 500 });
    expect(alone.mock?.steps["429"] ?? 0).toBeGreaterThan(0);
    expect(alone.totals.requests.failuresByKind.http_429).toBe(alone.mock?.steps["429"]);
    expect(gated.totals.providerGate.waits).toBeGreaterThan(0);
    // Measured: alone 22 of 60 answered with 186 requests; gated 57 with 120 (waiters released
    // together at the reopening still collide with each other, so not every prompt makes it).
    expect(gated.totals.prompts.succeeded).toBeGreaterThan(alone.totals.prompts.succeeded);
    expect(gated.totals.requests.sent).toBeLessThan(alone.totals.requests.sent);
    expect(gated.totals.requests.sent).toBe(gated.mock?.received);
    expect(alone.totals.requests.sent).toBe(alone.mock?.received);
  }, 90_000);

  it("--max-concurrent 2: the mock never had more than 2 requests open at once", async () => {
    const args = "--sessions 6 --prompts 3 --faults 503:0.2 --seed 2 --mock-tokens 10 --mock-token-delay 5ms";
    const limited = reportOf(await load(`${args} --max-concurrent 2`));
    expect(limited.mock?.maxConcurrentRequests).toBeGreaterThanOrEqual(1);
    expect(limited.mock?.maxConcurrentRequests).toBeLessThanOrEqual(2);
    expect(limited.totals.prompts.sent).toBe(18);
    expect(limited.totals.requests.sent).toBe(limited.mock?.received);
    expect(limited.config.settings).toMatchObject({ retry: { maxConcurrentRequests: 2 } });
  }, 60_000);
});
