/**
 * One writer's hold on a session in the fleet: the lease (`session:<id>:lock`, `SET PX leaseMs`)
 * renewed every third of the lease while the host lives, and the fencing token taken with it.
 *
 * The token is what keeps two hosts from interleaving a session: every append checks, in the same
 * script that writes, that the token is still the session's latest (redis-session-scripts.ts). A
 * host that stalls, is partitioned or stopped past its lease may see another host take the
 * session (which increments the token); from then on each of its appends and renewals is refused,
 * and it never writes to the session again. The lease only says when another host may take over:
 * while nobody has, a writer whose lease lapsed unnoticed (a Redis restart, a short stall) renews
 * it and goes on, which is safe because the token has not moved.
 */

import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { LifelineError } from "../../shared/errors.js";
import type { FleetConnection } from "../redis/fleet-connection.js";
import type { SessionKeys } from "./redis-session-keys.js";
import { RELEASE, RENEW, runScript } from "./redis-session-scripts.js";

/** Names the writer in its lock value, for the error another host sees: `<host>/<pid>/<random>`. */
export function newOwner(): string {
  return `${hostname()}/${process.pid}/${randomUUID().slice(0, 8)}`;
}

/**
 * ERR_SESSION_LOCKED for a session held elsewhere: `retryAfterMs` is what its lease has left
 * (the earliest another writer may take it, if the holder stops renewing).
 */
export function lockedError(id: string, pttl: number, holder: string): LifelineError {
  const left = Math.max(pttl, 0);
  const owner = holder.slice(holder.indexOf(":") + 1);
  return new LifelineError(
    "ERR_SESSION_LOCKED",
    `Session ${id} is open for writing by ${owner} (a fleet host); its lease has ${left} ms left. Close it there, or try again after the lease (it lapses only if that host stops renewing it).`,
    { retryAfterMs: left },
  );
}

/** ERR_SESSION_LOCKED for a writer that lost its session to another writer (fenced). */
export function fencedError(id: string, holder: string): LifelineError {
  const now = holder === "" ? "" : ` (now ${holder.slice(holder.indexOf(":") + 1)})`;
  return new LifelineError(
    "ERR_SESSION_LOCKED",
    `Session ${id} was taken over by another writer${now} after this host's lease lapsed (it stalled or lost Redis for longer than fleet.leaseMs); this writer stores nothing more. Resume the session again to continue it.`,
  );
}

/** A held lease; renews itself until {@link release} or until it finds itself fenced. */
export class SessionLease {
  readonly fence: string;
  /** The lock's value while this writer holds it: `<fence>:<owner>`. */
  readonly value: string;
  readonly #connection: FleetConnection;
  readonly #id: string;
  readonly #keys: SessionKeys;
  readonly #onLost: () => void;
  #timer: NodeJS.Timeout | undefined;
  #lost = false;

  /**
   * Starts renewing a lease just taken (by the store's CREATE or ACQUIRE script).
   * @param onLost called once when a renewal finds another writer's token (the writer is fenced).
   */
  constructor(
    connection: FleetConnection,
    id: string,
    keys: SessionKeys,
    fence: string,
    owner: string,
    onLost: () => void,
  ) {
    this.#connection = connection;
    this.#id = id;
    this.#keys = keys;
    this.fence = fence;
    this.value = `${fence}:${owner}`;
    this.#onLost = onLost;
    const every = Math.max(Math.floor(connection.settings.leaseMs / 3), 50);
    // Unref'd: a lease alone does not keep the process alive (the host's connection and work do).
    this.#timer = setInterval(() => void this.#renew(), every).unref();
  }

  /** How long a lease lasts without renewal (`fleet.leaseMs`). */
  get leaseMs(): number {
    return this.#connection.settings.leaseMs;
  }

  /** A renewal found another writer's token: nothing of this writer will be stored. */
  get lost(): boolean {
    return this.#lost;
  }

  /** Stops renewing and deletes the lock if it is still this writer's. Never rejects. */
  async release(): Promise<void> {
    this.#stop();
    const { lock, cwd } = this.#keys;
    const { prefix, settings } = this.#connection;
    const args = [lock, this.value, this.#id, cwd, prefix, settings.sessionTtlMs];
    await runScript(this.#connection.redis, RELEASE, args).catch(() => {
      // Redis is away: the lease lapses on its own within leaseMs.
    });
  }

  async #renew(): Promise<void> {
    if (this.#timer === undefined) return;
    let held: unknown;
    try {
      const { lock, fence, cwd } = this.#keys;
      const { prefix, settings } = this.#connection;
      held = await runScript(this.#connection.redis, RENEW, [
        lock,
        fence,
        this.fence,
        this.value,
        this.leaseMs,
        this.#id,
        cwd,
        prefix,
        settings.sessionTtlMs,
      ]);
    } catch {
      return; // Redis is away; the next tick tries again, and the token decides when it is back.
    }
    if (held === 0 && this.#timer !== undefined) {
      this.#lost = true;
      this.#stop();
      this.#onLost();
    }
  }

  #stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }
}
