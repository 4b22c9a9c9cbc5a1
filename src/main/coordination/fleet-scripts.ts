/**
 * Fleet mode's B8 decisions as Redis Lua scripts: each decision is one script, so it is atomic (no
 * read-modify-write race between hosts) and costs one round trip. Every script reads the time
 * with Redis `TIME` (Redis 7 replicates scripts by their effects, so that is allowed), so the
 * hosts' clocks never meet: what crosses between hosts are durations, never absolute times.
 *
 * Scripts are loaded (`SCRIPT LOAD`) when the host joins or rejoins, and run by `EVALSHA`; a
 * `NOSCRIPT` answer (the script cache was flushed) is answered by `EVAL` of the same script.
 */
import type { Redis } from "ioredis";
import { evalLua, type LuaScript, luaScript } from "../redis/lua-script.js";

/** The script's time: ms since the epoch with µs in the fraction, from the Redis server's clock. */
const NOW = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000`;

/**
 * The retry budget of one provider and configuration, RetryBudget's exact sliding window:
 * KEYS first attempts, retries (sorted sets scored by time); ARGV ratio, minPerSecond, windowMs,
 * op (`deposit`, `withdraw`, `state` or `replay`), a member unique to this call. Prunes both
 * windows, then counts a first attempt, or takes a retry when the retries in the window plus this
 * one are at most `ratio × first attempts + minPerSecond × windowMs / 1000`. `replay` (after a
 * fallback) takes further ARGV: how many first attempts, then their ages in ms, then the retries'
 * ages, and records each still in the window at `now - age`, whatever the budget says (they
 * happened). Returns
 * `{allowed (1/0), first attempts, retries, available}` after the operation.
 */
const BUDGET = `${NOW}
local ratio = tonumber(ARGV[1])
local window = tonumber(ARGV[3])
local floor = tonumber(ARGV[2]) * window / 1000
local cutoff = now - window
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', cutoff)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', cutoff)
local deposits = redis.call('ZCARD', KEYS[1])
local retries = redis.call('ZCARD', KEYS[2])
local allowed = 1
local ttl = math.ceil(window) + 1000
if ARGV[4] == 'deposit' then
  redis.call('ZADD', KEYS[1], now, ARGV[5])
  redis.call('PEXPIRE', KEYS[1], ttl)
  deposits = deposits + 1
elseif ARGV[4] == 'withdraw' then
  if retries + 1 > ratio * deposits + floor then
    allowed = 0
  else
    redis.call('ZADD', KEYS[2], now, ARGV[5])
    redis.call('PEXPIRE', KEYS[2], ttl)
    retries = retries + 1
  end
elseif ARGV[4] == 'replay' then
  local firsts = 7 + tonumber(ARGV[6])
  for i = 7, #ARGV do
    local at = now - tonumber(ARGV[i])
    if at > cutoff then
      local key = KEYS[2]
      if i < firsts then key = KEYS[1] end
      redis.call('ZADD', key, at, ARGV[5] .. ':' .. i)
      redis.call('PEXPIRE', key, ttl)
    end
  end
  deposits = redis.call('ZCARD', KEYS[1])
  retries = redis.call('ZCARD', KEYS[2])
end
local available = math.floor(ratio * deposits + floor - retries)
if available < 0 then available = 0 end
return {allowed, deposits, retries, available}`;

/**
 * Closes a provider gate: KEYS the gates hash (field: the gate's key, value: its reopening time
 * on the server's clock); ARGV the gate's key, for how long (ms), the channel. A later reopening
 * already set is kept. Publishes `<ms left>\n<gate key>` so every host's mirror closes too, and
 * returns the ms left.
 */
const GATE_CLOSE = `${NOW}
local untilAt = now + tonumber(ARGV[2])
local current = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
if untilAt > current then
  redis.call('HSET', KEYS[1], ARGV[1], string.format('%.0f', math.ceil(untilAt)))
else
  untilAt = current
