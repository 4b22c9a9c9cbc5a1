/**
 * RPC mode's extension UI (pi's sub-protocol, docs/rpc.md "Extension UI"): extensions' `ctx.ui`
 * calls, from handlers on the main thread and from tools in the worker, become
 * `{"type": "extension_ui_request", "id", "method", …}` lines on stdout; a dialog's answer comes
 * back on stdin as `{"type": "extension_ui_response", "id", "value" | "confirmed" | "cancelled"}`.
 *
 * As in pi, an answer gets no response line, and one that matches no open dialog (no `id`, an
 * unknown or already answered one, a dialog that timed out) is ignored; lifeline says so on
 * stderr. An answer without the field its dialog reads resolves it with pi's default.
 */
import { randomUUID } from "node:crypto";
import type { UiAnswer, UiDialogRequest, UiNotice, UiTransport } from "../../shared/extensions/extension-ui.js";
import type { RpcExtensionUiRequest } from "./rpc-protocol.js";

/** See the module comment. One per RPC process, given to its host as `extensionUi`. */
export class RpcExtensionUi implements UiTransport {
  readonly #write: (request: RpcExtensionUiRequest) => void;
  readonly #errors: (text: string) => void;
  /** Open dialogs by request id: how each resolves. */
  readonly #open = new Map<string, (answer: UiAnswer | undefined) => void>();

  /** @param write writes one record to stdout; @param errors writes diagnostics (stderr). */
  constructor(write: (request: RpcExtensionUiRequest) => void, errors: (text: string) => void) {
    this.#write = write;
    this.#errors = errors;
  }

  dialog(request: UiDialogRequest): { answer: Promise<UiAnswer | undefined>; cancel(): void } {
    const id = randomUUID();
    const answer = new Promise<UiAnswer | undefined>((resolve) => this.#open.set(id, resolve));
    this.#write({ type: "extension_ui_request", id, ...request });
    return {
      answer,
      cancel: () => {
        const resolve = this.#open.get(id);
        this.#open.delete(id);
        resolve?.(undefined);
      },
    };
  }

  notify(request: UiNotice): void {
    this.#write({ type: "extension_ui_request", id: randomUUID(), ...request });
  }

  /** An `extension_ui_response` line, parsed: resolves its dialog, or is ignored (see the module comment). */
  receive(response: Record<string, unknown>): void {
    const id = response.id;
    const resolve = typeof id === "string" ? this.#open.get(id) : undefined;
    if (resolve === undefined) {
      this.#errors(
        `lifeline rpc: ignored an extension_ui_response whose id ${JSON.stringify(id ?? null)} matches no open dialog (answered already, timed out, or never asked).\n`,
      );
      return;
    }
    this.#open.delete(id as string);
    resolve({ value: response.value, confirmed: response.confirmed, cancelled: response.cancelled });
  }
}
