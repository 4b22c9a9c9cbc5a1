/**
 * The client of a fleet's queue of prompts (docs/fleet.md, "Submitting prompts"): from any
 * process, submit a prompt to a session (new or existing), follow its events live, and await its
 * result. It needs only the fleet's Redis, no worker threads.
 *
 * Submits fail fast while Redis is away (ERR_FLEET_UNAVAILABLE), or keep trying for as long as
 * the caller said (`waitMs`). A caller that lost the reply of a submit submits again with the
 * same `jobId`: BullMQ ignores a job id it holds, and a serving host that finds the prompt
 * already in the session returns its stored result instead of running it again.
 */
import { randomUUID } from "node:crypto";
import { Job, Queue, QueueEvents } from "bullmq";
import { FleetUnavailableError, LifelineError } from "../../shared/errors.js";
import { errorText } from "../../shared/failures/error-text.js";
import { parseSettings, type SettingsInput } from "../../shared/settings/settings.js";
import type { ThinkingLevel } from "../../shared/thinking.js";
import type { ModelRef } from "../../shared/wire/protocol.js";
import { withTimeout } from "../../shared/with-timeout.js";
import { connectFleet, type FleetConnection } from "../redis/fleet-connection.js";
import { activeTraceparent } from "../telemetry/traceparent.js";
import {
  type FleetEvent,
  JOB_OPTIONS,
  jobEventsKey,
  PROMPT_QUEUE,
  type PromptJobData,
  type PromptJobResult,
  queuePrefix,
} from "./fleet-queue.js";
import { readJobEvents } from "./job-events.js";

/** Options of {@link FleetClient.connect}. */
export interface FleetClientOptions {
  /** The fleet: its Redis and name, as the `fleet` settings group (`{ redis, name? }`). */
  fleet: NonNullable<SettingsInput["fleet"]>;
  /** How long `connect` tries to reach Redis before ERR_FLEET_UNAVAILABLE. @default 3000 */
  connectTimeoutMs?: number;
}

/** Options of {@link FleetClient.submit}. */
export interface SubmitOptions {
  /** The session: an existing one continues, a new one is created with this id. @default a new session (a random UUID) */
  sessionId?: string;
  /**
   * The job's id, the caller's idempotency key: a submit with an id the fleet holds (running, or
   * finished within the last hour) adds nothing, and its result is the first one's. No `:`.
   * @default a random UUID
   */
  jobId?: string;
  /**
   * The session's model (`"provider/id"`, `{ provider, id }` or a pi-ai Model object); a stored
   * session keeps the one it last used unless this names one. @default the serving host's default
   */
  model?: string | ModelRef;
  /**
   * The session's thinking level (clamped to its model); a stored session keeps its own unless
   * this names one. @default a stored session's, else the serving host's
   */
  thinkingLevel?: ThinkingLevel;
  /** A new session's system prompt. */
  systemPrompt?: string;
  /** While Redis is away: 0 fails at once with ERR_FLEET_UNAVAILABLE, more keeps trying for that long (ms). @default 0 */
  waitMs?: number;
}

/** Options of {@link FleetClient.result}. */
export interface ResultOptions {
  /** Longest wait for the result, in ms; then ERR_FLEET_TIMEOUT (the prompt goes on). @default 600000 */
  timeoutMs?: number;
}

/** A submitted prompt. */
export interface PromptHandle {
  readonly jobId: string;
  readonly sessionId: string;
  /** The prompt's result; see {@link FleetClient.result}. */
  result(options?: ResultOptions): Promise<PromptJobResult>;
  /** Its events from the start, live; see {@link FleetClient.events}. */
  events(options?: { signal?: AbortSignal }): AsyncGenerator<FleetEvent>;
}

/** The longest one try of `submit` may take to reach Redis before it counts as failed. */
const ADD_TRY_MS = 3000;

/** How often a waiting `result()` also asks for the job's state (events may be missed while Redis restarts). */
const RESULT_CHECK_MS = 1000;

