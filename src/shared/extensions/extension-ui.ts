/**
 * `ctx.ui`, the part of pi's `ExtensionUIContext` lifeline provides to extensions' handlers (main
 * thread) and tools (worker), built the same way on both threads over a {@link UiTransport}: the
 * host's UI (RPC mode's `extension_ui_request` lines, or a library host's `extensionUi` option),
 * reached directly on main and through the worker's port from a tool.
 *
 * Dialogs (`select`, `confirm`, `input`, `editor`) behave as in pi's RPC mode: a `timeout` or an
 * aborted `signal` resolves them with pi's default (`undefined`, or `false` for `confirm`), as
 * does a cancelled or malformed answer; without a timeout a dialog waits for its answer. Without
 * a UI (`hasUI` false) dialogs resolve with the default at once and the fire-and-forget methods do
 * nothing, as pi's print mode. pi's members that need its terminal (custom components, themes,
 * the working loader, editor components) throw {@link ExtensionUnsupportedError}.
 */
import { ExtensionUnsupportedError } from "../errors.js";

/** pi's dialog options. */
export interface ExtensionUIDialogOptions {
  /** Dismisses the dialog (resolving it with the default) when aborted. */
  signal?: AbortSignal;
  /** Milliseconds after which the dialog resolves with the default. */
  timeout?: number;
}

/** The UI methods an extension can use (pi's names and signatures). */
export interface ExtensionUIContext {
  select(title: string, options: string[], opts?: ExtensionUIDialogOptions): Promise<string | undefined>;
  confirm(title: string, message: string, opts?: ExtensionUIDialogOptions): Promise<boolean>;
  input(title: string, placeholder?: string, opts?: ExtensionUIDialogOptions): Promise<string | undefined>;
  /** A multi-line editor; pi gives it no options (no timeout). */
  editor(title: string, prefill?: string): Promise<string | undefined>;
  notify(message: string, type?: "info" | "warning" | "error"): void;
  setStatus(key: string, text: string | undefined): void;
  /** String lines only (pi's component factories need its terminal). */
  setWidget(key: string, lines: string[] | undefined, options?: { placement?: "aboveEditor" | "belowEditor" }): void;
  setTitle(title: string): void;
  setEditorText(text: string): void;
}

/** A UI request as pi's RPC mode writes it, without `type` and `id`. Plain data. */
export type UiRequest =
  | { method: "select"; title: string; options: string[]; timeout?: number }
  | { method: "confirm"; title: string; message: string; timeout?: number }
  | { method: "input"; title: string; placeholder?: string; timeout?: number }
  | { method: "editor"; title: string; prefill?: string }
  | { method: "notify"; message: string; notifyType?: "info" | "warning" | "error" }
  | { method: "setStatus"; statusKey: string; statusText?: string }
  | { method: "setWidget"; widgetKey: string; widgetLines?: string[]; widgetPlacement?: "aboveEditor" | "belowEditor" }
  | { method: "setTitle"; title: string }
  | { method: "set_editor_text"; text: string };

/** The requests that wait for an answer. */
export type UiDialogRequest = Extract<UiRequest, { method: "select" | "confirm" | "input" | "editor" }>;

/** The fire-and-forget requests. */
export type UiNotice = Exclude<UiRequest, UiDialogRequest>;

/**
 * An answer as it came (pi's `extension_ui_response` without `type` and `id`): `value`,
 * `confirmed` or `cancelled`. Unchecked: each dialog reads the field it needs and takes its
 * default when the field is missing or of the wrong type.
 */
export interface UiAnswer {
  value?: unknown;
  confirmed?: unknown;
  cancelled?: unknown;
}

/** Where a UI context sends its requests. Implemented by RPC mode, a library host, and the worker's port. */
export interface UiTransport {
  /**
   * Shows a dialog. `answer` resolves with the answer, or undefined when there will be none;
   * `cancel()` withdraws the dialog (its timeout passed, its signal aborted). Must not throw.
   */
  dialog(request: UiDialogRequest): { answer: Promise<UiAnswer | undefined>; cancel(): void };
  /** Shows a notice, status, widget, title or editor text; nothing comes back. Must not throw. */
  notify(request: UiNotice): void;
}

