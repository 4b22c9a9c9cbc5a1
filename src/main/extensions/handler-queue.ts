/**
 * One extension's serial event queue for one session: events run through the extension's
 * handlers one at a time, in the order the session emitted them, each handler bounded by a
 * timeout. Every (extension, session) pair has its own queue, so a slow or hung handler delays
 * only the later events of that extension in that session: never the session itself (which only
 * enqueues), never its other extensions, never other sessions.
 *
 * What a timeout cannot do: stop a handler. A handler whose promise never settles is abandoned
 * (reported, then the queue moves on); a handler stuck in synchronous code blocks the whole main
 * thread, and nothing in JavaScript can interrupt it.
 */
import { errorText } from "../../shared/failures/error-text.js";

/** A handler call failed: it threw, rejected, or did not settle in time. */
export interface HandlerFailure {
  eventType: string;
  error: string;
}

/**
 * Events a queue holds before it starts dropping new ones: a handler that hangs on every event
 * would otherwise grow the queue by every streamed token for as long as the session runs.
 */
export const MAX_QUEUED_EVENTS = 10_000;

/** Options of {@link HandlerQueue}. */
export interface HandlerQueueOptions<E extends { type: string }> {
  /** The handlers of one event type, in registration order; empty for types nobody handles. */
  handlersFor: (type: string) => readonly ((event: E) => unknown)[];
  /** Longest wait for one handler's promise, in ms. Read per call (settings may change). */
  timeoutMs: () => number;
  /** Told about each failure; must not throw. */
  report: (failure: HandlerFailure) => void;
}

/** See the module comment. Used by `SessionExtensions`, one per extension. */
export class HandlerQueue<E extends { type: string }> {
  readonly #options: HandlerQueueOptions<E>;
  readonly #items: E[] = [];
  #head = 0;
  #running = false;
  #dropping = false;
  #idleWaiters: (() => void)[] = [];

  constructor(options: HandlerQueueOptions<E>) {
    this.#options = options;
  }

  /** Queues `event` if this extension handles its type; returns at once. */
  push(event: E): void {
    if (this.#options.handlersFor(event.type).length === 0) return;
    if (this.#items.length - this.#head >= MAX_QUEUED_EVENTS) {
      if (!this.#dropping) {
        this.#dropping = true;
        this.#options.report({
          eventType: event.type,
          error: `the extension's handlers fell ${MAX_QUEUED_EVENTS} events behind; events are dropped until they catch up`,
        });
      }
      return;
    }
    this.#items.push(event);
    if (!this.#running) void this.#pump();
  }

  /** Resolves once every queued event has been handled (or its handler abandoned). */
  idle(): Promise<void> {
    if (!this.#running) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  async #pump(): Promise<void> {
    this.#running = true;
    // Handlers start on a later microtask, never inside the session's emit.
    await Promise.resolve();
    while (this.#head < this.#items.length) {
      const event = this.#items[this.#head] as E;
      this.#head++;
      // Compact now and then instead of shift(), which is linear per call on a long queue.
      if (this.#head >= 1024 && this.#head * 2 >= this.#items.length) {
        this.#items.splice(0, this.#head);
        this.#head = 0;
      }
      for (const handler of this.#options.handlersFor(event.type)) await this.#call(handler, event);
    }
    this.#items.length = 0;
    this.#head = 0;
    this.#dropping = false;
    this.#running = false;
    for (const resolve of this.#idleWaiters.splice(0)) resolve();
  }

  /** Runs one handler; never rejects. */
  async #call(handler: (event: E) => unknown, event: E): Promise<void> {
    let result: unknown;
    try {
      result = handler(event);
    } catch (error) {
      this.#fail(event, error);
      return;
    }
    if (!isThenable(result)) return;
    const timeoutMs = this.#options.timeoutMs();
    await new Promise<void>((resolve) => {
      let done = false;
      // Unref'd: an abandoned handler must not keep the process alive.
      const timer = setTimeout(() => {
        done = true;
        this.#options.report({
          eventType: event.type,
          error: `handler did not settle within ${timeoutMs} ms (extensionHandlerTimeoutMs); it was abandoned and later events go on`,
        });
        resolve();
      }, timeoutMs);
      timer.unref();
      // An abandoned handler that settles later is not reported again.
      const settle = (error?: { value: unknown }) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        if (error !== undefined) this.#fail(event, error.value);
        resolve();
      };
      result.then(
        () => settle(),
        (error: unknown) => settle({ value: error }),
      );
    });
  }

  #fail(event: E, error: unknown): void {
    this.#options.report({ eventType: event.type, error: describe(error) });
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null &&
    (typeof value === "object" || typeof value === "function") &&
    typeof (value as { then?: unknown }).then === "function"
  );
}

function describe(error: unknown): string {
  try {
    return errorText(error);
  } catch {
    return "(an unprintable value)";
  }
}
