/**
 * The run lock of a fleet name: one distributed load run at a time per `--fleet-name`, so two
 * coordinators never hand the same generators two runs. A lease (`SET NX PX` {@link RUN_LOCK_MS})
 * renewed by its coordinator every {@link RUN_LOCK_RENEW_MS} and released by it at the end (compare
 * and delete); a coordinator that dies leaves it to lapse within {@link RUN_LOCK_MS}.
 */
import { LifelineError } from "../../shared/errors.js";
import type { FleetConnection } from "../redis/fleet-connection.js";
import { evalLua, luaScript } from "../redis/lua-script.js";
import { loadKeys, type RunLockHolder } from "./load-fleet-protocol.js";

/** The lock lapses this long after its coordinator stopped renewing it. */
const RUN_LOCK_MS = 10_000;
const RUN_LOCK_RENEW_MS = 2000;

/** KEYS[1] the lock, ARGV[1] the run id, ARGV[2] ms (0: delete). Acts only while the run holds it. */
const RENEW_OR_RELEASE = luaScript(`
local held = redis.call("GET", KEYS[1])
if not held or cjson.decode(held).runId ~= ARGV[1] then return 0 end
if ARGV[2] == "0" then redis.call("DEL", KEYS[1]) else redis.call("PEXPIRE", KEYS[1], ARGV[2]) end
return 1`);

/** A held run lock. */
export interface RunLock {
  /** Stops renewing and deletes the lock if this run still holds it. Never throws; idempotent. */
  release(): Promise<void>;
}

/**
 * Takes the fleet's run lock for `holder`.
 * @throws LifelineError ERR_LOAD_FLEET_BUSY naming the holder when another run has it; what Redis
 *   answers when it is away.
 */
export async function acquireRunLock(connection: FleetConnection, holder: RunLockHolder): Promise<RunLock> {
  const key = loadKeys((...parts) => connection.key(...parts)).lock;
  const taken = await connection.redis.set(key, JSON.stringify(holder), "PX", RUN_LOCK_MS, "NX");
  if (taken !== "OK") {
    const raw = await connection.redis.get(key);
    let who = "another coordinator";
    try {
      const other = JSON.parse(raw ?? "") as RunLockHolder;
      who = `run ${other.runId} of ${other.host} (pid ${other.pid}), started ${other.startedAt}`;
    } catch {
      // An unreadable holder is still a holder.
    }
    throw new LifelineError(
      "ERR_LOAD_FLEET_BUSY",
      `The fleet "${connection.settings.name}" already has a distributed load run: ${who}. Wait for it to end (its lock lapses ${RUN_LOCK_MS / 1000} s after its coordinator is gone), or use another --fleet-name.`,
    );
  }
  const renew = () => evalLua(connection.redis, RENEW_OR_RELEASE, 1, [key, holder.runId, RUN_LOCK_MS]);
  const timer = setInterval(() => void renew().catch(() => {}), RUN_LOCK_RENEW_MS);
  let released = false;
  return {
    async release() {
      if (released) return;
      released = true;
      clearInterval(timer);
      await evalLua(connection.redis, RENEW_OR_RELEASE, 1, [key, holder.runId, 0]).catch(() => {});
    },
  };
}
