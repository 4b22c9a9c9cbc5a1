/**
 * A session's listeners. Delivers events synchronously, in order, to every listener; a listener
 * that throws is reported and never stops delivery to the others or breaks the session. The
 * report itself cannot throw: a failing `onListenerError` falls back to stderr.
 */
import type { SessionEvent } from "../../../shared/events.js";

/** A `subscribe()` callback. Called synchronously on the main thread, in event order. */
export type SessionListener = (event: SessionEvent) => void;

/** Ordered, synchronous delivery to a session's listeners; used by `AgentSession`. */
export class SessionListeners {
  /** Made by the first `subscribe` (P4: a session nobody listens to keeps no Set; docs/performance.md). */
  #listeners: Set<SessionListener> | undefined;
  readonly #onListenerError: (error: unknown, event: SessionEvent) => void;

  constructor(onListenerError: (error: unknown, event: SessionEvent) => void) {
    this.#onListenerError = onListenerError;
  }

  /** Adds a listener; returns the function that removes it. */
  subscribe(listener: SessionListener): () => void {
    this.#listeners ??= new Set();
    const listeners = this.#listeners;
    listeners.add(listener);
    return () => {
      listeners.delete(listener);
    };
  }

  emit(event: SessionEvent): void {
    const listeners = this.#listeners;
    if (listeners === undefined) return;
    for (const listener of listeners) {
      try {
        listener(event);
      } catch (error) {
        reportSafely(this.#onListenerError, error, event);
      }
    }
  }

  clear(): void {
    this.#listeners?.clear();
  }
}

/**
 * Calls the host's `onListenerError`; if it throws too, writes both errors to stderr instead.
 * Never throws: emit runs inside the link's message handler, where a throw would break the session
 * or crash the process.
 */
function reportSafely(
  report: (error: unknown, event: SessionEvent) => void,
  error: unknown,
  event: SessionEvent,
): void {
  try {
    report(error, event);
  } catch (reportError) {
    try {
      process.stderr.write(
        `lifeline: a session listener threw on ${event.type}: ${describe(error)}; onListenerError threw too: ${describe(reportError)}\n`,
      );
    } catch {
      // stderr is gone (closed pipe): nothing is left to report to.
    }
  }
}

function describe(value: unknown): string {
  try {
    return value instanceof Error ? (value.stack ?? value.message) : String(value);
  } catch {
    return "(an unprintable value)";
  }
}
