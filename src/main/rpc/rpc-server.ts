/**
 * RPC mode's command queue: turns each input line into exactly one response line, in input
 * order, and writes the session's events between them (docs/rpc.md, "Commands and responses",
 * "Bad input"). What each command does is in rpc-commands.ts; the process around it (stdin,
 * stdout, signals, exit codes) in rpc-mode.ts.
 */
import { errorText } from "../../shared/failures/error-text.js";
import type { SessionHost } from "../host/session-host.js";
import { serializeJsonLine } from "./jsonl.js";
import { DETACHED_COMMANDS, type RpcCommandContext, rpcCommands } from "./rpc-commands.js";
import type { RpcExtensionUi } from "./rpc-extension-ui.js";
import {
  isRpcCommandType,
  parseRpcCommand,
  type RpcCommandOf,
  type RpcCommandType,
  type RpcResponseData,
  rpcCommandSchemas,
} from "./rpc-protocol.js";
import { RpcSessionSlot, type RpcSessionSlotOptions } from "./rpc-session-slot.js";

/** A response before it is written: `data` on success, `error` on failure. */
interface PendingResponse {
  id: string | undefined;
  command: string;
  data?: unknown;
  error?: string;
}

/** The session and the command queue behind RPC mode. */
export class RpcServer {
  readonly #write: (line: string) => void;
  readonly #session: RpcSessionSlot;
  readonly #context: RpcCommandContext;
  /** Where `extension_ui_response` lines go: they answer a dialog, not a command. */
  readonly #ui: RpcExtensionUi | undefined;
  /** Commands run one at a time, in arrival order. */
  #tail: Promise<void> = Promise.resolve();
  #closing = false;

  /**
   * @param write receives every protocol record, one serialized JSONL line at a time.
   * @param errors receives diagnostics (stderr in the CLI).
   */
  constructor(
    host: SessionHost,
    write: (line: string) => void,
    errors: (text: string) => void,
    options: RpcSessionSlotOptions & { ui?: RpcExtensionUi },
  ) {
    this.#write = write;
    this.#ui = options.ui;
    this.#session = new RpcSessionSlot(host, (event) => this.#send(event), options);
    this.#context = {
      host,
      session: this.#session,
      promptEndedUnsettled: (error) => {
        if (this.#closing) return;
        // The runtime could not serve it (session given up or disposed): listeners already saw
        // worker_exited; say it on stderr too, since no response can follow an accepted prompt.
        errors(`lifeline rpc: prompt ended without settling: ${errorText(error)}\n`);
      },
    };
  }

  /** Opens the first session on `model` ("provider/id"). @throws what opening a session throws. */
  open(model: string): Promise<void> {
    return this.#session.open(model);
  }

  /**
   * Handles one input line: parse, validate, queue. Exactly one response per non-blank line, but
   * for `extension_ui_response` lines, which answer an extension's dialog at once (not queued
   * behind commands: the command waiting may be the prompt whose tool asked) and get none, as in pi.
   */
  receive(text: string): void {
    if (text.trim() === "") return;
    const value = parseCommandLine(text, "get_state");
    if (typeof value === "string") {
      this.refuse(text, value);
      return;
    }
    const type = "type" in value ? value.type : undefined;
    if (type === "extension_ui_response" && this.#ui !== undefined) {
      this.#ui.receive(value as Record<string, unknown>);
      return;
    }
    const id = "id" in value && typeof value.id === "string" ? value.id : undefined;
    if (typeof type !== "string" || !isRpcCommandType(type)) {
      const command = typeof type === "string" ? type : "parse";
      const problem = typeof type === "string" ? `Unknown command: ${type}.` : 'The command has no string "type".';
      this.#answer({ id, command, error: `${problem} Supported: ${Object.keys(rpcCommandSchemas).join(", ")}.` });
      return;
    }
    this.#accept(type, value, id);
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

  /** Validates a command of a known type and queues it, or answers why it is invalid. */
  #accept<K extends RpcCommandType>(type: K, value: object, id: string | undefined): void {
    const parsed = parseRpcCommand(type, value);
    if (!parsed.success) {
      const problems = parsed.error.issues.map((issue) => `${issue.path.join(".") || "(command)"}: ${issue.message}`);
      this.#answer({ id, command: type, error: `Invalid ${type}: ${problems.join("; ")}.` });
      return;
    }
    const command = parsed.data;
    this.#tail = this.#tail.then(() => this.#run(type, command, id));
  }

  /** Queues a refusal behind the commands before it, so responses keep the input's order. */
  #answer(response: { id: string | undefined; command: string; error: string }): void {
    this.#tail = this.#tail.then(() => this.#respond(response));
  }

  async #run<K extends RpcCommandType>(type: K, command: RpcCommandOf<K>, id: string | undefined): Promise<void> {
    if (DETACHED_COMMANDS.has(type)) {
      this.#runDetached(type, command, id);
      return;
    }
    try {
      const data = await rpcCommands[type](command, this.#context);
      this.#respond({ id, command: type, data });
    } catch (error) {
      this.#respond({ id, command: type, error: errorText(error) });
    }
  }

  /** Starts a detached command now and answers when it ends, without holding up the queue. */
  #runDetached<K extends RpcCommandType>(type: K, command: RpcCommandOf<K>, id: string | undefined): void {
    let done: Promise<RpcResponseData[K]>;
    try {
      done = rpcCommands[type](command, this.#context);
    } catch (error) {
      this.#respond({ id, command: type, error: errorText(error) });
      return;
    }
    done.then(
      (data) => this.#respond({ id, command: type, data }),
      (error: unknown) => this.#respond({ id, command: type, error: errorText(error) }),
    );
  }

  #respond(response: PendingResponse): void {
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

/**
 * A command line as a JSON object, or the refusal to answer it with (not JSON; JSON but not an
 * object, whose example names `exampleType`). Shared by RPC mode and host mode.
 */
export function parseCommandLine(text: string, exampleType: string): object | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return `Failed to parse command: ${errorText(error)}. Send one JSON object per line.`;
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return `Failed to parse command: a command is a JSON object like {"type": "${exampleType}"}.`;
  }
  return value;
}

/** The `"id": "…"` of a line that could not be parsed, when it has a readable one. */
export function readId(text: string): string | undefined {
  const match = /"id"\s*:\s*"((?:[^"\\]|\\.){0,1000})"/.exec(text);
  if (match?.[1] === undefined) return undefined;
  try {
    const id: unknown = JSON.parse(`"${match[1]}"`);
    return typeof id === "string" ? id : undefined;
  } catch {
    return undefined;
  }
}
