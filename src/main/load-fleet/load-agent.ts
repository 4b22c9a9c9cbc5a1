/**
 * `runLoadAgent()`: a generator of distributed load runs (`lifeline load-agent`). It joins the
 * fleet's Redis, measures its clock's offset to Redis's, registers with a lease
 * (agent-registry.ts), and waits for commands on `load:commands:<id>`. A `run_start` runs its share
 * with `runLoad()` at the common start instant, its host joined to the same fleet (so the retry
 * budget, provider gate and permits are fleet-wide), streams a snapshot every sample interval to
 * the run's stream, then its records (chunked) and its final report; `run_stop` aborts the run
 * (prompts in flight are aborted; the partial final is still sent). Then it waits for the next
 * run, or returns with `once`.
 *
 * Losing Redis: a generator whose lease has gone unrenewed for {@link AGENT_LEASE_MS} assumes the
 * coordinator declared it lost and aborts its run, so it sends no more load that no report counts.
 * Losing the coordinator: every {@link LOCK_CHECK_MS} a running generator reads the fleet's run
 * lock; once it no longer names its run (the coordinator is gone and its lock lapsed, or it gave
 * up waiting), the generator aborts its run. The run's stream expires an hour after the start.
 */
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { Redis } from "ioredis";
import { LifelineError } from "../../shared/errors.js";
import { errorText } from "../../shared/failures/error-text.js";
import type { FleetSettings } from "../../shared/settings/settings.js";
import { withTimeout } from "../../shared/with-timeout.js";
import { lifelineVersion } from "../config/lifeline-version.js";
import { Sketch } from "../load/metrics/sketch.js";
import type { LoadOptions, LoadSample } from "../load/options/load-options.js";
import { REPORT_SCHEMA } from "../load/report/load-report.js";
import { runLoad } from "../load/run/run-load.js";
import { connectFleet, type FleetConnection } from "../redis/fleet-connection.js";
import { abortableSleep } from "../retry/sleep.js";
import { AgentLease } from "./agent-registry.js";
import {
  AGENT_LEASE_MS,
  type AgentCommand,
  type AgentRegistration,
  decodeMessage,
  LOAD_FLEET_PROTOCOL,
  loadKeys,
  RECORDS_PER_CHUNK,
  type RunEntry,
  type RunShare,
} from "./load-fleet-protocol.js";
import { type ClockOffset, measureClockOffset, redisNowMs } from "./redis-clock.js";

/** Options of {@link runLoadAgent}. */
export interface LoadAgentOptions {
  /** The fleet to join (validated `fleet` settings). */
  fleet: FleetSettings;
  /**
   * Key for the runs' `--model` provider (the coordinator never sends one). @default models.json,
   * else the provider's environment variable
   */
  apiKey?: string;
  /** Return after one run. @default false (serve runs until `signal`) */
  once?: boolean;
  /** As `runLoad`'s: settings files, models.json and the worker script of the runs' hosts. */
  cwd?: string;
  lifelineDir?: string | false;
  workerEntry?: string | URL;
  /** Aborting it aborts a run in progress (its partial final is sent) and returns. */
  signal?: AbortSignal;
  /** Called once registered, with the registration (the CLI prints it). */
  onReady?: (registration: AgentRegistration) => void;
  /** One line per thing worth telling an operator (a run started, ended, failed). */
  log?: (line: string) => void;
}

/** How long a blocking read of the commands waits before looking at `signal` again, seconds. */
const COMMAND_WAIT_S = 1;
/** Pause after a failed read of the commands (Redis away). */
const COMMAND_RETRY_MS = 250;
/** How often a running generator checks that its run still holds the fleet's run lock. */
const LOCK_CHECK_MS = 2000;
/** The run's stream outlives a coordinator that never came back for it by this much. */
const ORPHAN_STREAM_TTL_MS = 3_600_000;

/**
 * Serves distributed load runs; see the file comment. Resolves when `signal` aborts, or after one
 * run with `once`.
 * @throws ERR_FLEET_UNAVAILABLE / ERR_INVALID_SETTINGS when the fleet's Redis cannot be used at start.
 */
