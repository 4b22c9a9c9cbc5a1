/**
 * The sessions of one host-mode connection (docs/rpc.md, "Many sessions in one process"), and the
 * registry that keeps each session in one connection at a time across the process.
 *
 * Each session sits in an {@link RpcSessionSlot} (the same holder `--mode rpc` uses, so pi's
 * commands run on it unchanged) with its own command queue: one session's commands run one at a
 * time in input order, different sessions' run side by side. The connection's default session
 * (commands without a `sessionId`) is opened on first use and is the only one pi's replacing
 * commands (`new_session`, `switch_session`, `fork` and `clone` without a `sessionId`) replace.
 */
import { LifelineError } from "../../../shared/errors.js";
import type { SessionEvent } from "../../../shared/events.js";
import type { SessionHost } from "../../host/session-host.js";
import type { AgentSession } from "../../session/agent-session.js";
import type { RpcCommandContext } from "../rpc-commands.js";
import { RpcSessionSlot } from "../rpc-session-slot.js";
import type { HostSessionInfo } from "./host-protocol.js";

/** Which connection holds each open session of the process. */
export class HostSessionRegistry {
  readonly #owners = new Map<string, { owner: object; file: string | undefined }>();

  /** Whether `sessionId` is held by a connection other than `owner`. */
  heldElsewhere(sessionId: string, owner: object): boolean {
    const holder = this.#owners.get(sessionId)?.owner;
    return holder !== undefined && holder !== owner;
  }

  /**
   * The open session a `resume_session` ref names (its id, a prefix of its id, or its file), and
   * whether `owner` holds it; undefined when no open session matches, or a prefix matches several.
   */
  holding(ref: string, owner: object): { sessionId: string; mine: boolean } | undefined {
    const matches = [...this.#owners].filter(([id, held]) => id.startsWith(ref) || held.file === ref);
    const [match] = matches.length === 1 ? matches : matches.filter(([id, held]) => id === ref || held.file === ref);
    return match === undefined ? undefined : { sessionId: match[0], mine: match[1].owner === owner };
  }

  claim(sessionId: string, owner: object, file: string | undefined): void {
    this.#owners.set(sessionId, { owner, file });
  }

  release(sessionId: string, owner: object): void {
    if (this.#owners.get(sessionId)?.owner === owner) this.#owners.delete(sessionId);
  }
}

/** One session of a connection: its holder, its command queue and its command context. */
export interface HostSlot {
  readonly slot: RpcSessionSlot;
  readonly context: RpcCommandContext;
  readonly isDefault: boolean;
  /** The end of this session's command queue. */
  tail: Promise<void>;
  /** The id the slot is indexed under (the default's changes when it is replaced). */
  indexedAs: string | undefined;
  /** Set by close_session: its live prompt's abort is asked for, not a failure to report. */
  closed: boolean;
}

/** What a connection's sessions need from it. */
export interface HostSessionsOwner {
  readonly host: SessionHost;
  readonly registry: HostSessionRegistry;
  /** Forwards an event of the session with this id. */
  event(sessionId: string, event: SessionEvent): void;
  /** The session with this id is no longer this connection's (its sequence numbers may go). */
  forget(sessionId: string): void;
  promptEndedUnsettled(error: unknown): void;
  apiKey: string | undefined;
}

/** See the module comment. */
export class HostSessions {
  readonly #owner: HostSessionsOwner;
  readonly #byId = new Map<string, HostSlot>();
  #default: HostSlot | undefined;

  constructor(owner: HostSessionsOwner) {
    this.#owner = owner;
  }

  /** The connection's default session's slot, made (not opened) on first use. */
  defaultSlot(): HostSlot {
    this.#default ??= this.#make(true);
    return this.#default;
  }

  /**
   * The slot of `sessionId`.
   * @throws LifelineError ERR_SESSION_NOT_FOUND when this connection holds no such session.
   */
  get(sessionId: string): HostSlot {
    const found = this.#byId.get(sessionId);
    if (found !== undefined) return found;
    const where = this.#owner.registry.heldElsewhere(sessionId, this)
      ? "it is open in another connection of this host"
      : "this connection has not opened it";
    throw new LifelineError(
      "ERR_SESSION_NOT_FOUND",
      `No session ${sessionId} in this connection: ${where}. Open it with resume_session, or see list_sessions.`,
    );
  }

  /** A new slot holding `session`, opened by open_session, resume_session, or a fork or clone. */
  adopt(session: AgentSession): HostSlot {
    const made = this.#make(false);
    made.slot.hold(session);
    this.reindex(made);
    return made;
  }

  /** Indexes `slot` under its session's current id (after it was opened or replaced). */
  reindex(slot: HostSlot): void {
    const session = slot.slot.current();
    const id = session.id;
    if (slot.indexedAs === id) return;
    if (slot.indexedAs !== undefined) this.#drop(slot.indexedAs);
    slot.indexedAs = id;
    this.#byId.set(id, slot);
    this.#owner.registry.claim(id, this, session.sessionFile);
  }

  /** Closes the session `sessionId` (a live prompt is aborted). @throws as {@link get}. */
  async close(sessionId: string): Promise<void> {
    const slot = this.get(sessionId);
    this.#drop(sessionId);
    if (slot === this.#default) this.#default = undefined;
    slot.closed = true;
    await slot.slot.close();
  }

  /** Every session this connection holds, the default first. */
  list(): HostSessionInfo[] {
    const slots = [...this.#byId.values()].sort((a, b) => Number(b.isDefault) - Number(a.isDefault));
    return slots.map((slot) => info(slot.slot.current(), slot.isDefault));
  }

  /** Closes every session (the connection is gone). Never rejects. */
  async closeAll(): Promise<void> {
    const slots = [...new Set([...this.#byId.values(), ...(this.#default === undefined ? [] : [this.#default])])];
    for (const id of [...this.#byId.keys()]) this.#drop(id);
    this.#default = undefined;
    await Promise.all(slots.map((slot) => slot.slot.close().catch(() => {})));
  }

  #drop(sessionId: string): void {
    this.#byId.delete(sessionId);
    this.#owner.registry.release(sessionId, this);
    this.#owner.forget(sessionId);
  }

  #make(isDefault: boolean): HostSlot {
    const owner = this.#owner;
    let made: HostSlot | undefined;
    const slot = new RpcSessionSlot(
      owner.host,
      (event) => {
        const id = made?.slot.current().id;
        if (id !== undefined) owner.event(id, event);
      },
      { apiKey: owner.apiKey },
    );
    made = {
      slot,
      isDefault,
      tail: Promise.resolve(),
      indexedAs: undefined,
      closed: false,
      context: {
        host: owner.host,
        session: slot,
        promptEndedUnsettled: (error) => {
          if (made?.closed !== true) owner.promptEndedUnsettled(error);
        },
      },
    };
    return made;
  }
}

/** How `list_sessions` and the opening commands describe a session. */
export function info(session: AgentSession, isDefault: boolean): HostSessionInfo {
  return {
    sessionId: session.id,
    ...(session.sessionFile === undefined ? {} : { sessionFile: session.sessionFile }),
    ...(session.sessionName === undefined ? {} : { sessionName: session.sessionName }),
    model: `${session.model.provider}/${session.model.id}`,
    isDefault,
    isIdle: !session.isBusy,
  };
}
