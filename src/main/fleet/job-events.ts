/**
 * A job's events in a Redis stream, so any process can follow a prompt live (docs/fleet.md): the
 * serving host appends them (coalesced: one XADD per batch, a JSON array, bounded by MAXLEN) and a
 * client reads the stream from its start with XREAD. Best effort by design: an event that cannot
 * be written while Redis is away is dropped (the job's result is kept by the queue, not here), and
 * a reader slower than MAXLEN batches loses the oldest.
 */

import type { AssistantMessageEvent } from "@mariozechner/pi-ai";
import type { Redis } from "ioredis";
import type { FleetEvent } from "./fleet-queue.js";

/** Most batches a job's stream keeps (approximately: MAXLEN ~). */
const MAX_BATCHES = 2000;
/** How long a job's stream outlives its last write, in ms. */
const STREAM_TTL_MS = 3_600_000;
/** How long events wait for company before their batch is written. */
const FLUSH_DELAY_MS = 20;

/**
 * One job's writer of events; serving side. `push` never waits and never throws; `close` writes
 * what is left.
 */
export class JobEventsWriter {
  readonly #redis: Redis;
  readonly #key: string;
  #batch: FleetEvent[] = [];
  #timer: NodeJS.Timeout | undefined;
  #writing: Promise<void> = Promise.resolve();

  constructor(redis: Redis, key: string) {
    this.#redis = redis;
    this.#key = key;
  }

  /** Adds an event to the next batch. A streamed update goes without its `partial` (the deltas rebuild it). */
  push(event: FleetEvent): void {
    this.#batch.push(slim(event));
    this.#timer ??= setTimeout(() => this.#flush(), FLUSH_DELAY_MS);
  }

  /** Writes what is buffered; resolves once every batch was written or dropped. */
  async close(): Promise<void> {
    this.#flush();
    await this.#writing;
  }

  #flush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#batch.length === 0) return;
    const batch = JSON.stringify(this.#batch);
    this.#batch = [];
    // One write at a time, in order; a failed one (Redis away) is dropped.
    this.#writing = this.#writing.then(() =>
      this.#redis
        .multi()
        .xadd(this.#key, "MAXLEN", "~", MAX_BATCHES, "*", "e", batch)
        .pexpire(this.#key, STREAM_TTL_MS)
        .exec()
        .then(
          () => {},
          () => {},
        ),
    );
  }
}

/** `message_update` without the partial message it repeats (large, and rebuilt by the deltas). */
function slim(event: FleetEvent): FleetEvent {
  if (event.type !== "message_update") return event;
  const { partial: _partial, ...update } = event.assistantMessageEvent as AssistantMessageEvent & { partial?: unknown };
  return { ...event, assistantMessageEvent: update as AssistantMessageEvent };
}

/**
 * Reads a job's stream from its start (or after `from`), yielding events as they come, until
 * `done()` says the job is over and the stream has nothing more. While Redis is away it waits and
 * tries again; `signal` ends it early. `redis` must be a connection of its own (XREAD blocks it).
 */
export async function* readJobEvents(
  redis: Redis,
  key: string,
  options: { done: () => boolean; signal?: AbortSignal; blockMs?: number },
): AsyncGenerator<FleetEvent> {
  let last = "0-0";
  while (options.signal?.aborted !== true) {
    const finished = options.done();
    let reply: [string, [string, string[]][]][] | null;
    try {
      reply = (await redis.xread(
        "COUNT",
        100,
        "BLOCK",
        finished ? 1 : (options.blockMs ?? 500),
        "STREAMS",
        key,
        last,
      )) as [string, [string, string[]][]][] | null;
    } catch {
      if (finished) return;
      await new Promise((resolve) => setTimeout(resolve, 200));
      continue;
    }
    const entries = reply?.[0]?.[1] ?? [];
    for (const [id, fields] of entries) {
      last = id;
      const json = fields[1];
      if (json === undefined) continue;
      for (const event of JSON.parse(json) as FleetEvent[]) yield event;
    }
    if (finished && entries.length === 0) return;
  }
}