export async function runLoadAgent(options: LoadAgentOptions): Promise<void> {
  const connection = await connectFleet(options.fleet);
  const blocking = connection.duplicate();
  try {
    await withTimeout(blocking.connect(), 3000, () => "the command connection did not open within 3 s");
    const clock = await measureClockOffset(connection.redis);
    const registration: AgentRegistration = {
      id: `${hostname()}-${process.pid}-${randomBytes(2).toString("hex")}`,
      host: hostname(),
      pid: process.pid,
      version: lifelineVersion(),
      schema: REPORT_SCHEMA,
      protocol: LOAD_FLEET_PROTOCOL,
      state: "idle",
      runId: null,
      joinedAtMs: Math.round(redisNowMs(clock)),
      clockOffsetMs: Math.round(clock.offsetMs * 1000) / 1000,
      clockErrorMs: Math.round(clock.errorMs * 1000) / 1000,
    };
    const lease = new AgentLease(connection, registration);
    await lease.start();
    try {
      options.onReady?.(registration);
      await new Agent(options, connection, blocking, lease, registration, clock).serve();
    } finally {
      await lease.stop();
    }
  } finally {
    blocking.disconnect();
    await connection.close();
  }
}

/** One generator's command loop and runs. */
class Agent {
  readonly #options: LoadAgentOptions;
  readonly #connection: FleetConnection;
  readonly #blocking: Redis;
  readonly #lease: AgentLease;
  readonly #registration: AgentRegistration;
  readonly #clock: ClockOffset;
  readonly #keys: ReturnType<typeof loadKeys>;
  #run: { runId: string; stop: AbortController; done: Promise<void> } | undefined;

  constructor(
    options: LoadAgentOptions,
    connection: FleetConnection,
    blocking: Redis,
    lease: AgentLease,
    registration: AgentRegistration,
    clock: ClockOffset,
  ) {
    this.#options = options;
    this.#connection = connection;
    this.#blocking = blocking;
    this.#lease = lease;
    this.#registration = registration;
    this.#clock = clock;
    this.#keys = loadKeys((...parts) => connection.key(...parts));
  }

