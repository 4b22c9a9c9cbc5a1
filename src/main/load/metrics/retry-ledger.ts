/**
 * The retry side of a load run, read from each session's events in their order (R14, B8): what
 * failure each retry answered, how long its back-off slept, whether it waited out the server's
 * retry hint, provider-gate waits, key rotations and fallback-model switches. Main thread; the
 * clock is injected (the run feeds it every event, next to LoadMetrics, and the prompts' boundaries).
 *
 * Per session the events of one retry come as: the failed reply's `message_end`, `agent_end
 * {willRetry}`, `auto_retry_start {delayMs}` (R4), the sleep, maybe a `provider_gate_wait
 * {before: "retry"}` (B8), then the retried request's `turn_start`; or `auto_retry_end` when the
 * chain ends first (cancelled by the run's end).
 */

import type { SessionEvent } from "../../../shared/events.js";
import { isFailedStop, retryHintsOf } from "../../../shared/failures/classify.js";
import { failureKind } from "./load-metrics.js";

/** What the ledger counted over a run; retry-verdicts.ts turns it into report.json `verdicts`. */
export interface RetryLedgerTotals {
  /** `auto_retry_start` events by the failure kind of the reply each one retries (load-metrics' kinds). */
  retriesByCause: Record<string, number>;
  /** All back-off slept, in ms: each retry's `delayMs`, or less when the run's end cut it short. */
  backoffMs: number;
  /**
   * Per retry sent after a failure that carried a retry hint (B6), on the same model: the time from
   * the failed reply's end to the retried request's start, minus the hint, in ms.
   */
  sleptMinusHintMs: number[];
  /** `provider_gate_wait` events by what waited. */
  gateWaits: { retry: number; prompt: number };
  /** `auto_retry_start` events that moved the session to a fallback model (R4; they carry `model`). */
  fallbackSwitches: number;
  /** `auto_retry_start` events whose retry runs on another key of the provider (R4; `credentialRotated`). */
  credentialRotations: number;
}

interface SessionLedger {
  /** The last failed reply: its kind, its retry hint (if any) and when it ended. */
  failure: { kind: string; hintMs: number | undefined; endMs: number } | undefined;
  /** The live back-off sleep: when `auto_retry_start` came and the delay it announced. */
  sleep: { startMs: number; delayMs: number } | undefined;
  /** A hinted retry waiting for its request to start. */
  hinted: { hintMs: number; failedEndMs: number } | undefined;
  /** Back-off of the session's current prompt so far. */
  promptBackoffMs: number;
}

/** The totals of a ledger fed no events (also a report built from records alone). */
export function emptyLedgerTotals(): RetryLedgerTotals {
  return {
    retriesByCause: {},
    backoffMs: 0,
    sleptMinusHintMs: [],
    gateWaits: { retry: 0, prompt: 0 },
    fallbackSwitches: 0,
    credentialRotations: 0,
  };
}

/** Counts one run's retries; see the file comment. Never throws. */
export class RetryLedger {
  readonly #now: () => number;
  readonly #sessions = new Map<number, SessionLedger>();
  readonly #totals = emptyLedgerTotals();

  /** @param now ms since the run began (the same clock as the run's records) */
  constructor(now: () => number) {
    this.#now = now;
  }

  /** The totals so far (live; copy before keeping them past the run). */
  get totals(): Readonly<RetryLedgerTotals> {
    return this.#totals;
  }

  /** Feeds one event of session `session`, in the session's order. */
  onEvent(session: number, event: SessionEvent): void {
    const state = this.#state(session);
    switch (event.type) {
      case "message_end":
        if (event.message.role === "assistant" && isFailedStop(event.message.stopReason)) {
          const message = event.message;
          state.failure = {
            kind: failureKind(message),
            // retryHintsOf wants epoch ms only for HTTP-date hints; the retry controller read it alike.
            hintMs: retryHintsOf(message, Date.now()).retryAfterMs,
            endMs: this.#now(),
          };
        }
        break;
      case "auto_retry_start": {
        this.#endSleep(state);
        const cause = state.failure?.kind ?? "unknown";
        this.#totals.retriesByCause[cause] = (this.#totals.retriesByCause[cause] ?? 0) + 1;
        state.sleep = { startMs: this.#now(), delayMs: event.delayMs };
        if (event.model !== undefined) this.#totals.fallbackSwitches++;
        if (event.credentialRotated === true) this.#totals.credentialRotations++;
        // A retry on a fallback model, or on another key, is not bound by the hint the failed
        // key's reply carried: the limit it names is that key's.
        const hintMs = state.failure?.hintMs;
        const elsewhere = event.model !== undefined || event.credentialRotated === true;
        state.hinted =
          hintMs === undefined || elsewhere || state.failure === undefined
            ? undefined
            : { hintMs, failedEndMs: state.failure.endMs };
        break;
      }
      case "provider_gate_wait":
        if (event.before === "retry") this.#endSleep(state);
        this.#totals.gateWaits[event.before]++;
        break;
      case "turn_start":
        this.#endSleep(state);
        if (state.hinted !== undefined) {
          this.#totals.sleptMinusHintMs.push(this.#now() - state.hinted.failedEndMs - state.hinted.hintMs);
          state.hinted = undefined;
        }
        break;
      case "auto_retry_end":
        this.#endSleep(state);
        state.hinted = undefined;
        break;
      default:
        break;
    }
  }

  /** A prompt of `session` starts: its back-off starts from 0. */
  promptStarted(session: number): void {
    const state = this.#state(session);
    state.promptBackoffMs = 0;
    state.failure = undefined;
  }

  /** A prompt of `session` settled; returns the ms its retries slept in back-off. */
  promptEnded(session: number): number {
    const state = this.#state(session);
    this.#endSleep(state);
    state.hinted = undefined;
    return Math.round(state.promptBackoffMs * 1000) / 1000;
  }

  /** Closes a live sleep: it lasted its delay, or less when something ended it early. */
  #endSleep(state: SessionLedger): void {
    const sleep = state.sleep;
    if (sleep === undefined) return;
    state.sleep = undefined;
    const slept = Math.max(0, Math.min(sleep.delayMs, this.#now() - sleep.startMs));
    state.promptBackoffMs += slept;
    this.#totals.backoffMs += slept;
  }

  #state(session: number): SessionLedger {
    let state = this.#sessions.get(session);
    if (state === undefined) {
      state = { failure: undefined, sleep: undefined, hinted: undefined, promptBackoffMs: 0 };
      this.#sessions.set(session, state);
    }
    return state;
  }
}
