/**
 * `RpcHostClient`: drives `lifeline --mode host` in a child process, many sessions over one JSONL
 * connection (host-protocol.ts), with a handle per session (rpc-session-handle.ts). Built from
 * `RpcClient`'s parts, with its guarantees: a readiness handshake, a timer per request, and every
 * waiter released at once, with the child's stderr, when the child dies or `stop()` is called.
 */
import { LifelineError } from "../../../shared/errors.js";
import type { ThinkingLevel } from "../../../shared/thinking.js";
import { type RpcClientOptions, resolveClientOptions } from "../rpc-client-options.js";
import { HostClientConnection } from "./host-client-connection.js";
import type { HostEvent, HostResponseData, HostSessionInfo } from "./host-protocol.js";
import { type HandleOwner, RpcSessionHandle } from "./rpc-session-handle.js";

/**
 * Options of `RpcHostClient`: those of `RpcClient` (the child runs `--mode host` instead of
 * `--mode rpc`; `model` is the model of sessions opened without one), and `socketPath`.
 * Validated by its constructor.
 */
export interface RpcHostClientOptions extends RpcClientOptions {
  /**
   * Connect to the Unix socket of a `lifeline --mode host --socket <path>` that runs already,
   * instead of spawning a child: the options that shape a child (`cliPath`, `execPath`, `cwd`,
   * `env`, `provider`, `model`, `apiKey`, `args`) are then not used. `stop()` ends the connection;
   * the host closes this client's sessions (their files stay) and keeps running.
   * @default undefined: spawn a child
   */
  socketPath?: string;
}

/** What `openSession` may set; the child's `--model` and thinking level otherwise. */
export interface OpenSessionOptions {
  /** `"provider/id"`. @default the child's `--model` */
  model?: string;
  /** @default the model's default */
  thinkingLevel?: ThinkingLevel;
  /** pi's session name, set at once. */
  name?: string;
}

/**
 * A client for one `lifeline --mode host` child process: many sessions, each driven through its
 * {@link RpcSessionHandle}.
 *
 * Lifecycle as `RpcClient`'s: `start()` once, then calls, then `stop()`; single-use. Every method
 * that talks to the child resolves with the response's data and rejects with `ERR_RPC_FAILED`
 * (the server refused or failed it; the message carries the server's error), `ERR_RPC_TIMEOUT`
 * (no response in `requestTimeoutMs`), `ERR_RPC_EXITED` (the child exited, or `stop()` was
 * called, before the response) or `ERR_RPC_NOT_STARTED`. One session's commands run in call
 * order; different sessions' run side by side in the child.
 */
export class RpcHostClient {
  readonly #connection: HostClientConnection;
  /** The handles of this connection's sessions, by id: one per session while it is open. */
  readonly #handles = new Map<string, RpcSessionHandle>();
  readonly #owner: HandleOwner = {
    handle: (sessionId) => this.session(sessionId),
    closed: (sessionId) => {
      this.#handles.delete(sessionId);
    },
  };

  /**
   * Creates a client; spawns nothing until `start()`.
   * @throws LifelineError `ERR_INVALID_OPTIONS` naming the option, as `RpcClient`'s constructor,
   *   and for an empty `socketPath`.
   */
  constructor(options: RpcHostClientOptions = {}) {
    const { socketPath, ...clientOptions } = options;
    if (socketPath !== undefined && (typeof socketPath !== "string" || socketPath === "")) {
      throw new LifelineError(
        "ERR_INVALID_OPTIONS",
        `RpcHostClient option socketPath must be a non-empty path to a host's socket; got ${JSON.stringify(socketPath)}.`,
      );
    }
    this.#connection = new HostClientConnection(resolveClientOptions(clientOptions), socketPath);
  }

  /** The child's process id once spawned; undefined before start(), and with `socketPath`. */
  get pid(): number | undefined {
    return this.#connection.pid;
  }

  /**
   * Spawns `node <cliPath> --mode host …` (or connects to `socketPath`) and resolves once the
   * host answered a `list_sessions` (which opens no session). Rejects as `RpcClient.start()`
   * does (a socket nothing listens on: `ERR_RPC_EXITED`); a child that did not answer is stopped
   * first. Calling it again returns the first call's promise.
   */
  start(): Promise<void> {
    return this.#connection.start();
  }

  /**
   * Ends the child cleanly: closes its stdin (EOF ends host mode; its sessions are closed, their
   * files stay), then SIGTERM after 2 s, SIGKILL 1 s later. Resolves when it has exited. With
   * `socketPath`: ends the connection (destroyed after 2 s), the host keeps running.
   * Idempotent; never rejects. Pending requests and waits of every session reject with
   * `ERR_RPC_EXITED` at once; later calls reject with `ERR_RPC_NOT_STARTED`.
   */
  stop(): Promise<void> {
    return this.#connection.stop();
  }

  /** The child's stderr so far: its last 64 Ki characters. Still readable after the child exited. */
  getStderr(): string {
    return this.#connection.stderr;
  }

  /**
   * Calls `listener` with every session's events (each carries `sessionId` and `seq`), in order,
   * from now on; after the session's own handle listeners. Returns a function that unsubscribes.
   */
  onEvent(listener: (event: HostEvent) => void): () => void {
    return this.#connection.onEvent(listener);
  }

  /** Opens a new session in the child; resolves with its handle. */
  async openSession(options: OpenSessionOptions = {}): Promise<RpcSessionHandle> {
    const info = await this.#connection.request<HostResponseData["open_session"]>({ type: "open_session", ...options });
    return this.session(info.sessionId);
  }

  /**
   * Resumes a stored session (its id, a unique prefix of one, or its file's path) in the child;
   * resolves with its handle. Rejects with `ERR_RPC_FAILED` for a session no store holds, or one
   * open in another connection of the same host.
   */
  async resumeSession(ref: string): Promise<RpcSessionHandle> {
    const info = await this.#connection.request<HostResponseData["resume_session"]>({ type: "resume_session", ref });
    return this.session(info.sessionId);
  }

  /** The sessions this client holds in the child, the default session (if one was used) first. */
  async listSessions(): Promise<HostSessionInfo[]> {
    return (await this.#connection.request<HostResponseData["list_sessions"]>({ type: "list_sessions" })).sessions;
  }

  /**
   * The handle of session `sessionId`: the same object for as long as it is open, made when
   * there is none (for an id from `listSessions`, or a `fork` sent with `request`). The server
   * refuses commands on an id this connection does not hold (`ERR_RPC_FAILED`).
   */
  session(sessionId: string): RpcSessionHandle {
    let handle = this.#handles.get(sessionId);
    if (handle === undefined) {
      handle = new RpcSessionHandle(this.#connection, this.#owner, sessionId);
      this.#handles.set(sessionId, handle);
    }
    return handle;
  }
}
