/**
 * `lifeline serve` as a library call: a session host that takes prompt jobs from its fleet's
 * BullMQ queue and runs them in its workers (docs/fleet.md, "Serving prompts").
 *
 * Takeover after a host dies: BullMQ's job lock is a lease of `fleet.leaseMs` (`lockDuration`),
 * renewed every half of it while the host's event loop runs; every host checks for stalled jobs
 * every half lease (`stalledInterval`). So a dead host's jobs are back in the queue within about
 * 1.5 × `fleet.leaseMs` of its death, and its sessions' leases have lapsed by then too (they are
 * `fleet.leaseMs` long), so the next host opens them at once. `maxStalledCount` is high: a job is
 * never failed for the deaths of the hosts that ran it.
 */
import { Worker } from "bullmq";
import { InvalidSettingsError, LifelineError } from "../../shared/errors.js";
import type { SessionHostOptions } from "../host/host-options.js";
import { createSessionHost, type SessionHost } from "../host/session-host.js";
import type { FleetConnection } from "../redis/fleet-connection.js";
import { jobEventsKey, PROMPT_QUEUE, type PromptJobData, type PromptJobResult, queuePrefix } from "./fleet-queue.js";
import { JobEventsWriter } from "./job-events.js";
import { PromptProcessor } from "./prompt-processor.js";
import { SERVE_DEFAULTS, type ServeOptions, type ServeSessionOptions } from "./serve-options.js";

/** How many times a job may be taken back from a dead host before BullMQ would fail it: never, in practice. */
const MAX_STALLED_COUNT = 1_000_000;

/**
 * Starts serving the fleet named by the host's settings (`fleet`, from the settings files or
 * `hostOptions.settings`): a host is created with `hostOptions` (sessions on: in fleet mode they
 * are kept in the fleet's Redis), and a BullMQ worker takes jobs from the fleet's queue.
 * @throws ERR_INVALID_SETTINGS (no `fleet.redis`, or a Redis that evicts keys), ERR_INVALID_OPTIONS
 *   (a bad option, or `sessions: false`), ERR_FLEET_UNAVAILABLE (Redis does not answer), and what
 *   `createSessionHost` throws.
 */
export async function serveFleet(
  hostOptions: SessionHostOptions = {},
  options: ServeOptions = {},
): Promise<FleetServer> {
  const concurrency = options.concurrency ?? SERVE_DEFAULTS.concurrency;
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 10_000) {
    throw new LifelineError(
      "ERR_INVALID_OPTIONS",
      `serveFleet(): concurrency must be a whole number from 1 to 10000, got ${String(concurrency)}.`,
    );
  }
  if (hostOptions.sessions === false) {
    throw new LifelineError(
      "ERR_INVALID_OPTIONS",
      "serveFleet() keeps its sessions in the fleet's Redis; do not pass sessions: false.",
    );
  }
  const host = createSessionHost({ ...hostOptions, sessions: hostOptions.sessions ?? {} });
  try {
    // The host's own connection: one per serving process, and its warnings are printed once.
    const connection = await host.fleetConnection();
    if (connection === undefined) {
      throw new InvalidSettingsError(
        "fleet.redis: lifeline serve needs a fleet; give --fleet redis://… or set fleet.redis in a settings file (docs/fleet.md).",
      );
    }
    return new FleetServer(host, connection, concurrency, options.session ?? {});
  } catch (error) {
    await host.close();
    throw error;
  }
}

/** A host serving its fleet's queue; see {@link serveFleet}. */
export class FleetServer {
  /** The host running the prompts. */
  readonly host: SessionHost;
  readonly #worker: Worker<PromptJobData, PromptJobResult>;
  readonly #processor: PromptProcessor;
  /** BullMQ's connection: passed to it, so it is ours to close. */
  readonly #bull: ReturnType<FleetConnection["duplicate"]>;
  #closing: Promise<void> | undefined;

  /** @internal Use {@link serveFleet}. */
  constructor(host: SessionHost, connection: FleetConnection, concurrency: number, session: ServeSessionOptions) {
    this.host = host;
    const { name, leaseMs } = connection.settings;
    this.#processor = new PromptProcessor({
      host,
      leaseMs,
      session,
      events: (jobId) => new JobEventsWriter(connection.redis, jobEventsKey(name, jobId)),
    });
    // BullMQ's own connection: blocking commands, and commands that wait out a Redis restart.
    const bull = connection.duplicate({ maxRetriesPerRequest: null, enableOfflineQueue: true });
    this.#bull = bull;
    this.#worker = new Worker<PromptJobData, PromptJobResult>(
      PROMPT_QUEUE,
      (job, token) => this.#processor.process(job, token),
      {
        connection: bull,
        prefix: queuePrefix(name),
        concurrency,
        lockDuration: leaseMs,
        stalledInterval: Math.max(250, Math.floor(leaseMs / 2)),
        maxStalledCount: MAX_STALLED_COUNT,
      },
    );
    // BullMQ reports failed Redis calls here (while Redis is away); its connection reconnects.
    this.#worker.on("error", () => {});
  }

  /**
   * Stops taking jobs, waits for the running ones to finish, then closes the host and the
   * connections. A caller that cannot wait exits instead: its running jobs are handed to other
   * hosts by the stall check, as after a crash. Idempotent.
   */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      await this.#worker.close();
      await this.#processor.close();
      await this.host.close();
      await this.#bull.quit().catch(() => this.#bull.disconnect());
    })();
    return this.#closing;
  }
}
