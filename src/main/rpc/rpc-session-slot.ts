/**
 * The one session RPC mode drives. It is opened at start (resumed instead with the CLI's -c /
 * --session), replaced by `new_session` and `switch_session`, and every event of whichever session
 * holds the slot is forwarded; a replaced session's events are not.
 */
import { resolve } from "node:path";
import { LifelineError } from "../../shared/errors.js";
import type { SessionEvent } from "../../shared/events.js";
import type { ThinkingLevel } from "../../shared/thinking.js";
import type { SessionHost } from "../host/session-host.js";
import { type CliSessionFlags, openCliSession } from "../host/sessions-cli.js";
import type { AgentSession } from "../session/agent-session.js";

/** Options of {@link RpcSessionSlot}. */
export interface RpcSessionSlotOptions {
  /** The key the slot's created sessions are opened with (`switch_session` resumes without it); the host's auth otherwise. */
  apiKey?: string | undefined;
  /** The CLI's -c / --session: the first open resumes a stored session instead of creating one. */
  sessionFlags?: CliSessionFlags | undefined;
}

/** Holds RPC mode's session and forwards its events. */
export class RpcSessionSlot {
  readonly #host: SessionHost;
  readonly #forward: (event: SessionEvent) => void;
  readonly #apiKey: string | undefined;
  /** Used by the first open only; new_session always creates. */
  #sessionFlags: CliSessionFlags;
  #session: AgentSession | undefined;
  #unsubscribe: () => void = () => {};

  constructor(host: SessionHost, forward: (event: SessionEvent) => void, options: RpcSessionSlotOptions) {
    this.#host = host;
    this.#forward = forward;
    this.#apiKey = options.apiKey;
    this.#sessionFlags = options.sessionFlags ?? {};
  }

  /** Creates the session (again, for new_session, at `thinkingLevel`) and forwards its events. */
  async open(model: string, thinkingLevel?: ThinkingLevel): Promise<void> {
    const session = await openCliSession(this.#host, this.#sessionFlags, {
      model,
      ...(this.#apiKey === undefined ? {} : { apiKey: this.#apiKey }),
      ...(thinkingLevel === undefined ? {} : { thinkingLevel }),
    });
    this.#sessionFlags = {};
    this.#unsubscribe();
    this.#session = session;
    this.#unsubscribe = session.subscribe((event) => this.#forward(event));
  }

  /** Holds `session`, opened elsewhere (host mode's open, resume and fork), and forwards its events. */
  hold(session: AgentSession): void {
    this.#unsubscribe();
    this.#session = session;
    this.#unsubscribe = session.subscribe((event) => this.#forward(event));
  }

  /** Stops forwarding and closes the session, if one is open (a live prompt is aborted). */
  async close(): Promise<void> {
    const session = this.#session;
    this.#unsubscribe();
    this.#unsubscribe = () => {};
    this.#session = undefined;
    await session?.dispose();
  }

  /**
   * `new_session`: disposes the current session (a live prompt is aborted) and opens a new one on
   * its model, at the thinking level pi's new session would have: the level last chosen on a model
   * with reasoning (pi saves it as `defaultThinkingLevel`; here the session keeps it).
   * @throws LifelineError ERR_SESSION_DISPOSED when no session is open.
   */
  async renew(): Promise<void> {
    const session = this.current();
    const model = `${session.model.provider}/${session.model.id}`;
    const level = session.model.reasoning ? session.thinkingLevel : session.settings.defaultThinkingLevel;
    await session.dispose();
    this.#unsubscribe();
    await this.open(model, level);
  }

  /**
   * `switch_session`: resumes a stored session in place of the current one. The current one stays
   * if the other cannot be opened, unless it is the same file (it must be closed first: its lock
   * is this process's). @throws LifelineError ERR_SESSION_DISPOSED when no session is open.
   */
  async switchTo(ref: string): Promise<void> {
    const current = this.current();
    const same = current.sessionFile !== undefined && resolve(ref) === current.sessionFile;
    if (same) await current.dispose();
    const next = await this.#host.resumeSession(ref);
    if (!same) await current.dispose();
    this.#unsubscribe();
    this.#session = next;
    this.#unsubscribe = next.subscribe((event) => this.#forward(event));
  }

  /**
   * `fork` (at `entryId`, before that user message) and `clone` (undefined: at the last entry): a
   * new session file from the current one's (see `SessionHost.forkSession`) takes its place; the
   * current one is closed once the new one is open (it stays if the fork fails). Resolves with the
   * user message's text of a fork. @throws what `forkSession` throws; ERR_SESSION_DISPOSED.
   */
  async fork(entryId: string | undefined): Promise<string | undefined> {
    const current = this.current();
    const forked =
      entryId === undefined
        ? { session: await this.#host.cloneSession(current), text: undefined }
        : await this.#host.forkSession(current, entryId);
    await current.dispose();
    this.#unsubscribe();
    this.#session = forked.session;
    this.#unsubscribe = forked.session.subscribe((event) => this.#forward(event));
    return forked.text;
  }

  /**
   * The session, ended or not: reading commands and the ones that replace it work on an ended one.
   * @throws LifelineError ERR_SESSION_DISPOSED when no session is open.
   */
  current(): AgentSession {
    if (this.#session === undefined) throw new LifelineError("ERR_SESSION_DISPOSED", "No session is open.");
    return this.#session;
  }

  /**
   * The session, for commands that need it alive.
   * @throws LifelineError ERR_SESSION_DISPOSED when it has ended or none is open.
   */
  live(): AgentSession {
    const session = this.current();
    if (session.isClosed) {
      throw new LifelineError(
        "ERR_SESSION_DISPOSED",
        "The session has ended (it was given up after its worker kept failing; see the worker_exited event). Send new_session to start a fresh one.",
      );
    }
    return session;
  }
}
