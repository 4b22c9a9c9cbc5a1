/**
 * The worker's end of its control channel (`ControlChannel` in shared/wire/protocol.ts): the aborts
 * main sends ahead of the port's queue.
 *
 * Why: a worker streaming for hundreds of sessions handles, in one turn of its loop, every socket
 * that has data, and each chunk's parsing and events run before the loop looks at its ports again.
 * A message on a port waits for that turn to end: tens of ms at 500 streaming sessions on two
 * cores, hundreds when the machine is crowded. The batcher calls {@link ControlInbox.poll} for
 * each item it queues; poll reads the shared counter and, only when main posted something since
 * the last read, takes the messages off the port synchronously. Each is handled in a microtask of
 * the current task: after the code that is queueing an event has returned, never inside it.
 *
 * An idle worker gets the same messages through the port's listener. Whichever path takes a
 * message, the other no longer sees it.
 */
import { type MessagePort, receiveMessageOnPort } from "node:worker_threads";
import { type ControlChannel, type ControlMessage, decodeControlMessage } from "../shared/wire/protocol.js";

/** Receives a worker's control messages; see the file comment. */
export class ControlInbox {
  readonly #port: MessagePort;
  /** How many messages main has posted (it increments the counter after each). */
  readonly #posted: Int32Array;
  /** The counter's value when the port was last drained. */
  #seen = 0;
  readonly #handle: (message: ControlMessage) => void;

  /** @param handle called once per well-formed message; malformed ones are dropped. */
  constructor(channel: ControlChannel, handle: (message: ControlMessage) => void) {
    this.#port = channel.port;
    this.#posted = new Int32Array(channel.flag);
    this.#handle = handle;
    this.#port.on("message", (data: unknown) => this.#deliver(data));
  }

  /**
   * Takes the messages posted since the last poll off the port, and handles each in a microtask.
   * Costs one atomic read when there are none, so it may be called for every queued event.
   */
  poll(): void {
    const posted = Atomics.load(this.#posted, 0);
    if (posted === this.#seen) return;
    // Read before draining: a message posted meanwhile moves the counter again, so a later poll
    // drains it (or the listener gets it); none is missed.
    this.#seen = posted;
    for (let next = receiveMessageOnPort(this.#port); next !== undefined; next = receiveMessageOnPort(this.#port)) {
      const data: unknown = next.message;
      queueMicrotask(() => this.#deliver(data));
    }
  }

  /** Closes the port; nothing is handled after. */
  close(): void {
    this.#port.close();
  }

  #deliver(data: unknown): void {
    const message = decodeControlMessage(data);
    if (message !== undefined) this.#handle(message);
  }
}
