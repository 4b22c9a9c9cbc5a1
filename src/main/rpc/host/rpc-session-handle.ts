/**
 * `RpcSessionHandle`: one session of an `RpcHostClient`'s `lifeline --mode host` child. Every
 * command it sends carries its `sessionId`; its events and waits see that session's events only
 * (the connection routes them by `sessionId`, host-client-connection.ts). The waits for
 * `agent_settled` are `RpcClient`'s (../settle-waits.ts), over this session's route.
 */
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import type { Api, Model } from "@mariozechner/pi-ai";
import { LifelineError } from "../../../shared/errors.js";
import type { AgentSettledEvent, CompactionResult } from "../../../shared/events.js";
import type { ThinkingLevel } from "../../../shared/thinking.js";
import type { SessionStats } from "../../session/state/session-stats.js";
import { CLIENT_DEFAULTS } from "../rpc-client-options.js";
import type { RpcCommandOf, RpcCommandType, RpcSessionState } from "../rpc-protocol.js";
import { SettleWaits } from "../settle-waits.js";
import type { HostClientConnection, SessionRoute } from "./host-client-connection.js";
import type { HostEvent, HostResponseData } from "./host-protocol.js";

/** What a handle needs of its client besides the connection: handles for the sessions it makes, and its own end. */
export interface HandleOwner {
  /** The handle of `sessionId` (made when there is none). */
  handle(sessionId: string): RpcSessionHandle;
  /** `sessionId` was closed: forget its handle. */
  closed(sessionId: string): void;
}

/**
 * One session of an `RpcHostClient`, got from `openSession`, `resumeSession`, `session`, `fork`
 * or `clone`. Its command methods resolve with the response's data and reject as the client's do
 * (`ERR_RPC_FAILED`, `ERR_RPC_TIMEOUT`, `ERR_RPC_EXITED`, `ERR_RPC_NOT_STARTED`); after `close()`
 * every call rejects with `ERR_SESSION_DISPOSED`. The session's commands run in the order they are
 * sent; other sessions' run beside them.
 */
export class RpcSessionHandle {
  /** The session's stored id (what `lifeline sessions` shows and `resumeSession` takes). */
  readonly sessionId: string;
  readonly #connection: HostClientConnection;
  readonly #owner: HandleOwner;
  readonly #route: SessionRoute;
  readonly #waits: SettleWaits;
  #closed = false;

