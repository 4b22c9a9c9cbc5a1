/**
 * The protocol of `lifeline --mode host` (docs/rpc.md, "Many sessions in one process"), written
 * once (STYLE 2): pi's RPC protocol (../rpc-protocol.ts) inside a session envelope, plus the
 * commands that open, resume, list and close sessions.
 *
 * The envelope: every command may carry a `sessionId` (a session this connection holds; without
 * one, the connection's default session, opened on first use, so a `--mode rpc` client works
 * unchanged); every response to a command that ran on a session carries that session's id; every
 * event carries its session's id and a sequence number `seq` that counts that session's events
 * on this connection from 1. An event with `coalesced: n` stands for `n` text or thinking deltas
 * merged while the client was behind (its `seq` is the last of them): so a client that sees `seq`
 * jump by more than one can check that the jump equals `coalesced`, and nothing else was dropped.
 */
import * as z from "zod";
import { thinkingLevelSchema } from "../../config/option-schemas.js";
import { type RpcCommand, type RpcEvent, type RpcResponseData, rpcCommandSchemas } from "../rpc-protocol.js";

const id = z.string().max(1000).optional();
const text = z.string().min(1, "must be a non-empty string");

/** A session's stored id (as `lifeline sessions` shows it): what `sessionId` names on the wire. */
const sessionIdSchema = z.string().min(1, "must be a non-empty string").max(256);

/** The envelope's field, read from every command before the command itself is validated. */
export const envelopeSchema = z.object({ sessionId: sessionIdSchema.optional() });

/** The commands only host mode has, keyed by `type`. */
const hostOnlyCommandSchemas = {
  /** Opens a new session in this connection; answered with its id. */
  open_session: z.object({
    id,
    type: z.literal("open_session"),
    /** `"provider/id"`; the mode's `--model` when absent. */
    model: text.optional(),
    thinkingLevel: thinkingLevelSchema.optional(),
    /** pi's session name, set at once. */
    name: text.optional(),
  }),
  /** Resumes a stored session (its id, a unique prefix of one, or its file's path) in this connection. */
  resume_session: z.object({ id, type: z.literal("resume_session"), ref: text }),
  /** The sessions this connection holds. */
  list_sessions: z.object({ id, type: z.literal("list_sessions") }),
  /** Closes a session of this connection (a live prompt is aborted); its file stays, to resume later. */
  close_session: z.object({ id, type: z.literal("close_session"), sessionId: sessionIdSchema }),
  /** The first line on a TCP connection: the token from the mode's token file. Accepted (a no-op) elsewhere. */
  authenticate: z.object({ id, type: z.literal("authenticate"), token: text }),
} as const;

/** Every command host mode accepts: pi's (each with an optional `sessionId`) and its own. */
export const hostCommandSchemas = { ...rpcCommandSchemas, ...hostOnlyCommandSchemas } as const;

/** The `type` of a host-only command. */
export type HostOnlyCommandType = keyof typeof hostOnlyCommandSchemas;

/** The `type` of any command host mode accepts. */
export type HostCommandType = keyof typeof hostCommandSchemas;

/** A host-only command as sent. */
export type HostOnlyCommand = {
  [K in HostOnlyCommandType]: z.input<(typeof hostOnlyCommandSchemas)[K]>;
}[HostOnlyCommandType];

/** The host-only command of `type` K. */
export type HostOnlyCommandOf<K extends HostOnlyCommandType> = Extract<HostOnlyCommand, { type: K }>;

/** Any command as sent to host mode: pi's commands carry the envelope's optional `sessionId`. */
export type HostCommand = (RpcCommand & { sessionId?: string }) | HostOnlyCommand;

/** Whether `type` names a host-only command (own keys only, as `isRpcCommandType`). */
export function isHostOnlyCommandType(type: string): type is HostOnlyCommandType {
  return Object.hasOwn(hostOnlyCommandSchemas, type);
}

const hostOnlyParsers: { [K in HostOnlyCommandType]: z.ZodType<HostOnlyCommandOf<K>> } = hostOnlyCommandSchemas;

/** Validates `value` as the host-only command of `type`. */
export function parseHostOnlyCommand<K extends HostOnlyCommandType>(
  type: K,
  value: unknown,
): z.ZodSafeParseResult<HostOnlyCommandOf<K>> {
  return hostOnlyParsers[type].safeParse(value);
}

/** A session as `list_sessions` and the opening commands report it. */
export interface HostSessionInfo {
  sessionId: string;
  /** The session file, when the session is persisted. */
  sessionFile?: string;
  sessionName?: string;
  /** `"provider/id"`. */
  model: string;
  /** Whether commands without a `sessionId` go to it. */
  isDefault: boolean;
  /** False from an accepted prompt until its `agent_settled`. */
  isIdle: boolean;
}

/** pi commands that replace or copy a session: their `data` also names the session now in use (or made). */
type SessionMaking = "new_session" | "switch_session" | "fork" | "clone";

/** What each command's successful response carries in `data`. */
export type HostResponseData = {
  [K in keyof RpcResponseData]: K extends SessionMaking
    ? RpcResponseData[K] & { sessionId: string }
    : RpcResponseData[K];
} & {
  open_session: HostSessionInfo;
  resume_session: HostSessionInfo;
  list_sessions: { sessions: HostSessionInfo[] };
  close_session: undefined;
  authenticate: undefined;
};

/**
 * The fields every response line has. `sessionId`: the session the command ran on (for a command
 * that replaced the default session, the one that replaced it); absent for a command that ran on
 * none (a parse error, `list_sessions`, `authenticate`, an unknown type).
 */
interface HostResponseBase {
  /** The command's `id`, whenever one could be read. */
  id?: string;
  type: "response";
  sessionId?: string;
}

/** A success line's `data` field: absent for a command whose data is `undefined`. */
type DataField<T> = [T] extends [undefined] ? Record<never, never> : { data: T };

/** The line answering each command that succeeded, keyed by the command's type. */
type HostSuccessResponses = {
  [K in keyof HostResponseData]: HostResponseBase & { command: K; success: true } & DataField<HostResponseData[K]>;
};

/**
 * The line answering a command that succeeded, discriminated by `command`. The shipped JSON Schema
 * (schema/host-protocol.schema.json, written by scripts/host-schema.mjs) spells out the same rule.
 */
export type HostSuccessResponse = HostSuccessResponses[keyof HostResponseData];

/** The line answering a command that failed: `command` is its type (any string), or "parse" when the line was not a command. */
export interface HostErrorResponse extends HostResponseBase {
  command: string;
  success: false;
  error: string;
}

/** A response line: narrow on `success`, then on `command` for the type of `data`. */
export type HostResponse = HostSuccessResponse | HostErrorResponse;

/** The envelope every event line carries (see the module comment). */
export interface HostEventEnvelope {
  sessionId: string;
  /** This session's events on this connection, counted from 1. */
  seq: number;
  /** Present on a delta that stands for this many merged deltas (`seq` is the last one's). */
  coalesced?: number;
}

/** An event line: a session event as `subscribe()` listeners see it, in the envelope. */
export type HostEvent = RpcEvent & HostEventEnvelope;

/** Anything host mode writes to a connection. */
export type HostOutput = HostResponse | HostEvent;
