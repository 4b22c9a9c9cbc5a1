/**
 * `RpcClient`: drives `lifeline --mode rpc` in a child process over strict JSONL
 * (rpc-protocol.ts, docs/rpc.md "The client"), as pi's RpcClient does, with the
 * fixes its users asked for: a readiness handshake instead of a fixed wait, completion on
 * `agent_settled` instead of the first `agent_end` (a retried prompt has several), a timer per
 * request, and every waiter released at once, with the child's stderr, when the child dies.
 * The class is the command API, one method per command; its options are checked in
 * rpc-client-options.ts, the child and what flows over it are its `RpcConnection`'s
 * (rpc-connection.ts), and the waits for `agent_settled` its `SettleWaits`' (settle-waits.ts).
 */
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import type { Api, Model } from "@mariozechner/pi-ai";
import type { BashResult } from "../../shared/bash/bash-message.js";
import type { AgentSettledEvent, CompactionResult } from "../../shared/events.js";
import type { ThinkingLevel } from "../../shared/thinking.js";
import type { SessionStats } from "../session/state/session-stats.js";
import { CLIENT_DEFAULTS, type RpcClientOptions, resolveClientOptions } from "./rpc-client-options.js";
import type { RpcExtensionUiHandler } from "./rpc-client-ui.js";
import { RpcConnection } from "./rpc-connection.js";
import type {
  RpcCommandOf,
  RpcCommandType,
  RpcEvent,
  RpcResponseData,
  RpcSessionState,
  RpcSlashCommand,
} from "./rpc-protocol.js";
import { SettleWaits } from "./settle-waits.js";

export type { RpcClientOptions } from "./rpc-client-options.js";

/**
 * A client for one `lifeline --mode rpc` child process: one session, driven by pi's commands.
 *
 * Lifecycle: `start()` once, then commands, then `stop()`. A client is single-use: after `stop()`
 * (or a failed `start()`) every call rejects with `ERR_RPC_NOT_STARTED`; after the child died on
 * its own every call rejects with the `ERR_RPC_EXITED` error that reported the death.
 *
 * Every command method resolves with the response's data, and rejects with `ERR_RPC_FAILED` (the
 * server refused or failed it; the message carries the server's error), `ERR_RPC_TIMEOUT` (no
 * response in `requestTimeoutMs`), `ERR_RPC_EXITED` (the child exited, or `stop()` was called,
 * before the response) or `ERR_RPC_NOT_STARTED`. Response data is trusted as the server sent it.
 * Commands are written in call order; RPC mode handles them one at a time, in that order.
 */
export class RpcClient {
  readonly #connection: RpcConnection;
  readonly #waits: SettleWaits;

  /**
   * Creates a client; spawns nothing until `start()`.
   * @throws LifelineError `ERR_INVALID_OPTIONS` naming the option, for an empty `cliPath` or `execPath`, or a
   *   `requestTimeoutMs` that is not a positive number of milliseconds.
   */
  constructor(options: RpcClientOptions = {}) {
    this.#connection = new RpcConnection(resolveClientOptions(options));
    this.#waits = new SettleWaits(this.#connection);
  }

  /** The child's process id once spawned (for diagnostics, and for tests that signal the child); undefined before start(). */
  get pid(): number | undefined {
    return this.#connection.pid;
  }

  /**
   * Spawns `node <cliPath> --mode rpc …` and resolves once the child answered a get_state (a real
   * readiness handshake, not a fixed wait). Rejects with `ERR_RPC_EXITED` (with the child's stderr
   * tail in the message) if the child exits first, `ERR_RPC_TIMEOUT` if it does not answer in
   * requestTimeoutMs; a child that did not answer is then stopped (see `stop()`) before the
   * rejection, so no process outlives a failed start. A child that cannot be spawned at all (a
   * missing `cwd`) also rejects with `ERR_RPC_EXITED`. Calling it again returns the first call's
   * promise (a client never restarts); on a client stopped before it started it rejects with
   * `ERR_RPC_NOT_STARTED`.
   */
  start(): Promise<void> {
    return this.#connection.start();
  }

  /**
   * Ends the child cleanly: closes its stdin (EOF means shut down), then SIGTERM after 2 s,
   * SIGKILL 1 s later. Resolves when it has exited. Idempotent; never rejects. Pending requests
   * and waits reject with `ERR_RPC_EXITED` at once; later calls reject with `ERR_RPC_NOT_STARTED`.
   * Afterwards no timer or handle of this client keeps the process alive.
   */
  stop(): Promise<void> {
    return this.#connection.stop();
  }

  /**
   * Calls `listener` with every event line from the child (never responses), in order, from now
   * on. A listener that throws is reported to `onListenerError` and does not stop delivery.
   * May be called before `start()`. Returns a function that unsubscribes.
   */
  onEvent(listener: (event: RpcEvent) => void): () => void {
    return this.#connection.onEvent(listener);
  }

