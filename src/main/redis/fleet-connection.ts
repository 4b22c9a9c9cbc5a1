/**
 * Fleet mode's link to its Redis (docs/fleet.md), on the main thread. One connection per host for
 * commands and scripts, and one more for pub/sub when something subscribes. Commands fail fast
 * while Redis is away (no offline queue), so a caller falls back or reports at once instead of
 * waiting; the connection itself keeps reconnecting in the background, and `up`/`down` tell who
 * cares when it comes and goes.
 *
 * Every key the fleet writes starts with {@link FleetConnection.prefix} (`lifeline:<name>:`), so
 * two fleets can share one Redis without seeing each other.
 */
import { EventEmitter } from "node:events";
import { Redis, type RedisOptions } from "ioredis";
import { FleetAuthError, FleetUnavailableError, InvalidSettingsError } from "../../shared/errors.js";
import { errorText } from "../../shared/failures/error-text.js";
import type { FleetSettings } from "../../shared/settings/settings.js";
import { withTimeout } from "../../shared/with-timeout.js";

/** How long {@link connectFleet} tries before ERR_FLEET_UNAVAILABLE. */
const CONNECT_TIMEOUT_MS = 3000;
/** Longest pause between reconnection attempts while Redis is away. */
const MAX_RECONNECT_DELAY_MS = 1000;
/** The oldest Redis fleet mode runs on (its scripts use Redis 7's semantics: effects replication). */
const MIN_REDIS_MAJOR = 7;

/** Options of {@link connectFleet}. */
export interface ConnectFleetOptions {
  /** How long to try before ERR_FLEET_UNAVAILABLE. @default 3000 */
  timeoutMs?: number;
}

/** Events of a {@link FleetConnection}. */
interface FleetConnectionEvents {
  /** Redis answered again after being away. */
  up: [];
  /** Redis went away (the connection closed); commands fail until `up`. */
  down: [error: Error | undefined];
}

/** A host's connection to its fleet's Redis. */
export class FleetConnection extends EventEmitter<FleetConnectionEvents> {
  readonly settings: FleetSettings;
  /** `lifeline:<name>:`, the start of every key of this fleet. */
  readonly prefix: string;
  /** Commands and scripts; fails fast while Redis is away. */
  readonly redis: Redis;
  /** What the connection check found worth saying (AOF off): for the CLI to print, once. */
  readonly warnings: readonly string[];
  #subscriber: Redis | undefined;
  #closed = false;
  #up = true;

  /** Use {@link connectFleet}. */
  constructor(settings: FleetSettings, redis: Redis, warnings: readonly string[]) {
    super();
    this.settings = settings;
    this.prefix = fleetPrefix(settings.name);
    this.redis = redis;
    this.warnings = warnings;
    redis.on("ready", () => {
      if (this.#up || this.#closed) return;
      this.#up = true;
      this.emit("up");
    });
    redis.on("close", () => {
      if (!this.#up || this.#closed) return;
      this.#up = false;
      this.emit("down", undefined);
    });
    // ioredis emits "error" for every failed reconnection; the state change is what matters.
    redis.on("error", () => {});
  }

  /** Redis answers now (as far as this connection knows). */
  get available(): boolean {
    return this.#up && !this.#closed;
  }

  /** A key of this fleet: the prefix, then the parts joined by ":". */
  key(...parts: string[]): string {
    return this.prefix + parts.join(":");
  }

  /** The connection for pub/sub (a subscribed connection can run no other command). Made on first use. */
  subscriber(): Redis {
    if (this.#subscriber === undefined) {
      this.#subscriber = this.redis.duplicate();
      this.#subscriber.on("error", () => {});
    }
    return this.#subscriber;
  }

  /** A new connection with the same options, for a library that needs its own (BullMQ's blocking reads). */
  duplicate(override: RedisOptions = {}): Redis {
    const copy = this.redis.duplicate(override);
    copy.on("error", () => {});
    return copy;
  }

  /** Closes the connections; idempotent. Nothing the fleet holds is released here (leases lapse). */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const connections = [this.redis, this.#subscriber].filter((c): c is Redis => c !== undefined);
    await Promise.all(connections.map((c) => c.quit().catch(() => c.disconnect())));
  }
}

/** `lifeline:<name>:` */
export function fleetPrefix(name: string): string {
  return `lifeline:${name}:`;
}

/** The URL as it may be shown: any password replaced by `***`. */
function redactedUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== "") parsed.password = "***";
    return parsed.toString();
  } catch {
    return "(an unparsable URL)";
  }
}

/** The ioredis options of a fleet connection (see the file comment). */
function fleetRedisOptions(connectTimeout: number) {
  return {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout,
    retryStrategy: (times: number) => Math.min(50 * 2 ** Math.min(times, 10), MAX_RECONNECT_DELAY_MS),
  } satisfies RedisOptions;
}

/**
 * Connects to the fleet's Redis and checks it fits fleet mode.
 * @throws ERR_FLEET_UNAVAILABLE when it does not answer within the timeout (the message names the
 *   URL, password hidden, and the last error); ERR_INVALID_SETTINGS (naming `fleet.redis`) when it
 *   answers but evicts keys (`maxmemory-policy` other than `noeviction`: a queue or a lease could
 *   vanish) or is older than Redis 7, and naming `fleet.sessionTtlMs` when it is shorter than
 *   `fleet.leaseMs`.
 */
