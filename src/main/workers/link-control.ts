/**
 * main's end of a worker's control channel (shared/wire/protocol.ts, `ControlChannel`): early aborts
 * that reach a worker busy streaming for other sessions between two of their events, instead of
 * at its loop's next turn (control-inbox.ts in the worker). Absent for in-process endpoints, whose
 * aborts go only as calls on the port. Never what keeps the process alive.
 */
import type { MessagePort } from "node:worker_threads";
import type { ControlMessage } from "../../shared/wire/protocol.js";

export class LinkControl {
  readonly #channel: { port: MessagePort; posted: Int32Array } | undefined;

  constructor(channel: { port: MessagePort; posted: Int32Array } | undefined) {
    this.#channel = channel;
    // The main port and the work in flight decide whether the process stays alive.
    channel?.port.unref();
  }

  /** Names the session's run in flight on the channel and moves the shared counter; false without a channel. */
  abortEarly(sessionId: string, runId: number): boolean {
    const channel = this.#channel;
    if (channel === undefined) return false;
    channel.port.postMessage({ type: "abort", sessionId, runId } satisfies ControlMessage);
    Atomics.add(channel.posted, 0, 1);
    return true;
  }

  close(): void {
    this.#channel?.port.close();
  }
}