  async serve(): Promise<void> {
    const signal = this.#options.signal;
    const onAbort = () => this.#run?.stop.abort();
    signal?.addEventListener("abort", onAbort, { once: true });
    let ran = false;
    let lockCheckedAt = Date.now();
    try {
      while (signal?.aborted !== true && !(this.#options.once === true && ran && this.#run === undefined)) {
        if (this.#run !== undefined && this.#lease.sinceRenewedMs > AGENT_LEASE_MS) {
          this.#log(`lost the fleet's Redis for over ${AGENT_LEASE_MS} ms: aborting run ${this.#run.runId}`);
          this.#run.stop.abort();
        }
        if (this.#run !== undefined && Date.now() - lockCheckedAt >= LOCK_CHECK_MS) {
          lockCheckedAt = Date.now();
          await this.#checkCoordinator(this.#run);
        }
        const command = await this.#nextCommand();
        if (command === undefined) continue;
        if (command.type === "run_start") {
          if (this.#run !== undefined) {
            this.#log(`ignored run ${command.runId}: busy with run ${this.#run.runId}`);
            continue;
          }
          ran = true;
          const stop = new AbortController();
          const runId = command.runId;
          const done = this.#runShare(runId, command.share, stop.signal).finally(() => {
            this.#run = undefined;
          });
          this.#run = { runId, stop, done };
        } else if (this.#run?.runId === command.runId) {
          this.#log(`run ${command.runId}: stop (${command.reason})`);
          this.#run.stop.abort();
        }
      }
      await this.#run?.done;
    } finally {
      signal?.removeEventListener("abort", onAbort);
    }
  }

  /** Aborts `run` when the fleet's run lock no longer names it; a failed read decides nothing. */
  async #checkCoordinator(run: { runId: string; stop: AbortController }): Promise<void> {
    const raw = await this.#connection.redis.get(this.#keys.lock).catch(() => undefined);
    if (raw === undefined || run.stop.signal.aborted) return;
    let holder: string | undefined;
    try {
      holder = (JSON.parse(raw ?? "null") as { runId?: string } | null)?.runId;
    } catch {
      holder = undefined;
    }
    if (holder === run.runId) return;
    this.#log(`run ${run.runId}: its coordinator is gone (the fleet's run lock no longer names it); aborting`);
    run.stop.abort();
  }

  /** The next command, or undefined after {@link COMMAND_WAIT_S} without one. */
  async #nextCommand(): Promise<AgentCommand | undefined> {
    try {
      const reply = await this.#blocking.blpop(this.#keys.commands(this.#registration.id), COMMAND_WAIT_S);
      if (reply === null) return undefined;
      return decodeMessage<AgentCommand>(reply[1], ["run_start", "run_stop"], "load-agent command");
    } catch (error) {
      if (error instanceof LifelineError) throw error;
      await new Promise((resolve) => setTimeout(resolve, COMMAND_RETRY_MS));
      return undefined;
    }
  }

  async #runShare(runId: string, share: RunShare, stop: AbortSignal): Promise<void> {
    const stream = this.#keys.run(runId);
    const gen = this.#registration.id;
    const now = () => Math.round(redisNowMs(this.#clock));
    await this.#lease.update({ state: "busy", runId });
    this.#log(`run ${runId}: ${share.options.sessions} sessions as generator ${share.index + 1}/${share.generators}`);
    try {
      await this.#send(stream, { type: "run_accepted", gen, atMs: now() });
      // A coordinator that never comes back leaves the stream to expire (its own end sets 60 s).
      await this.#connection.redis.pexpire(stream, ORPHAN_STREAM_TTL_MS, "NX");
      const sketches = { e2eMs: new Sketch(), ttftMs: new Sketch() };
      let read = 0;
      let seq = 0;
      const onSample = (sample: LoadSample) => {
        for (; read < sample.requests.length; read++) {
          const request = sample.requests[read];
          if (request === undefined || request.failure !== undefined) continue;
          sketches.e2eMs.add(request.e2eMs);
          if (request.ttftMs !== null) sketches.ttftMs.add(request.ttftMs);
        }
        void this.#send(stream, {
          type: "snapshot",
          gen,
          seq: seq++,
          atMs: now(),
          counters: structuredClone(sample.counters),
          point: sample.point,
          sketches: { e2eMs: sketches.e2eMs.toJSON(), ttftMs: sketches.ttftMs.toJSON() },
        }).catch(() => {});
      };
      const loadOptions: LoadOptions = {
        ...share.options,
        settings: {
          ...share.options.settings,
          fleet: { redis: this.#options.fleet.redis, name: this.#options.fleet.name },
        },
        outDir: false,
        signal: stop,
        onSample,
        // Set up first (mock, host, sessions), then wait for the common instant: the generators'
        // loads begin together however long each machine took to set up.
        beforeStart: async () => {
          const wait = share.startAtMs - redisNowMs(this.#clock);
          if (wait > 0) await abortableSleep(wait, stop).catch(() => {});
          else
            this.#log(
              `run ${runId}: set up ${Math.round(-wait)} ms after the common start; its load begins late by that`,
            );
        },
      };
      if (this.#options.apiKey !== undefined && share.options.model !== undefined) {
        loadOptions.apiKey = this.#options.apiKey;
      }
      if (this.#options.cwd !== undefined) loadOptions.cwd = this.#options.cwd;
      if (this.#options.lifelineDir !== undefined) loadOptions.lifelineDir = this.#options.lifelineDir;
      if (this.#options.workerEntry !== undefined) loadOptions.workerEntry = this.#options.workerEntry;
      const result = await runLoad(loadOptions);
      const records = [...result.requests, ...result.prompts].sort((a, b) => a.startMs - b.startMs);
      let chunks = 0;
      for (let from = 0; from < records.length; from += RECORDS_PER_CHUNK) {
        const lines = records
          .slice(from, from + RECORDS_PER_CHUNK)
          .map((record) => JSON.stringify(record))
          .join("\n");
        await this.#send(stream, { type: "records", gen, chunk: chunks++, lines });
      }
      await this.#send(stream, {
        type: "run_final",
        gen,
        atMs: now(),
        startedAtMs: Math.round(Date.parse(result.report.startedAt) + this.#clock.offsetMs),
        report: result.report,
        chunks,
      });
      this.#log(`run ${runId}: ${result.report.status}, ${result.report.totals.requests.sent} requests`);
    } catch (error) {
      this.#log(`run ${runId} failed: ${errorText(error)}`);
      const code = error instanceof LifelineError ? error.code : "ERR_LOAD_FAILED";
      await this.#send(stream, { type: "run_failed", gen, atMs: now(), code, message: errorText(error) }).catch(
        () => {},
      );
    } finally {
      await this.#lease.update({ state: "idle", runId: null });
    }
  }

  /** Appends one entry to the run's stream. @throws what Redis answers when it is away. */
  async #send(stream: string, entry: RunEntry): Promise<void> {
    await this.#connection.redis.xadd(stream, "*", "m", JSON.stringify(entry));
  }

  #log(line: string): void {
    this.#options.log?.(line);
  }
}
