/**
 * `--csv`'s files (src/main/load/report/report-csv.ts): records.csv, requests and prompts in one table
 * with a `type` column, and summary.csv, one `figure,value` row per figure of report.json.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { PromptRecord, RequestRecord } from "../../../../src/main/load/metrics/load-metrics.js";
import { buildReport } from "../../../../src/main/load/report/load-report.js";
import { recordsCsv, summaryCsv } from "../../../../src/main/load/report/report-csv.js";

const request: RequestRecord = {
  type: "request",
  session: 1,
  prompt: 0,
  attempt: 0,
  turn: 0,
  startMs: 12.9,
  ttftMs: null,
  ttfbMs: 2.8,
  e2eMs: 3.1,
  outputTokens: 0,
  inputTokens: 0,
  costUsd: 0,
  stopReason: "error",
  failure: { kind: "http_503", class: "retryable", message: '503 "overloaded", try again' },
};
const { failure: _, ...succeeded } = request;
const prompt: PromptRecord = {
  type: "prompt",
  session: 1,
  prompt: 0,
  startMs: 12.5,
  latencyMs: 196.5,
  requests: 2,
  retries: 1,
  turns: 1,
  toolCalls: 0,
  outcome: "succeeded",
};

const lines = (csv: string) => csv.split("\r\n").slice(0, -1);

describe("records.csv", () => {
  it("puts requests and prompts in one table with a type column, a failure spread over three columns", () => {
    const [header, first, second] = lines(recordsCsv([request, prompt]));
    const columns = header?.split(",") ?? [];
    expect(columns.slice(0, 3)).toEqual(["type", "session", "prompt"]);
    expect(columns).not.toContain("source");
    const row = (line: string | undefined) =>
      Object.fromEntries(columns.map((column, i) => [column, splitQuoted(line ?? "")[i]]));
    expect(row(first)).toMatchObject({
      type: "request",
      e2eMs: "3.1",
      ttftMs: "",
      latencyMs: "",
      failureKind: "http_503",
      failureMessage: '"503 ""overloaded"", try again"',
    });
    expect(row(second)).toMatchObject({ type: "prompt", latencyMs: "196.5", outcome: "succeeded", e2eMs: "" });
  });

  it("has the columns docs/load.md lists, in its order, when the records carry every field", () => {
    const docs = readFileSync(new URL("../../../../docs/load.md", import.meta.url), "utf8");
    const list = /Columns[^:]*: ([\s\S]*?), then any other field/.exec(docs)?.[1] ?? "";
    // Each column is the first backquoted word of its item (`source` (merged reports only: …)).
    const documented = [...list.replace(/\([^)]*\)/g, "").matchAll(/`(\w+)`/g)].map((match) => match[1]);
    expect(documented.length).toBeGreaterThan(20);
    const everyField = [
      { ...request, source: 0 },
      { ...prompt, source: 0, error: "503 overloaded", backoffMs: 2000 },
    ];
    const [header] = lines(recordsCsv(everyField));
    expect(header?.split(",")).toEqual(documented);
  });

  it("adds a source column for merged records, and a column for a field it does not know", () => {
    const [header, row] = lines(recordsCsv([{ ...prompt, source: 1, queueMs: 4 }]));
    expect(header?.split(",")).toEqual(expect.arrayContaining(["source", "queueMs"]));
    expect(header?.split(",").at(-1)).toBe("queueMs");
    expect(row?.split(",").at(-1)).toBe("4");
  });
});

describe("summary.csv", () => {
  it("has one figure,value row per figure, named by its path, without histograms, sketches or the timeline", () => {
    const report = buildReport({
      status: "completed",
      startedAt: new Date(0),
      endedAt: new Date(1000),
      durationMs: 1000,
      config: {
        sessions: 1,
        promptsPerSession: 1,
        durationMs: null,
        target: "mock",
        model: "lifeline-mock/mock-1",
        thinkingLevel: null,
        faults: [],
        seed: 0,
        rampUpMs: 0,
        concurrency: 1,
        thinkTimeMs: 0,
        threads: null,
        promptTexts: 0,
        conversations: 0,
        tools: null,
        arrival: null,
        mock: { tokens: 32, tokenDelayMs: 5, rateLimit: null, tools: null },
        settings: {},
      },
      counters: {
        promptsSent: 1,
        promptsSucceeded: 1,
        promptsFailed: 0,
        promptsCancelled: 0,
        inFlightPrompts: 0,
        inFlightRequests: 0,
        requests: 2,
        failedRequests: 1,
        failuresByKind: { http_503: 1 },
        failuresByClass: { retryable: 1 },
        retries: 1,
        retryChains: { success: 1 },
        gateWaits: 0,
        gateWaitMs: 0,
        toolCalls: 0,
        outputTokens: 32,
        inputTokens: 100,
        costUsd: 0,
        restores: {},
      },
      requests: [request, { ...succeeded, attempt: 1, e2eMs: 150, ttftMs: 20, outputTokens: 32, stopReason: "stop" }],
      prompts: [prompt],
      timeline: { intervalMs: 1000, points: [] },
      loopDelayMs: { mean: 0, p50: 0, p99: 0, max: 0 },
      watchdogTerminations: 0,
      tools: { toolCalls: 0, toolFailures: 0, toolLatenciesMs: [] },
      thresholds: [{ expression: "retries<5", metric: "retries", operator: "<", value: 5 }],
      mock: null,
    });
    const rows = lines(summaryCsv(report));
    expect(rows[0]).toBe("figure,value");
    const figures = new Map(rows.slice(1).map((row) => row.split(",") as [string, string]));
    expect(figures.get("totals.prompts.sent")).toBe("1");
    expect(figures.get("totals.requests.failuresByKind.http_503")).toBe("1");
    expect(figures.get("latency.e2eMs.p50")).toBe(String(report.latency.e2eMs.p50));
    expect(figures.get("latency.e2eMs.count")).toBe("1");
    expect(figures.get("thresholds.0.passed")).toBe("true");
    expect(figures.get("mock")).toBe("");
    expect([...figures.keys()].filter((name) => /histogram|sketch|timeline/.test(name))).toEqual([]);
  });
});

/** Splits one CSV line on the commas outside quotes (the fields keep their quotes). */
function splitQuoted(line: string): string[] {
  return line.match(/("([^"]|"")*"|[^,]*)(,|$)/g)?.map((field) => field.replace(/,$/, "")) ?? [];
}
