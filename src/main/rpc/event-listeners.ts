/**
 * The `onEvent` listeners of one client (or of one session of a host client): every event to every listener, in subscription order;
 * a listener that throws is reported and never stops delivery.
 */
import type { RpcEvent } from "./rpc-protocol.js";

/** The public event subscribers of one client; `E` is the event type. */
export class EventListeners<E extends { type: string } = RpcEvent> {
  readonly #listeners = new Set<(event: E) => void>();
  readonly #onListenerError: (error: unknown, event: E) => void;

  /** @param onListenerError receives what a listener throws; undefined writes it to process.stderr */
  constructor(onListenerError: ((error: unknown, event: E) => void) | undefined) {
    this.#onListenerError = onListenerError ?? reportListenerError;
  }

  /** Subscribes `listener` from now on. Returns a function that unsubscribes it. */
  add(listener: (event: E) => void): () => void {
    // Wrapped so the same function can be subscribed twice and unsubscribed once each.
    const entry = (event: E) => listener(event);
    this.#listeners.add(entry);
    return () => {
      this.#listeners.delete(entry);
    };
  }

  /** Calls every listener with `event`. Never throws. */
  dispatch(event: E): void {
    for (const listener of [...this.#listeners]) {
      try {
        listener(event);
      } catch (error) {
        try {
          this.#onListenerError(error, event);
        } catch {
          // The error reporter failed too; the reader must keep going regardless.
        }
      }
    }
  }
}

function reportListenerError(error: unknown, event: { type: string }): void {
  const text = error instanceof Error ? (error.stack ?? error.message) : String(error);
  process.stderr.write(`lifeline RPC client: an onEvent listener threw on ${event.type}: ${text}\n`);
}
