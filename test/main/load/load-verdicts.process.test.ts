/**
 * `lifeline load --slo` and the retry verdicts as users run them: real child processes of the
 * built `dist/main/cli.js` (run `npm run build` first) with real worker threads against the
 * built-in mock, seeded with 429s that carry a 1 s retry hint (B6), 503s and resets. The report's
 * `slo`, `verdicts` and `failures` must agree with its totals, with records.jsonl and with the
 * mock's own counters.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { LoadReport, PromptRecord, RequestRecord } from "../../../dist/main/load/index.js";
import { type LoadRun, runLoadChild } from "../../fixtures/load-child.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const FAULTS = "--faults 429@1s:0.2,503:0.15,reset:0.05 --seed 11";

async function load(args: string, settings: object): Promise<{ run: LoadRun; out: string }> {
  const run = await runLoadChild(cleanups, [...args.split(" "), "--out", "out"], { settings, timeoutMs: 60_000 });
  return { run, out: join(run.cwd, "out") };
}

function read(out: string): { report: LoadReport; requests: RequestRecord[]; prompts: PromptRecord[] } {
  const report = JSON.parse(readFileSync(join(out, "report.json"), "utf8")) as LoadReport;
  const records = readFileSync(join(out, "records.jsonl"), "utf8")
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as RequestRecord | PromptRecord);
  return {
    report,
    requests: records.filter((record): record is RequestRecord => record.type === "request"),
    prompts: records.filter((record): record is PromptRecord => record.type === "prompt"),
  };
}

const sum = (values: Iterable<number>) => [...values].reduce((a, b) => a + b, 0);

describe("lifeline load: SLO and retry verdicts against the faulty mock", () => {
  it("verdicts, retry causes, hints and failure groups agree with the totals, the records and the mock's counters", async () => {
    // Hints honoured (retry.respectRetryAfter): every retry of a 429 waits its 1 s out.
    const { run, out } = await load(
      `--sessions 6 --prompts 3 ${FAULTS} --mock-tokens 8 --mock-token-delay 1ms --slo ttft<=20s,e2e<=60s --threshold slo_attainment>0 --threshold first_attempt_success_rate>0`,
      { retry: { baseDelayMs: 5, respectRetryAfter: true } },
    );
    expect(run.code, run.stderr).toBe(0);
    const { report, requests, prompts } = read(out);
    const { totals, verdicts: v, mock } = report;
    expect(report.status).toBe("completed");
    // The seed gives failures of every kind asked for, and retries of them.
    expect(mock?.steps["429"] ?? 0).toBeGreaterThan(0);
    expect(totals.retries).toBeGreaterThan(0);

    // Verdicts against the prompt totals (a run bounded by --prompts cancels nothing).
    expect(v.prompts.firstAttempt + v.prompts.afterRetries).toBe(totals.prompts.succeeded);
    expect(v.prompts.failedAfterRetries + v.prompts.failedWithoutRetry).toBe(totals.prompts.failed);
    expect(v.prompts.afterRetries).toBe(prompts.filter((p) => p.outcome === "succeeded" && p.retries > 0).length);
    expect(v.shares.firstAttempt).toBe(Math.round((v.prompts.firstAttempt / totals.prompts.sent) * 1e6) / 1e6);
    expect(v.requestsPerSuccessfulPrompt).toBe(
      Math.round((totals.requests.sent / totals.prompts.succeeded) * 1000) / 1000,
    );

    // Retries by cause add up to the retries; none answers more failures of a kind than there were.
    expect(sum(Object.values(v.retriesByCause))).toBe(totals.retries);
    for (const [cause, retries] of Object.entries(v.retriesByCause)) {
      expect(retries).toBeLessThanOrEqual(totals.requests.failuresByKind[cause] ?? 0);
    }
    expect(v.chainsByEnd).toEqual(totals.retryChains);
    expect(totals.requests.failuresByKind.http_429).toBe(mock?.steps["429"]);
    expect(totals.requests.failuresByKind.http_503).toBe(mock?.steps["503"]);

    // Every retry of a 429 was hinted and waited at least the hint; its back-off slept it.
    expect(v.hints.total).toBe(v.retriesByCause.http_429 ?? 0);
    expect(v.hints).toMatchObject({ honoured: v.hints.total, early: 0 });
    if (v.hints.total > 0) expect(v.hints.sleptMinusHintMs.min).toBeGreaterThanOrEqual(0);
    expect(v.backoff.sumMs).toBeGreaterThanOrEqual(1000 * v.hints.total);
    expect(Math.abs(sum(prompts.map((p) => p.backoffMs ?? 0)) - v.backoff.sumMs)).toBeLessThanOrEqual(1);
    expect(v.budgetRefusals).toBe(0);
    expect(v.fallbackSwitches).toBe(0);

    // Failure groups: one per kind, counts as totals has them, an example each, no key.
    expect(Object.fromEntries(report.failures.map((f) => [f.label, f.count]))).toEqual(totals.requests.failuresByKind);
    for (const group of report.failures) {
      expect(group.example).not.toBe("");
      expect(group.example).not.toContain("lifeline-load");
    }

    // SLO limits no healthy request misses here: every successful request and prompt conforms.
    const slo = report.slo;
    expect(slo?.spec).toBe("ttft<=20s,e2e<=60s");
    expect(slo?.requests).toMatchObject({
      total: totals.requests.sent,
      conforming: requests.filter((r) => r.failure === undefined).length,
    });
    expect(slo?.prompts).toMatchObject({ total: totals.prompts.sent, conforming: totals.prompts.succeeded });
    expect(slo?.sessions?.total).toBe(6);
    expect(slo?.requests.goodputPerSecond).toBeCloseTo((slo?.requests.conforming ?? 0) / (report.durationMs / 1000), 1);
    expect(report.thresholds.map((t) => [t.metric, t.passed])).toEqual([
      ["slo_attainment", true],
      ["first_attempt_success_rate", true],
    ]);
    expect(run.stdout).toContain("slo       ttft<=20s,e2e<=60s: requests ");
    expect(run.stdout).toContain(`verdicts  first attempt ${v.prompts.firstAttempt} `);
    expect(run.stdout).toMatch(/hints honoured (\d+)\/\1/);
  }, 90_000);

  it("without retry.respectRetryAfter, retries of a 429 go before its hint and are counted early", async () => {
    const { run, out } = await load(`--sessions 4 --prompts 3 ${FAULTS} --mock-tokens 4 --mock-token-delay 1ms`, {
      retry: { baseDelayMs: 5 },
    });
    expect(run.code, run.stderr).toBe(0);
    const { report } = read(out);
    const v = report.verdicts;
    expect(report.slo).toBeNull();
    expect(v.hints.total).toBe(v.retriesByCause.http_429 ?? 0);
    expect(v.hints.total).toBeGreaterThan(0);
    // 5–20 ms of back-off against a 1 s hint.
    expect(v.hints).toMatchObject({ honoured: 0, early: v.hints.total });
    expect(v.hints.sleptMinusHintMs.max).toBeLessThan(0);
  }, 90_000);

  it("a run cut by its --duration leaves the cancelled prompts and aborted requests out of verdicts and SLO", async () => {
    // 1 s hints and 1 s of run: prompts are still waiting out their hints when the duration ends.
    const { run, out } = await load(
      `--sessions 4 --duration 1500ms --faults 429@1s:0.4 --seed 3 --mock-tokens 4 --mock-token-delay 1ms --slo e2e<=60s`,
      { retry: { baseDelayMs: 5, respectRetryAfter: true } },
    );
    expect(run.code, run.stderr).toBe(0);
    const { report, requests } = read(out);
    const { totals, verdicts: v, slo } = report;
    expect(totals.prompts.cancelled).toBeGreaterThan(0);
    expect(sum(Object.values(v.prompts))).toBe(totals.prompts.succeeded + totals.prompts.failed);
    expect(slo?.prompts.total).toBe(totals.prompts.succeeded + totals.prompts.failed);
    expect(slo?.requests.total).toBe(requests.filter((r) => r.failure?.kind !== "aborted").length);
    // A duration-bounded run is multi-turn: sessions are judged.
    expect(slo?.sessions).not.toBeNull();
    expect(sum(Object.values(v.retriesByCause))).toBe(totals.retries);
  }, 90_000);

  it("refuses an SLO threshold without --slo, and a bad --slo, with exit 2 and the term named", async () => {
    const without = await load("--sessions 1 --prompts 1 --threshold goodput>1", {});
    expect(without.run.code).toBe(2);
    expect(without.run.stderr).toContain("goodput needs an SLO");
    const bad = await load("--sessions 1 --prompts 1 --slo ttft<=1s,tpot<=5ms", {});
    expect(bad.run.code).toBe(2);
    expect(bad.run.stderr).toContain('"tpot<=5ms"');
  }, 60_000);
});
