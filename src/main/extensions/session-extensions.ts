/**
 * A session's extensions on the main thread: the handlers each extension's factory registered
 * for this session, fed with the session's events through one {@link HandlerQueue} per extension.
 *
 * Delivery is fire-and-forget for the session: `deliver` only enqueues, so no handler can delay
 * the session's events, its retry path (SPEC R14: `auto_retry_start`/`auto_retry_end` reach
 * handlers like every other event, in order) or its prompt's settling. A failure is reported
 * as an `extension_error` event of the session, and the extension goes on with the next event.
 */
import type { Api, Model } from "@mariozechner/pi-ai";
import { ExtensionUnsupportedError } from "../../shared/errors.js";
import type { ExtensionErrorEvent, SessionEvent } from "../../shared/events.js";
import type {
  ExtensionContext,
  ExtensionEvent,
  ExtensionHandler,
  ExtensionRegistrations,
  ExtensionSessionActions,
} from "../../shared/extensions/extension-api.js";
import { createUiContext, type ExtensionUIContext, type UiTransport } from "../../shared/extensions/extension-ui.js";
import type { ThinkingLevel } from "../../shared/thinking.js";
import { HandlerQueue } from "./handler-queue.js";

/** What handlers' `ctx` reads from the session, and where failures go; given by `AgentSession`. */
export interface SessionView {
  readonly id: string;
  readonly model: Model<Api>;
  readonly isBusy: boolean;
  readonly pendingMessageCount: number;
  readonly thinkingLevel: ThinkingLevel;
  abort(): Promise<void>;
  setThinkingLevel(level: ThinkingLevel): Promise<ThinkingLevel>;
}

/** One extension as loaded for a session. */
export interface LoadedExtension {
  /** The extension's file as the user named it (the `extensionPath` of its errors). */
  path: string;
  registrations: ExtensionRegistrations;
}

/** See the module comment. Created by `ExtensionRunner.open`, bound by `AgentSession`. */
export class SessionExtensions {
  readonly #extensions: { path: string; queue: HandlerQueue<ExtensionEvent> }[];
  readonly #start: "startup" | "resume";
  readonly #cwd: string;
  readonly #hasUI: boolean;
  /** The handlers' `ctx.ui`: the host's UI, or pi's defaults without one. */
  readonly #ui: ExtensionUIContext;
  #view: SessionView | undefined;
  /** The level `thinking_level_select` reports as `previousLevel`: the one of the last change. */
  #thinkingLevel: ThinkingLevel = "off";
  #report: ((event: ExtensionErrorEvent) => void) | undefined;
  #closed = false;

  constructor(options: {
    extensions: readonly LoadedExtension[];
    reason: "startup" | "resume";
    cwd: string;
    timeoutMs: () => number;
    ui?: UiTransport | undefined;
  }) {
    this.#start = options.reason;
    this.#cwd = options.cwd;
    this.#hasUI = options.ui !== undefined;
    this.#ui = createUiContext(options.ui);
    this.#extensions = options.extensions.map(({ path, registrations }) => {
      const handlers = new Map<string, ((event: ExtensionEvent) => unknown)[]>();
      for (const [type, list] of registrations.handlers as Map<string, ExtensionHandler[]>) {
        handlers.set(
          type,
          wrap(list, () => this.#context()),
        );
      }
      const queue = new HandlerQueue<ExtensionEvent>({
        handlersFor: (type) => handlers.get(type) ?? NONE,
        timeoutMs: options.timeoutMs,
        report: (failure) =>
          this.#emitError({
            type: "extension_error",
            extensionPath: path,
            event: failure.eventType,
            error: failure.error,
          }),
      });
      return { path, queue };
    });
  }

  /**
   * Connects the session: handlers see it through `view`, failures are emitted with `report`.
   * Delivers `session_start` first.
   */
  bind(view: SessionView, report: (event: ExtensionErrorEvent) => void): void {
    this.#view = view;
    this.#thinkingLevel = view.thinkingLevel;
    this.#report = report;
    this.#push({ type: "session_start", reason: this.#start });
  }

  /** A `subscribe()` listener: queues the event for every extension that handles it. */
  deliver(event: SessionEvent): void {
    // Errors are the extensions' own: reporting them to extensions could loop. pi gives its
    // extensions no queue_update either (its session emits it to subscribers only).
    if (event.type === "extension_error" || event.type === "queue_update" || this.#closed) return;
    if (event.type === "thinking_level_changed") {
      // pi gives extensions the change as thinking_level_select, with the level before.
      const previousLevel = this.#thinkingLevel;
      this.#thinkingLevel = event.level;
      this.#push({ type: "thinking_level_select", level: event.level, previousLevel });
      return;
    }
    this.#push(event);
  }

  /** The session these handlers are bound to (`bind`); undefined before. */
  get view(): SessionView | undefined {
    return this.#view;
  }

  /** The session ended: `session_shutdown` is queued last and nothing after it. Idempotent. */
  close(): void {
    if (this.#closed) return;
    if (this.#view !== undefined) this.#push({ type: "session_shutdown", reason: "quit" });
    this.#closed = true;
  }

  /** Resolves once every queued event has been handled (or its handler abandoned by timeout). */
  async idle(): Promise<void> {
    await Promise.all(this.#extensions.map(({ queue }) => queue.idle()));
  }

  #push(event: ExtensionEvent): void {
    for (const { queue } of this.#extensions) queue.push(event);
  }

  #context(): ExtensionContext {
    const view = this.#view;
    return {
      cwd: this.#cwd,
      hasUI: this.#hasUI,
      ui: this.#ui,
      sessionId: view?.id ?? "",
      model: view?.model,
      signal: undefined,
      isIdle: () => view?.isBusy !== true,
      abort: () => {
        void view?.abort().catch(() => {});
      },
      hasPendingMessages: () => (view?.pendingMessageCount ?? 0) > 0,
    };
  }

  #emitError(event: ExtensionErrorEvent): void {
    try {
      this.#report?.(event);
    } catch {
      // The session's listeners are guarded by its SessionListeners; nothing else can throw here.
    }
  }
}

/**
 * `pi.getThinkingLevel()`/`pi.setThinkingLevel()` of the main thread's copy: they reach the
 * session `session()` is bound to, once it is. A set that fails (the session closed meanwhile)
 * changes nothing and is not reported: pi's call returns nothing to report it to.
 */
export function sessionActions(session: () => SessionExtensions | undefined): ExtensionSessionActions {
  const view = (member: string): SessionView => {
    const bound = session()?.view;
    if (bound !== undefined) return bound;
    throw new ExtensionUnsupportedError(
      member,
      `pi.${member}() was called before the session was bound; call it from an event handler.`,
    );
  };
  return {
    getThinkingLevel: () => view("getThinkingLevel").thinkingLevel,
    setThinkingLevel: (level) => {
      view("setThinkingLevel")
        .setThinkingLevel(level)
        .catch(() => {});
    },
  };
}

/** The handlers as one-argument calls with a `ctx` made for each call. */
function wrap(
  handlers: readonly ExtensionHandler[],
  context: () => ExtensionContext,
): ((event: ExtensionEvent) => unknown)[] {
  return handlers.map((handler) => (event: ExtensionEvent) => handler(event, context()));
}

const NONE: readonly never[] = [];