/** A client of one fleet's queue of prompts. Create with {@link FleetClient.connect}; close when done. */
export class FleetClient {
  readonly #connection: FleetConnection;
  #queue: Queue<PromptJobData, PromptJobResult>;
  #queueConnection: ReturnType<FleetConnection["duplicate"]>;
  /** When the queue was last rebuilt (see {@link FleetClient.#renewQueue}). */
  #queueBuiltAt = 0;
  #events: { queueEvents: QueueEvents; connection: ReturnType<FleetConnection["duplicate"]> } | undefined;
  readonly #readers = new Set<ReturnType<FleetConnection["duplicate"]>>();
  /** What ends each `result()` still waiting, for close(). */
  readonly #waiting = new Set<() => void>();
  #closed = false;

  /**
   * Connects to the fleet's Redis.
   * @throws ERR_INVALID_SETTINGS (naming the key) for a bad `fleet`, or a Redis that evicts keys;
   *   ERR_FLEET_UNAVAILABLE when Redis does not answer within `connectTimeoutMs`.
   */
  static async connect(options: FleetClientOptions): Promise<FleetClient> {
    const fleet = parseSettings({ fleet: options.fleet }, "FleetClient.connect({ fleet })").fleet;
    if (fleet === undefined)
      throw new LifelineError("ERR_INVALID_OPTIONS", "FleetClient.connect() needs { fleet: { redis } }.");
    const connection = await connectFleet(fleet, { timeoutMs: options.connectTimeoutMs ?? 3000 });
    return new FleetClient(connection);
  }

