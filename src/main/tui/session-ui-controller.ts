/**
 * Turns one session's events and the user's keys into what the terminal UI shows: the loader
 * (retry countdown or working indicator), the status word, the error and abort lines, and which
 * handler the Esc key calls (SPEC R10). It draws nothing and owns no terminal, so a test drives it
 * with a list of SessionEvents and a fake clock.
 *
 * R10's Esc swap follows pi 0.73.1: `auto_retry_start` saves the handler bound to Esc and binds
 * `abortRetry()`; the saved handler comes back when the retried attempt starts (`agent_start`) or
 * when the chain ends (`auto_retry_end`), whichever is first. Restoring at `agent_start` matters
 * here: `abortRetry()` leaves an attempt in flight running (its result becomes final), so once the
 * retried attempt streams, Esc must call `abort()` again to stop it, and the countdown must not
 * stay on screen over a streaming answer.
 */

import type { SessionEvent } from "../../shared/events.js";
import { isFailedStop } from "../../shared/failures/classify.js";
import { errorText } from "../../shared/failures/error-text.js";
import { compactionNotice } from "../compaction/compaction-notice.js";
import { workerFate } from "../supervision/interrupted-run.js";
import { abortedText, msUntilNextSecond, retryFailedText, retryLoaderText } from "./retry-loader.js";

/** The slot the Esc key calls. pi-tui's `Input` has this shape, so the TUI passes its input line. */
export interface EscapeTarget {
  onEscape?: () => void;
}

/** What the controller asks of the session. `AgentSession` fits as is. */
export interface SessionUiActions {
  /** `AgentSession.abort()`: ends any chain and stops the run. A rejection becomes an error line. */
  abort(): Promise<void> | void;
  /** `AgentSession.abortRetry()`: ends a live chain with "Retry cancelled". */
  abortRetry(): void;
}

/** Time, injected so tests count the countdown down without waiting. */
export interface UiClock {
  now(): number;
  /** Calls `callback` once after `ms`; returns the function that cancels the call. */
  schedule(callback: () => void, ms: number): () => void;
}

/** A line for the transcript. */
export interface UiNotice {
  level: "error" | "info";
  text: string;
}

/** What the loader area shows: R10's countdown, or the indicator of a prompt in progress. */
export interface LoaderView {
  kind: "retry" | "working";
  text: string;
}

/** What a Ctrl+C press did; the caller acts on `exit` (it owns the terminal). */
export type CtrlCOutcome = "abort" | "confirm_exit" | "exit";

/** Options of {@link SessionUiController}. */
export interface SessionUiControllerOptions {
  actions: SessionUiActions;
  /** The Esc slot; the controller installs its default handler (abort while busy) at construction. */
  escape: EscapeTarget;
  /** Called after every change of `loader`, `status` or the Esc binding, countdown ticks included. */
  onChange?: () => void;
  /** Receives the transcript lines the events call for, in event order. */
  onNotice?: (notice: UiNotice) => void;
  /** @default the system clock and setTimeout */
  clock?: UiClock;
  /** How soon a second Ctrl+C must follow the first on an idle session to exit. @default 1000 */
  exitWindowMs?: number;
}

/** The working indicator; pi's words with the Unicode ellipsis R10 uses for the retry loader. */
export const WORKING_TEXT = "Working… (esc to interrupt)";

const systemClock: UiClock = {
  now: () => Date.now(),
  schedule: (callback, ms) => {
    const timer = setTimeout(callback, ms);
    return () => clearTimeout(timer);
  },
};

interface PromptState {
  /** The highest `auto_retry_start.attempt` of this prompt. */
  retries: number;
  /** An error or abort line was printed for this prompt, so `agent_settled` need not print one. */
  endShown: boolean;
  /** The user pressed Esc or Ctrl+C for this prompt: it ends as "aborted". */
  stopped: boolean;
}

const freshPrompt = (): PromptState => ({ retries: 0, endShown: false, stopped: false });

/**
 * UI state of one interactive session. Feed it every event with {@link handle}, tell it about
 * prompts with {@link promptStarted}/{@link promptFailed}, and route Ctrl+C to {@link pressCtrlC};
 * Esc needs no routing, it calls whatever the controller bound on the `escape` target. Never
 * throws. Call {@link dispose} before dropping it: it cancels the countdown timer.
 */
