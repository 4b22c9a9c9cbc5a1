/**
 * The Lua scripts of the Redis session store (redis-session-store.ts): every step that reads and
 * then writes a session's keys runs as one script, so it is atomic in Redis and costs one round
 * trip. Key layout and the lock's rules are in the store's file comment and docs/fleet.md.
 *
 * Scripts answer with a status word first (`ok`, `locked`, `fenced`, ...), never with a Redis
 * error, so a refusal is told apart from a connection that failed (which may be tried again).
 */
import type { Redis } from "ioredis";
import { evalLua, type LuaScript, luaScript } from "../redis/lua-script.js";

/** One Lua script of the store, with how many of its arguments are keys. */
interface SessionScript extends LuaScript {
  readonly keys: number;
}

function script(keys: number, lua: string): SessionScript {
  return { ...luaScript(lua), keys };
}

/** Milliseconds of Redis's own clock: one clock for every host of the fleet. */
const NOW = `local t = redis.call('TIME')
local now = string.format('%d', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))`;

/** Marks a session as written now in its info hash and both indexes. KEYS 2 info, 5 all, 6 by cwd. */
const TOUCH = `redis.call('HSET', KEYS[2], 'modified', now)
redis.call('ZADD', KEYS[5], now, ARGV[1])
redis.call('ZADD', KEYS[6], now, ARGV[1])`;

/**
 * Stores a new session and takes its lock.
 * KEYS: entries, info, lock, fence, all, by cwd, ids. ARGV: id, owner, leaseMs, header line, cwd, created.
 * → {"ok", fence} | {"locked", pttl, holder} | {"exists"}
 */
export const CREATE = script(
  7,
  `local holder = redis.call('GET', KEYS[3])
if holder then return {'locked', redis.call('PTTL', KEYS[3]), holder} end
if redis.call('EXISTS', KEYS[1]) == 1 then return {'exists'} end
local fence = redis.call('INCR', KEYS[4])
redis.call('SET', KEYS[3], fence .. ':' .. ARGV[2], 'PX', ARGV[3])
redis.call('RPUSH', KEYS[1], ARGV[4])
${NOW}
redis.call('HSET', KEYS[2], 'id', ARGV[1], 'cwd', ARGV[5], 'created', ARGV[6], 'messages', 0)
${TOUCH}
redis.call('ZADD', KEYS[7], 0, ARGV[1])
return {'ok', fence}`,
);

/**
 * Takes the lock of a stored session and reads it.
 * KEYS: entries, lock, fence. ARGV: owner, leaseMs.
 * → {"ok", fence, line...} | {"locked", pttl, holder} | {"missing"}
 */
export const ACQUIRE = script(
  3,
  `if redis.call('EXISTS', KEYS[1]) == 0 then return {'missing'} end
local holder = redis.call('GET', KEYS[2])
if holder then return {'locked', redis.call('PTTL', KEYS[2]), holder} end
local fence = redis.call('INCR', KEYS[3])
redis.call('SET', KEYS[2], fence .. ':' .. ARGV[1], 'PX', ARGV[2])
local reply = redis.call('LRANGE', KEYS[1], 0, -1)
table.insert(reply, 1, fence)
table.insert(reply, 1, 'ok')
return reply`,
);

/**
 * Extends the lease while the writer's fencing token is the session's latest (no one took the
 * session since): also after the lease lapsed unnoticed (a Redis restart, a short stall).
 * KEYS: lock, fence. ARGV: fence, lock value, leaseMs. → 1 | 0 (taken over: the writer is fenced)
 */
export const RENEW = script(
  2,
  `if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1`,
);

/**
 * Appends one batch of lines if the writer's fencing token is still the session's latest, at the
 * list length the writer expects: a batch whose earlier try landed (the reply was lost with the
 * connection) is recognised by the length and not stored twice.
 * KEYS: entries, info, lock, fence, all, by cwd.
 * ARGV: id, fence, lock value, leaseMs, expected length, messages added, first user text ("" for
 *   none), name flag ("1": set the name to the next argument, "" deletes it), name, line...
 * → {"ok", length} | {"fenced", holder} | {"diverged", length}
 */
export const APPEND = script(
  6,
  `if redis.call('GET', KEYS[4]) ~= ARGV[2] then return {'fenced', redis.call('GET', KEYS[3]) or ''} end
local first = 10
local count = #ARGV - first + 1
local length = redis.call('LLEN', KEYS[1])
local expected = tonumber(ARGV[5])
if length == expected + count then return {'ok', length} end
if length ~= expected then return {'diverged', length} end
redis.call('SET', KEYS[3], ARGV[3], 'PX', ARGV[4])
for start = first, #ARGV, 500 do
  redis.call('RPUSH', KEYS[1], unpack(ARGV, start, math.min(start + 499, #ARGV)))
end
if ARGV[6] ~= '0' then redis.call('HINCRBY', KEYS[2], 'messages', ARGV[6]) end
if ARGV[7] ~= '' then redis.call('HSETNX', KEYS[2], 'first', ARGV[7]) end
if ARGV[8] == '1' then
  if ARGV[9] == '' then redis.call('HDEL', KEYS[2], 'name') else redis.call('HSET', KEYS[2], 'name', ARGV[9]) end
end
${NOW}
${TOUCH}
return {'ok', length + count}`,
);

/** Deletes the lock if it still holds this writer's value. KEYS: lock. ARGV: lock value. → 1 | 0 */
export const RELEASE = script(
  1,
  `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`,
);

/**
 * Runs `script` (EVALSHA, or EVAL when Redis does not know it yet, as after a restart).
 * @throws the connection's error while Redis is away (commands fail fast in fleet mode).
 */
export function runScript(redis: Redis, script: SessionScript, args: readonly (string | number)[]): Promise<unknown> {
  return evalLua(redis, script, script.keys, args);
}
