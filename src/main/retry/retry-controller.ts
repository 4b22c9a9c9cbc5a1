/**
 * The auto-retry controller (SPEC R1–R9, R11, R12, R15, B3, B6). One per session, on the main
 * thread (X2). A pure unit: its clock, sleep and randomness are injected, and it does no I/O;
 * what it needs done to the transcript and the worker it asks of {@link RetryActions}.
 *
 * Lifecycle of a chain:
 *   agent_end(retryable) → {@link RetryController.onAgentEnd} decides (sync, so `agent_end` can
 *   carry `willRetry`) → {@link RetryController.execute}: usage-limit report, `auto_retry_start`,
 *   remove the failed message, sleep, `continueRun()` → the retried run's first successful
 *   assistant `message_end` ends the chain with success; another failure loops; exhaustion,
 *   cancellation or a non-retryable failure ends it with `success: false`.
 *
 * The delay of each retry is computed by retry-delay.ts, the R4 report of a usage or rate limit to
 * the auth storage (injected, like everything else here) made by key-limits.ts.
 */

import type { AutoRetryEndReason, AutoRetryStartEvent, RetryEvent } from "../../shared/events.js";
import {
  type ClassifiableMessage,
  classifyMessage,
  type FailureClass,
  isFailedStop,
  isRateLimit,
  retryHintsOf,
} from "../../shared/failures/classify.js";
import { requestFailureOf } from "../../shared/failures/request-failure.js";
import type { RetrySettings } from "../../shared/settings/settings.js";
import type { AuthStorage } from "../auth/auth-storage.js";
import { limitKind, reportLimit } from "./key-limits.js";
import { formatMs, retryDelay } from "./retry-delay.js";

/** `finalError` of a chain ended by `abortRetry()` or `abort()` (R8). */
const RETRY_CANCELLED = "Retry cancelled";

/** The assistant message fields the controller reads. */
export interface RetryMessage extends ClassifiableMessage {
  role: "assistant";
  provider: string;
}

/** What the controller asks the session to do. */
export interface RetryActions<M extends RetryMessage = RetryMessage> {
  /** R4: drop the failed assistant message from the end of the runtime transcript. */
  removeFailedMessage(message: M): Promise<void>;
  /** B3: put it back when the chain is cancelled before the retried run started. */
  restoreFailedMessage(message: M): Promise<void>;
  /** R4: post `continue` to the worker. */
  continueRun(): Promise<void>;
  /**
   * R4: every key of the failing provider is blocked: move the session to the next usable model
   * of `retry.fallbackModels`. Resolves with its `"provider/id"`, or undefined when none is usable.
   */
  switchToFallback?(): Promise<string | undefined>;
}

/**
 * B8: the host-wide coordination a session's chains obey, bound to the session's provider, key
 * and settings (`SessionCoordination`). Each method is a no-op when its setting is off.
 */
export interface RetryCoordination {
  /**
   * Takes one retry from the provider's budget; undefined when allowed, else why not (for
   * `finalError`). A budget kept elsewhere (a fleet's, in Redis) answers with a promise, which
   * must not reject: the chain's `agent_end` then says `willRetry: true`, and a refusal ends the
   * chain in `execute`, after the promised `auto_retry_start` (as a cancellation there would).
   */
  withdrawRetry(): string | undefined | Promise<string | undefined>;
  /** A 429/529 with a retry hint of `ms`: closes the provider's gate for every session of the host. */
  closeGate(ms: number): void;
  /** Resolves once the provider's gate is open (at once if it is); rejects when `signal` aborts. */
  waitAtGate(signal: AbortSignal): Promise<void>;
}

/** Statuses whose retry hint closes the provider gate (B8): rate limited, overloaded. */
const GATE_STATUSES = new Set([429, 529]);

/**
 * Dependencies of the controller; everything time- or I/O-related is injected. Its functions are
 * always called as methods of this object, so a class may implement them on its prototype.
 */