export class SessionUiController {
  readonly #actions: SessionUiActions;
  readonly #escape: EscapeTarget;
  readonly #clock: UiClock;
  readonly #onChange: () => void;
  readonly #onNotice: (notice: UiNotice) => void;
  readonly #exitWindowMs: number;
  readonly #retryEscape = (): void => {
    this.#prompt.stopped = true;
    this.#actions.abortRetry();
  };
  #busy = false;
  #countdown: { attempt: number; maxAttempts: number; deadline: number } | undefined;
  #cancelTick: (() => void) | undefined;
  /** Present exactly while Esc is bound to abortRetry: the handler to put back. */
  #savedEscape: { handler: (() => void) | undefined } | undefined;
  #outcome: "idle" | "aborted" | "failed" = "idle";
  #prompt: PromptState = freshPrompt();
  #exitArmedAt: number | undefined;
  #cancelExitHint: (() => void) | undefined;

  constructor(options: SessionUiControllerOptions) {
    this.#actions = options.actions;
    this.#escape = options.escape;
    this.#clock = options.clock ?? systemClock;
    this.#onChange = options.onChange ?? (() => {});
    this.#onNotice = options.onNotice ?? (() => {});
    this.#exitWindowMs = options.exitWindowMs ?? 1000;
    this.#escape.onEscape = () => {
      if (this.#busy) this.#abort();
    };
  }

  /** True from {@link promptStarted} until the prompt settles or fails. */
  get busy(): boolean {
    return this.#busy;
  }

  /** The loader to show, or undefined when nothing is in progress. */
  get loader(): LoaderView | undefined {
    const countdown = this.#countdown;
    if (countdown !== undefined) {
      const remaining = countdown.deadline - this.#clock.now();
      return { kind: "retry", text: retryLoaderText(countdown.attempt, countdown.maxAttempts, remaining) };
    }
    return this.#busy ? { kind: "working", text: WORKING_TEXT } : undefined;
  }

  /** The session state for the status line: idle, streaming, retrying a/m, aborted or failed. */
  get status(): string {
    let status: string;
    if (this.#countdown !== undefined) status = `retrying ${this.#countdown.attempt}/${this.#countdown.maxAttempts}`;
    else if (this.#busy) status = "streaming";
    else status = this.#outcome;
    return this.#exitArmedAt === undefined ? status : `${status} · press Ctrl+C again to exit`;
  }

  /** The user sent a prompt: the session is busy until its `agent_settled`. */
  promptStarted(): void {
    this.#busy = true;
    this.#outcome = "idle";
    this.#prompt = freshPrompt();
    this.#disarmExit();
    this.#onChange();
  }

  /** `prompt()` rejected (the runtime could not serve it): no `agent_settled` will come. */
  promptFailed(message: string): void {
    this.#onNotice({ level: "error", text: `Error: ${message}` });
    this.#settle("failed");
  }

  /** Applies one session event. Events of no interest to the UI are ignored. */
  handle(event: SessionEvent): void {
    switch (event.type) {
      case "agent_start":
        // The retried attempt is on its way: its Esc is abort() again (see the module comment).
        this.#endCountdown();
        break;
      case "message_end": {
        const message = event.message;
        if (message.role !== "assistant") return;
        if (message.stopReason === "error") {
          this.#prompt.endShown = true;
          this.#onNotice({ level: "error", text: `Error: ${message.errorMessage ?? "Unknown error"}` });
        } else if (message.stopReason === "aborted") {
          this.#prompt.stopped = true;
          this.#prompt.endShown = true;
          this.#onNotice({ level: "error", text: abortedText(this.#prompt.retries) });
        }
        return;
      }
      case "auto_retry_start":
        this.#prompt.retries = Math.max(this.#prompt.retries, event.attempt);
        this.#countdown = {
          attempt: event.attempt,
          maxAttempts: event.maxAttempts,
          deadline: this.#clock.now() + event.delayMs,
        };
        // Save only an unswapped handler: a second start without a restore must not save abortRetry.
        if (this.#savedEscape === undefined) {
          this.#savedEscape = { handler: this.#escape.onEscape };
          this.#escape.onEscape = this.#retryEscape;
        }
        this.#scheduleTick();
        break;
      case "auto_retry_end":
        this.#endCountdown();
        if (!event.success) {
          this.#prompt.endShown = true;
          this.#onNotice({ level: "error", text: retryFailedText(event.attempt, event.finalError) });
        }
        break;
      case "agent_settled": {
        const { stopReason } = event;
        if (!this.#prompt.endShown && stopReason === "aborted") {
          this.#onNotice({ level: "error", text: abortedText(event.retries) });
        } else if (!this.#prompt.endShown && stopReason === "error" && !this.#prompt.stopped) {
          // A run that failed outside the agent loop has no assistant message_end to report it.
          this.#onNotice({ level: "error", text: `Error: ${event.errorMessage ?? "Unknown error"}` });
        }
        const stopped = this.#prompt.stopped || stopReason === "aborted";
        this.#settle(stopped ? "aborted" : isFailedStop(stopReason) ? "failed" : "idle");
        return;
      }
      case "compaction_start":
        this.#onNotice({ level: "info", text: compactionNotice(event) });
        return;
      case "compaction_end":
        this.#onNotice({
          level: event.result === null && !event.aborted && event.errorMessage !== undefined ? "error" : "info",
          text: compactionNotice(event),
        });
        return;
      case "worker_exited":
        this.#onNotice({ level: "error", text: `Worker exited: ${event.error.message}` });
        return;
      case "session_restored":
        this.#onNotice({
          level: "info",
          text: `The session's worker ${workerFate(event.reason)}; restored on a fresh worker (restart ${event.restarts}).`,
        });
        return;
      default:
        return;
    }
    this.#onChange();
  }

  /**
   * Ctrl+C: aborts a busy session; on an idle one the first press arms exit and a second within
   * `exitWindowMs` returns "exit". An abort does not arm exit, so one Ctrl+C too many while an
   * answer is being stopped does not also end the program.
   */
  pressCtrlC(): CtrlCOutcome {
    if (this.#busy) {
      this.#abort();
      return "abort";
    }
    const now = this.#clock.now();
    if (this.#exitArmedAt !== undefined && now - this.#exitArmedAt <= this.#exitWindowMs) {
      this.#disarmExit();
      return "exit";
    }
    this.#disarmExit();
    this.#exitArmedAt = now;
    this.#cancelExitHint = this.#clock.schedule(() => {
      this.#cancelExitHint = undefined;
      this.#disarmExit();
      this.#onChange();
    }, this.#exitWindowMs);
    this.#onChange();
    return "confirm_exit";
  }

  /** Cancels the timers and gives Esc back its saved handler. Idempotent. */
  dispose(): void {
    this.#endCountdown();
    this.#disarmExit();
  }

  #abort(): void {
    this.#prompt.stopped = true;
    try {
      void Promise.resolve(this.#actions.abort()).catch((error: unknown) => this.#abortFailed(error));
    } catch (error) {
      this.#abortFailed(error);
    }
  }

  #abortFailed(error: unknown): void {
    this.#onNotice({ level: "error", text: `Abort failed: ${errorText(error)}` });
  }

  #settle(outcome: "idle" | "aborted" | "failed"): void {
    this.#busy = false;
    this.#endCountdown();
    this.#outcome = outcome;
    this.#onChange();
  }

  /** Removes the countdown and restores the Esc handler saved at `auto_retry_start`, if any. */
  #endCountdown(): void {
    this.#cancelTick?.();
    this.#cancelTick = undefined;
    this.#countdown = undefined;
    const saved = this.#savedEscape;
    if (saved === undefined) return;
    this.#savedEscape = undefined;
    if (saved.handler === undefined) delete this.#escape.onEscape;
    else this.#escape.onEscape = saved.handler;
  }

  /** Wakes when the shown second changes, so the text counts down without polling. */
  #scheduleTick(): void {
    this.#cancelTick?.();
    this.#cancelTick = undefined;
    const countdown = this.#countdown;
    if (countdown === undefined) return;
    const wait = msUntilNextSecond(countdown.deadline - this.#clock.now());
    if (wait === undefined) return;
    this.#cancelTick = this.#clock.schedule(() => {
      this.#cancelTick = undefined;
      this.#onChange();
      this.#scheduleTick();
    }, wait);
  }

  #disarmExit(): void {
    this.#cancelExitHint?.();
    this.#cancelExitHint = undefined;
    this.#exitArmedAt = undefined;
  }
}
