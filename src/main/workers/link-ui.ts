/**
 * One worker's extension UI requests on the main thread: an extension tool's `ctx.ui` call in the
 * worker arrives as a `ui_request`, goes to the host's UI (its `extensionUi`), and a dialog's answer
 * goes back with `answerUi`. A `ui_cancel` (the dialog's timeout passed in the worker, or its
 * signal aborted) and the worker's death withdraw what is still shown. Without a host UI a dialog
 * is answered with nothing at once (the extension gets pi's default) and a notice is dropped.
 */
import type { UiAnswer, UiDialogRequest, UiNotice, UiTransport } from "../../shared/extensions/extension-ui.js";
import type { WorkerMessage } from "../../shared/wire/protocol.js";

/** See the module comment. Owned by a `WorkerLink`; `answer` posts `answerUi` to its worker. */
export class LinkUi {
  readonly #ui: UiTransport | undefined;
  readonly #answer: (requestId: number, answer: UiAnswer | null) => void;
  /** Dialogs shown for this worker and not yet answered, by the worker's request id. */
  readonly #open = new Map<number, () => void>();

  constructor(ui: UiTransport | undefined, answer: (requestId: number, answer: UiAnswer | null) => void) {
    this.#ui = ui;
    this.#answer = answer;
  }

  /** A `ui_request` from the worker. Never throws. */
  request(message: Extract<WorkerMessage, { type: "ui_request" }>): void {
    const { requestId, request } = message;
    if (this.#ui === undefined) {
      if (requestId !== undefined) this.#answer(requestId, null);
      return;
    }
    if (requestId === undefined) {
      this.#ui.notify(request as UiNotice);
      return;
    }
    const shown = this.#ui.dialog(request as UiDialogRequest);
    this.#open.set(requestId, shown.cancel);
    shown.answer.then(
      (answer) => this.#settle(requestId, answer ?? null),
      () => this.#settle(requestId, null),
    );
  }

  /** A `ui_cancel`: the worker stopped waiting for this dialog. */
  cancel(requestId: number): void {
    const cancel = this.#open.get(requestId);
    this.#open.delete(requestId);
    cancel?.();
  }

  /** The worker is gone: every dialog still shown for it is withdrawn. */
  closeAll(): void {
    const open = [...this.#open.values()];
    this.#open.clear();
    for (const cancel of open) cancel();
  }

  #settle(requestId: number, answer: UiAnswer | null): void {
    if (!this.#open.delete(requestId)) return;
    this.#answer(requestId, answer);
  }
}
