/**
 * The sessions one worker serves, as its link knows them: each session's client (what the link
 * hands it), the sessions still being opened there (so that placement sees the load they add),
 * and, when the worker dies, which of them are blamed for it (SPEC X7).
 */
import type { WorkerExitedError } from "../../shared/errors.js";
import type { BatchItem } from "../../shared/wire/protocol.js";

/** What a session registers with its link. */
export interface LinkClient {
  handleItem(item: BatchItem): void;
  /** True while the session has a run in the worker (it is then suspected of a crash). */
  hasRunInFlight(): boolean;
  /** Resolves once everything the session recorded so far is stored (`tool_calls_ready`); never rejects. */
  stored?(): Promise<void>;
  /**
   * The worker died. `suspect` says whether the session is blamed for it (SPEC X7): it had a run
   * in flight, or no session of the worker had one (a module's timer, say), so all are suspects.
   */
  handleWorkerExit(error: WorkerExitedError, suspect: boolean): void;
}

/** The sessions of one `WorkerLink`. Main thread only. */
export class LinkSessions {
  readonly #clients = new Map<string, LinkClient>();
  #reserved = 0;

  /** Sessions served, counting those still opening (see {@link reserve}). */
  get count(): number {
    return this.#clients.size + this.#reserved;
  }

  /** Counts a session being opened; returns the function that drops the reservation (once). */
  reserve(): () => void {
    this.#reserved++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#reserved--;
    };
  }

  attach(sessionId: string, client: LinkClient): void {
    this.#clients.set(sessionId, client);
  }

  detach(sessionId: string): void {
    this.#clients.delete(sessionId);
  }

  /** An item of a batch, to its session (dropped when the session is gone). */
  route(item: BatchItem): void {
    this.#clients.get(item.sessionId)?.handleItem(item);
  }

  /** Resolves once `sessionId` has stored what it recorded (at once for a session that stores nothing). */
  stored(sessionId: string): Promise<void> {
    return this.#clients.get(sessionId)?.stored?.() ?? Promise.resolve();
  }

  /**
   * The worker is gone: every session is forgotten and, unless `error` is undefined (the host
   * closed the link, or the worker never started), told with its blame: the sessions with a run
   * in flight, or all of them when none had one.
   */
  end(error: WorkerExitedError | undefined): void {
    const clients = [...this.#clients.values()];
    this.#clients.clear();
    if (error === undefined) return;
    const running = clients.filter((client) => client.hasRunInFlight());
    for (const client of clients) client.handleWorkerExit(error, running.length === 0 || running.includes(client));
  }
}