  /**
   * Answers extensions' `ctx.ui` requests (pi's `extension_ui_request` lines, which never reach
   * `onEvent`): `handler` gets each one, and what it returns or resolves to for a dialog (`select`,
   * `confirm`, `input`, `editor`) is sent back as the `extension_ui_response`. Returning undefined
   * sends nothing (the dialog then ends at its timeout, if it has one); throwing sends
   * `cancelled`. One handler at a time; returns a function that removes it.
   */
  onExtensionUiRequest(handler: RpcExtensionUiHandler): () => void {
    return this.#connection.onExtensionUiRequest(handler);
  }

  /** The child's stderr so far: its last 64 Ki characters. Still readable after the child exited. */
  getStderr(): string {
    return this.#connection.stderr;
  }

  /**
   * Sends a user prompt. Resolves once the server accepted it (the run goes on; its outcome arrives
   * as events ending in `agent_settled`). While a prompt is live the server refuses another
   * (`ERR_RPC_FAILED`) unless `streamingBehavior` says how to deliver it.
   */
  prompt(message: string, options: { streamingBehavior?: "steer" | "followUp" } = {}): Promise<void> {
    const command: RpcCommandOf<"prompt"> = { type: "prompt", message };
    if (options.streamingBehavior !== undefined) command.streamingBehavior = options.streamingBehavior;
    return this.#waits.track(this.#request(command));
  }

  /** Queues a message delivered to the live run before its next model call; on an idle session it starts a prompt. */
  steer(message: string): Promise<void> {
    return this.#waits.track(this.#request({ type: "steer", message }));
  }

  /** Queues a message delivered after the live run ends; on an idle session it starts a prompt. */
  followUp(message: string): Promise<void> {
    return this.#waits.track(this.#request({ type: "follow_up", message }));
  }

  /** Aborts the live run and any retry chain; resolves when the server has done so. */
  abort(): Promise<void> {
    return this.#request({ type: "abort" });
  }

  /** The session's state, with lifeline's retry fields and `isIdle` (false until `agent_settled`). */
  getState(): Promise<RpcSessionState> {
    return this.#request({ type: "get_state" });
  }