  /** @internal Use {@link FleetClient.connect}. */
  constructor(connection: FleetConnection) {
    this.#connection = connection;
    [this.#queue, this.#queueConnection] = this.#newQueue();
  }

  /** The queue for submits and state reads, on a connection of its own that fails fast while Redis is away. */
  #newQueue(): [Queue<PromptJobData, PromptJobResult>, ReturnType<FleetConnection["duplicate"]>] {
    const connection = this.#connection.duplicate();
    const queue = new Queue<PromptJobData, PromptJobResult>(PROMPT_QUEUE, {
      connection,
      prefix: queuePrefix(this.#connection.settings.name),
    });
    queue.on("error", () => {});
    this.#queueBuiltAt = Date.now();
    return [queue, connection];
  }

  /**
   * After a failed call: a BullMQ queue whose first connection attempt failed (Redis was away when
   * it was made) keeps that failure and rejects every later call with "Connection is closed", even
   * once its connection is ready again. So a failed call replaces the queue (at most twice a
   * second), and a submit that waits for Redis, or a result that polls, goes through once it is back.
   */
  #renewQueue(): void {
    if (this.#closed || Date.now() - this.#queueBuiltAt < 500) return;
    const [oldQueue, oldConnection] = [this.#queue, this.#queueConnection];
    [this.#queue, this.#queueConnection] = this.#newQueue();
    void oldQueue.close().catch(() => {});
    oldConnection.disconnect();
  }

  /**
   * Adds a prompt to the fleet's queue; resolves once Redis has it.
   * @throws ERR_FLEET_UNAVAILABLE while Redis is away (at once, or after `waitMs`);
   *   ERR_INVALID_OPTIONS for empty text or a bad id.
   */
  async submit(text: string, options: SubmitOptions = {}): Promise<PromptHandle> {
    this.#assertOpen();
    if (typeof text !== "string" || text.trim() === "") {
      throw new LifelineError("ERR_INVALID_OPTIONS", "submit() needs a non-empty prompt text.");
    }
    const jobId = options.jobId ?? randomUUID();
    const sessionId = options.sessionId ?? randomUUID();
    for (const [field, value] of [
      ["jobId", jobId],
      ["sessionId", sessionId],
    ] as const) {
      if (value === "" || value.length > 200 || value.includes(":") || /^\d+$/.test(value)) {
        throw new LifelineError(
          "ERR_INVALID_OPTIONS",
          `submit(): ${field} must be 1 to 200 characters, not all digits, without ":" (got ${JSON.stringify(value)}).`,
        );
      }
    }
    const data: PromptJobData = { sessionId, text };
    if (options.model !== undefined) data.model = options.model;
    if (options.thinkingLevel !== undefined) data.thinkingLevel = options.thinkingLevel;
    if (options.systemPrompt !== undefined) data.systemPrompt = options.systemPrompt;
    const traceparent = await activeTraceparent();
    if (traceparent !== undefined) data.traceparent = traceparent;
    const deadline = Date.now() + (options.waitMs ?? 0);
    for (;;) {
      try {
        // Each try is bounded too: a connection caught mid-reconnect can leave an add unanswered.
        // A try that lands after its bound is harmless: the next one has the same job id.
        const left = deadline - Date.now();
        const bound = left > 0 ? Math.min(ADD_TRY_MS, Math.max(left, 500)) : ADD_TRY_MS;
        await withTimeout(
          this.#queue.add(PROMPT_QUEUE, data, { ...JOB_OPTIONS, jobId }),
          bound,
          () => `Redis did not answer within ${bound} ms`,
        );
        break;
      } catch (error) {
        this.#renewQueue();
        if (Date.now() >= deadline || this.#closed) {
          throw new FleetUnavailableError(
            `Could not submit the prompt to the fleet's queue (fleet.redis): ${errorText(error)}. Start Redis, or pass waitMs to wait for it.`,
            { cause: error },
          );
        }
        await new Promise((resolve) => setTimeout(resolve, Math.min(200, Math.max(0, deadline - Date.now()))));
      }
    }
    return {
      jobId,
      sessionId,
      result: (resultOptions) => this.result(jobId, resultOptions),
      events: (eventOptions) => this.events(jobId, eventOptions),
    };
  }

  /**
   * The result of job `jobId`, once a host has finished it: how the prompt ended (a model failure
   * is a result, with its `stopReason` and `errorMessage`). Waits through Redis restarts.
   * @throws ERR_FLEET_JOB_FAILED when the job failed for good (a bad model name, say) or the fleet
   *   holds no job of that id; ERR_FLEET_TIMEOUT after `timeoutMs` (the prompt may still run).
   */
  async result(jobId: string, options: ResultOptions = {}): Promise<PromptJobResult> {
    this.#assertOpen();
    const timeoutMs = options.timeoutMs ?? 600_000;
    const queueEvents = this.#queueEvents();
    return new Promise<PromptJobResult>((resolve, reject) => {
      let settled = false;
      const finish = (settle: () => void) => {
        if (settled) return;
        settled = true;
        clearInterval(poll);
        clearTimeout(timer);
        queueEvents.off("completed", onEvent);
        queueEvents.off("failed", onEvent);
        this.#waiting.delete(cancel);
        settle();
      };
      // close() ends the wait: nothing keeps waiting (or keeps the process alive) on a closed client.
      const cancel = () =>
        finish(() =>
          reject(
            new LifelineError(
              "ERR_ABORTED",
              `The client was closed while waiting for prompt job ${jobId}'s result; the prompt goes on in the fleet.`,
            ),
          ),
        );
      this.#waiting.add(cancel);
      const check = () => {
        void this.#finished(jobId).then(
          (outcome) => {
            if (outcome === undefined) return;
            if (outcome.ok) finish(() => resolve(outcome.result));
            else finish(() => reject(outcome.error));
          },
          () => this.#renewQueue(), // Redis is away: the next check asks again.
        );
      };
      const onEvent = (event: { jobId: string }) => {
        if (event.jobId === jobId) check();
      };
      queueEvents.on("completed", onEvent);
      queueEvents.on("failed", onEvent);
      const poll = setInterval(check, RESULT_CHECK_MS);
      const timer = setTimeout(
        () =>
          finish(() =>
            reject(
              new LifelineError(
                "ERR_FLEET_TIMEOUT",
                `No result for prompt job ${jobId} within ${timeoutMs} ms; it may still run. Wait again with result(), or raise timeoutMs.`,
                {
                  cliMessage: `No result for prompt job ${jobId} within ${timeoutMs} ms; it may still run in the fleet. Wait again with \`lifeline submit --job-id ${jobId} …\` (the same job: nothing is run twice), or give a longer --timeout.`,
                },
              ),
            ),
          ),
        timeoutMs,
      );
      check();
    });
  }

  /**
   * The events of job `jobId` from its start (each host that takes it adds a `job_taken`, then
   * the session's events while it runs), live, until the job has finished. `signal` ends it early.
   */
  async *events(jobId: string, options: { signal?: AbortSignal } = {}): AsyncGenerator<FleetEvent> {
    this.#assertOpen();
    let done = false;
    void this.result(jobId).then(
      () => {
        done = true;
      },
      () => {
        done = true;
      },
    );
    const reader = this.#connection.duplicate();
    this.#readers.add(reader);
    try {
      yield* readJobEvents(reader, jobEventsKey(this.#connection.settings.name, jobId), {
        done: () => done || this.#closed,
        ...(options.signal === undefined ? {} : { signal: options.signal }),
      });
    } finally {
      this.#readers.delete(reader);
      reader.disconnect();
    }
  }

  /**
   * Closes the client's connections; idempotent. Prompts already submitted go on in the fleet; a
   * `result()` still waiting rejects with ERR_ABORTED.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const cancel of [...this.#waiting]) cancel();
    await this.#queue.close().catch(() => {});
    await this.#events?.queueEvents.close().catch(() => {});
    for (const connection of [this.#queueConnection, this.#events?.connection, ...this.#readers]) {
      connection?.disconnect();
    }
    await this.#connection.close();
  }

  /** The job's outcome if it has finished; undefined while it has not. @throws while Redis is away. */
  async #finished(
    jobId: string,
  ): Promise<{ ok: true; result: PromptJobResult } | { ok: false; error: LifelineError } | undefined> {
    // The state first, then the job: a job read before it finished and asked for its state after
    // would say "completed" with the return value it had before (none). BullMQ writes the return
    // value in the same script that moves the job to completed, so a job read after that has it.
    const state = await this.#queue.getJobState(jobId);
    if (state !== "completed" && state !== "failed" && state !== "unknown") return undefined;
    const job = state === "unknown" ? undefined : await Job.fromId<PromptJobData, PromptJobResult>(this.#queue, jobId);
    if (job === undefined) {
      return {
        ok: false,
        error: new LifelineError(
          "ERR_FLEET_JOB_FAILED",
          `The fleet holds no prompt job ${jobId} (finished jobs are kept for an hour).`,
        ),
      };
    }
    if (state === "completed") {
      // Never resolve a waiter with nothing: a result still missing is asked for again.
      return job.returnvalue === null || job.returnvalue === undefined
        ? undefined
        : { ok: true, result: job.returnvalue };
    }
    return {
      ok: false,
      error: new LifelineError("ERR_FLEET_JOB_FAILED", `Prompt job ${jobId} failed: ${job.failedReason}`),
    };
  }

  #queueEvents(): QueueEvents {
    if (this.#events === undefined) {
      // Blocking reads that wait out a Redis restart and go on from the last event seen.
      const connection = this.#connection.duplicate({ maxRetriesPerRequest: null, enableOfflineQueue: true });
      const queueEvents = new QueueEvents(PROMPT_QUEUE, {
        connection,
        prefix: queuePrefix(this.#connection.settings.name),
      });
      queueEvents.on("error", () => {});
      // One listener pair per waiting result(): many prompts may be awaited at once.
      queueEvents.setMaxListeners(0);
      this.#events = { queueEvents, connection };
    }
    return this.#events.queueEvents;
  }

  #assertOpen(): void {
    if (this.#closed) throw new LifelineError("ERR_INVALID_OPTIONS", "This FleetClient is closed; connect a new one.");
  }
}
