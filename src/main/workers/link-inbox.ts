/**
 * What one worker's messages do on the main thread: the receiving half of a {@link WorkerLink}
 * (worker-link.ts), which keeps the calling half. Each message is decoded once
 * (`decodeWorkerMessage`, shared/wire/protocol.ts) and dispatched: batch items mark their runs' ends
 * (in-flight-work.ts) and go to the sessions the worker serves (link-sessions.ts); permit
 * messages to the host's coordination (B8); extension UI requests to the host's UI (link-ui.ts);
 * loop reports to B9. Any message, a comlink reply included, is a sign that the worker lives: the
 * time of the last one is what the hang of a call and the watchdog (X8) are judged by.
 */
import { LifelineError } from "../../shared/errors.js";
import { decodeWorkerMessage, type LoopDelay, type WorkerMessage } from "../../shared/wire/protocol.js";
import type { InFlightWork } from "./in-flight-work.js";
import type { PermitHandler, PermitLink } from "./link-options.js";
import type { LinkSessions } from "./link-sessions.js";
import type { LinkUi } from "./link-ui.js";

/** Where a link's inbox sends what the worker says. None may throw. */
export interface InboxTargets {
  readonly sessions: LinkSessions;
  readonly work: InFlightWork;
  readonly ui: LinkUi;
  /** The worker's `hello`: its serve loop runs. */
  started(): void;
  /** A message that is neither comlink's nor the protocol's. */
  protocolError(reason: string): void;
  /** B9: a loop report of the worker's thread. */
  loopDelay?: ((threadId: number, delay: LoopDelay) => void) | undefined;
  /** The link: `grantPermit` lets the worker go on with a request it asked a permit for (its failure is ignored). */
  readonly link: PermitLink;
  /** B8: the host's answer to permit requests and releases; undefined: every request is granted at once. */
  readonly permits: PermitHandler | undefined;
}

/** Receives one worker's port messages; see the file comment. */
export class LinkInbox {
  readonly #to: InboxTargets;
  /** The worker's thread id, from its `hello`. */
  #threadId: number | undefined;
  #lastSeenAt = performance.now();

  constructor(targets: InboxTargets) {
    this.#to = targets;
  }

  /** `performance.now()` of the worker's last message (or the link's creation). */
  get lastSeenAt(): number {
    return this.#lastSeenAt;
  }

  /** Takes one message of the port, as it arrives. */
  receive(data: unknown): void {
    this.#lastSeenAt = performance.now();
    const decoded = decodeWorkerMessage(data);
    switch (decoded.kind) {
      case "comlink":
        return;
      case "invalid":
        this.#to.protocolError(decoded.reason);
        return;
      case "message":
        this.#dispatch(decoded.message);
        return;
      default: {
        const unreachable: never = decoded;
        throw new LifelineError("ERR_PROTOCOL", `Unhandled decoded message ${JSON.stringify(unreachable)}`);
      }
    }
  }

  #dispatch(message: WorkerMessage): void {
    const to = this.#to;
    switch (message.type) {
      case "hello":
        this.#threadId = message.threadId;
        to.started();
        return;
      case "heartbeat":
        if (message.loop !== undefined && this.#threadId !== undefined) to.loopDelay?.(this.#threadId, message.loop);
        return;
      case "permit_request":
        if (to.permits !== undefined) to.permits.request(to.link, message.sessionId, message.requestId);
        else void to.link.call("grantPermit", message.requestId, true).catch(() => {});
        return;
      case "permit_release":
        to.permits?.release(to.link, message.requestId);
        return;
      case "tool_calls_ready":
        // The reply's message_end came first on this port, so it is recorded; once stored, go.
        void to.sessions
          .stored(message.sessionId)
          .then(() => to.link.call("grantPermit", message.requestId, true))
          .catch(() => {});
        return;
      case "ui_request":
        to.ui.request(message);
        return;
      case "ui_cancel":
        to.ui.cancel(message.requestId);
        return;
      case "batch":
        for (const item of message.items) {
          if (item.type === "run_end") to.work.runEnded(item.sessionId, item.runId);
          to.sessions.route(item);
        }
        return;
      default: {
        const unreachable: never = message;
        throw new LifelineError("ERR_PROTOCOL", `Unhandled worker message ${JSON.stringify(unreachable)}`);
      }
    }
  }
}
