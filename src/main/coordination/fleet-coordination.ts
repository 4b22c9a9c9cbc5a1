/**
 * SPEC B8 across a fleet (docs/fleet.md): one host's membership of its fleet's coordination. While
 * the host is in the fleet, its retry budgets, provider gates and request permits are decided in
 * Redis (fleet-budget.ts, fleet-permits.ts, and the gates here); when Redis is lost (the
 * connection closes, or a command fails or does not answer within {@link COMMAND_TIMEOUT_MS}) the
 * host falls back to its own in-memory units, as without a fleet, says so to its sessions
 * (`coordination_fallback_start`), and rejoins when Redis answers again (`coordination_fallback_end`).
 * Nothing waits on Redis longer than one command's bound.
 *
 * The gates: a host that sees a 429/529 with a retry hint closes the gate in Redis (a hash of
 * gate key → reopening time on the server's clock) and publishes the duration; every host keeps a
 * mirror of the fleet's gates in its own `ProviderGate`, closed by those messages and seeded from
 * the hash when it joins. So a gate check costs no round trip (a prompt or retry asks the mirror),
 * hosts learn of a closed gate within one pub/sub delivery, and the permit script also checks the
 * hash before every request it lets through. Main thread only.
 */
import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import type { CoordinationFallbackEvent } from "../../shared/events.js";
import { errorText } from "../../shared/failures/error-text.js";
import type { RetryBudgetSettings } from "../../shared/settings/settings.js";
import { withTimeout } from "../../shared/with-timeout.js";
import type { FleetConnection } from "../redis/fleet-connection.js";
import { FleetBudget } from "./fleet-budget.js";
import { type FleetLease, FleetPermits } from "./fleet-permits.js";
import { type FleetCalls, type FleetScriptName, loadFleetScripts, runFleetScript } from "./fleet-scripts.js";
import type { ProviderGate } from "./provider-gate.js";

/** The longest a decision waits for Redis before the host falls back to its own. */
const COMMAND_TIMEOUT_MS = 1000;
/** How often a host that fell back checks whether Redis answers again (besides the connection's `up`). */
const PROBE_MS = 500;

/** Where the host's decisions are made now. */
export type CoordinationSource = "fleet" | "local";

/** What a fleet membership needs of its host. */
export interface FleetCoordinationOptions {
  connection: FleetConnection;
  /** The host's gates: the mirror of the fleet's, and the host's own while it has fallen back. */
  gate: ProviderGate;
  /** Tells the host's sessions that decisions moved to the host or back to the fleet. */
  announce: (event: CoordinationFallbackEvent) => void;
  /**
   * What the host's own budgets counted in the last `ms` (the fallback being over), as ages in
   * ms, to be replayed into the fleet's budgets on rejoining.
   */
  decidedAlone?: (ms: number) => AloneDecisions[];
}

/** First attempts and retries one of the host's budgets counted while the host decided alone. */
export interface AloneDecisions {
  provider: string;
  config: RetryBudgetSettings;
  /** Ages in ms of the first attempts, then of the retries. */
  deposits: number[];
  withdrawals: number[];
}

