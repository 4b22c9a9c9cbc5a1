/**
 * One client of `lifeline --mode host` (docs/rpc.md, "Many sessions in one process"): its lines
 * in, its records out through a bounded {@link ConnectionOutput}, and the sessions it holds.
 *
 * Every non-blank line gets exactly one response. A command runs on the session its `sessionId`
 * names (or the default session) behind that session's earlier commands; commands of different
 * sessions run side by side, so their responses may come in any order (match them by `id`).
 * Host-only commands that make a session, and pi's commands without a session (`auth_*`), run
 * in one queue of their own.
 */
import { timingSafeEqual } from "node:crypto";
import { errorText } from "../../../shared/failures/error-text.js";
import type { SessionHost } from "../../host/session-host.js";
import { DETACHED_COMMANDS, rpcCommands } from "../rpc-commands.js";
import { isRpcCommandType, parseRpcCommand, type RpcCommandOf, type RpcCommandType } from "../rpc-protocol.js";
import { parseCommandLine, readId } from "../rpc-server.js";
import { ConnectionOutput, type OutputLimits, type OutputSink } from "./connection-output.js";
import { hostOnlyCommands, replacingCommand } from "./host-commands.js";
import {
  envelopeSchema,
  type HostOnlyCommandOf,
  type HostOnlyCommandType,
  hostCommandSchemas,
  isHostOnlyCommandType,
  parseHostOnlyCommand,
} from "./host-protocol.js";
import { type HostSessionRegistry, HostSessions, type HostSlot } from "./host-sessions.js";

/** What a connection is given by the mode that accepted it. */
export interface HostConnectionOptions {
  host: SessionHost;
  registry: HostSessionRegistry;
  /** `"provider/id"` of sessions opened without a model (the default session, open_session without one). */
  model: string;
  apiKey?: string | undefined;
  /** The token the first line must carry (`authenticate`); undefined: none needed. */
  token?: string | undefined;
  limits?: OutputLimits;
  /** Diagnostics (stderr). */
  errors: (text: string) => void;
  /** Ends the connection (its output overflowed, or it failed to authenticate). */
  end: (reason: string) => void;
}

/** A client behind for at least this long is reported on stderr when it catches up. */
const CATCH_UP_REPORT_MS = 1000;

/** A response before it is written. */
interface Answer {
  id: string | undefined;
  command: string;
  sessionId?: string | undefined;
  data?: unknown;
  error?: string;
}

/** See the module comment. */
export class HostConnection {
  readonly #options: HostConnectionOptions;
  readonly #output: ConnectionOutput;
  readonly sessions: HostSessions;
  /** Host-only commands and pi's session-less ones run one at a time in this queue. */
  #hostTail: Promise<void> = Promise.resolve();
  /** Every queued command, for {@link drained}. */
  readonly #running = new Set<Promise<void>>();
  #authenticated: boolean;
  #closing = false;

