/**
 * `lifeline --mode rpc`: one session driven over stdin/stdout in pi's RPC protocol
 * (rpc-protocol.ts, ../shared/research/pi-rpc-protocol.md §2), with the fixes its users asked for:
 * `agent_settled` as a reliable completion signal, and the retry state in `get_state` (B4).
 *
 * stdout carries protocol records only: the real stdout is taken over at start, so anything else
 * that writes to it (a worker's console.log, a library's progress line) goes to stderr instead.
 * Every line on stdin gets exactly one response, whatever it holds; commands are handled one at a
 * time, in order. EOF on stdin, SIGTERM or SIGHUP shut the session down and end the process.
 */
import { resolve } from "node:path";
import { errorText } from "../../shared/error-text.js";
import { LifelineError } from "../../shared/errors.js";
import { FileAuthStorage } from "../auth/file-auth-storage.js";
import { createSessionHost, type SessionHost, type SessionHostOptions } from "../host/session-host.js";
import { type CliSessionFlags, openCliSession } from "../host/sessions-cli.js";
import type { AgentSession } from "../session/agent-session.js";
import { attachJsonlReader, serializeJsonLine } from "./jsonl.js";
import {
  type RpcCommandOf,
  type RpcCommandType,
  type RpcResponseData,
  type RpcSessionState,
  rpcCommandSchemas,
} from "./rpc-protocol.js";

/** Options of {@link runRpcMode}. */
export interface RpcModeOptions {
  /** `"provider/id"` of the session's model. @default "demo/demo-1" */
  model?: string;
  apiKey?: string;
  host?: SessionHostOptions;
  input?: NodeJS.ReadableStream;
  /** Where protocol records go. @default process.stdout, taken over (see the module comment) */
  output?: (line: string) => void;
  /** Diagnostics. @default process.stderr */
  errors?: (text: string) => void;
  /** Longest accepted command line in bytes. @default 8 MiB */
  maxLineBytes?: number;
  /** The CLI's -c / --session: the first session is resumed instead of created (see cli-sessions.ts). */
  sessionFlags?: CliSessionFlags;
}

/**
 * Runs RPC mode until stdin ends or a termination signal arrives; resolves with the exit code:
 * 0 after EOF, 143 after SIGTERM, 129 after SIGHUP (as pi), 2 when the session cannot be created
 * (bad model, key or settings; the reason is on stderr).
 */
export async function runRpcMode(options: RpcModeOptions = {}): Promise<number> {
  const errors = options.errors ?? ((text: string) => process.stderr.write(text));
  const output = options.output ?? takeOverStdout();
  const host = createSessionHost(options.host);
  const server = new RpcServer(host, output, errors, options);
  try {
    await server.open(options.model ?? "demo/demo-1");
  } catch (error) {
    errors(`Error: ${errorText(error)}\n`);
    await host.close();
    return 2;
  }
  const input = options.input ?? process.stdin;
  const code = await new Promise<number>((resolve) => {
    const signals: [NodeJS.Signals, number][] = [
      ["SIGTERM", 143],
      ["SIGHUP", 129],
    ];
    const handlers = signals.map(([signal, exitCode]) => {
      const handler = () => finish(exitCode);
      process.once(signal, handler);
      return [signal, handler] as const;
    });
    let finished = false;
    const finish = (exitCode: number) => {
      if (finished) return;
      finished = true;
      for (const [signal, handler] of handlers) process.off(signal, handler);
      detach();
      server.close();
      resolve(exitCode);
    };
    const detach = attachJsonlReader(
      input,
      {
        line: (text) => server.receive(text),
        oversize: ({ bytes, head }) =>
          server.refuse(head, `Line of ${bytes} bytes exceeds the limit; send smaller commands.`),
        end: (partial) => {
          if (partial !== undefined && partial.trim() !== "") {
            server.refuse(
              partial,
              "The input ended inside a line: every command must end with a newline (LF). It was not run.",
            );
          }
          void server.drained().then(() => finish(0));
        },
      },
      options.maxLineBytes === undefined ? {} : { maxLineBytes: options.maxLineBytes },
    );
  });
  await server.drained();
  await host.close();
  if (options.input === undefined && "unref" in process.stdin) process.stdin.unref?.();
  return code;
}

