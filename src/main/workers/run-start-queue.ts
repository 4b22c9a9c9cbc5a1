/**
 * The run starts of one worker link that wait for their message (`WorkerLink.startRun`).
 *
 * The starts made before the loop's next check phase (a slice of the host's pacer admits many
 * prompts, each ending in a start some microtasks later, at depths that differ from prompt to
 * prompt) are queued and sent as one `startRun` message from a `setImmediate`, so that N prompts
 * cost the main thread one comlink call and one message per worker instead of N. A queue of
 * {@link MAX_STARTS_PER_MESSAGE} is sent at once: the immediate runs outside the pacer's measured
 * slice, so what it sends must stay small whatever the slice's quota. Each start still settles on
 * its own, from its own entry of the answer.
 */
import { fromWireError, LifelineError } from "../../shared/errors.js";
import type { Result, RunStart } from "../../shared/protocol.js";

/**
 * The most run starts one `startRun` message carries: enough to turn a burst of thousands of
 * prompts into tens of messages, few enough that sending one (its structured clone, on the main
 * thread) stays well under a millisecond.
 */
const MAX_STARTS_PER_MESSAGE = 256;

/** A run start waiting for its message, with its caller's promise. */
interface QueuedStart {
  start: RunStart;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/** See the file comment. */
export class RunStartQueue {
  #queued: QueuedStart[] = [];
  /** Sends one message of starts; resolves with one result per start, in order. */
  readonly #send: (starts: RunStart[]) => Promise<Result<null>[]>;

  constructor(send: (starts: RunStart[]) => Promise<Result<null>[]>) {
    this.#send = send;
  }

  /**
   * Queues a start. Resolves when the worker started the run; rejects with its own refusal
   * (ERR_SESSION_BUSY, …), or, with the others of its message, as the message's call failed.
   */
  add(start: RunStart): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.#queued.push({ start, resolve, reject });
      if (this.#queued.length >= MAX_STARTS_PER_MESSAGE) this.flush();
      else if (this.#queued.length === 1) setImmediate(() => this.flush());
    });
  }

  /** Sends the queued starts now (before any other call, so the port keeps the calls' order). */
  flush(): void {
    if (this.#queued.length === 0) return;
    const queued = this.#queued;
    this.#queued = [];
    this.#send(queued.map((entry) => entry.start)).then(
      (results) => {
        queued.forEach((entry, i) => {
          const result = results[i];
          if (result === undefined)
            entry.reject(
              new LifelineError(
                "ERR_PROTOCOL",
                `The worker answered ${results.length} of ${queued.length} run starts.`,
              ),
            );
          else if (result.ok) entry.resolve();
          else entry.reject(fromWireError(result.error));
        });
      },
      (error: unknown) => {
        for (const entry of queued) entry.reject(error);
      },
    );
  }

  /** Rejects every queued start with `error` (the link died); nothing is sent. */
  failAll(error: unknown): void {
    for (const entry of this.#queued.splice(0)) entry.reject(error);
  }
}
