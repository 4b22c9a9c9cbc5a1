/**
 * Everything a load run measures about its sessions, behind one object that both drivers feed:
 * the closed model (run-load.ts, a fixed set of sessions) and the open model and sweep
 * (open-run.ts, a session per arrival). Events and prompt boundaries go to the request and prompt
 * records (load-metrics.ts, with the agentic figures) and to the retry ledger (retry-ledger.ts),
 * so every report field is measured the same way whatever the load shape. Main thread, no timers.
 */
import type { PromptResult, SessionEvent } from "../../../shared/events.js";
import type { ToolFigures } from "./agentic-metrics.js";
import { LoadMetrics, type LoadProgress, type PromptRecord } from "./load-metrics.js";
import { RetryLedger, type RetryLedgerTotals } from "./retry-ledger.js";
import type { Sketch } from "./sketch.js";
import type { Timeline } from "./timeline.js";

/** What the report needs from a run's meter once the run is over (buildReport's inputs). */
export interface MeterOutcome {
  counters: LoadMetrics["counters"];
  requests: LoadMetrics["requests"];
  prompts: LoadMetrics["prompts"];
  retryLedger: Readonly<RetryLedgerTotals>;
  chunkGaps: Sketch;
  tools: ToolFigures;
}

/** See the file comment. */
export class RunMeter {
  readonly metrics: LoadMetrics;
  readonly #ledger: RetryLedger;

  /**
   * @param now ms since the run began
   * @param epochAtStart the run's start on the epoch clock (`performance.timeOrigin + t0`), which
   *   places the worker's timing stamps on the run's clock
   */
  constructor(now: () => number, epochAtStart: number) {
    this.metrics = new LoadMetrics(now, epochAtStart);
    this.#ledger = new RetryLedger(now);
  }

  /** Feeds one event of session `session` (a `subscribe()` listener calls this). */
  onEvent(session: number, event: SessionEvent): void {
    this.metrics.onEvent(session, event);
    this.#ledger.onEvent(session, event);
  }

  /** A prompt of `session` is about to be sent. */
  promptStarted(session: number): void {
    this.metrics.promptStarted(session);
    this.#ledger.promptStarted(session);
  }

  /** A prompt settled or rejected; see `LoadMetrics.promptEnded`. Its record carries its back-off. */
  promptEnded(
    session: number,
    startMs: number,
    outcome: { result: PromptResult } | { error: unknown },
    runEnded: boolean,
  ): PromptRecord {
    const record = this.metrics.promptEnded(session, startMs, outcome, runEnded);
    record.backoffMs = this.#ledger.promptEnded(session);
    return record;
  }

  /** The run is ending: tool calls cut from now on are the run's doing, not failures. */
  runEnded(): void {
    this.metrics.agentic.runEnded();
  }

  /**
   * Live counters for `onProgress`, `elapsedMs` into the run: tokens/s over the timeline's last
   * interval (`intervalMs` long), or over the whole run when `final`.
   */
  progress(
    timeline: Timeline,
    elapsedMs: number,
    intervalMs: number,
    plan: Pick<LoadProgress, "plannedPrompts" | "durationMs">,
    final: boolean,
  ): LoadProgress {
    const counters = this.metrics.counters;
    const last = timeline.points[timeline.points.length - 1];
    return {
      elapsedMs: Math.round(elapsedMs),
      ...plan,
      promptsSent: counters.promptsSent,
      promptsDone: counters.promptsSucceeded + counters.promptsFailed + counters.promptsCancelled,
      promptsFailed: counters.promptsFailed,
      inFlightPrompts: counters.inFlightPrompts,
      inFlightRequests: counters.inFlightRequests,
      retries: counters.retries,
      requests: counters.requests,
      outputTokensPerSecond: final
        ? Math.round((counters.outputTokens * 1000) / Math.max(1, elapsedMs))
        : last === undefined
          ? 0
          : Math.round((last.outputTokens * 1000) / intervalMs),
      loopDelayMs: last?.loopDelayMaxMs ?? 0,
    };
  }

  /** The figures, once the run is over. */
  outcome(): MeterOutcome {
    return {
      counters: this.metrics.counters,
      requests: this.metrics.requests,
      prompts: this.metrics.prompts,
      retryLedger: this.#ledger.totals,
      chunkGaps: this.metrics.chunkGaps,
      tools: this.metrics.agentic.figures,
    };
  }
}