  /** Made by `RpcHostClient`; not for direct use. */
  constructor(connection: HostClientConnection, owner: HandleOwner, sessionId: string) {
    this.sessionId = sessionId;
    this.#connection = connection;
    this.#owner = owner;
    this.#route = connection.route(sessionId);
    this.#waits = new SettleWaits({
      assertUsable: (method) => this.#assertUsable(method),
      watch: (timeoutMs, step) => this.#route.watches.watch(timeoutMs, "agent_settled", step),
      request: (command) => this.request(command),
    });
  }

  /** Whether `close()` has closed the session (every call then rejects with `ERR_SESSION_DISPOSED`). */
  get closed(): boolean {
    return this.#closed;
  }

  /**
   * Calls `listener` with every event of this session (never another session's, never responses),
   * in order, from now on. A listener that throws is reported to `onListenerError` and does not
   * stop delivery. Returns a function that unsubscribes.
   */
  onEvent(listener: (event: HostEvent) => void): () => void {
    return this.#route.listeners.add(listener);
  }

  /**
   * Sends pi's command `command` on this session (its `sessionId` is added) and resolves with the
   * response's data: for the commands without a method of their own. `fork` and `clone` sent this
   * way answer the new session's id in `data.sessionId` (`session(id)` gives its handle);
   * `new_session` and `switch_session` are refused unless this is the connection's default session.
   */
  request<K extends RpcCommandType>(command: RpcCommandOf<K>): Promise<HostResponseData[K]> {
    if (this.#closed) return Promise.reject(this.#closedError(command.type));
    return this.#connection.request<HostResponseData[K]>({ ...command, sessionId: this.sessionId });
  }

  /** Sends a user prompt; resolves once the server accepted it (see `RpcClient.prompt`). */
  prompt(message: string, options: { streamingBehavior?: "steer" | "followUp" } = {}): Promise<void> {
    const command: RpcCommandOf<"prompt"> = { type: "prompt", message };
    if (options.streamingBehavior !== undefined) command.streamingBehavior = options.streamingBehavior;
    return this.#waits.track(this.request(command));
  }

  /** Queues a message delivered to the live run before its next model call; on an idle session it starts a prompt. */
  steer(message: string): Promise<void> {
    return this.#waits.track(this.request({ type: "steer", message }));
  }

  /** Queues a message delivered after the live run ends; on an idle session it starts a prompt. */
  followUp(message: string): Promise<void> {
    return this.#waits.track(this.request({ type: "follow_up", message }));
  }

  /** Aborts the session's live run and any retry chain; resolves when the server has done so. */
  abort(): Promise<void> {
    return this.request({ type: "abort" });
  }

  /** The session's state, with lifeline's retry fields and `isIdle` (false until `agent_settled`). */
  getState(): Promise<RpcSessionState> {
    return this.request({ type: "get_state" });
  }

  /** The session's transcript as the model sees it. */
  async getMessages(): Promise<AgentMessage[]> {
    return (await this.request({ type: "get_messages" })).messages;
  }

  /** The text of the session's last assistant message, or null when there is none. */
  async getLastAssistantText(): Promise<string | null> {
    return (await this.request({ type: "get_last_assistant_text" })).text ?? null;
  }

  /** pi's session statistics: counts, tokens and cost, context usage. */
  getSessionStats(): Promise<SessionStats> {
    return this.request({ type: "get_session_stats" });
  }

  /** Switches the session's model; rejects with `ERR_RPC_FAILED` for an unknown one. Resolves with the model. */
  setModel(provider: string, modelId: string): Promise<Model<Api>> {
    return this.request({ type: "set_model", provider, modelId });
  }

  /** Sets the session's thinking level, clamped to its model. */
  setThinkingLevel(level: ThinkingLevel): Promise<void> {
    return this.request({ type: "set_thinking_level", level });
  }

  /** Names the session; a blank name is refused. */
  setSessionName(name: string): Promise<void> {
    return this.request({ type: "set_session_name", name });
  }

  /** Summarizes the older part of the transcript now; resolves with the result when the compaction ends. */
  compact(customInstructions?: string): Promise<CompactionResult> {
    return this.request(
      customInstructions === undefined ? { type: "compact" } : { type: "compact", customInstructions },
    );
  }

  /** The user messages a fork can start from, with their entry ids. */
  async getForkMessages(): Promise<{ entryId: string; text: string }[]> {
    return (await this.request({ type: "get_fork_messages" })).messages;
  }

  /**
   * A new session beside this one holding what came before the user message `entryId` (this one
   * stays open and usable); resolves with its handle and that message's text.
   */
  async fork(entryId: string): Promise<{ session: RpcSessionHandle; text: string }> {
    const data = await this.request({ type: "fork", entryId });
    return { session: this.#owner.handle(data.sessionId), text: data.text };
  }

  /** A new session beside this one with a copy of its transcript (this one stays open); resolves with its handle. */
  async clone(): Promise<RpcSessionHandle> {
    const data = await this.request({ type: "clone" });
    return this.#owner.handle(data.sessionId);
  }

  /**
   * Closes the session in the child (a live prompt is aborted; its file stays: `resumeSession`
   * opens it again, with a new handle). Resolves when the server has closed it; this session's
   * waits then reject with `ERR_SESSION_DISPOSED`, as every later call does. Closing a closed
   * handle resolves at once.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    await this.#connection.request({ type: "close_session", sessionId: this.sessionId });
    this.#closed = true;
    this.#owner.closed(this.sessionId);
    this.#connection.dropRoute(this.sessionId, this.#closedError("a wait"));
  }

  /**
   * Resolves with this session's next agent_settled, or undefined when it is idle and no prompt
   * of this handle awaits its response (see `RpcClient.waitForIdle`).
   * @param timeoutMs @default 60000; `Infinity` waits without limit
   */
  waitForIdle(timeoutMs: number = CLIENT_DEFAULTS.waitTimeoutMs): Promise<AgentSettledEvent | undefined> {
    return this.#waits.idle(timeoutMs);
  }

  /**
   * Every event of this session from now until and including its next agent_settled.
   * @param timeoutMs @default 60000; `Infinity` waits without limit
   */
  async collectEvents(timeoutMs: number = CLIENT_DEFAULTS.waitTimeoutMs): Promise<HostEvent[]> {
    // The route hands this session's watches host events only.
    return (await this.#waits.collect(timeoutMs)) as HostEvent[];
  }

  /**
   * Subscribes first, sends the prompt, resolves with this session's events through its
   * agent_settled. The timeout covers the whole exchange (see `RpcClient.promptAndWait`).
   * @param timeoutMs @default 60000; `Infinity` waits without limit
   */
  async promptAndWait(
    message: string,
    timeoutMs: number = CLIENT_DEFAULTS.waitTimeoutMs,
  ): Promise<{ events: HostEvent[]; settled: AgentSettledEvent }> {
    const { events, settled } = await this.#waits.promptAndWait(() => this.prompt(message), timeoutMs);
    return { events: events as HostEvent[], settled };
  }

  #assertUsable(method: string): void {
    if (this.#closed) throw this.#closedError(method);
    this.#connection.assertUsable(method);
  }

  #closedError(what: string): LifelineError {
    return new LifelineError(
      "ERR_SESSION_DISPOSED",
      `${what} on session ${this.sessionId}: its RpcSessionHandle was closed. Use resumeSession("${this.sessionId}") for a new handle.`,
    );
  }
}
