/**
 * The worker's side of extension tools' `ctx.ui` (sessions opened with `hasUI`): a dialog goes to
 * main as a `ui_request` with a request id and waits for main's `answerUi`; a notice goes without
 * one. Withdrawing a dialog (its timeout passed or its signal aborted, in extension-ui.ts) sends
 * `ui_cancel`, so main stops showing it. The events batched so far go out first, so a client sees
 * the tool's `tool_execution_start` before the dialog the tool opened.
 */
import type { UiAnswer, UiTransport } from "../../shared/extensions/extension-ui.js";
import type { WorkerMessage } from "../../shared/wire/protocol.js";

/** See the module comment. One per worker, owned by its serve loop. */
export class WorkerUi {
  readonly #post: (message: WorkerMessage) => void;
  readonly #flushEvents: () => void;
  readonly #waiting = new Map<number, (answer: UiAnswer | undefined) => void>();
  #nextId = 0;

  constructor(post: (message: WorkerMessage) => void, flushEvents: () => void) {
    this.#post = post;
    this.#flushEvents = flushEvents;
  }

  /** The transport a session's tools' `ctx.ui` uses. */
  forSession(sessionId: string): UiTransport {
    return {
      dialog: (request) => {
        const requestId = ++this.#nextId;
        const answer = new Promise<UiAnswer | undefined>((resolve) => this.#waiting.set(requestId, resolve));
        this.#flushEvents();
        this.#post({ type: "ui_request", sessionId, requestId, request });
        return {
          answer,
          cancel: () => {
            if (!this.#waiting.delete(requestId)) return;
            this.#post({ type: "ui_cancel", requestId });
          },
        };
      },
      notify: (request) => {
        this.#flushEvents();
        this.#post({ type: "ui_request", sessionId, request });
      },
    };
  }

  /** Main's `answerUi`: the dialog resolves (null: with its default). An unknown id was withdrawn meanwhile. */
  answer(requestId: number, answer: UiAnswer | null): void {
    const resolve = this.#waiting.get(requestId);
    this.#waiting.delete(requestId);
    resolve?.(answer ?? undefined);
  }
}
