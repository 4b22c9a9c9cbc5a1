/**
 * `RpcHostClient`'s connection to its `lifeline --mode host` child, built from `RpcClient`'s parts:
 * the child process (../rpc-child.ts), the client's phase (../rpc-client-phase.ts) and the requests
 * awaiting their response, each with its timer (../pending-requests.ts). Each stdout record is
 * routed: a response to its request (by `id`: responses of different sessions come in any order),
 * an event to the route of the session its `sessionId` names (that session's internal watches,
 * then its listeners) and then to the client-wide listeners. When the child goes, or `stop()` is
 * called, every pending request and every session's watches are released at once.
 */
import { LifelineError } from "../../../shared/errors.js";
import { EventListeners } from "../event-listeners.js";
import { EventWatches } from "../event-watches.js";
import { PendingRequests } from "../pending-requests.js";
import { RpcChild, type RpcChildOptions } from "../rpc-child.js";
import type { ResolvedClientOptions } from "../rpc-client-options.js";
import { RpcClientPhase } from "../rpc-client-phase.js";
import type { HostEvent } from "./host-protocol.js";
import { HostSocket } from "./host-socket.js";

/** Where one session's events go: its internal watches (waits), then its `onEvent` listeners. */
export class SessionRoute {
  readonly watches = new EventWatches<HostEvent>();
  readonly listeners: EventListeners<HostEvent>;

  constructor(onListenerError: ((error: unknown, event: HostEvent) => void) | undefined) {
    this.listeners = new EventListeners<HostEvent>(onListenerError);
  }

  dispatch(event: HostEvent): void {
    // Internal watches first: they only collect and settle promises, and never throw.
    this.watches.dispatch(event);
    this.listeners.dispatch(event);
  }
}

/** One host client's child and what flows over its stdin and stdout. Single-use, as the client is. */
export class HostClientConnection {
  readonly #childOptions: RpcChildOptions;
  readonly #socketPath: string | undefined;
  readonly #phase = new RpcClientPhase("RpcHostClient");
  /** The child, or the socket of a host that runs already. */
  #child: RpcChild | HostSocket | undefined;
  #startPromise: Promise<void> | undefined;
  #stopPromise: Promise<void> | undefined;
  readonly #requests: PendingRequests;
  readonly #onListenerError: ((error: unknown, event: HostEvent) => void) | undefined;
  /** Every session's events, after the session's own route. */
  readonly #listeners: EventListeners<HostEvent>;
  /** The routes of the sessions that have a handle, by session id. */
  readonly #routes = new Map<string, SessionRoute>();

  /**
   * @param options resolved as `RpcClient`'s; the child runs `--mode host`
   * @param socketPath connect to a host's Unix socket instead of spawning a child
   */
  constructor(options: ResolvedClientOptions, socketPath: string | undefined) {
    this.#childOptions = { ...options.child, mode: "host" };
    this.#socketPath = socketPath;
    this.#requests = new PendingRequests(options.requestTimeoutMs);
    this.#onListenerError = options.onListenerError;
    this.#listeners = new EventListeners<HostEvent>(options.onListenerError);
  }

  /** The child's process id once spawned; undefined before `start()`. */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** The child's stderr tail so far (empty before `start()`). */
  get stderr(): string {
    return this.#child?.getStderr() ?? "";
  }

  /** `RpcHostClient.start()`: spawns the child (or connects) and waits for its answer to a `list_sessions`. */
  start(): Promise<void> {
    if (this.#startPromise !== undefined) return this.#startPromise;
    if (this.#phase.value !== "new") return Promise.reject(this.#phase.notStarted("start"));
    this.#startPromise = this.#start();
    return this.#startPromise;
  }

  async #start(): Promise<void> {
    const maxLineBytes = this.#childOptions.maxLineBytes;
    const handlers = {
      line: (text: string) => this.#receive(text),
      oversize: (bytes: number, head: string) => this.#requests.receiveOversize(bytes, head, maxLineBytes),
      gone: (error: LifelineError) => this.#childGone(error),
    };
    this.#child =
      this.#socketPath === undefined
        ? new RpcChild(this.#childOptions, handlers)
        : new HostSocket(this.#socketPath, maxLineBytes, handlers);
    this.#phase.run();
    try {
      // list_sessions opens nothing (get_state would open the connection's default session).
      await this.request({ type: "list_sessions" });
    } catch (error) {
      if (this.#phase.value === "running") await this.stop();
      throw error;
    }
  }

  /** `RpcHostClient.stop()`: releases every pending request and watch, then ends the child. Never rejects. */
  stop(): Promise<void> {
    if (this.#stopPromise !== undefined) return this.#stopPromise;
    this.#phase.stop();
    this.#failAll(
      new LifelineError(
        "ERR_RPC_EXITED",
        "RpcHostClient.stop() was called before this completed; nothing more will arrive.",
      ),
    );
    this.#stopPromise = this.#child?.stop() ?? Promise.resolve();
    return this.#stopPromise;
  }

  /** Every session's events, from now on; returns a function that unsubscribes. */
  onEvent(listener: (event: HostEvent) => void): () => void {
    return this.#listeners.add(listener);
  }

  /**
   * Sends one command with a fresh id and resolves with its response's data (`T`: what the caller
   * knows the command answers). Rejects as `RpcHostClient`'s methods do (see its class comment).
   */
  request<T>(command: { readonly type: string; readonly [field: string]: unknown }): Promise<T> {
    const blocked = this.#phase.blocked(command.type);
    const child = this.#child;
    if (blocked !== undefined || child === undefined)
      return Promise.reject(blocked ?? this.#phase.notStarted(command.type));
    return this.#requests.send<T>(child, command);
  }

  /** @throws LifelineError what a command made now would be refused with (the client is not running). */
  assertUsable(method: string): void {
    this.#phase.assertUsable(method);
  }

  /** The route of `sessionId`'s events, made on first use. */
  route(sessionId: string): SessionRoute {
    let route = this.#routes.get(sessionId);
    if (route === undefined) {
      route = new SessionRoute(this.#onListenerError);
      this.#routes.set(sessionId, route);
    }
    return route;
  }

  /** Drops the route of `sessionId` (its session was closed): its watches reject with `error`. */
  dropRoute(sessionId: string, error: LifelineError): void {
    const route = this.#routes.get(sessionId);
    if (route === undefined) return;
    this.#routes.delete(sessionId);
    route.watches.failAll(error);
  }

  /** One stdout record: a response, an event, or something else (ignored, as `RpcClient` does). */
  #receive(text: string): void {
    let record: unknown;
    try {
      record = JSON.parse(text);
    } catch {
      return;
    }
    if (typeof record !== "object" || record === null || Array.isArray(record)) return;
    const { type, sessionId } = record as { type?: unknown; sessionId?: unknown };
    if (typeof type !== "string") return;
    if (type === "response") {
      this.#requests.receiveResponse(record as Record<string, unknown>);
      return;
    }
    // Every host event names its session; a record without one is no event of this protocol.
    if (typeof sessionId !== "string") return;
    const event = record as HostEvent;
    this.#routes.get(sessionId)?.dispatch(event);
    this.#listeners.dispatch(event);
  }

  /** Rejects every pending request and every session's watches with `error`. */
  #failAll(error: LifelineError): void {
    this.#requests.failAll(error);
    for (const route of this.#routes.values()) route.watches.failAll(error);
  }

  /** The child is gone (exited, killed, or never spawned): release everything at once. */
  #childGone(error: LifelineError): void {
    this.#phase.exit(error);
    this.#failAll(error);
  }
}