/** The session and the command queue behind RPC mode. */
class RpcServer {
  readonly #host: SessionHost;
  readonly #write: (line: string) => void;
  readonly #apiKey: string | undefined;
  readonly #errors: (text: string) => void;
  /** Used by the first open only; new_session always creates. */
  #sessionFlags: CliSessionFlags;
  #session: AgentSession | undefined;
  #unsubscribe: () => void = () => {};
  /** Commands run one at a time, in arrival order. */
  #tail: Promise<void> = Promise.resolve();
  #closing = false;

  constructor(
    host: SessionHost,
    write: (line: string) => void,
    errors: (text: string) => void,
    options: RpcModeOptions,
  ) {
    this.#host = host;
    this.#write = write;
    this.#errors = errors;
    this.#apiKey = options.apiKey;
    this.#sessionFlags = options.sessionFlags ?? {};
  }

  /** Creates the session (again, for new_session) and forwards its events. */
  async open(model: string): Promise<void> {
    const session = await openCliSession(this.#host, this.#sessionFlags, {
      model,
      ...(this.#apiKey === undefined ? {} : { apiKey: this.#apiKey }),
    });
    this.#sessionFlags = {};
    this.#unsubscribe();
    this.#session = session;
    this.#unsubscribe = session.subscribe((event) => this.#send(event));
  }