export interface RetryControllerOptions {
  sessionId: string;
  /** Read at every decision, so toggles apply to the next failure (R4, R12). */
  settings: () => RetrySettings;
  /** Sleeps `ms`, rejecting when `signal` aborts. */
  sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  /** Epoch ms, for HTTP-date retry hints. */
  now: () => number;
  /** Uniform in [0, 1), for jitter. */
  random: () => number;
  /** A further R1 overflow test besides the worker's mark (shared/failures/classify.ts); tests set one. */
  isOverflow?: ((message: ClassifiableMessage) => boolean) | undefined;
  emit: (event: RetryEvent) => void;
  authStorage?: AuthStorage | undefined;
  /** Base URL of the session's current model, passed to the auth storage. */
  baseUrl?: () => string | undefined;
  /** B8: the host's budget and gate; absent, chains are the session's own business (pi). */
  coordination?: RetryCoordination | undefined;
}

/** The decision for one `agent_end`. */
export type RetryDecision<M extends RetryMessage = RetryMessage> =
  | {
      kind: "none";
      failure: FailureClass | "disabled" | "exhausted" | "over_cap" | "budget_exhausted" | "cancelled" | "no_message";
    }
  | {
      kind: "retry";
      chainId: number;
      attempt: number;
      maxAttempts: number;
      delayMs: number;
      message: M;
      usageLimit: boolean;
      /** A burst rate limit (429): told to a storage that serves keys, so it can rotate. */
      rateLimit?: boolean;
      retryAfterMs?: number;
      /** B8: the budget's answer when it is not known yet (a fleet's); `execute` waits for it first. */
      budget?: Promise<string | undefined>;
    };

type Phase = "idle" | "scheduling" | "sleeping" | "in_flight";

/**
 * One session's retry state and policy. The session's `RunEvents` calls `onMessageEnd`/`onAgentEnd`
 * as events arrive and its `SessionRuns` calls `execute` at the run's end; hosts may also drive it
 * directly (it needs no worker).
 * Nothing here throws on cancellation; `execute` rejects only if an action rejects.
 */
export class RetryController<M extends RetryMessage = RetryMessage> {
  readonly #options: RetryControllerOptions;
  #attempt = 0;
  #chainId = 0;
  #chain: { promise: Promise<void>; resolve: () => void } | undefined;
  #sleepAbort: AbortController | undefined;
  #phase: Phase = "idle";
  /** The failed message removed for the pending retry, until the retried run starts. */
  #removed: { message: M; actions: RetryActions<M> } | undefined;
  /** abortRetry() ended the chain while a retried run was in flight: that run's end is final. */
  #suppressNext = false;
  /**
   * The `auto_retry_start` promised by an `agent_end {willRetry: true}` and not yet emitted
   * (between the decision and {@link execute}). A chain that ends in that window emits it first,
   * so `willRetry: true` is always followed by its start (never an end without a start).
   */
  #promisedStart: AutoRetryStartEvent | undefined;

  constructor(options: RetryControllerOptions) {
    this.#options = options;
  }

  /** R3: 0 when idle, else the 1-based attempt of the live chain. */
  get attempt(): number {
    return this.#attempt;
  }

  /** R12: true while a chain is live (sleeping, or a retried run in flight). */
  get isRetrying(): boolean {
    return this.#chain !== undefined;
  }

  /** R11: resolves when the live chain ends (at once if none). */
  waitForChain(): Promise<void> {
    return this.#chain?.promise ?? Promise.resolve();
  }

