/**
 * The main thread's inbox of one worker port: what the worker sent, dispatched a bounded slice of
 * the main thread at a time.
 *
 * Node hands every message queued on a port to one task (`MessagePort::OnMessage` takes at least
 * 1,000 at a time, deserialising each), so when a worker got ahead of the main thread (a main
 * thread descheduled on a loaded machine, a long GC, a burst of answers) its whole backlog was
 * dispatched in one stall of the host's loop: at 10,000 sessions, tasks of 100–650 batches
 * (docs/performance.md, "(m)"). The inbox is the port's only `message` listener. It dispatches
 * each message as it comes while the current task has spent less than {@link INBOX_BUDGET_MS} on
 * this port; past that it stops the port (removing the listener does: what is still queued stays
 * queued, not yet deserialised) and pulls the rest with `receiveMessageOnPort`, one message per
 * macrotask (`setImmediate`), with timers and I/O in between, until the port is empty; then it
 * listens again.
 *
 * Every consumer of the port (comlink's replies, the link's own messages) is fed from the inbox,
 * in the port's order. Whether the port keeps the process alive is set here too
 * ({@link setReferenced}), since listening again would ref it.
 */
import { type MessagePort, receiveMessageOnPort, type TransferListItem } from "node:worker_threads";

/** How long one task may spend dispatching one port's messages before the rest wait (P1: no stall over 20 ms). */
const INBOX_BUDGET_MS = 5;

type Handler = (data: unknown) => void;

/** See the file comment. Main thread only. */
export class PortInbox {
  readonly #port: MessagePort;
  readonly #budgetMs: number;
  #handlers: Handler[] = [];
  /** When the current task's dispatching began; undefined outside one. */
  #taskStart: number | undefined;
  /** Listening: the port delivers; otherwise the inbox pulls (a backlog), or it was closed. */
  #listening = false;
  #closed = false;
  #dispatching = false;
  #referenced = true;
  readonly #onMessage = (data: unknown) => this.#received(data);
  readonly #endTask = () => {
    this.#taskStart = undefined;
  };
  readonly #drainNext = () => this.#drain();

  constructor(port: MessagePort, budgetMs = INBOX_BUDGET_MS) {
    this.#port = port;
    this.#budgetMs = budgetMs;
    this.#listen();
  }

  /** Adds a consumer (`type` is always "message"): every message goes to every consumer, in the order added. */
  on(_type: "message", handler: Handler): void {
    this.#handlers = [...this.#handlers, handler];
  }

  off(_type: "message", handler: Handler): void {
    this.#handlers = this.#handlers.filter((h) => h !== handler);
  }

  /** Posts to the worker (the inbox stands for the port where comlink wants one). */
  postMessage(message: unknown, transfer?: readonly TransferListItem[]): void {
    this.#port.postMessage(message, transfer);
  }

  /** Whether the port keeps the process alive (kept across the inbox's own pauses). */
  setReferenced(referenced: boolean): void {
    this.#referenced = referenced;
    if (referenced) this.#port.ref();
    else this.#port.unref();
  }

  /**
   * Dispatches, now, everything the worker sent that is still queued on the port: the link calls
   * it when its worker is gone, so that what the worker said before it died (a tool call's start,
   * SPEC X7) is heard before the death is acted on. Not while a message is being dispatched (the
   * death came from a handler): the rest is then dropped with the port, as the port would.
   */
  drainNow(): void {
    if (this.#closed || this.#dispatching) return;
    for (let received = receiveMessageOnPort(this.#port); received !== undefined; ) {
      this.#dispatch(received.message);
      if (this.#closed) return;
      received = receiveMessageOnPort(this.#port);
    }
  }

  /** Messages still queued are dropped; nothing is dispatched any more. */
  close(): void {
    this.#closed = true;
    this.#handlers = [];
    this.#port.off("message", this.#onMessage);
    this.#listening = false;
  }

  #listen(): void {
    this.#port.on("message", this.#onMessage);
    this.#listening = true;
    if (!this.#referenced) this.#port.unref();
  }

  #received(data: unknown): void {
    const now = performance.now();
    if (this.#taskStart === undefined) {
      this.#taskStart = now;
      setImmediate(this.#endTask);
    }
    this.#dispatch(data);
    if (this.#listening && performance.now() - this.#taskStart >= this.#budgetMs) {
      // The rest of what is queued waits, serialised, for the next check phases.
      this.#port.off("message", this.#onMessage);
      this.#listening = false;
      if (!this.#referenced) this.#port.unref();
      setImmediate(this.#drainNext);
    }
  }

  /**
   * One message of a backlog, on a macrotask of its own: its microtasks (the calls it answers,
   * the continuations of what it settles) run before the next message is dispatched, as when
   * the port delivers. Listens again once the port is empty.
   */
  #drain(): void {
    if (this.#closed) return;
    const received = receiveMessageOnPort(this.#port);
    if (received === undefined) {
      this.#listen();
      return;
    }
    this.#dispatch(received.message);
    setImmediate(this.#drainNext);
  }

  #dispatch(data: unknown): void {
    this.#dispatching = true;
    try {
      for (const handler of this.#handlers) handler(data);
    } finally {
      this.#dispatching = false;
    }
  }
}