/** pi members of `ExtensionUIContext` that need pi's terminal. */
const UNSUPPORTED_UI_MEMBERS = [
  "onTerminalInput",
  "setWorkingMessage",
  "setWorkingVisible",
  "setWorkingIndicator",
  "setHiddenThinkingLabel",
  "setFooter",
  "setHeader",
  "custom",
  "pasteToEditor",
  "getEditorText",
  "addAutocompleteProvider",
  "setEditorComponent",
  "getEditorComponent",
  "theme",
  "getAllThemes",
  "getTheme",
  "setTheme",
  "getToolsExpanded",
  "setToolsExpanded",
] as const;

/** `ctx.ui` over `transport`; with none, pi's no-UI behaviour (see the module comment). */
export function createUiContext(transport: UiTransport | undefined): ExtensionUIContext {
  const text = (answer: UiAnswer | undefined) =>
    answer?.cancelled === true || typeof answer?.value !== "string" ? undefined : answer.value;
  const notify = (request: UiNotice) => transport?.notify(request);
  const ui: ExtensionUIContext = {
    select: (title, options, opts) =>
      dialog(transport, { method: "select", title, options, ...timeoutOf(opts) }, opts, undefined, text),
    confirm: (title, message, opts) =>
      dialog(transport, { method: "confirm", title, message, ...timeoutOf(opts) }, opts, false, (answer) =>
        answer?.cancelled === true || typeof answer?.confirmed !== "boolean" ? false : answer.confirmed,
      ),
    input: (title, placeholder, opts) =>
      dialog(
        transport,
        { method: "input", title, ...(placeholder === undefined ? {} : { placeholder }), ...timeoutOf(opts) },
        opts,
        undefined,
        text,
      ),
    editor: (title, prefill) =>
      dialog(
        transport,
        { method: "editor", title, ...(prefill === undefined ? {} : { prefill }) },
        undefined,
        undefined,
        text,
      ),
    notify: (message, type) =>
      notify({ method: "notify", message, ...(type === undefined ? {} : { notifyType: type }) }),
    setStatus: (key, statusText) =>
      notify({ method: "setStatus", statusKey: key, ...(statusText === undefined ? {} : { statusText }) }),
    setWidget: (key, lines, options) => {
      if (lines !== undefined && !Array.isArray(lines)) {
        throw new ExtensionUnsupportedError(
          "ctx.ui.setWidget(component)",
          "lifeline shows widgets as string lines only (pi's component factories need its terminal); pass a string array.",
        );
      }
      notify({
        method: "setWidget",
        widgetKey: key,
        ...(lines === undefined ? {} : { widgetLines: [...lines] }),
        ...(options?.placement === undefined ? {} : { widgetPlacement: options.placement }),
      });
    },
    setTitle: (title) => notify({ method: "setTitle", title }),
    setEditorText: (value) => notify({ method: "set_editor_text", text: value }),
  };
  for (const member of UNSUPPORTED_UI_MEMBERS) {
    const fail = () => {
      throw new ExtensionUnsupportedError(
        `ctx.ui.${member}`,
        `lifeline does not support ctx.ui.${member} (it needs pi's terminal); the UI methods lifeline supports are in docs/extensions.md.`,
      );
    };
    Object.defineProperty(ui, member, member === "theme" ? { get: fail } : { value: fail });
  }
  return ui;
}

/** A dialog's life: the request goes out; the answer, the timeout or the signal ends it, whichever comes first. */
function dialog<T>(
  transport: UiTransport | undefined,
  request: UiDialogRequest,
  opts: ExtensionUIDialogOptions | undefined,
  fallback: T,
  read: (answer: UiAnswer | undefined) => T,
): Promise<T> {
  if (transport === undefined || opts?.signal?.aborted === true) return Promise.resolve(fallback);
  return new Promise<T>((resolve) => {
    const shown = transport.dialog(request);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const end = (value: T, withdraw: boolean) => {
      clearTimeout(timer);
      opts?.signal?.removeEventListener("abort", onAbort);
      if (withdraw) shown.cancel();
      resolve(value);
    };
    const onAbort = () => end(fallback, true);
    opts?.signal?.addEventListener("abort", onAbort, { once: true });
    if (opts?.timeout !== undefined && opts.timeout > 0) timer = setTimeout(() => end(fallback, true), opts.timeout);
    shown.answer.then(
      (answer) => end(read(answer), false),
      () => end(fallback, false),
    );
  });
}

function timeoutOf(opts: ExtensionUIDialogOptions | undefined): { timeout?: number } {
  return opts?.timeout === undefined ? {} : { timeout: opts.timeout };
}
