/**
 * What host mode's own commands do (docs/rpc.md, "Many sessions in one process"), and pi's
 * commands that replace or copy a session, whose meaning depends on the session they name:
 *
 * - without a `sessionId` (the default session), `new_session`, `switch_session`, `fork` and
 *   `clone` do what they do in pi: the default session is replaced (the old one closed);
 * - with the `sessionId` of a session (the default's too), `fork` and `clone` make a new session
 *   beside it (the source stays open) and answer its id; `new_session` and `switch_session` are refused unless
 *   the id is the default session's (use `open_session` / `resume_session` for another).
 *
 * Every session-making answer carries `sessionId`: the session now in use, or the one made.
 */
import { LifelineError } from "../../../shared/errors.js";
import type { SessionHost } from "../../host/session-host.js";
import type { AgentSession } from "../../session/agent-session.js";
import { rpcCommands } from "../rpc-commands.js";
import type { RpcCommandOf, RpcCommandType } from "../rpc-protocol.js";
import type { HostOnlyCommandOf, HostOnlyCommandType, HostResponseData } from "./host-protocol.js";
import { type HostSessionRegistry, type HostSessions, type HostSlot, info } from "./host-sessions.js";

/** What a host-only command may use. */
interface HostCommandContext {
  readonly host: SessionHost;
  readonly sessions: HostSessions;
  readonly registry: HostSessionRegistry;
  /** The mode's model, for `open_session` without one. */
  readonly model: string;
  readonly apiKey: string | undefined;
}

/** A command's answer: its data, and the session it ran on, when one. */
interface Answered<T> {
  data: T;
  sessionId?: string | undefined;
}

type HostOnlyTable = {
  [K in HostOnlyCommandType]: (
    command: HostOnlyCommandOf<K>,
    ctx: HostCommandContext,
  ) => Promise<Answered<HostResponseData[K]>>;
};

/** One handler per host-only command. */
export const hostOnlyCommands: HostOnlyTable = {
  open_session: async (command, ctx) => {
    const model = command.model ?? ctx.model;
    const session = await ctx.host.createSession({
      model,
      // The mode's key is its model's provider's (see resumeWithKey).
      ...(ctx.apiKey === undefined || providerOf(model) !== providerOf(ctx.model) ? {} : { apiKey: ctx.apiKey }),
      ...(command.thinkingLevel === undefined ? {} : { thinkingLevel: command.thinkingLevel }),
    });
    if (command.name !== undefined) session.setSessionName(command.name);
    return opened(ctx, session);
  },
  resume_session: async (command, ctx) => {
    if (ctx.registry.heldElsewhere(command.ref, ctx.sessions)) throw heldElsewhere(command.ref);
    let session: AgentSession;
    try {
      session = await resumeWithKey(ctx, command.ref);
    } catch (error) {
      if (error instanceof LifelineError && error.code === "ERR_SESSION_LOCKED") {
        // The store's lock names this very process: say which connection holds the session instead.
        const held = ctx.registry.holding(command.ref, ctx.sessions);
        if (held?.mine === false) throw heldElsewhere(held.sessionId, error);
        if (held?.mine === true) {
          throw new LifelineError(
            "ERR_SESSION_LOCKED",
            `Session ${held.sessionId} is already open in this connection: send commands with its sessionId (see list_sessions).`,
            { cause: error },
          );
        }
        throw new LifelineError(
          "ERR_SESSION_LOCKED",
          `${error.message} In host mode a session is open in one connection at a time: if another client holds it, it must close_session first; if this one does, use its sessionId.`,
          { cause: error },
        );
      }
      throw error;
    }
    return opened(ctx, session);
  },
  list_sessions: async (_command, ctx) => ({ data: { sessions: ctx.sessions.list() } }),
  close_session: async (command, ctx) => {
    await ctx.sessions.close(command.sessionId);
    return { data: undefined, sessionId: command.sessionId };
  },
  authenticate: async () => ({ data: undefined }),
};

/**
 * Resumes `ref` with the mode's key (--api-key / LIFELINE_API_KEY) when the session is on the
 * provider of the mode's model, the one that key was given for: a stored session keeps no key, and
 * a session on another provider must not be sent this one (it finds its own in auth.json or the
 * environment). Which provider a stored session is on is known once it is open, so a session
 * opened with the key on another provider is closed and opened again without it.
 */
async function resumeWithKey(ctx: HostCommandContext, ref: string): Promise<AgentSession> {
  if (ctx.apiKey === undefined) return ctx.host.resumeSession(ref);
  const keyed = await ctx.host.resumeSession(ref, { apiKey: ctx.apiKey });
  if (keyed.model.provider === providerOf(ctx.model)) return keyed;
  const path = keyed.sessionFile;
  await keyed.dispose();
  return ctx.host.resumeSession(path ?? ref);
}

/** The provider of a `"provider/id"` model reference. */
function providerOf(model: string): string {
  return model.slice(0, Math.max(0, model.indexOf("/")));
}

function opened(ctx: HostCommandContext, session: AgentSession): Answered<HostResponseData["open_session"]> {
  ctx.sessions.adopt(session);
  return { data: info(session, false), sessionId: session.id };
}

function heldElsewhere(sessionId: string, cause?: unknown): LifelineError {
  return new LifelineError(
    "ERR_SESSION_LOCKED",
    `Session ${sessionId} is open in another connection of this host; that client must close_session it first.`,
    cause === undefined ? undefined : { cause },
  );
}

/**
 * The run of a replacing or copying command `type` on `slot`, or undefined for any other command
 * (it runs as in pi). `explicit`: the command named its session.
 */
export function replacingCommand<K extends RpcCommandType>(
  type: K,
  command: RpcCommandOf<K>,
  slot: HostSlot,
  explicit: boolean,
  sessions: HostSessions,
): Promise<{ data: unknown; sessionId: string }> | undefined {
  if (type !== "new_session" && type !== "switch_session" && type !== "fork" && type !== "clone") return undefined;
  if (explicit && (type === "fork" || type === "clone")) return copy(type, command, slot, sessions);
  if (!slot.isDefault) return Promise.reject(notDefault(type));
  return (async () => {
    const data = (await rpcCommands[type](command, slot.context)) as object;
    sessions.reindex(slot);
    const sessionId = slot.slot.current().id;
    return { data: { ...data, sessionId }, sessionId };
  })();
}

/** `fork` / `clone` of a named session: a new session beside it, in this connection. */
async function copy(
  type: "fork" | "clone",
  command: RpcCommandOf<RpcCommandType>,
  slot: HostSlot,
  sessions: HostSessions,
): Promise<{ data: unknown; sessionId: string }> {
  const source = slot.slot.current();
  const host = slot.context.host;
  if (type === "clone") {
    const made = sessions.adopt(await host.cloneSession(source));
    return { data: { cancelled: false, sessionId: made.slot.current().id }, sessionId: source.id };
  }
  const entryId = (command as RpcCommandOf<"fork">).entryId;
  const forked = await host.forkSession(source, entryId);
  const made = sessions.adopt(forked.session);
  return { data: { text: forked.text, cancelled: false, sessionId: made.slot.current().id }, sessionId: source.id };
}

function notDefault(type: string): LifelineError {
  return new LifelineError(
    "ERR_INVALID_OPTIONS",
    `${type} replaces only the connection's default session, as in pi: send it without a sessionId, or use ${
      type === "new_session" ? "open_session" : "resume_session"
    } to open a session beside the others.`,
  );
}
