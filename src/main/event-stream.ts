/**
 * A session's listeners. Delivers events synchronously, in order, to every listener; a listener
 * that throws is reported and never stops delivery to the others or breaks the session.
 */
import type { SessionEvent } from "../shared/events.js";

/** A `subscribe()` callback. Called synchronously on the main thread, in event order. */
export type SessionListener = (event: SessionEvent) => void;

/** Ordered, synchronous delivery to a session's listeners; used by `AgentSession`. */
export class EventStream {
  readonly #listeners = new Set<SessionListener>();
  readonly #onListenerError: (error: unknown, event: SessionEvent) => void;

  constructor(onListenerError: (error: unknown, event: SessionEvent) => void) {
    this.#onListenerError = onListenerError;
  }

  /** Adds a listener; returns the function that removes it. */
  subscribe(listener: SessionListener): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  emit(event: SessionEvent): void {
    for (const listener of this.#listeners) {
      try {
        listener(event);
      } catch (error) {
        this.#onListenerError(error, event);
      }
    }
  }

  clear(): void {
    this.#listeners.clear();
  }
}