/** One host's part in its fleet's coordination. */
export class FleetCoordination implements FleetCalls {
  readonly #connection: FleetConnection;
  readonly #gate: ProviderGate;
  readonly #decidedAlone: FleetCoordinationOptions["decidedAlone"];
  readonly #announce: (event: CoordinationFallbackEvent) => void;
  /** This host in the fleet's members (permits, attempts): unique per host object. */
  readonly #hostId = randomUUID();
  #sequence = 0;
  #source: CoordinationSource = "local";
  /** When the host fell back and said so (performance.now); undefined while in the fleet or before it first joined. */
  #lostAt: number | undefined;
  #rejoining: Promise<void> | undefined;
  #probe: NodeJS.Timeout | undefined;
  #renewal: NodeJS.Timeout | undefined;
  #closed = false;
  readonly #budgets = new Map<string, FleetBudget>();
  readonly #permits = new Map<string, FleetPermits>();
  readonly #gatesKey: string;
  readonly #gatesChannel: string;
  readonly #permitsChannel: string;
  readonly #onMessage = (channel: string, message: string) => this.#message(channel, message);
  readonly #onSubscriberReady = () => {
    // Messages sent while the subscriber was away are lost: the hash has every closed gate.
    if (this.#source === "fleet") void this.#seedGates().catch((error: unknown) => this.#lost(error));
  };
  readonly #onDown = () => this.#lost(new Error("the connection to the fleet's Redis closed"));
  readonly #onUp = () => {
    void this.#rejoin();
  };

  constructor(options: FleetCoordinationOptions) {
    this.#connection = options.connection;
    this.#gate = options.gate;
    this.#decidedAlone = options.decidedAlone;
    this.#announce = options.announce;
    this.#gatesKey = options.connection.key("gates");
    this.#gatesChannel = options.connection.key("channel", "gates");
    this.#permitsChannel = options.connection.key("channel", "permits");
  }

  /** Where decisions are made now: `fleet` while the host is in its fleet, else `local`. */
  get source(): CoordinationSource {
    return this.#source === "fleet" && this.#connection.available ? "fleet" : "local";
  }

  /** The fleet's name (`fleet.name`). */
  get name(): string {
    return this.#connection.settings.name;
  }

  /**
   * Joins the fleet: loads the scripts, subscribes to the gates and permits channels and copies
   * the closed gates into the host's mirror. Resolves when joined or, if Redis fails meanwhile,
   * fallen back (it then rejoins on its own); never rejects, bounded by the command timeouts.
   */
  join(): Promise<void> {
    this.#connection.on("down", this.#onDown);
    this.#connection.on("up", this.#onUp);
    const subscriber = this.#connection.subscriber();
    subscriber.on("message", this.#onMessage);
    subscriber.on("ready", this.#onSubscriberReady);
    this.#renewal = setInterval(
      () => this.#renewLeases(),
      Math.max(1, Math.floor(this.#connection.settings.leaseMs / 3)),
    );
    this.#renewal.unref();
    return this.#rejoin();
  }

  /** Stops taking part: timers and listeners off, this host's leases given back (best effort). */
  leave(): void {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#renewal);
    clearTimeout(this.#probe);
    this.#connection.off("down", this.#onDown);
    this.#connection.off("up", this.#onUp);
    const subscriber = this.#connection.subscriber();
    subscriber.off("message", this.#onMessage);
    subscriber.off("ready", this.#onSubscriberReady);
    const error = new Error("The host left its fleet.");
    for (const permits of this.#permits.values()) permits.failWaiters(error);
  }

  /** The fleet's budget of `provider` with `config` (keyed as the host's own budgets). */
  budget(provider: string, config: RetryBudgetSettings): FleetBudget {
    const key = `${provider}\u0000${config.ratio}\u0000${config.minPerSecond}\u0000${config.windowMs}`;
    let budget = this.#budgets.get(key);
    if (budget === undefined) {
      budget = new FleetBudget(this, provider, config);
      this.#budgets.set(key, budget);
    }
    return budget;
  }

  /** The fleet's permits of `provider` with `limit` (as the host's semaphores: differing limits do not share). */
  permits(provider: string, limit: number): FleetPermits {
    const key = this.key("permits", provider, String(limit));
    let permits = this.#permits.get(key);
    if (permits === undefined) {
      const names = { key, gates: this.#gatesKey, channel: this.#permitsChannel };
      permits = new FleetPermits(this, names, limit, this.#connection.settings.leaseMs);
      this.#permits.set(key, permits);
    }
    return permits;
  }

  /**
   * A fleet permit for one request of `provider` (`limit`), after the gate `gateKey` (undefined:
   * none) is open fleet-wide: a closed gate found by the permit script closes the host's mirror,
   * which is waited out before asking again. Resolves with the lease, or undefined when Redis
   * failed (the host has fallen back: the caller's local permit is all there is). Rejects with the
   * signal's reason when it aborts first; nothing is held then.
   */
  async acquirePermit(
    provider: string,
    limit: number,
    gateKey: string | undefined,
    signal: AbortSignal,
  ): Promise<FleetLease | undefined> {
    const permits = this.permits(provider, limit);
    for (;;) {
      if (gateKey !== undefined) await this.#gate.wait(gateKey, signal);
      if (this.source !== "fleet") return undefined;
      let outcome: Awaited<ReturnType<FleetPermits["acquire"]>>;
      try {
        outcome = await permits.acquire(gateKey ?? "", signal);
      } catch {
        if (signal.aborted) throw signal.reason;
        return undefined;
      }
      if (outcome.kind === "granted") return outcome.lease;
      if (gateKey !== undefined) this.#gate.close(gateKey, outcome.ms);
    }
  }

  /** Closes the gate `gateKey` for `ms` fleet-wide (not awaited; the host's mirror is closed by the caller). */
  closeGate(gateKey: string, ms: number): void {
    if (!(ms > 0)) return;
    void this.run("gateClose", [this.#gatesKey], [gateKey, Math.ceil(ms), this.#gatesChannel]).catch(() => {});
  }

  run(name: FleetScriptName, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    if (this.source !== "fleet") return Promise.reject(new Error("The host is not in its fleet now."));
    return this.#bounded(runFleetScript(this.#connection.redis, name, keys, args), name).catch((error: unknown) => {
      this.#lost(error);
      throw error;
    });
  }

  key(...parts: string[]): string {
    return this.#connection.key(...parts);
  }

  member(): string {
    return `${this.#hostId}:${++this.#sequence}`;
  }

  /** Falls back to the host's own decisions, once per loss, and starts probing for Redis. */
  #lost(error: unknown): void {
    if (this.#closed || this.#source === "local") return;
    this.#source = "local";
    this.#lostAt = performance.now();
    for (const permits of this.#permits.values()) permits.failWaiters(error);
    this.#announce({ type: "coordination_fallback_start", fleet: this.name, reason: errorText(error) });
    this.#scheduleProbe();
  }

  /** Joins or rejoins, one attempt at a time; a failed attempt leaves the host local and probing. */
  #rejoin(): Promise<void> {
    if (this.#closed || this.#source === "fleet") return Promise.resolve();
    if (this.#rejoining !== undefined) return this.#rejoining;
    const attempt = (async () => {
      try {
        const redis = this.#connection.redis;
        await this.#bounded(loadFleetScripts(redis), "SCRIPT LOAD");
        const subscriber = this.#connection.subscriber();
        await this.#bounded(ready(subscriber), "the subscriber's connection");
        await this.#bounded(subscriber.subscribe(this.#gatesChannel, this.#permitsChannel), "SUBSCRIBE");
        await this.#seedGates();
        if (this.#closed) return;
        const lostAt = this.#lostAt;
        // Taken in the same turn as the switch, so every decision is in Redis once: made alone
        // before it (replayed here), or sent to the fleet after it.
        const alone = lostAt === undefined ? undefined : (this.#decidedAlone?.(performance.now() - lostAt) ?? []);
        this.#source = "fleet";
        this.#lostAt = undefined;
        if (alone !== undefined) this.#replay(alone);
        if (lostAt !== undefined) {
          this.#announce({
            type: "coordination_fallback_end",
            fleet: this.name,
            fallbackMs: Math.round(performance.now() - lostAt),
          });
        }
        for (const permits of this.#permits.values()) permits.wake();
      } catch {
        this.#scheduleProbe();
      } finally {
        this.#rejoining = undefined;
      }
    })();
    this.#rejoining = attempt;
    return attempt;
  }

  /**
   * What the host decided alone goes to the fleet (not awaited): its budgets' first attempts and
   * retries into the fleet's windows, and every gate its mirror holds closed (a 429 seen during the
   * fallback), which the fleet keeps when later than its own and announces to every host.
   */
  #replay(alone: readonly AloneDecisions[]): void {
    for (const { provider, config, deposits, withdrawals } of alone) {
      this.budget(provider, config).replay(deposits, withdrawals);
    }
    for (const [key, ms] of this.#gate.closed()) this.closeGate(key, ms);
  }

  /** Copies the fleet's closed gates into the host's mirror. */
  async #seedGates(): Promise<void> {
    const reply = (await this.#bounded(
      runFleetScript(this.#connection.redis, "gateList", [this.#gatesKey], []),
      "the gates",
    )) as (string | number)[];
    for (let i = 0; i + 1 < reply.length; i += 2) this.#gate.close(String(reply[i]), Number(reply[i + 1]));
  }

  #message(channel: string, message: string): void {
    if (this.#closed) return;
    if (channel === this.#gatesChannel) {
      const split = message.indexOf("\n");
      const ms = Number(message.slice(0, split));
      if (split > 0 && ms > 0) this.#gate.close(message.slice(split + 1), ms);
    } else if (channel === this.#permitsChannel) {
      this.#permits.get(message)?.wake();
    }
  }

  #renewLeases(): void {
    if (this.source !== "fleet") return;
    for (const permits of this.#permits.values()) void permits.renew();
  }

  #scheduleProbe(): void {
    if (this.#closed || this.#probe !== undefined) return;
    this.#probe = setTimeout(() => {
      this.#probe = undefined;
      if (this.#source === "fleet" || this.#closed) return;
      if (this.#connection.available) void this.#rejoin();
      else this.#scheduleProbe();
    }, PROBE_MS);
    this.#probe.unref();
  }

  /** `promise`, or a rejection naming `what` after {@link COMMAND_TIMEOUT_MS}: a hung Redis holds nothing up for longer. */
  #bounded<T>(promise: Promise<T>, what: string): Promise<T> {
    return withTimeout(
      promise,
      COMMAND_TIMEOUT_MS,
      () => `the fleet's Redis did not answer ${what} within ${COMMAND_TIMEOUT_MS} ms`,
    );
  }
}

/** Resolves once `redis` is connected and ready, connecting a lazy connection first. */
function ready(redis: Redis): Promise<void> {
  if (redis.status === "ready") return Promise.resolve();
  if (redis.status === "wait") redis.connect().catch(() => {});
  return new Promise<void>((resolve) => redis.once("ready", () => resolve()));
}