end
local left = math.ceil(untilAt - now)
redis.call('PUBLISH', ARGV[3], left .. '\\n' .. ARGV[1])
return left`;

/** The closed gates, for a host that joins: KEYS the gates hash. Drops the reopened ones; returns `[key, ms left, …]`. */
const GATE_LIST = `${NOW}
local all = redis.call('HGETALL', KEYS[1])
local closed = {}
for i = 1, #all, 2 do
  local left = math.ceil(tonumber(all[i + 1]) - now)
  if left > 0 then
    closed[#closed + 1] = all[i]
    closed[#closed + 1] = left
  else
    redis.call('HDEL', KEYS[1], all[i])
  end
end
return closed`;

/**
 * Takes a request permit: KEYS the permits (a sorted set: member → lease expiry on the server's
 * clock), the gates hash; ARGV limit, leaseMs, the member, the gate's key ('' for none). First the
 * gate: closed, it answers `{-1, ms left}` and takes nothing. Then expired leases are dropped (a
 * dead host's permits come back here) and a permit is taken if fewer than `limit` are held:
 * `{1, held}`; else `{0, held}`.
 */
const PERMIT_ACQUIRE = `${NOW}
if ARGV[4] ~= '' then
  local reopens = tonumber(redis.call('HGET', KEYS[2], ARGV[4]) or '0')
  if reopens > now then return {-1, math.ceil(reopens - now)} end
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local held = redis.call('ZCARD', KEYS[1])
if held >= tonumber(ARGV[1]) then return {0, held} end
local lease = tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], now + lease, ARGV[3])
redis.call('PEXPIRE', KEYS[1], lease)
return {1, held + 1}`;

/** Gives a permit back: KEYS the permits; ARGV the member, the channel. Wakes waiting hosts when one was held; returns the permits held. */
const PERMIT_RELEASE = `if redis.call('ZREM', KEYS[1], ARGV[1]) == 1 then
  redis.call('PUBLISH', ARGV[2], KEYS[1])
end
return redis.call('ZCARD', KEYS[1])`;

/**
 * Renews this host's leases: KEYS the permits; ARGV leaseMs, the limit, then the members. A lease
 * still there is renewed. One that lapsed (the host stalled past leaseMs while its request went
 * on) is taken again if the set has room, so no other host can take that request's place from
 * now on; if another host took it meanwhile, it stays gone and the fleet has one request more
 * than the limit until this host's request ends (docs/fleet.md, "Request permits and their
 * leases"). Returns how many leases this host holds now.
 */
const PERMIT_RENEW = `${NOW}
local lease = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local held = 0
for i = 3, #ARGV do
  if redis.call('ZSCORE', KEYS[1], ARGV[i]) or redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
    redis.call('ZADD', KEYS[1], now + lease, ARGV[i])
    held = held + 1
  end
end
if held > 0 then redis.call('PEXPIRE', KEYS[1], lease) end
return held`;

const SCRIPTS = {
  budget: luaScript(BUDGET),
  gateClose: luaScript(GATE_CLOSE),
  gateList: luaScript(GATE_LIST),
  permitAcquire: luaScript(PERMIT_ACQUIRE),
  permitRelease: luaScript(PERMIT_RELEASE),
  permitRenew: luaScript(PERMIT_RENEW),
} satisfies Record<string, LuaScript>;

/** The name of one of fleet mode's scripts. */
export type FleetScriptName = keyof typeof SCRIPTS;

/** Loads every script into the server's cache (one round trip, pipelined). Rejects when Redis does. */
export async function loadFleetScripts(redis: Redis): Promise<void> {
  const pipeline = redis.pipeline();
  for (const script of Object.values(SCRIPTS)) pipeline.script("LOAD", script.source);
  const results = (await pipeline.exec()) ?? [];
  for (const [error] of results) if (error) throw error;
}

/**
 * Runs script `name` with `keys` and `args` by EVALSHA, falling back to EVAL on NOSCRIPT. Commands
 * on one connection run in the order they were sent, so a script sent without awaiting counts
 * before any later one (the NOSCRIPT fallback alone could reorder: the scripts are loaded first).
 */
export function runFleetScript(
  redis: Redis,
  name: FleetScriptName,
  keys: readonly string[],
  args: readonly (string | number)[],
): Promise<unknown> {
  return evalLua(redis, SCRIPTS[name], keys.length, [...keys, ...args]);
}

/**
 * What a fleet-backed unit needs of its host's fleet membership (`FleetCoordination`): scripts run
 * while the host is in the fleet, the fleet's key names, and ids unique across the fleet.
 */
export interface FleetCalls {
  /**
   * Runs a script, bounded in time. Rejects when the host is not in the fleet now, or when the call
   * fails or times out; the host has then fallen back to its own decisions (and said so).
   */
  run(name: FleetScriptName, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown>;
  /** A key of this fleet: its prefix, then the parts joined by ":". */
  key(...parts: string[]): string;
  /** A member name no other call of any host uses (sorted-set members: attempts, permits). */
  member(): string;
}
