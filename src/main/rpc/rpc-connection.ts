/**
 * `RpcClient`'s connection to its child: the child process (rpc-child.ts) and the client's phase
 * (rpc-client-phase.ts), the requests awaiting their response (pending-requests.ts), and the
 * routing of each stdout record: a response to its request, an `extension_ui_request` to the UI
 * handler (rpc-client-ui.ts), an event to the internal watches first (event-watches.ts), then to
 * the `onEvent` listeners (event-listeners.ts). When the child goes, or `stop()` is called, every
 * pending request and watch is released at once.
 */
import { LifelineError } from "../../shared/errors.js";
import { EventListeners } from "./event-listeners.js";
import { type CONTINUE, EventWatches, type Watch } from "./event-watches.js";
import { serializeJsonLine } from "./jsonl.js";
import { PendingRequests } from "./pending-requests.js";
import { RpcChild, type RpcChildOptions } from "./rpc-child.js";
import type { ResolvedClientOptions } from "./rpc-client-options.js";
import { RpcClientPhase } from "./rpc-client-phase.js";
import { RpcClientUi, type RpcExtensionUiHandler } from "./rpc-client-ui.js";
import type { RpcCommandOf, RpcCommandType, RpcEvent, RpcExtensionUiRequest, RpcResponseData } from "./rpc-protocol.js";

/** One client's child and what flows over its stdin and stdout. Single-use, as the client is. */
export class RpcConnection {
  readonly #childOptions: RpcChildOptions;
  readonly #phase = new RpcClientPhase();
  #child: RpcChild | undefined;
  #startPromise: Promise<void> | undefined;
  #stopPromise: Promise<void> | undefined;
  readonly #requests: PendingRequests;
  readonly #listeners: EventListeners;
  readonly #watches = new EventWatches();
  readonly #ui = new RpcClientUi();

  constructor(options: ResolvedClientOptions) {
    this.#childOptions = options.child;
    this.#requests = new PendingRequests(options.requestTimeoutMs);
    this.#listeners = new EventListeners(options.onListenerError);
  }

  /** The child's process id once spawned; undefined before `start()`. */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** The child's stderr tail so far (empty before `start()`). */
  get stderr(): string {
    return this.#child?.getStderr() ?? "";
  }

  /** `RpcClient.start()`: spawns the child and waits for its answer to a get_state. */
  start(): Promise<void> {
    if (this.#startPromise !== undefined) return this.#startPromise;
    if (this.#phase.value !== "new") return Promise.reject(this.#phase.notStarted("start"));
    this.#startPromise = this.#start();
    return this.#startPromise;
  }

  async #start(): Promise<void> {
    const maxLineBytes = this.#childOptions.maxLineBytes;
    this.#child = new RpcChild(this.#childOptions, {
      line: (text) => this.#receive(text),
      oversize: (bytes, head) => this.#requests.receiveOversize(bytes, head, maxLineBytes),
      gone: (error) => this.#childGone(error),
    });
    this.#phase.run();
    try {
      await this.request({ type: "get_state" });
    } catch (error) {
      if (this.#phase.value === "running") await this.stop();
      throw error;
    }
  }

  /** `RpcClient.stop()`: releases every pending request and watch, then ends the child. Never rejects. */
  stop(): Promise<void> {
    if (this.#stopPromise !== undefined) return this.#stopPromise;
    this.#phase.stop();
    this.#failAll(
      new LifelineError(
        "ERR_RPC_EXITED",
        "RpcClient.stop() was called before this completed; nothing more will arrive.",
      ),
    );
    this.#stopPromise = this.#child?.stop() ?? Promise.resolve();
    return this.#stopPromise;
  }

  /** See `RpcClient.onEvent`. */
  onEvent(listener: (event: RpcEvent) => void): () => void {
    return this.#listeners.add(listener);
  }

  /** See `RpcClient.onExtensionUiRequest`. */
  onExtensionUiRequest(handler: RpcExtensionUiHandler): () => void {
    return this.#ui.set(handler);
  }

  /**
   * Sends one command with a fresh id and resolves with its response's data.
   * Rejects as `RpcClient`'s command methods do (see its class comment).
   */
  request<K extends RpcCommandType>(command: RpcCommandOf<K>): Promise<RpcResponseData[K]> {
    const blocked = this.#phase.blocked(command.type);
    const child = this.#child;
    if (blocked !== undefined || child === undefined)
      return Promise.reject(blocked ?? this.#phase.notStarted(command.type));
    return this.#requests.send<RpcResponseData[K]>(child, command);
  }

  /** @throws LifelineError what a command made now would be refused with (the client is not running). */
  assertUsable(method: string): void {
    this.#phase.assertUsable(method);
  }

  /** An internal watch of the events until `step` returns a value; its timeout reports a missing `agent_settled` (see `EventWatches.watch`). */
  watch<T>(timeoutMs: number, step: (event: RpcEvent) => T | typeof CONTINUE): Watch<T> {
    return this.#watches.watch(timeoutMs, "agent_settled", step);
  }

  /** One stdout record: a response, an event, or something else (ignored, as pi does). */
  #receive(text: string): void {
    let record: unknown;
    try {
      record = JSON.parse(text);
    } catch {
      return;
    }
    if (typeof record !== "object" || record === null || Array.isArray(record)) return;
    const type = (record as { type?: unknown }).type;
    if (typeof type !== "string") return;
    if (type === "response") this.#requests.receiveResponse(record as Record<string, unknown>);
    else if (type === "extension_ui_request") {
      this.#ui.receive(record as RpcExtensionUiRequest, (response) =>
        this.#child?.write(serializeJsonLine(response), () => {}),
      );
    } else this.#dispatch(record as RpcEvent);
  }

  #dispatch(event: RpcEvent): void {
    // Internal watchers first: they only collect and settle promises, and never throw.
    this.#watches.dispatch(event);
    this.#listeners.dispatch(event);
  }

  /** Rejects every pending request and watch with `error`. */
  #failAll(error: LifelineError): void {
    this.#requests.failAll(error);
    this.#watches.failAll(error);
  }

  /** The child is gone (exited, killed, or never spawned): release everything at once. */
  #childGone(error: LifelineError): void {
    this.#phase.exit(error);
    this.#failAll(error);
  }
}
