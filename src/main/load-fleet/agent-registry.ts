/**
 * Generators' registrations: each `lifeline load-agent` holds a lease `load:agent:<id>` (`SET PX`
 * {@link AGENT_LEASE_MS}, renewed every {@link AGENT_RENEW_MS}) whose value says what it is and
 * whether it is busy. A generator that dies or loses Redis stops renewing, and its key lapses: a
 * coordinator that sees it gone declares the generator lost. No consensus: the lease is the truth.
 */
import type { FleetConnection } from "../redis/fleet-connection.js";
import {
  AGENT_LEASE_MS,
  AGENT_RENEW_MS,
  type AgentRegistration,
  decodeRegistration,
  loadKeys,
} from "./load-fleet-protocol.js";

/** Most SCAN rounds of {@link listAgents}: 1,000 × 200 keys, far beyond any fleet. */
const MAX_SCAN_ROUNDS = 1000;

/**
 * Every live registration of the fleet, oldest first.
 * @throws what Redis answers when it is away.
 */
export async function listAgents(connection: FleetConnection): Promise<AgentRegistration[]> {
  const keys = loadKeys((...parts) => connection.key(...parts));
  const found = new Set<string>();
  let cursor = "0";
  for (let round = 0; round < MAX_SCAN_ROUNDS; round++) {
    const [next, batch] = await connection.redis.scan(cursor, "MATCH", keys.agentPattern, "COUNT", 200);
    for (const key of batch) found.add(key);
    cursor = next;
    if (cursor === "0") break;
  }
  if (found.size === 0) return [];
  const values = await connection.redis.mget(...found);
  return values
    .map(decodeRegistration)
    .filter((agent): agent is AgentRegistration => agent !== undefined)
    .sort((a, b) => a.joinedAtMs - b.joinedAtMs);
}

/**
 * The registration leases of `ids`, in order: each one's registration, or undefined when its
 * lease has lapsed.
 * @throws what Redis answers when it is away.
 */
export async function readAgents(
  connection: FleetConnection,
  ids: readonly string[],
): Promise<(AgentRegistration | undefined)[]> {
  if (ids.length === 0) return [];
  const keys = loadKeys((...parts) => connection.key(...parts));
  const values = await connection.redis.mget(...ids.map(keys.agent));
  return values.map(decodeRegistration);
}

/**
 * A generator's own lease: written at {@link start}, renewed every {@link AGENT_RENEW_MS} with the
 * latest state, deleted at {@link stop}. `sinceRenewedMs` tells the generator how long it has gone
 * without a successful renewal: past {@link AGENT_LEASE_MS} it must assume it was declared lost.
 */
export class AgentLease {
  readonly #connection: FleetConnection;
  readonly #key: string;
  #registration: AgentRegistration;
  #timer: NodeJS.Timeout | undefined;
  #renewedAt = Date.now();

  constructor(connection: FleetConnection, registration: AgentRegistration) {
    this.#connection = connection;
    this.#registration = registration;
    this.#key = loadKeys((...parts) => connection.key(...parts)).agent(registration.id);
  }

  /** Writes the lease and starts renewing it. @throws what Redis answers when it is away. */
  async start(): Promise<void> {
    await this.#write();
    this.#timer = setInterval(() => void this.#write().catch(() => {}), AGENT_RENEW_MS);
  }

  /** Changes the state the lease shows; written at once (a failure waits for the next renewal). */
  async update(change: Pick<AgentRegistration, "state" | "runId">): Promise<void> {
    this.#registration = { ...this.#registration, ...change };
    await this.#write().catch(() => {});
  }

  /** Ms since the last successful write. */
  get sinceRenewedMs(): number {
    return Date.now() - this.#renewedAt;
  }

  /** Stops renewing and deletes the lease (best effort: it lapses anyway). Idempotent. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#connection.redis.del(this.#key).catch(() => {});
  }

  async #write(): Promise<void> {
    await this.#connection.redis.set(this.#key, JSON.stringify(this.#registration), "PX", AGENT_LEASE_MS);
    this.#renewedAt = Date.now();
  }
}
