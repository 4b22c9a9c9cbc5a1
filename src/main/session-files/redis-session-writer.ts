/**
 * The writer of one session kept in the fleet's Redis, with the file writer's contract
 * (session-store.ts): `append` only queues and returns; one script at a time per session stores
 * every line queued meanwhile as one batch (RPUSH, in order), and its promise resolves once Redis
 * acknowledged the batch. Lazy lines wait up to 50 ms for company, as in the file store.
 *
 * A batch that fails for want of Redis (commands fail fast while it is away) is tried again, the
 * same batch at the same expected list length, for up to `fleet.leaseMs`: a try whose reply was
 * lost with the connection is recognised by the length and not stored twice. After that, or when
 * Redis holds other lines than this writer expects, the writer fails for good with
 * ERR_SESSION_FILE, like a file writer after a failed write. A writer that lost its session to
 * another (its fencing token is no longer the latest, redis-session-lease.ts) fails for good with
 * ERR_SESSION_LOCKED and stores nothing more.
 */

import { LifelineError } from "../../shared/errors.js";
import { errorText } from "../../shared/failures/error-text.js";
import type { FleetConnection } from "../redis/fleet-connection.js";
import { BatchedAppends } from "./batched-appends.js";
import type { SessionKeys } from "./redis-session-keys.js";
import { fencedError, SessionLease } from "./redis-session-lease.js";
import { APPEND, runScript } from "./redis-session-scripts.js";
import { type SessionEntry, serializeLine } from "./session-format.js";
import type { SessionWriter } from "./session-store.js";
import { summarizeEntries } from "./session-summary.js";

/** Longest pause between tries of a batch while Redis is away. */
const MAX_RETRY_DELAY_MS = 500;

/** Where a new writer starts. */
export interface RedisWriterStart {
  id: string;
  path: string;
  keys: SessionKeys;
  /** The token and owner the store's script took the lock with. */
  fence: string;
  owner: string;
  /** Lines stored so far (the header included). */
  length: number;
  /** A first user message is already recorded in the session's info. */
  hasFirstMessage: boolean;
}

/** Appends to one session in Redis while holding its lease. */
export class RedisSessionWriter implements SessionWriter {
  readonly path: string;
  readonly #connection: FleetConnection;
  readonly #id: string;
  readonly #keys: SessionKeys;
  readonly #lease: SessionLease;
  readonly #appends: BatchedAppends<SessionEntry>;
  #length: number;
  #hasFirstMessage: boolean;
  #closing: Promise<void> | undefined;

  /** Starts renewing the lease the store just took. */
  constructor(connection: FleetConnection, start: RedisWriterStart) {
    this.#connection = connection;
    this.path = start.path;
    this.#id = start.id;
    this.#keys = start.keys;
    this.#length = start.length;
    this.#hasFirstMessage = start.hasFirstMessage;
    this.#appends = new BatchedAppends({
      store: (entries) => this.#store(entries),
      failure: (error) =>
        error instanceof LifelineError
          ? error
          : new LifelineError("ERR_SESSION_FILE", `Could not append to session ${this.#id}: ${errorText(error)}`, {
              cause: error,
            }),
      closed: () =>
        new LifelineError("ERR_SESSION_FILE", `Session ${this.#id} is closed; nothing more is written to it.`),
    });
    this.#lease = new SessionLease(connection, start.id, start.keys, start.fence, start.owner, () =>
      this.#appends.fail(fencedError(this.#id, "")),
    );
  }

  append(entries: readonly SessionEntry[], options: { lazy?: boolean } = {}): Promise<void> {
    return this.#appends.append(entries, options.lazy === true);
  }

  flush(): Promise<void> {
    return this.#appends.flush();
  }

  /** Flushes, then releases the lock at once (only if still this writer's). Idempotent. */
  close(): Promise<void> {
    this.#appends.close();
    this.#closing ??= this.flush().then(() => this.#lease.release());
    return this.#closing;
  }

  /** Stores one batch, trying again while Redis is away (see the file comment). */
  async #store(entries: SessionEntry[]): Promise<void> {
    const summary = summarizeEntries(entries);
    const first = this.#hasFirstMessage ? "" : summary.firstMessage;
    const expected = this.#length;
    const keys = this.#keys;
    const args = [
      keys.entries,
      keys.info,
      keys.lock,
      keys.fence,
      keys.all,
      keys.byCwd,
      this.#id,
      this.#lease.fence,
      this.#lease.value,
      this.#lease.leaseMs,
      expected,
      summary.messageCount,
      first,
      summary.name === undefined ? "" : "1",
      summary.name ?? "",
      ...entries.map((entry) => serializeLine(entry).slice(0, -1)),
    ];
    const deadline = Date.now() + this.#lease.leaseMs;
    for (let attempt = 0; ; attempt++) {
      // Failed meanwhile (the lease found the session taken over): no use trying again.
      const failed = this.#appends.failed;
      if (failed !== undefined) throw failed;
      let reply: unknown;
      try {
        reply = await runScript(this.#connection.redis, APPEND, args);
      } catch (error) {
        if (Date.now() >= deadline) {
          throw new LifelineError(
            "ERR_SESSION_FILE",
            `Could not append to session ${this.#id} in the fleet's Redis for ${this.#lease.leaseMs} ms (fleet.leaseMs): ${errorText(error)}. Later entries of this session are not saved; once Redis is back, resume the session to continue it.`,
            { cause: error },
          );
        }
        await new Promise((resolve) => setTimeout(resolve, Math.min(50 * 2 ** attempt, MAX_RETRY_DELAY_MS)));
        continue;
      }
      const [status, value] = reply as [string, unknown];
      if (status === "ok") {
        this.#length = Number(value);
        if (first !== "") this.#hasFirstMessage = true;
        return;
      }
      if (status === "fenced") throw fencedError(this.#id, String(value));
      throw new LifelineError(
        "ERR_SESSION_FILE",
        `Session ${this.#id} in the fleet's Redis has ${String(value)} lines where this writer expected ${expected}: something else wrote to it. Later entries of this session are not saved; resume the session to continue it.`,
      );
    }
  }
}
