/**
 * The terminal summary of a run: a few lines of totals, a table of percentiles and the
 * thresholds, in plain text (no colour, no box drawing), so it reads the same in a CI log.
 */
import type { Summary } from "../metrics/stats.js";
import type { LoadReport } from "./load-report.js";
import { arrivalSummaryLines } from "./open-summary.js";
import { formatVerdictLines } from "./verdicts-summary.js";

/**
 * The summary of `report`, ending with a newline; `dir` is the report folder, if one was written,
 * and `files` says which of its optional files it has (default: records.jsonl, no CSV).
 */
export function formatSummary(report: LoadReport, dir?: string, files?: { records?: boolean; csv?: boolean }): string {
  const t = report.totals;
  const lines: string[] = [];
  const target = report.config.target === "mock" ? "built-in mock" : report.config.model;
  lines.push(
    `lifeline load ${report.status} in ${seconds(report.durationMs)}: ${report.config.sessions} sessions against ${target}`,
  );
  lines.push(
    `prompts   ${t.prompts.sent} sent, ${t.prompts.succeeded} succeeded, ${t.prompts.failed} failed, ${t.prompts.cancelled} cancelled; failure rate ${percent(t.failureRate)}`,
  );
  // Prompts cut by the run's end (a duration, Ctrl+C) abort their requests; a request aborted
  // before it reached the server counts as sent here and was never received there.
  const aborted = t.requests.failuresByKind.aborted ?? 0;
  const unseen = report.mock === null ? 0 : t.requests.sent - report.mock.received;
  const received =
    report.mock === null
      ? ""
      : unseen > 0 && unseen <= aborted
        ? ` (mock received ${report.mock.received}; ${unseen} aborted before they reached it)`
        : ` (mock received ${report.mock.received})`;
  lines.push(
    `requests  ${t.requests.sent} sent${received}, ${t.requests.failed} failed${kinds(t.requests.failuresByKind)}; amplification ${num(t.amplification, 3)}`,
  );
  lines.push(
    `retries   ${t.retries}${kinds(t.retryChains, "chains")}; provider gate waits ${t.providerGate.waits} (${num(t.providerGate.waitMs)} ms); tool calls ${t.toolCalls}`,
  );
  // Agentic runs (docs/load.md): tool lines and rows only when a tool ran.
  const agentic = report.agentic.toolCalls > 0 ? report.agentic : undefined;
  if (agentic !== undefined) lines.push(`tools     ${agentic.toolCalls} calls, ${agentic.toolFailures} failed`);
  lines.push(
    `tokens    ${t.outputTokens} out, ${t.inputTokens} in; ${num(report.throughput.outputTokensPerSecond, 1)} tokens/s; estimated cost $${num(t.costUsd, 4)}`,
  );
  lines.push(
    `host      event-loop delay max ${num(report.loopDelayMs.max, 1)} ms, p99 ${num(report.loopDelayMs.p99, 1)} ms; watchdog terminations ${t.watchdogTerminations}`,
  );
  lines.push(...formatVerdictLines(report));
  lines.push(...arrivalSummaryLines(report));
  lines.push("");
  const rows: [string, Summary][] = [
    ["ttft ms", report.latency.ttftMs],
    ["ttfb ms", report.latency.ttfbMs],
    ["itl ms", report.latency.itlMs],
    ["chunk gap ms", report.latency.chunkGapMs],
    ["e2e latency ms", report.latency.e2eMs],
    ["tokens/s per request", report.latency.outputTokensPerSecond],
    ["prompt ms", report.latency.promptMs],
    ["requests per prompt", report.latency.requestsPerPrompt],
  ];
  if (agentic !== undefined) {
    rows.push(
      ["turns per prompt", agentic.turnsPerPrompt],
      ["tool latency ms", agentic.toolLatencyMs],
      ["session completion ms", agentic.sessionCompletionMs],
    );
  }
  lines.push(
    ...table([
      ["", "count", "p50", "p90", "p95", "p99", "max"],
      ...rows.map(([name, s]) => [name, String(s.count), num(s.p50), num(s.p90), num(s.p95), num(s.p99), num(s.max)]),
    ]),
  );
  if (report.thresholds.length > 0) {
    lines.push("");
    for (const threshold of report.thresholds) {
      lines.push(
        `${threshold.passed ? "ok  " : "FAIL"} ${threshold.expression}  (actual ${threshold.actual === null ? "no data" : num(threshold.actual, 3)})`,
      );
    }
  }
  if (dir !== undefined) {
    const figures = [
      "report.json",
      ...(files?.records === false ? [] : ["records.jsonl"]),
      ...(files?.csv === true ? ["summary.csv", ...(files.records === false ? [] : ["records.csv"])] : []),
    ];
    lines.push("", `report: ${dir}/report.html  (figures: ${figures.join(", ")})`);
  }
  return `${lines.join("\n")}\n`;
}

/** Rows of cells as aligned columns: the first left-aligned, the rest right-aligned. */
function table(rows: string[][]): string[] {
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? "").length))) ?? [];
  return rows.map((row) =>
    row
      .map((cell, column) => (column === 0 ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0)))
      .join("  ")
      .trimEnd(),
  );
}

function kinds(counts: Record<string, number>, label?: string): string {
  const entries = Object.entries(counts).sort(([a], [b]) => a.localeCompare(b));
  if (entries.length === 0) return "";
  return ` (${label === undefined ? "" : `${label}: `}${entries.map(([kind, n]) => `${kind} ${n}`).join(", ")})`;
}

function num(value: number | null, digits = 1): string {
  if (value === null) return "-";
  return value.toFixed(digits).replace(/\.0+$/, "");
}

function percent(value: number | null): string {
  return value === null ? "-" : `${(value * 100).toFixed(2)} %`;
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}