  /**
   * Resumes a stored session in place of `current`. The current one stays if the other cannot be
   * opened, unless it is the same file (it must be closed first: its lock is this process's).
   */
  async #switchTo(ref: string, current: AgentSession): Promise<void> {
    const same = current.sessionFile !== undefined && resolve(ref) === current.sessionFile;
    if (same) await current.dispose();
    const next = await this.#host.resumeSession(ref);
    if (!same) await current.dispose();
    this.#unsubscribe();
    this.#session = next;
    this.#unsubscribe = next.subscribe((event) => this.#send(event));
  }

  /** Handles one input line: parse, validate, queue. Exactly one response per non-blank line. */
  receive(text: string): void {
    if (text.trim() === "") return;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      this.refuse(text, `Failed to parse command: ${errorText(error)}. Send one JSON object per line.`);
      return;
    }
    if (value === null || typeof value !== "object" || Array.isArray(value)) {
      this.refuse(text, 'Failed to parse command: a command is a JSON object like {"type": "get_state"}.');
      return;
    }
    const record = value as Record<string, unknown>;
    const id = typeof record.id === "string" ? record.id : undefined;
    const type = record.type;
    if (typeof type !== "string" || !(type in rpcCommandSchemas)) {
      const command = typeof type === "string" ? type : "parse";
      const problem = typeof type === "string" ? `Unknown command: ${type}.` : 'The command has no string "type".';
      this.#answer({ id, command, error: `${problem} Supported: ${Object.keys(rpcCommandSchemas).join(", ")}.` });
      return;
    }
    const commandType = type as RpcCommandType;
    const parsed = rpcCommandSchemas[commandType].safeParse(value);
    if (!parsed.success) {
      const problems = parsed.error.issues.map((issue) => `${issue.path.join(".") || "(command)"}: ${issue.message}`);
      this.#answer({ id, command: commandType, error: `Invalid ${commandType}: ${problems.join("; ")}.` });
      return;
    }
    const command = parsed.data;
    this.#tail = this.#tail.then(() => this.#run(commandType, command, id));
  }

  /** Answers a line that cannot run, echoing its id when one can be read. */
  refuse(text: string, error: string): void {
    this.#answer({ id: readId(text), command: "parse", error });
  }

  /** Stops reporting prompts that end without settling: shutting down ends them on purpose. */
  close(): void {
    this.#closing = true;
  }

  /** Resolves when every accepted command has been answered. */
  drained(): Promise<void> {
    return this.#tail;
  }

  /** Queues a refusal behind the commands before it, so responses keep the input's order. */
  #answer(response: { id: string | undefined; command: string; error: string }): void {
    this.#tail = this.#tail.then(() => this.#respond(response));
  }

  async #run(type: RpcCommandType, command: unknown, id: string | undefined): Promise<void> {
    if (type === "compact") {
      this.#compact(command as RpcCommandOf<"compact">, id);
      return;
    }
    try {
      const data = await this.#handle(type, command);
      this.#respond({ id, command: type, data });
    } catch (error) {
      this.#respond({ id, command: type, error: errorText(error) });
    }
  }

  async #handle(type: RpcCommandType, command: unknown): Promise<RpcResponseData[RpcCommandType]> {
    if (type === "auth_list" || type === "auth_add" || type === "auth_remove") return this.#auth(command);
    // Reading commands and new_session work on an ended session; the others need a live one.
    const readOnly = type === "get_state" || type === "get_messages" || type === "get_last_assistant_text";
    const session =
      readOnly || type === "new_session" || type === "switch_session" || type === "get_available_models"
        ? this.#current()
        : this.#live();
    switch (type) {
      case "prompt": {
        const { message, streamingBehavior } = command as RpcCommandOf<"prompt">;
        if (!session.isBusy) return this.#startPrompt(session, message);
        if (streamingBehavior === undefined) {
          const state = session.isRetrying
            ? `waiting in a retry chain (attempt ${session.retryAttempt})`
            : session.isCompacting
              ? "compacting"
              : "streaming";
          throw new LifelineError(
            "ERR_SESSION_BUSY",
            `The session is ${state}. Send the prompt with "streamingBehavior": "steer" or "followUp", wait for agent_settled, or abort.`,
          );
        }
        await session.queueMessage(streamingBehavior, message);
        return undefined;
      }
      case "steer":
      case "follow_up": {
        const { message } = command as RpcCommandOf<"steer">;
        if (!session.isBusy) return this.#startPrompt(session, message);
        await session.queueMessage(type === "steer" ? "steer" : "followUp", message);
        return undefined;
      }
      case "abort":
        await session.abort();
        return undefined;
      case "get_state":
        return stateOf(session);
      case "get_messages":
        return { messages: [...session.messages] };
      case "set_model": {
        const { provider, modelId } = command as RpcCommandOf<"set_model">;
        return session.setModel({ provider, id: modelId });
      }
      case "get_available_models":
        return { models: await this.#host.availableModels() };
      case "set_auto_retry":
        // B5: this session only; nothing is written to the settings file.
        session.setAutoRetryEnabled((command as RpcCommandOf<"set_auto_retry">).enabled);
        return undefined;
      case "abort_retry":
        session.abortRetry();
        return undefined;
      case "set_auto_compaction":
        // B5, unlike pi: this session only; nothing is written to the settings file.
        session.setAutoCompactionEnabled((command as RpcCommandOf<"set_auto_compaction">).enabled);
        return undefined;
      case "compact":
        // Started by #run without waiting (see #compact); never reaches here.
        return session.compact((command as RpcCommandOf<"compact">).customInstructions);
      case "new_session": {
        const model = `${session.model.provider}/${session.model.id}`;
        await session.dispose();
        this.#unsubscribe();
        await this.open(model);
        return { cancelled: false };
      }
      case "switch_session":
        await this.#switchTo((command as RpcCommandOf<"switch_session">).sessionPath, session);
        return { cancelled: false };
      case "get_last_assistant_text":
        return { text: lastAssistantText(session) };
      default: {
        const unreachable: never = type;
        return unreachable;
      }
    }
  }

  /** lifeline's auth commands, on the host's auth.json; they need no session. */
  async #auth(command: unknown): Promise<RpcResponseData["auth_list" | "auth_add" | "auth_remove"]> {
    const storage = this.#host.authStorage;
    if (!(storage instanceof FileAuthStorage)) {
      throw new LifelineError(
        "ERR_INVALID_OPTIONS",
        "This host's auth storage is not an auth.json file (the host has lifelineDir: false or its own authStorage).",
      );
    }
    const typed = command as RpcCommandOf<"auth_list"> | RpcCommandOf<"auth_add"> | RpcCommandOf<"auth_remove">;
    switch (typed.type) {
      case "auth_list":
        return { credentials: storage.list(), path: storage.path };
      case "auth_add":
        return { provider: typed.provider, index: await storage.add(typed.provider, typed.key) };
      case "auth_remove":
        return { provider: typed.provider, removed: await storage.remove(typed.provider, typed.index) };
    }
  }

  /**
   * Starts a compaction in the order of the input and answers when it ends (with pi's
   * `CompactionResult`, or the error), without holding up the commands after it: an `abort`
   * sent meanwhile must reach the session to cancel it.
   */
  #compact(command: RpcCommandOf<"compact">, id: string | undefined): void {
    let done: Promise<RpcResponseData["compact"]>;
    try {
      done = this.#live().compact(command.customInstructions);
    } catch (error) {
      this.#respond({ id, command: "compact", error: errorText(error) });
      return;
    }
    done.then(
      (data) => this.#respond({ id, command: "compact", data }),
      (error: unknown) => this.#respond({ id, command: "compact", error: errorText(error) }),
    );
  }

  /**
   * Accepts a prompt; its failures arrive as events, never as a second response. The response
   * goes out once the user message is stored (B7: accepted means durable).
   */
  async #startPrompt(session: AgentSession, message: string): Promise<undefined> {
    session.prompt(message).catch((error: unknown) => {
      if (this.#closing) return;
      // The runtime could not serve it (session given up or disposed): listeners already saw
      // worker_exited; say it on stderr too, since no response can follow an accepted prompt.
      this.#errors(`lifeline rpc: prompt ended without settling: ${errorText(error)}\n`);
    });
    await session.flushSession();
    return undefined;
  }

  #current(): AgentSession {
    if (this.#session === undefined) throw new LifelineError("ERR_SESSION_DISPOSED", "No session is open.");
    return this.#session;
  }

  /** The session, for commands that need it alive. */
  #live(): AgentSession {
    const session = this.#current();
    if (session.isClosed) {
      throw new LifelineError(
        "ERR_SESSION_DISPOSED",
        "The session has ended (it was given up after its worker kept failing; see the worker_exited event). Send new_session to start a fresh one.",
      );
    }
    return session;
  }

  #respond(response: { id: string | undefined; command: string; data?: unknown; error?: string }): void {
    const base = response.id === undefined ? {} : { id: response.id };
    if (response.error !== undefined) {
      this.#send({ ...base, type: "response", command: response.command, success: false, error: response.error });
      return;
    }
    this.#send({
      ...base,
      type: "response",
      command: response.command,
      success: true,
      ...(response.data === undefined ? {} : { data: response.data }),
    });
  }

  #send(record: object): void {
    this.#write(serializeJsonLine(record));
  }
}