  constructor(sink: OutputSink, options: HostConnectionOptions) {
    this.#options = options;
    this.#authenticated = options.token === undefined;
    this.#output = new ConnectionOutput(sink, options.limits ?? {}, {
      overflow: (bytes) => {
        options.errors(`lifeline host: a client fell ${bytes} bytes behind; its connection is closed.\n`);
        options.end("output overflow");
      },
      caughtUp: ({ behindMs, peakQueuedBytes, coalesced }) => {
        // Brief back-pressure is normal; a stall long enough to matter is worth a line.
        if (behindMs < CATCH_UP_REPORT_MS) return;
        options.errors(
          `lifeline host: a client caught up after ${(behindMs / 1000).toFixed(1)} s behind (at most ${peakQueuedBytes} bytes waited; ${coalesced} text deltas merged).\n`,
        );
      },
    });
    this.sessions = new HostSessions({
      host: options.host,
      registry: options.registry,
      apiKey: options.apiKey,
      event: (sessionId, event) => this.#output.event(sessionId, event),
      forget: (sessionId) => this.#output.forget(sessionId),
      promptEndedUnsettled: (error) => {
        if (!this.#closing) options.errors(`lifeline host: prompt ended without settling: ${errorText(error)}\n`);
      },
    });
  }

  /** The connection's output (for its flow-control figures). */
  get output(): ConnectionOutput {
    return this.#output;
  }

  /** Handles one input line. */
  receive(text: string): void {
    if (text.trim() === "" || this.#closing) return;
    const value = parseCommandLine(text, "list_sessions");
    if (typeof value === "string") {
      this.refuse(text, value);
      return;
    }
    const record = value as Record<string, unknown>;
    const id = typeof record.id === "string" ? record.id : undefined;
    const type = record.type;
    if (!this.#authenticated) {
      this.#authenticate(type === "authenticate" ? record.token : undefined, id);
      return;
    }
    if (typeof type === "string" && isHostOnlyCommandType(type)) {
      this.#acceptHostOnly(type, record, id);
      return;
    }
    if (typeof type !== "string" || !isRpcCommandType(type)) {
      const command = typeof type === "string" ? type : "parse";
      const problem = typeof type === "string" ? `Unknown command: ${type}.` : 'The command has no string "type".';
      this.#respond({ id, command, error: `${problem} Supported: ${Object.keys(hostCommandSchemas).join(", ")}.` });
      return;
    }
    const envelope = envelopeSchema.safeParse(record);
    const parsed = parseRpcCommand(type, record);
    if (!envelope.success || !parsed.success) {
      const issues = [...(envelope.error?.issues ?? []), ...(parsed.error?.issues ?? [])];
      const problems = issues.map((issue) => `${issue.path.join(".") || "(command)"}: ${issue.message}`);
      this.#respond({ id, command: type, error: `Invalid ${type}: ${problems.join("; ")}.` });
      return;
    }
    const sessionId = envelope.data.sessionId;
    if (type === "auth_list" || type === "auth_add" || type === "auth_remove") {
      if (sessionId === undefined) {
        this.#hostTail = this.#track(this.#hostTail.then(() => this.#runPi(type, parsed.data, id, undefined)));
        return;
      }
    }
    let slot: HostSlot;
    try {
      slot = sessionId === undefined ? this.sessions.defaultSlot() : this.sessions.get(sessionId);
    } catch (error) {
      this.#respond({ id, command: type, sessionId, error: errorText(error) });
      return;
    }
    slot.tail = this.#track(slot.tail.then(() => this.#runPi(type, parsed.data, id, slot, sessionId !== undefined)));
  }

  /** Answers a line that cannot run, echoing its id when one can be read. */
  refuse(text: string, error: string): void {
    this.#respond({ id: readId(text), command: "parse", error });
  }

  /** Resolves when every command received so far has been answered. */
  async drained(): Promise<void> {
    while (this.#running.size > 0) await Promise.allSettled([...this.#running]);
  }

  /** The client is gone: nothing more is written, and its sessions are closed (their files stay). */
  async close(): Promise<void> {
    this.#closing = true;
    this.#output.close();
    await this.sessions.closeAll();
  }

  #authenticate(token: unknown, id: string | undefined): void {
    const expected = Buffer.from(this.#options.token ?? "");
    const given = Buffer.from(typeof token === "string" ? token : "");
    if (given.length === expected.length && timingSafeEqual(given, expected)) {
      this.#authenticated = true;
      this.#respond({ id, command: "authenticate", data: undefined });
      return;
    }
    this.#respond({
      id,
      command: "authenticate",
      error:
        'This connection needs the token from the token file first: {"type": "authenticate", "token": "…"}. The connection is closed.',
    });
    this.#closing = true;
    this.#options.end("not authenticated");
  }

  #acceptHostOnly<K extends HostOnlyCommandType>(type: K, value: object, id: string | undefined): void {
    const parsed = parseHostOnlyCommand(type, value);
    if (!parsed.success) {
      const problems = parsed.error.issues.map((issue) => `${issue.path.join(".") || "(command)"}: ${issue.message}`);
      this.#respond({ id, command: type, error: `Invalid ${type}: ${problems.join("; ")}.` });
      return;
    }
    const command = parsed.data as HostOnlyCommandOf<K>;
    this.#hostTail = this.#track(this.#hostTail.then(() => this.#runHostOnly(type, command, id)));
  }

  async #runHostOnly<K extends HostOnlyCommandType>(
    type: K,
    command: HostOnlyCommandOf<K>,
    id: string | undefined,
  ): Promise<void> {
    try {
      const { data, sessionId } = await hostOnlyCommands[type](command, {
        sessions: this.sessions,
        host: this.#options.host,
        model: this.#options.model,
        apiKey: this.#options.apiKey,
        registry: this.#options.registry,
      });
      this.#respond({ id, command: type, sessionId, data });
    } catch (error) {
      const sessionId = "sessionId" in command ? command.sessionId : undefined;
      this.#respond({ id, command: type, sessionId, error: errorText(error) });
    }
  }

  /**
   * Runs pi's command `type` on `slot` (undefined: the `auth_*` commands, on none). The default
   * slot is opened on first use. `explicit`: the command named its session.
   */
  async #runPi<K extends RpcCommandType>(
    type: K,
    command: RpcCommandOf<K>,
    id: string | undefined,
    slot: HostSlot | undefined,
    explicit = false,
  ): Promise<void> {
    let sessionId: string | undefined;
    try {
      if (slot === undefined) {
        const data = await rpcCommands[type](command, {
          host: this.#options.host,
          session: this.sessions.defaultSlot().slot,
          promptEndedUnsettled: () => {},
        });
        this.#respond({ id, command: type, data });
        return;
      }
      if (slot.indexedAs === undefined) {
        await slot.slot.open(this.#options.model);
        this.sessions.reindex(slot);
      }
      sessionId = slot.slot.current().id;
      const replacing = replacingCommand(type, command, slot, explicit, this.sessions);
      if (replacing !== undefined) {
        const result = await replacing;
        this.#respond({ id, command: type, sessionId: result.sessionId, data: result.data });
        return;
      }
      if (DETACHED_COMMANDS.has(type)) {
        const answer = { id, command: type, sessionId };
        rpcCommands[type](command, slot.context).then(
          (data) => this.#respond({ ...answer, data }),
          (error: unknown) => this.#respond({ ...answer, error: errorText(error) }),
        );
        return;
      }
      const data = await rpcCommands[type](command, slot.context);
      this.#respond({ id, command: type, sessionId, data });
    } catch (error) {
      this.#respond({ id, command: type, sessionId, error: errorText(error) });
    }
  }

  #track(job: Promise<void>): Promise<void> {
    const tracked = job.catch((error: unknown) => {
      this.#options.errors(`lifeline host: a command failed unexpectedly: ${errorText(error)}\n`);
    });
    this.#running.add(tracked);
    void tracked.finally(() => this.#running.delete(tracked));
    return tracked;
  }

  #respond(answer: Answer): void {
    const base = {
      ...(answer.id === undefined ? {} : { id: answer.id }),
      type: "response",
      command: answer.command,
      ...(answer.sessionId === undefined ? {} : { sessionId: answer.sessionId }),
    };
    if (answer.error !== undefined) {
      this.#output.record({ ...base, success: false, error: answer.error });
      return;
    }
    this.#output.record({ ...base, success: true, ...(answer.data === undefined ? {} : { data: answer.data }) });
  }
}