export async function connectFleet(
  settings: FleetSettings,
  options: ConnectFleetOptions = {},
): Promise<FleetConnection> {
  if (settings.sessionTtlMs !== 0 && settings.sessionTtlMs < settings.leaseMs) {
    // Else a live writer's session could expire between two renewals of its lease.
    throw new InvalidSettingsError(
      `fleet.sessionTtlMs (${settings.sessionTtlMs}) is shorter than fleet.leaseMs (${settings.leaseMs}); make it 0 (keep sessions) or at least the lease.`,
    );
  }
  const timeoutMs = options.timeoutMs ?? CONNECT_TIMEOUT_MS;
  const shown = redactedUrl(settings.redis);
  const redis = new Redis(settings.redis, fleetRedisOptions(timeoutMs));
  let lastError: unknown;
  let refused: (error: Error) => void = () => {};
  // A refused AUTH is answered at once and retrying cannot mend it: fail now, and say so.
  const authRefused = new Promise<never>((_, reject) => {
    refused = reject;
  });
  redis.on("error", (error) => {
    lastError = error;
    if (isAuthRefusal(error)) refused(error);
  });
  // A first try that fails (Redis not up yet) leaves ioredis reconnecting (retryStrategy): the
  // wait is for the first "ready", so the whole timeout is tried, not only the first attempt.
  const ready = new Promise<void>((resolve) => redis.once("ready", () => resolve()));
  redis.connect().catch(() => {});
  try {
    await withTimeout(Promise.race([ready, authRefused]), timeoutMs, () => `no answer within ${timeoutMs} ms`);
  } catch (error) {
    redis.disconnect();
    if (isAuthRefusal(lastError ?? error)) {
      throw new FleetAuthError(
        `The fleet's Redis at ${shown} (fleet.redis) refused its credentials: authentication failed (${errorText(lastError ?? error)}). Fix the user and password in fleet.redis (redis://user:password@host:port), or --fleet.`,
        { cause: lastError ?? error },
      );
    }
    const why = errorText(lastError ?? error);
    throw new FleetUnavailableError(
      `Cannot reach the fleet's Redis at ${shown} (fleet.redis): tried for ${timeoutMs} ms, last error: ${why}. Start Redis (docs/fleet.md says how) or fix fleet.redis.`,
      { cause: lastError ?? error },
    );
  }
  try {
    const warnings = checkServer(
      await redis.info("server"),
      await redis.info("memory"),
      await redis.info("persistence"),
      shown,
    );
    return new FleetConnection(settings, redis, warnings);
  } catch (error) {
    redis.disconnect();
    if (error instanceof InvalidSettingsError) throw error;
    throw new FleetUnavailableError(
      `The fleet's Redis at ${shown} (fleet.redis) did not answer INFO: ${errorText(error)}.`,
      {
        cause: error,
      },
    );
  }
}

/**
 * Redis's refusals of a connection's credentials: a wrong user or password (`WRONGPASS`), none
 * where one is required (`NOAUTH`), or a password where none is set (`ERR AUTH … called without
 * any password configured`).
 */
function isAuthRefusal(error: unknown): boolean {
  const text = errorText(error);
  return (
    /^(WRONGPASS|NOAUTH)\b/.test(text) ||
    /^ERR AUTH\b.*without any password/.test(text) ||
    /invalid password/i.test(text)
  );
}

/** Checks `INFO` sections; returns warnings, throws ERR_INVALID_SETTINGS for a Redis fleet mode cannot use. */
function checkServer(server: string, memory: string, persistence: string, shown: string): string[] {
  const version = infoField(server, "redis_version") ?? "";
  const major = Number.parseInt(version, 10);
  if (!(major >= MIN_REDIS_MAJOR)) {
    throw new InvalidSettingsError(
      `fleet.redis: the Redis at ${shown} is version ${version || "(unknown)"}; fleet mode needs Redis ${MIN_REDIS_MAJOR} or later.`,
    );
  }
  const policy = infoField(memory, "maxmemory_policy");
  if (policy !== undefined && policy !== "noeviction") {
    throw new InvalidSettingsError(
      `fleet.redis: the Redis at ${shown} has maxmemory-policy ${policy}, which may evict the fleet's queue, leases and sessions; set it to noeviction (redis-cli CONFIG SET maxmemory-policy noeviction, and in redis.conf).`,
    );
  }
  const warnings: string[] = [];
  if (infoField(persistence, "aof_enabled") === "0") {
    warnings.push(
      `fleet.redis: the Redis at ${shown} has AOF off, so a Redis restart can lose queued prompts and session entries written since its last snapshot; turn it on (appendonly yes) as docs/fleet.md says.`,
    );
  }
  return warnings;
}

function infoField(info: string, field: string): string | undefined {
  for (const line of info.split(/\r?\n/)) {
    if (line.startsWith(`${field}:`)) return line.slice(field.length + 1).trim();
  }
  return undefined;
}
