/**
 * The terminal summary's lines for `--slo` and the retry verdicts (report.json `slo`, `verdicts`,
 * `failures`), in the plain style of summary-table.ts: a label column, then figures.
 */
import type { SloAttainment } from "../verdicts/slo.js";
import type { LoadReport } from "./load-report.js";

/** Longest failure example shown in the terminal; report.json has the whole (redacted) text. */
const EXAMPLE_WIDTH = 100;

/** The lines for `report`'s SLO (when it has one), verdicts, retries and failure groups; summary-table.ts prints them. */
export function formatVerdictLines(report: LoadReport): string[] {
  const lines: string[] = [];
  const { slo, verdicts: v } = report;
  if (slo !== null) {
    const parts = [`requests ${attained(slo.requests)}`, `prompts ${attained(slo.prompts)}`];
    if (slo.sessions !== null) parts.push(`sessions ${attained(slo.sessions)}`);
    lines.push(`slo       ${slo.spec}: ${parts.join("; ")}`);
  }
  lines.push(
    `verdicts  first attempt ${v.prompts.firstAttempt} (${percent(v.shares.firstAttempt)}), after retries ${v.prompts.afterRetries} (${percent(v.shares.afterRetries)}), failed after retries ${v.prompts.failedAfterRetries} (${percent(v.shares.failedAfterRetries)}), failed without retry ${v.prompts.failedWithoutRetry} (${percent(v.shares.failedWithoutRetry)}); ${v.requestsPerSuccessfulPrompt ?? "-"} requests per successful prompt`,
  );
  const causes = Object.entries(v.retriesByCause)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([cause, n]) => `${cause} ${n}`);
  const backoff = v.backoff.perPromptMs;
  lines.push(
    `retried   ${causes.length === 0 ? "nothing" : causes.join(", ")}; back-off ${(v.backoff.sumMs / 1000).toFixed(1)} s` +
      (backoff.count === 0 ? "" : ` (per retried prompt p50 ${backoff.p50} ms, p99 ${backoff.p99} ms)`) +
      `; hints honoured ${v.hints.honoured}/${v.hints.total}` +
      (v.hints.overCap > 0 ? `, ${v.hints.overCap} over the cap` : "") +
      `; budget refusals ${v.budgetRefusals}; key rotations ${v.credentialRotations}; fallback switches ${v.fallbackSwitches}`,
  );
  for (const group of report.failures) {
    const example = group.example.replace(/\s+/g, " ");
    const shown = example.length > EXAMPLE_WIDTH ? `${example.slice(0, EXAMPLE_WIDTH)}…` : example;
    lines.push(`failed    ${group.label} ${group.count}: ${shown}`);
  }
  return lines;
}

function attained(figures: SloAttainment): string {
  return `${percent(figures.attainment)} (${figures.conforming}/${figures.total}, ${figures.goodputPerSecond}/s)`;
}

function percent(value: number | null): string {
  return value === null ? "-" : `${(value * 100).toFixed(1)} %`;
}
