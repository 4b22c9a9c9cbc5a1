/**
 * `RpcClient`'s side of pi's extension UI sub-protocol: each `extension_ui_request` line goes to
 * the client's handler, and the handler's answer to a dialog goes back as an
 * `extension_ui_response` line. A handler that returns nothing leaves the dialog to its timeout
 * (or to wait, when it has none); a handler that throws or rejects answers `cancelled`, so the
 * extension gets pi's default rather than waiting on a client bug.
 */
import type { RpcExtensionUiRequest, RpcExtensionUiResponse } from "./rpc-protocol.js";

/** An answer to a dialog: `value` for select, input and editor; `confirmed` for confirm; or `cancelled`. */
export type RpcExtensionUiAnswer = { value: string } | { confirmed: boolean } | { cancelled: true };

/**
 * Handles one UI request. Dialogs (`select`, `confirm`, `input`, `editor`) are answered with what
 * it returns or resolves to; notices (`notify`, `setStatus`, …) need no answer.
 */
export type RpcExtensionUiHandler = (
  request: RpcExtensionUiRequest,
) => RpcExtensionUiAnswer | undefined | Promise<RpcExtensionUiAnswer | undefined>;

const DIALOGS = new Set(["select", "confirm", "input", "editor"]);

/** The handler and the answers it gives; one per client. */
export class RpcClientUi {
  #handler: RpcExtensionUiHandler | undefined;

  /** Sets the handler (replacing any); returns a function that removes it. */
  set(handler: RpcExtensionUiHandler): () => void {
    this.#handler = handler;
    return () => {
      if (this.#handler === handler) this.#handler = undefined;
    };
  }

  /** A request from the child; `send` writes the answer line. Never throws. */
  receive(request: RpcExtensionUiRequest, send: (response: RpcExtensionUiResponse) => void): void {
    const handler = this.#handler;
    if (handler === undefined) return;
    const dialog = DIALOGS.has(request.method);
    const answer = (value: RpcExtensionUiAnswer | undefined) => {
      if (dialog && value !== undefined) send({ type: "extension_ui_response", id: request.id, ...value });
    };
    const cancelled = () => answer({ cancelled: true });
    try {
      const result = handler(request);
      if (result instanceof Promise) result.then(answer, cancelled);
      else answer(result);
    } catch {
      cancelled();
    }
  }
}
