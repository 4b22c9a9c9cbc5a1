/**
 * A host's extensions on the main thread: the modules, imported once per host (lazily, with the
 * first session), and each session's handlers, from a factory call per session (as pi calls the
 * factory for each session runtime). The worker loads the same files for their tools
 * (worker/extensions/extension-tools.ts); see docs/architecture.md for the split.
 */
import { ExtensionLoadError } from "../../shared/errors.js";
import {
  type ExtensionFactory,
  malformedToolMessage,
  runExtensionFactory,
  toolProblem,
} from "../../shared/extensions/extension-api.js";
import type { UiTransport } from "../../shared/extensions/extension-ui.js";
import type { SessionExtensions as WorkerExtensions } from "../../shared/wire/protocol.js";
import { importAtRunTime } from "../config/run-time-import.js";
import { extensionImporterModule } from "../config/run-time-modules.js";
import type { ResolvedExtension } from "./resolve-extensions.js";
import { type LoadedExtension, SessionExtensions, sessionActions } from "./session-extensions.js";

/** Options of {@link ExtensionRunner.open}. */
export interface OpenExtensionsOptions {
  reason: "startup" | "resume";
  /** The session's `extensionHandlerTimeoutMs`, read per handler call. */
  timeoutMs: () => number;
  /** Longest wait for the factories (an async factory may fetch): the host's `setupTimeoutMs`. */
  setupTimeoutMs: number;
}

/** See the module comment. One per host that has extensions. */
export class ExtensionRunner {
  readonly #files: readonly ResolvedExtension[];
  readonly #cwd: string;
  /** The host's UI for `ctx.ui` (its `extensionUi`); undefined without one. */
  readonly #ui: UiTransport | undefined;
  #factories: Promise<ExtensionFactory[]> | undefined;
  /** Sessions whose queues may still hold events; drained (bounded) when the host closes. */
  readonly #live = new Map<SessionExtensions, () => number>();

  constructor(files: readonly ResolvedExtension[], cwd: string, ui?: UiTransport) {
    this.#files = files;
    this.#cwd = cwd;
    this.#ui = ui;
  }

  /** Whether `ctx.ui` reaches a UI (the host's `extensionUi`): the sessions' `hasUI`. */
  get hasUI(): boolean {
    return this.#ui !== undefined;
  }

  /** What a session's worker needs to load the same extensions for their tools. */
  get forWorker(): WorkerExtensions {
    return { files: this.#files.map(({ file, path }) => ({ file, path })), cwd: this.#cwd };
  }

  /**
   * Calls every extension's factory for a new session and returns its handlers, unbound.
   * @throws ExtensionLoadError (ERR_EXTENSION_LOAD) naming the extension whose import or factory failed.
   */
  async open(options: OpenExtensionsOptions): Promise<SessionExtensions> {
    const factories = await this.#load();
    const loaded: LoadedExtension[] = [];
    // The factories run before the session exists; their pi's actions reach it once it is bound.
    let session: SessionExtensions | undefined;
    const actions = sessionActions(() => session);
    for (const [index, factory] of factories.entries()) {
      const { path } = this.#files[index] as ResolvedExtension;
      const registrations = await bounded(
        runExtensionFactory(factory, "main", path, actions),
        options.setupTimeoutMs,
        () =>
          new ExtensionLoadError(
            path,
            `Extension ${path}'s factory did not finish within ${options.setupTimeoutMs} ms (setupTimeoutMs); make it finish, or raise setupTimeoutMs.`,
          ),
      );
      // The tools run in the worker, but a malformed one is named here, with its extension's path.
      for (const tool of registrations.tools) {
        const problem = toolProblem(tool);
        if (problem !== undefined) throw new ExtensionLoadError(path, malformedToolMessage(path, problem));
      }
      loaded.push({ path, registrations });
    }
    session = new SessionExtensions({
      extensions: loaded,
      reason: options.reason,
      cwd: this.#cwd,
      timeoutMs: options.timeoutMs,
      ui: this.#ui,
    });
    this.#live.set(session, options.timeoutMs);
    return session;
  }

  /** The session ended: its `session_shutdown` is queued, and it is forgotten once its queues drain. */
  close(session: SessionExtensions): void {
    session.close();
    void session.idle().then(() => this.#live.delete(session));
  }

  /**
   * Waits for every session's queued events (their `session_shutdown` included) to be handled,
   * at most the longest handler timeout: a hung handler does not hold `host.close()` longer.
   */
  async drain(): Promise<void> {
    if (this.#live.size === 0) return;
    const boundMs = Math.max(...[...this.#live.values()].map((timeoutMs) => timeoutMs()));
    const all = Promise.all([...this.#live.keys()].map((session) => session.idle()));
    await bounded(all, boundMs, () => undefined).catch(() => {});
    this.#live.clear();
  }

  #load(): Promise<ExtensionFactory[]> {
    if (this.#factories !== undefined) return this.#factories;
    const factories = loadExtensionImporter(this.#files[0]?.path ?? "").then(({ importExtension }) =>
      Promise.all(this.#files.map(({ file, path }) => importExtension(file, path))),
    );
    this.#factories = factories;
    // A failed import is not kept: the next session tries again.
    factories.catch(() => {
      if (this.#factories === factories) this.#factories = undefined;
    });
    return factories;
  }
}

type ExtensionImporter = typeof import("../../shared/extensions/import-extension.js");

/**
 * The extension loader (jiti, with pi-ai, pi-agent-core and typebox for extensions to import),
 * imported with the first extension at run time: a host without main-thread extensions never
 * loads it, and an app's bundle made from `import "lifeline"` does not carry it.
 */
function loadExtensionImporter(shownPath: string): Promise<ExtensionImporter> {
  return importAtRunTime<ExtensionImporter>(
    extensionImporterModule(),
    (detail) =>
      new ExtensionLoadError(
        shownPath,
        `Extension ${shownPath} could not be loaded: lifeline's extension loader is missing (${detail}). An app that bundles lifeline and runs extensions on the main thread must keep the lifeline package external to its bundle.`,
      ),
  );
}

/** `promise`, or a rejection with `timeoutError()` after `ms` (nothing when it returns undefined). */
function bounded<T>(promise: Promise<T>, ms: number, timeoutError: () => Error | undefined): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(timeoutError()), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
