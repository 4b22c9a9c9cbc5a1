/**
 * report.json `verdicts`: how each prompt fared with the retry controller (first attempt, after
 * retries, failed after or without retries), what the retries answered and how their chains
 * ended (R14), how long they slept, whether they waited out the server's retry hints (B6), and
 * the host's coordination (B8: provider gate, retry budget) and fallback models (R4). Pure: built
 * from the run's prompt records, counters and retry ledger once the run is over.
 */
import type { LoadCounters, PromptRecord } from "../metrics/load-metrics.js";
import type { RetryLedgerTotals } from "../metrics/retry-ledger.js";
import { type Summary, summarize } from "../metrics/stats.js";

/** Prompts by verdict; cancelled prompts (cut by the run's end) have none. */
interface VerdictCounts {
  firstAttempt: number;
  afterRetries: number;
  failedAfterRetries: number;
  failedWithoutRetry: number;
}

/** report.json `verdicts`; docs/load.md defines every field. */
export interface RetryVerdicts {
  prompts: VerdictCounts;
  /** Each count / the prompts judged (succeeded + failed), 6 decimals; null when none was. */
  shares: { [K in keyof VerdictCounts]: number | null };
  /** Every model request of the run / the prompts that succeeded: the cost of one answer. */
  requestsPerSuccessfulPrompt: number | null;
  /** Retries (`auto_retry_start`) by the failure kind of the reply each retried; sums to `totals.retries`. */
  retriesByCause: Record<string, number>;
  /** Retry chains by `auto_retry_end.reason`. */
  chainsByEnd: Record<string, number>;
  /** Back-off slept, ms: the run's sum, and per prompt that retried (prompts cut by the run's end left out). */
  backoff: { sumMs: number; perPromptMs: Summary };
  /**
   * B6: retries sent after a failure that carried a retry hint (`retry-after-ms`, `retry-after`),
   * on the same model. `honoured`: the retried request started at least the hint after the failed
   * reply ended; `early`: sooner. `sleptMinusHintMs`: that start's distance from the hint.
   * `overCap`: chains that ended because the hint was above `retry.maxDelayMs` (not retried).
   */
  hints: { honoured: number; total: number; early: number; overCap: number; sleptMinusHintMs: Summary };
  /** B8 `provider_gate_wait` events, by what waited, and the sum of the waits announced (ms). */
  providerGate: { waits: number; beforeRetry: number; beforePrompt: number; waitMs: number };
  /** B8: chains the retry budget ended (`auto_retry_end` reason `budget_exhausted`). */
  budgetRefusals: number;
  /** R4: retries that ran on another key of their provider (`auto_retry_start.credentialRotated`). */
  credentialRotations: number;
  /** R4: retries that moved their session to a fallback model (`auto_retry_start.model`). */
  fallbackSwitches: number;
}

/**
 * Builds `verdicts` from the run's prompt records, counters and ledger. A prompt's verdict comes
 * from its outcome and its `retries` (all its chains'); cancelled prompts count in no verdict.
 */
export function buildVerdicts(
  prompts: readonly PromptRecord[],
  counters: LoadCounters,
  ledger: Readonly<RetryLedgerTotals>,
): RetryVerdicts {
  const counts: VerdictCounts = { firstAttempt: 0, afterRetries: 0, failedAfterRetries: 0, failedWithoutRetry: 0 };
  const backoffs: number[] = [];
  for (const prompt of prompts) {
    if (prompt.outcome === "cancelled") continue;
    const retried = prompt.retries > 0;
    if (prompt.outcome === "succeeded") counts[retried ? "afterRetries" : "firstAttempt"]++;
    else counts[retried ? "failedAfterRetries" : "failedWithoutRetry"]++;
    if (retried) backoffs.push(prompt.backoffMs ?? 0);
  }
  const judged = counts.firstAttempt + counts.afterRetries + counts.failedAfterRetries + counts.failedWithoutRetry;
  const share = (count: number) => (judged === 0 ? null : Math.round((count / judged) * 1e6) / 1e6);
  const succeeded = counts.firstAttempt + counts.afterRetries;
  const early = ledger.sleptMinusHintMs.filter((delta) => delta < 0).length;
  return {
    prompts: counts,
    shares: {
      firstAttempt: share(counts.firstAttempt),
      afterRetries: share(counts.afterRetries),
      failedAfterRetries: share(counts.failedAfterRetries),
      failedWithoutRetry: share(counts.failedWithoutRetry),
    },
    requestsPerSuccessfulPrompt: succeeded === 0 ? null : Math.round((counters.requests / succeeded) * 1000) / 1000,
    retriesByCause: { ...ledger.retriesByCause },
    chainsByEnd: { ...counters.retryChains },
    backoff: { sumMs: Math.round(ledger.backoffMs), perPromptMs: summarize(backoffs) },
    hints: {
      honoured: ledger.sleptMinusHintMs.length - early,
      total: ledger.sleptMinusHintMs.length,
      early,
      overCap: counters.retryChains.over_cap ?? 0,
      sleptMinusHintMs: summarize(ledger.sleptMinusHintMs),
    },
    providerGate: {
      waits: counters.gateWaits,
      beforeRetry: ledger.gateWaits.retry,
      beforePrompt: ledger.gateWaits.prompt,
      waitMs: Math.round(counters.gateWaitMs),
    },
    budgetRefusals: counters.retryChains.budget_exhausted ?? 0,
    credentialRotations: ledger.credentialRotations,
    fallbackSwitches: ledger.fallbackSwitches,
  };
}