  /** The session's transcript as the model sees it. */
  async getMessages(): Promise<AgentMessage[]> {
    return (await this.#request({ type: "get_messages" })).messages;
  }

  /** Switches the session's model; rejects with `ERR_RPC_FAILED` for an unknown one. Resolves with the model. */
  setModel(provider: string, modelId: string): Promise<Model<Api>> {
    return this.#request({ type: "set_model", provider, modelId });
  }

  /** The models the session can switch to. */
  async getAvailableModels(): Promise<Model<Api>[]> {
    return (await this.#request({ type: "get_available_models" })).models;
  }

  /** Turns this session's auto-retry on or off (B5: the server writes no settings file). */
  setAutoRetry(enabled: boolean): Promise<void> {
    return this.#request({ type: "set_auto_retry", enabled });
  }

  /** Ends a live retry chain, sleeping or mid-attempt. */
  abortRetry(): Promise<void> {
    return this.#request({ type: "abort_retry" });
  }

  /**
   * Summarizes the older part of the session's transcript now (pi's `compact`); resolves with the
   * result when the compaction ends. `abort()` cancels it (it then rejects).
   */
  compact(customInstructions?: string): Promise<CompactionResult> {
    return this.#request(
      customInstructions === undefined ? { type: "compact" } : { type: "compact", customInstructions },
    );
  }

  /** Turns this session's compaction on overflow and at the threshold on or off (no settings file is written). */
  setAutoCompaction(enabled: boolean): Promise<void> {
    return this.#request({ type: "set_auto_compaction", enabled });
  }

  /** Sets the session's thinking level (pi's levels), clamped to its model; `getState()` reads the result. */
  setThinkingLevel(level: ThinkingLevel): Promise<void> {
    return this.#request({ type: "set_thinking_level", level });
  }

  /** Moves to the model's next thinking level; resolves with it, or null when the model has no reasoning. */
  cycleThinkingLevel(): Promise<{ level: ThinkingLevel } | null> {
    return this.#request({ type: "cycle_thinking_level" });
  }

  /** Starts a fresh session in the child. */
  newSession(): Promise<{ cancelled: boolean }> {
    return this.#request({ type: "new_session" });
  }

  /** Closes the session and resumes a stored one: a session file path, or an id or a unique prefix of one. */
  switchSession(sessionPath: string): Promise<{ cancelled: boolean }> {
    return this.#request({ type: "switch_session", sessionPath });
  }

  /**
   * Runs `command` with bash in the session's worker (pi's `bash`); resolves with pi's BashResult
   * when it ends. Its output reaches the model with the next prompt. The request timer applies:
   * for long commands give the client a larger `requestTimeoutMs`, or `Infinity`.
   */
  bash(command: string): Promise<BashResult> {
    return this.#request({ type: "bash", command });
  }

  /** Kills the running bash command's process tree; its `bash()` resolves with `cancelled: true`. */
  abortBash(): Promise<void> {
    return this.#request({ type: "abort_bash" });
  }

  /** The text of the session's last assistant message, or null when there is none. */
  async getLastAssistantText(): Promise<string | null> {
    // The wire leaves `text` out when there is none (pi's `{}`).
    return (await this.#request({ type: "get_last_assistant_text" })).text ?? null;
  }

  /** pi's session statistics: counts, tokens and cost (failed attempts included), context usage. */
  getSessionStats(): Promise<SessionStats> {
    return this.#request({ type: "get_session_stats" });
  }

  /** Switches to the next available model (pi's `cycle_model`); null when there is only one. */
  cycleModel(): Promise<RpcResponseData["cycle_model"]> {
    return this.#request({ type: "cycle_model" });
  }

  /** How queued steering messages are delivered: all at once, or one per turn (this session only). */
  setSteeringMode(mode: "all" | "one-at-a-time"): Promise<void> {
    return this.#request({ type: "set_steering_mode", mode });
  }

  /** How queued follow-up messages are delivered: all at once, or one per turn (this session only). */
  setFollowUpMode(mode: "all" | "one-at-a-time"): Promise<void> {
    return this.#request({ type: "set_follow_up_mode", mode });
  }

  /** Names the session (pi's `session_info` entry); a blank name is refused. */
  setSessionName(name: string): Promise<void> {
    return this.#request({ type: "set_session_name", name });
  }

  /** The commands a prompt can invoke: always empty in lifeline (docs/rpc.md). */
  async getCommands(): Promise<RpcSlashCommand[]> {
    return (await this.#request({ type: "get_commands" })).commands;
  }

  /** Replaces the session with a new file holding what came before the user message `entryId`; resolves with that message's text. */
  fork(entryId: string): Promise<{ text: string; cancelled: boolean }> {
    return this.#request({ type: "fork", entryId });
  }

  /** Replaces the session with a copy of it in a new file. */
  clone(): Promise<{ cancelled: boolean }> {
    return this.#request({ type: "clone" });
  }

  /** The user messages a fork can start from, with their entry ids. */
  async getForkMessages(): Promise<{ entryId: string; text: string }[]> {
    return (await this.#request({ type: "get_fork_messages" })).messages;
  }

  /**
   * Writes the transcript as a self-contained HTML page; resolves with the file's path as pi
   * answers it: `outputPath` as given (relative to the child's cwd), or the default file name.
   */
  async exportHtml(outputPath?: string): Promise<string> {
    return (
      await this.#request(outputPath === undefined ? { type: "export_html" } : { type: "export_html", outputPath })
    ).path;
  }

  /**
   * Resolves with the next agent_settled (NOT the first agent_end: under auto-retry a prompt has
   * several). If the session is idle when called (get_state isIdle) and no settle is pending (no
   * prompt, steer or follow_up of this client still awaits its response), resolves with undefined. Rejects with
   * `ERR_RPC_TIMEOUT` after `timeoutMs` or `ERR_RPC_EXITED` if the child dies (or `stop()` is
   * called); `ERR_RPC_NOT_STARTED` outside start()…stop().
   * @param timeoutMs @default 60000; `Infinity` waits without limit
   */
  waitForIdle(timeoutMs: number = CLIENT_DEFAULTS.waitTimeoutMs): Promise<AgentSettledEvent | undefined> {
    return this.#waits.idle(timeoutMs);
  }

  /**
   * Every event from now until and including the next agent_settled. Does not look at the state:
   * called on an idle session it waits for a settle until `timeoutMs`. Rejects like `waitForIdle`.
   * @param timeoutMs @default 60000; `Infinity` waits without limit
   */
  collectEvents(timeoutMs: number = CLIENT_DEFAULTS.waitTimeoutMs): Promise<RpcEvent[]> {
    return this.#waits.collect(timeoutMs);
  }

  /**
   * Subscribes first (no race), sends the prompt, resolves with the events through agent_settled.
   * A refused prompt rejects with `ERR_RPC_FAILED`; otherwise rejects like `waitForIdle`. The
   * timeout covers the whole exchange, response and run.
   * @param timeoutMs @default 60000; `Infinity` waits without limit
   */
  promptAndWait(
    message: string,
    timeoutMs: number = CLIENT_DEFAULTS.waitTimeoutMs,
  ): Promise<{ events: RpcEvent[]; settled: AgentSettledEvent }> {
    return this.#waits.promptAndWait(() => this.prompt(message), timeoutMs);
  }

  /** Sends one command with a fresh id and resolves with its response's data. */
  #request<K extends RpcCommandType>(command: RpcCommandOf<K>): Promise<RpcResponseData[K]> {
    return this.#connection.request(command);
  }
}
