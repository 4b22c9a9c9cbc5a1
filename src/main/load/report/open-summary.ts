/**
 * The terminal summary's lines for the open model and the sweep (summary-table.ts adds them), and
 * the start banner's description of the load: plain text, as the rest of the summary.
 */

import type { LoadOptions } from "../options/load-options.js";
import { arrivalStages, OPEN_DEFAULTS } from "../options/open-options.js";
import type { LoadReport } from "./load-report.js";

/** Lines about arrivals and the sweep's steps; none for the closed model. */
export function arrivalSummaryLines(report: LoadReport): string[] {
  const a = report.totals.arrivals;
  const config = report.config.arrival;
  if (a === null || config === null) return [];
  const lines = [
    `arrivals  ${a.offered} offered, ${a.started} started, ${a.dropped} dropped, ${a.delayed} delayed then started, ${a.unstarted} never started, at a cap of ${config.maxInFlight} (on cap: ${config.onCap}); conversations ${a.completed} completed, ${a.failed} failed, ${a.cancelled} cancelled; schedule lag p99 ${num(a.scheduleLagMs.p99)} ms`,
  ];
  const sweep = report.sweep;
  if (sweep === null) return lines;
  lines.push("");
  const rows = [
    [
      "sweep step",
      "offered/s",
      "achieved/s",
      "prompts/s",
      "dropped",
      "ttft p50",
      "ttft p99",
      "e2e p50",
      "e2e p99",
      "saturated",
    ],
    ...sweep.stages.map((s) => [
      s.kind,
      s.offeredRate === null ? "-" : num(s.offeredRate),
      num(s.achievedRate),
      num(s.throughput.promptsPerSecond),
      String(s.arrivals.dropped),
      num(s.latency.ttftMs.p50),
      num(s.latency.ttftMs.p99),
      num(s.latency.e2eMs.p50),
      num(s.latency.e2eMs.p99),
      s.saturated ?? "",
    ]),
  ];
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? "").length))) ?? [];
  for (const row of rows) {
    lines.push(
      row
        .map((cell, column) => (column === 0 ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0)))
        .join("  ")
        .trimEnd(),
    );
  }
  lines.push(
    sweep.stopReason === null ? "sweep ran every rate" : `sweep stopped early: ${STOP_WORDS[sweep.stopReason]}`,
  );
  return lines;
}

const STOP_WORDS: Record<NonNullable<NonNullable<LoadReport["sweep"]>["stopReason"]>, string> = {
  completion: "the last step completed under 90 % of the conversations it offered (saturated)",
  ttft: "time to first token kept growing in the last step (saturated)",
  no_headroom: "the probe was not faster than the baseline, so there was no range to sweep",
  interrupted: "interrupted",
};

/** The banner's words for the open model or the sweep; undefined for the closed model. */
export function describeOpenModel(options: LoadOptions): string | undefined {
  if (options.sweep !== undefined) {
    const rates = options.sweep.rates ?? OPEN_DEFAULTS.sweepRates;
    const step = (options.sweep.stepMs ?? OPEN_DEFAULTS.sweepStepMs) / 1000;
    return `a sweep (baseline, probe, ${rates} rates; ${step} s steps)`;
  }
  if (options.arrival === undefined) return undefined;
  const stages = arrivalStages(options.arrival, options.durationMs)
    .map((stage) => `${stage.durationMs / 1000} s to ${stage.rate}/s`)
    .join(", ");
  const process = options.arrival.process ?? OPEN_DEFAULTS.process;
  return `${process} arrivals of ${options.prompts ?? OPEN_DEFAULTS.promptsPerArrival} prompt(s): ${stages}`;
}

function num(value: number | null, digits = 1): string {
  if (value === null) return "-";
  return value.toFixed(digits).replace(/\.0+$/, "");
}
