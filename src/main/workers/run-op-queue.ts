/**
 * The run ops of one worker link that wait for their message (`WorkerLink.startRun`,
 * `WorkerLink.popFailed`): run starts, and R4's removals of a failed reply before a retry.
 *
 * The ops made before the loop's next check phase (a slice of the host's pacer admits many
 * prompts, each ending in a start some microtasks later; a batch of 503s decides thousands of
 * retries, each removing its failed reply) are queued and sent as one `runOps` message from a
 * `setImmediate`, so that N of them cost the main thread one comlink call, one message and one
 * answer per worker instead of N of each. A queue of {@link MAX_OPS_PER_MESSAGE} is sent at
 * once: the immediate runs outside the pacer's measured slice, so what it sends must stay small
 * whatever the slice's quota. Each op still settles on its own, from its own entry of the answer.
 *
 * Settling is paced too, when the link has the host's pacer: each op's caller goes on in
 * microtasks (a retry then sleeps, a prompt waits for its events), and the answers of a burst
 * arrive together (the port hands every queued message to one task), so without the pacer the
 * whole burst's continuations would run in that one task (docs/performance.md, "(m)").
 */
import { fromWireError, LifelineError } from "../../shared/errors.js";
import type { RunOp } from "../../shared/wire/protocol.js";
import type { BoundedCalls } from "./bounded-calls.js";
import type { PacedTurn, TurnPacer } from "./turn-pacer.js";

/**
 * The most ops one `runOps` message carries: enough to turn a burst of thousands of prompts into
 * tens of messages, few enough that sending one (its structured clone, on the main thread) stays
 * well under a millisecond.
 */
const MAX_OPS_PER_MESSAGE = 256;

/** How an op ended: the worker's answer, or why it has none. */
type Outcome = { ok: true; value: boolean | null } | { ok: false; error: unknown };

/** An op waiting for its message, then for its turn to settle, with its caller's promise. */
class QueuedOp implements PacedTurn {
  readonly op: RunOp;
  readonly #resolve: (value: boolean | null) => void;
  readonly #reject: (error: unknown) => void;
  #outcome: Outcome | undefined;

  constructor(op: RunOp, resolve: (value: boolean | null) => void, reject: (error: unknown) => void) {
    this.op = op;
    this.#resolve = resolve;
    this.#reject = reject;
  }

  /** Records how the op ended; it settles on {@link paced}. */
  ended(outcome: Outcome): void {
    this.#outcome = outcome;
  }

  paced(): void {
    const outcome = this.#outcome;
    if (outcome === undefined) return;
    if (outcome.ok) this.#resolve(outcome.value);
    else this.#reject(outcome.error);
  }
}

/** See the file comment. */
export class RunOpQueue {
  #queued: QueuedOp[] = [];
  /** The link's calls: each message of ops is one `runOps` call, bounded as its link's calls are. */
  readonly #calls: BoundedCalls;
  readonly #timeoutMs: number;
  readonly #onTimeout: (periods: number) => LifelineError | undefined;
  readonly #pacer: TurnPacer | undefined;

  /**
   * @param timeoutMs, onTimeout as `BoundedCalls.invoke` takes them (the link's `callTimeoutMs` and its hang judgement).
   * @param pacer the host's pacer, which spreads the settling of a burst's answers over slices.
   */
  constructor(
    calls: BoundedCalls,
    timeoutMs: number,
    onTimeout: (periods: number) => LifelineError | undefined,
    pacer?: TurnPacer,
  ) {
    this.#calls = calls;
    this.#timeoutMs = timeoutMs;
    this.#onTimeout = onTimeout;
    this.#pacer = pacer;
  }

  /**
   * Queues `op`. Resolves with its answer (null for a start, whether a failed reply was removed
   * for a `pop_failed`); rejects with its own refusal (ERR_SESSION_BUSY, …), or, with the others
   * of its message, as the message's call failed.
   */
  add(op: RunOp): Promise<boolean | null> {
    return new Promise<boolean | null>((resolve, reject) => {
      this.#queued.push(new QueuedOp(op, resolve, reject));
      if (this.#queued.length >= MAX_OPS_PER_MESSAGE) this.flush();
      else if (this.#queued.length === 1) setImmediate(() => this.flush());
    });
  }

  /** Sends the queued ops now (before any other call, so the port keeps the calls' order). */
  flush(): void {
    if (this.#queued.length === 0) return;
    const queued = this.#queued;
    this.#queued = [];
    this.#calls.invoke("runOps", [queued.map((entry) => entry.op)], this.#timeoutMs, this.#onTimeout).then(
      (results) => {
        queued.forEach((entry, i) => {
          const result = results[i];
          if (result === undefined) {
            const error = new LifelineError(
              "ERR_PROTOCOL",
              `The worker answered ${results.length} of ${queued.length} run ops.`,
            );
            this.#settle(entry, { ok: false, error });
          } else if (result.ok) this.#settle(entry, { ok: true, value: result.value });
          else this.#settle(entry, { ok: false, error: fromWireError(result.error) });
        });
      },
      (error: unknown) => {
        for (const entry of queued) this.#settle(entry, { ok: false, error });
      },
    );
  }

  /** Rejects every queued op with `error` (the link died); nothing is sent. */
  failAll(error: unknown): void {
    for (const entry of this.#queued.splice(0)) {
      entry.ended({ ok: false, error });
      entry.paced();
    }
  }

  /** Records `entry`'s outcome and settles it now, or on its turn of the pacer. */
  #settle(entry: QueuedOp, outcome: Outcome): void {
    entry.ended(outcome);
    if (this.#pacer === undefined) entry.paced();
    else this.#pacer.enqueue(entry);
  }
}
