/**
 * The sweep (`--sweep`): where does the target saturate? Steps, each `stepMs` long:
 *
 * 1. a synchronous baseline: one conversation at a time, back to back (the latency of an idle
 *    target, and the rate one client gets);
 * 2. a maximum-throughput probe: `sessions` conversations at a time, back to back;
 * 3. `rates` open-model steps at constant rates evenly spaced strictly between the baseline's
 *    and the probe's completion rates, lowest first, stopping after the first step that saturates.
 *
 * A rate step *saturates* the target when
 * - **completion**: it completed fewer than {@link MIN_COMPLETION} (90 %) of the conversations it
 *   offered: arrivals outran completions (dropped at the cap, failed, or still open when the
 *   step's drain ran out); or
 * - **ttft**: time to first token kept growing: the p50 TTFT of the step's later half of requests
 *   is more than {@link TTFT_GROWTH} (1.5) times its earlier half's and at least
 *   {@link TTFT_MIN_RISE_MS} (100 ms) above it, and the step's p50 is more than
 *   {@link TTFT_OVER_BASELINE} (2) times the baseline's: a queue is building up. The floor keeps
 *   small TTFTs out: against a fast target they are a few ms, where the host's event batching
 *   (8 ms) and scheduling make ratios of 2 or 3 out of noise.
 * The sweep also ends after the probe when the probe's rate is not {@link MIN_HEADROOM} above the
 * baseline's (`no_headroom`: there is no range to sweep).
 *
 * Control only: the steps themselves are run by open-run.ts through {@link StepRunner}, so this
 * logic is tested without time.
 */
import type { SaturationReason, SweepReport, SweepStage } from "./arrival-report.js";

/** Completed / offered conversations below this saturate a step. */
export const MIN_COMPLETION = 0.9;
/** Later-half / earlier-half TTFT p50 above this means TTFT kept growing. */
export const TTFT_GROWTH = 1.5;
/** …and by at least this many ms. */
export const TTFT_MIN_RISE_MS = 100;
/** …if the step's TTFT p50 is also above this multiple of the baseline's. */
export const TTFT_OVER_BASELINE = 2;
/** The probe's rate must exceed the baseline's by this factor for a range to sweep. */
export const MIN_HEADROOM = 1.05;

/** What the sweep asks of the run. */
export interface StepRunner {
  /** A closed step: `lanes` conversations at a time, back to back. */
  closed(kind: "baseline" | "probe", lanes: number): Promise<SweepStage>;
  /** An open step: conversations arriving at `rate` per second, evenly spaced. */
  open(rate: number): Promise<SweepStage>;
  /** True once the run was interrupted (Ctrl+C, the signal): no further step runs. */
  readonly interrupted: boolean;
}

/** `k` rates evenly spaced strictly between `low` and `high` (arrivals/s), ascending. */
export function sweepRates(low: number, high: number, k: number): number[] {
  return Array.from({ length: k }, (_, i) => low + ((high - low) * (i + 1)) / (k + 1));
}

/** Why `step` saturates the target, judged against the sweep's `baseline`; null when it does not. */
export function saturation(step: SweepStage, baseline: SweepStage): SaturationReason | null {
  if (step.arrivals.offered > 0 && step.arrivals.completed < MIN_COMPLETION * step.arrivals.offered) {
    return "completion";
  }
  const p50 = step.latency.ttftMs.p50;
  const base = baseline.latency.ttftMs.p50;
  if (
    step.ttftGrowth !== null &&
    step.ttftGrowth > TTFT_GROWTH &&
    step.ttftRiseMs !== null &&
    step.ttftRiseMs >= TTFT_MIN_RISE_MS &&
    p50 !== null &&
    base !== null &&
    p50 > TTFT_OVER_BASELINE * base
  ) {
    return "ttft";
  }
  return null;
}

/**
 * Runs the sweep's steps through `runner`; resolves with report.json `sweep`. Rejects only with
 * what the runner rejects with.
 */
export async function runSweep(runner: StepRunner, options: { rates: number; sessions: number }): Promise<SweepReport> {
  const report: SweepReport = { rates: [], stages: [], stopReason: null };
  const baseline = await runner.closed("baseline", 1);
  report.stages.push(baseline);
  if (runner.interrupted) return { ...report, stopReason: "interrupted" };
  const probe = await runner.closed("probe", options.sessions);
  report.stages.push(probe);
  if (runner.interrupted) return { ...report, stopReason: "interrupted" };
  if (!(probe.achievedRate > MIN_HEADROOM * baseline.achievedRate)) return { ...report, stopReason: "no_headroom" };
  report.rates = sweepRates(baseline.achievedRate, probe.achievedRate, options.rates).map(
    (rate) => Math.round(rate * 1000) / 1000,
  );
  for (const rate of report.rates) {
    const step = await runner.open(rate);
    report.stages.push(step);
    if (runner.interrupted) return { ...report, stopReason: "interrupted" };
    step.saturated = saturation(step, baseline);
    if (step.saturated !== null) return { ...report, stopReason: step.saturated };
  }
  return report;
}