  /** R5: the first successful assistant message after retries began ends the chain. */
  onMessageEnd(message: M): void {
    if (this.#chain === undefined || this.#phase !== "in_flight") return;
    if (isFailedStop(message.stopReason)) return;
    this.#endChain(true, this.#attempt, "success");
  }

  /**
   * R1/R4: decides what follows a finished run. Synchronous; emits only chain-ending events.
   * @param message the run's last assistant message, or undefined when the run failed without one.
   */
  onAgentEnd(message: M | undefined): RetryDecision<M> {
    const suppressed = this.#suppressNext;
    this.#suppressNext = false;
    if (this.#phase === "in_flight") this.#phase = "idle";
    if (suppressed) return { kind: "none", failure: "cancelled" };
    if (message === undefined) {
      this.#failChain("Run failed without a reply", "non_retryable");
      return { kind: "none", failure: "no_message" };
    }
    const failure = classifyMessage(message, this.#options.isOverflow);
    if (failure === "success") {
      if (this.#chain !== undefined) this.#endChain(true, this.#attempt, "success");
      return { kind: "none", failure };
    }
    if (failure !== "retryable" && failure !== "usage_limit") {
      this.#failChain(message.errorMessage ?? "Request was aborted", "non_retryable");
      return { kind: "none", failure };
    }
    const errorMessage = message.errorMessage ?? "";
    const settings = this.#options.settings();
    const hints = retryHintsOf(message, this.#options.now());
    // B8: the provider said when to come back; every session of the host waits for it, even when
    // this one does not retry.
    const status = requestFailureOf(message)?.status;
    if (hints.retryAfterMs !== undefined && status !== undefined && GATE_STATUSES.has(status)) {
      this.#options.coordination?.closeGate(hints.retryAfterMs);
    }
    if (!settings.enabled) {
      this.#failChain(errorMessage, "cancelled");
      return { kind: "none", failure: "disabled" };
    }
    this.#attempt++;
    if (this.#chain === undefined) this.#startChain();
    if (this.#attempt > settings.maxRetries) {
      this.#endChain(false, this.#attempt - 1, "exhausted", errorMessage);
      return { kind: "none", failure: "exhausted" };
    }
    const delayMs = retryDelay(settings, this.#attempt, hints.retryAfterMs, this.#options);
    if (delayMs === undefined) {
      const cap = settings.maxDelayMs ?? 0;
      this.#endChain(
        false,
        this.#attempt - 1,
        "over_cap",
        `Server asked to retry after ${formatMs(hints.retryAfterMs ?? 0)}, above retry.maxDelayMs (${formatMs(cap)}): ${errorMessage}`,
      );
      return { kind: "none", failure: "over_cap" };
    }
    // B8: checked last, so that only a retry that would really be sent takes from the budget.
    const refused = this.#options.coordination?.withdrawRetry();
    if (typeof refused === "string") {
      this.#endChain(false, this.#attempt - 1, "budget_exhausted", `${refused}; not retrying: ${errorMessage}`);
      return { kind: "none", failure: "budget_exhausted" };
    }
    this.#phase = "scheduling";
    const decision: RetryDecision<M> = {
      kind: "retry",
      chainId: this.#chainId,
      attempt: this.#attempt,
      maxAttempts: settings.maxRetries,
      delayMs,
      message,
      usageLimit: failure === "usage_limit",
    };
    if (failure === "retryable" && isRateLimit(message)) decision.rateLimit = true;
    if (hints.retryAfterMs !== undefined) decision.retryAfterMs = hints.retryAfterMs;
    if (refused !== undefined) decision.budget = refused;
    this.#promisedStart = {
      type: "auto_retry_start",
      attempt: this.#attempt,
      maxAttempts: settings.maxRetries,
      delayMs,
      errorMessage,
    };
    return decision;
  }

  /**
   * R4 after the decision: usage-limit report, `auto_retry_start`, transcript surgery, the
   * cancellable sleep, then `continueRun()`. Returns when the retried run has been posted or the
   * chain was cancelled. Never rejects on cancellation.
   */
  async execute(decision: Extract<RetryDecision<M>, { kind: "retry" }>, actions: RetryActions<M>): Promise<void> {
    const live = () => this.#chainId === decision.chainId && this.#chain !== undefined;
    if (!live()) return;
    if (decision.budget !== undefined) {
      const refused = await decision.budget;
      if (!live()) return;
      if (refused !== undefined) {
        const failed = decision.message.errorMessage ?? "";
        this.#endChain(false, decision.attempt - 1, "budget_exhausted", `${refused}; not retrying: ${failed}`);
        return;
      }
    }
    let delayMs = decision.delayMs;
    let model: string | undefined;
    let rotated = false;
    const limit = limitKind(decision, this.#options.authStorage);
    if (limit !== undefined) {
      const outcome = await reportLimit(this.#options, decision, limit);
      if (!live()) return;
      if (outcome.switched) {
        delayMs = 0;
        rotated = true;
      } else {
        model = await actions.switchToFallback?.().catch(() => undefined);
        if (!live()) return;
        if (model !== undefined) delayMs = 0;
        else if (outcome.retryAfterMs !== undefined) {
          // No free key: wait for the first to free, even with respectRetryAfter off (R4).
          const cap = this.#options.settings().maxDelayMs;
          if (cap !== undefined && outcome.retryAfterMs > cap) {
            const frees = new Date(this.#options.now() + outcome.retryAfterMs).toISOString();
            this.#endChain(
              false,
              decision.attempt - 1,
              "over_cap",
              `Every key of provider "${decision.message.provider}" is blocked; the first frees at ${frees} (in ${formatMs(outcome.retryAfterMs)}), above retry.maxDelayMs (${formatMs(cap)}): ${decision.message.errorMessage ?? ""}`,
            );
            return;
          }
          delayMs = Math.max(delayMs, outcome.retryAfterMs);
        }
      }
    }
    this.#promisedStart = undefined;
    this.#options.emit({
      type: "auto_retry_start",
      attempt: decision.attempt,
      maxAttempts: decision.maxAttempts,
      delayMs,
      errorMessage: decision.message.errorMessage ?? "",
      ...(model === undefined ? {} : { model }),
      ...(rotated ? { credentialRotated: true } : {}),
    });
    if (!live()) return;
    this.#removed = { message: decision.message, actions };
    await actions.removeFailedMessage(decision.message);
    if (!live()) return;
    const abort = new AbortController();
    this.#sleepAbort = abort;
    this.#phase = "sleeping";
    try {
      await this.#options.sleep(delayMs, abort.signal);
      // B8: a gate closed by any session of the host holds this retry too (cancellable alike).
      if (live() && this.#options.coordination !== undefined) await this.#options.coordination.waitAtGate(abort.signal);
    } catch (error) {
      if (abort.signal.aborted) return;
      throw error;
    } finally {
      if (this.#sleepAbort === abort) this.#sleepAbort = undefined;
    }
    if (!live()) return;
    this.#phase = "in_flight";
    this.#removed = undefined;
    await actions.continueRun();
  }

  /**
   * R8/B3: ends the live chain now, whether it is sleeping or a retried run is in flight, with
   * `auto_retry_end {success: false, finalError: "Retry cancelled"}`. A run in flight goes on;
   * its outcome is final and is not retried. No-op when idle.
   */
  abortRetry(): void {
    if (this.#chain === undefined) return;
    if (this.#phase === "in_flight") this.#suppressNext = true;
    this.#sleepAbort?.abort();
    const removed = this.#removed;
    this.#endChain(false, this.#attempt, "cancelled", RETRY_CANCELLED);
    if (removed !== undefined) void removed.actions.restoreFailedMessage(removed.message).catch(() => {});
  }

  /**
   * Ends any live chain with `finalError` and clears all timers; used when the session is disposed
   * (`reason` "cancelled", the default) or cannot go on ("non_retryable": its worker is gone).
   */
  dispose(finalError: string, reason: AutoRetryEndReason = "cancelled"): void {
    if (this.#chain === undefined) return;
    this.#sleepAbort?.abort();
    this.#endChain(false, this.#attempt, reason, finalError);
  }

  #startChain(): void {
    let resolve: () => void = () => {};
    const promise = new Promise<void>((r) => {
      resolve = r;
    });
    this.#chainId++;
    this.#chain = { promise, resolve };
  }

  /** Ends a live chain with failure; a no-op when none is live. */
  #failChain(finalError: string, reason: AutoRetryEndReason): void {
    if (this.#chain !== undefined) this.#endChain(false, this.#attempt, reason, finalError);
  }

  #endChain(success: boolean, attempt: number, reason: AutoRetryEndReason, finalError?: string): void {
    const chain = this.#chain;
    const promised = this.#promisedStart;
    this.#chain = undefined;
    this.#attempt = 0;
    this.#phase = "idle";
    this.#removed = undefined;
    this.#sleepAbort = undefined;
    this.#promisedStart = undefined;
    // Ended between agent_end {willRetry: true} and execute(): keep the promise first (R8 order).
    if (promised !== undefined) this.#options.emit(promised);
    const event: RetryEvent = { type: "auto_retry_end", success, attempt, reason };
    if (finalError !== undefined) event.finalError = finalError;
    this.#options.emit(event);
    chain?.resolve();
  }
}