function stateOf(session: AgentSession): RpcSessionState {
  return {
    model: session.model,
    thinkingLevel: "off",
    isStreaming: session.isStreaming,
    isCompacting: session.isCompacting,
    steeringMode: "one-at-a-time",
    followUpMode: "one-at-a-time",
    sessionId: session.id,
    ...(session.sessionFile === undefined ? {} : { sessionFile: session.sessionFile }),
    autoCompactionEnabled: session.autoCompactionEnabled,
    messageCount: session.messages.length,
    pendingMessageCount: session.pendingMessageCount,
    autoRetryEnabled: session.autoRetryEnabled,
    isRetrying: session.isRetrying,
    retryAttempt: session.retryAttempt,
    isIdle: !session.isBusy,
    ...session.coordinationState,
  };
}

function lastAssistantText(session: AgentSession): string | null {
  for (let i = session.messages.length - 1; i >= 0; i--) {
    const message = session.messages[i];
    if (message?.role !== "assistant") continue;
    const text = message.content.map((block) => (block.type === "text" ? block.text : "")).join("");
    if (text !== "") return text;
  }
  return null;
}

/** The `"id": "…"` of a line that could not be parsed, when it has a readable one. */
function readId(text: string): string | undefined {
  const match = /"id"\s*:\s*"((?:[^"\\]|\\.){0,1000})"/.exec(text);
  if (match?.[1] === undefined) return undefined;
  try {
    return JSON.parse(`"${match[1]}"`) as string;
  } catch {
    return undefined;
  }
}

/**
 * Makes stdout the protocol's alone: returns a writer to the real stdout and sends every other
 * write to process.stdout (a worker's console output is piped there) to stderr.
 */
function takeOverStdout(): (line: string) => void {
  const stdout = process.stdout;
  const write = stdout.write.bind(stdout);
  stdout.write = ((chunk: string | Uint8Array, ...rest: unknown[]) =>
    (process.stderr.write as (chunk: string | Uint8Array, ...args: unknown[]) => boolean)(
      chunk,
      ...rest,
    )) as typeof stdout.write;
  return (line) => {
    write(line);
  };
}
