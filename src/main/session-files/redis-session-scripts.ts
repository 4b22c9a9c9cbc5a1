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
 * Retention (fleet.sessionTtlMs, redis-session-keys.ts): `keep` gives a session's keys and the
 * index keys the idle time `ttl` from `now` and records the deadline in the expiry index (`ttl` 0:
 * no deadline, and any earlier one removed). Creating a session keeps it; opening, renewing and
 * closing it keep it only when `due`: more than a tenth of `ttl` has passed since its deadline
 * was last set (or its keys carry a TTL they should not, or lack one they should). So a session
 * in use costs one PTTL per script, not nine commands, and an idle one expires between 0.9 and 1
 * × `ttl` after its last use. `sweep` removes up to `limit` sessions whose deadline has passed
 * from every index and answers how many it removed. Sweeping never deletes a live session: Redis
 * deletes the keys themselves when their TTL (set with the deadline) runs out, and a due entry
 * whose session still has a TTL left (a deadline moved on under another entry) is moved to that
 * time instead; one kept without a TTL (`ttl` 0 since) only leaves the expiry index. Keys are
 * built from the fleet's prefix `P` as redis-session-keys.ts builds them.
 */
const RETENTION = `local function clock()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function due(P, id, ttl)
  local left = redis.call('PTTL', P .. 'session:' .. id .. ':entries')
  if ttl > 0 then return left < ttl - ttl / 10 end
  return left >= 0
end
local function indexes(P, cwd)
  return {P .. 'sessions:all', P .. 'sessions:ids', P .. 'sessions:cwd:' .. cwd, P .. 'sessions:expiry'}
end
local function keep(P, id, cwd, ttl, now)
  local s = P .. 'session:' .. id .. ':'
  local member = cwd .. '\\n' .. id
  if ttl > 0 then
    redis.call('ZADD', P .. 'sessions:expiry', now + ttl, member)
    for _, key in ipairs({s .. 'entries', s .. 'info', s .. 'fence'}) do redis.call('PEXPIRE', key, ttl) end
    for _, key in ipairs(indexes(P, cwd)) do redis.call('PEXPIRE', key, ttl) end
  else
    if redis.call('ZREM', P .. 'sessions:expiry', member) == 1 then
      for _, key in ipairs({s .. 'entries', s .. 'info', s .. 'fence'}) do redis.call('PERSIST', key) end
    end
    for _, key in ipairs(indexes(P, cwd)) do redis.call('PERSIST', key) end
  end
end
local function sweep(P, now, limit)
  local expiry = P .. 'sessions:expiry'
  local expired = redis.call('ZRANGEBYSCORE', expiry, '-inf', now, 'LIMIT', 0, limit)
  local removed = 0
  for _, member in ipairs(expired) do
    local cwd, id = string.match(member, '^(.*)\\n([^\\n]*)$')
    local s = P .. 'session:' .. (id or '') .. ':'
    local left = id and redis.call('PTTL', s .. 'entries') or -2
    if left > 0 then
      redis.call('ZADD', expiry, now + left, member)
    else
      if id and left == -2 then
        redis.call('DEL', s .. 'info', s .. 'fence')
        for _, key in ipairs(indexes(P, cwd)) do redis.call('ZREM', key, id) end
      end
      redis.call('ZREM', expiry, member)
      removed = removed + 1
    end
  end
  return removed
end`;

/**
 * Most expired sessions one create sweeps from the indexes: every expired session was created
 * once, so sweeping at creation keeps up with expiry a hundred times over.
 */
const SWEEP_LIMIT = 100;

/**
 * Stores a new session and takes its lock. Its fencing token starts at Redis's clock in ms (or
 * above a counter left there), so a session made again under the id of one that expired never
 * gives out a token a stalled writer of the old one still holds.
 * KEYS: entries, info, lock, fence, all, by cwd, ids.
 * ARGV: id, owner, leaseMs, header line, cwd, created, prefix, ttl.
 * → {"ok", fence} | {"locked", pttl, holder} | {"exists"}
 */
export const CREATE = script(
  7,
  `${RETENTION}
local holder = redis.call('GET', KEYS[3])
if holder then return {'locked', redis.call('PTTL', KEYS[3]), holder} end
if redis.call('EXISTS', KEYS[1]) == 1 then return {'exists'} end
${NOW}
local fence = string.format('%d', math.max(tonumber(redis.call('GET', KEYS[4]) or '0') + 1, tonumber(now)))
redis.call('SET', KEYS[4], fence)
redis.call('SET', KEYS[3], fence .. ':' .. ARGV[2], 'PX', ARGV[3])
redis.call('RPUSH', KEYS[1], ARGV[4])
redis.call('HSET', KEYS[2], 'id', ARGV[1], 'cwd', ARGV[5], 'created', ARGV[6], 'messages', 0)
${TOUCH}
redis.call('ZADD', KEYS[7], 0, ARGV[1])
keep(ARGV[7], ARGV[1], ARGV[5], tonumber(ARGV[8]), tonumber(now))
sweep(ARGV[7], tonumber(now), ${SWEEP_LIMIT})
return {'ok', fence}`,
);

/**
 * Takes the lock of a stored session and reads it.
 * KEYS: entries, lock, fence. ARGV: owner, leaseMs, id, prefix, ttl.
 * → {"ok", fence, line...} | {"locked", pttl, holder} | {"missing"}
 */
export const ACQUIRE = script(
  3,
  `${RETENTION}
if redis.call('EXISTS', KEYS[1]) == 0 then return {'missing'} end
local holder = redis.call('GET', KEYS[2])
if holder then return {'locked', redis.call('PTTL', KEYS[2]), holder} end
local fence = string.format('%d', redis.call('INCR', KEYS[3]))
redis.call('SET', KEYS[2], fence .. ':' .. ARGV[1], 'PX', ARGV[2])
if due(ARGV[4], ARGV[3], tonumber(ARGV[5])) then
  local cwd = redis.call('HGET', ARGV[4] .. 'session:' .. ARGV[3] .. ':info', 'cwd') or ''
  keep(ARGV[4], ARGV[3], cwd, tonumber(ARGV[5]), clock())
end
local reply = redis.call('LRANGE', KEYS[1], 0, -1)
table.insert(reply, 1, fence)
table.insert(reply, 1, 'ok')
return reply`,
);

/**
 * Extends the lease while the writer's fencing token is the session's latest (no one took the
 * session since): also after the lease lapsed unnoticed (a Redis restart, a short stall). An open
 * session is not idle: its deadline moves on too.
 * KEYS: lock, fence. ARGV: fence, lock value, leaseMs, id, cwd, prefix, ttl.
 * → 1 | 0 (taken over: the writer is fenced)
 */
export const RENEW = script(
  2,
  `${RETENTION}
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
if due(ARGV[6], ARGV[4], tonumber(ARGV[7])) then keep(ARGV[6], ARGV[4], ARGV[5], tonumber(ARGV[7]), clock()) end
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

/**
 * Deletes the lock if it still holds this writer's value; the session's idle time then starts
 * (when `due`). An id of "" releases the lock alone.
 * KEYS: lock. ARGV: lock value, id, cwd, prefix, ttl. → 1 | 0
 */
export const RELEASE = script(
  1,
  `${RETENTION}
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
if ARGV[2] ~= '' and due(ARGV[4], ARGV[2], tonumber(ARGV[5])) then keep(ARGV[4], ARGV[2], ARGV[3], tonumber(ARGV[5]), clock()) end
return 1`,
);

/**
 * Deletes a stored session that no one holds: its keys, and it from every index.
 * KEYS: entries, info, lock, fence. ARGV: id, prefix.
 * → {"ok"} | {"locked", pttl, holder} | {"missing"}
 */
export const DELETE = script(
  4,
  `${RETENTION}
local holder = redis.call('GET', KEYS[3])
if holder then return {'locked', redis.call('PTTL', KEYS[3]), holder} end
if redis.call('EXISTS', KEYS[1]) == 0 then return {'missing'} end
local cwd = redis.call('HGET', KEYS[2], 'cwd') or ''
redis.call('DEL', KEYS[1], KEYS[2], KEYS[4])
for _, key in ipairs(indexes(ARGV[2], cwd)) do redis.call('ZREM', key, ARGV[1]) end
redis.call('ZREM', ARGV[2] .. 'sessions:expiry', cwd .. '\\n' .. ARGV[1])
return {'ok'}`,
);

/**
 * Sweeps up to `limit` expired sessions from the indexes (see RETENTION), for a prune that wants
 * them all gone now. KEYS: none. ARGV: prefix, limit. → how many it removed
 */
export const SWEEP = script(
  0,
  `${RETENTION}
return sweep(ARGV[1], clock(), tonumber(ARGV[2]))`,
);

/**
 * Runs `script` (EVALSHA, or EVAL when Redis does not know it yet, as after a restart).
 * @throws the connection's error while Redis is away (commands fail fast in fleet mode).
 */
export function runScript(redis: Redis, script: SessionScript, args: readonly (string | number)[]): Promise<unknown> {
  return evalLua(redis, script, script.keys, args);
}
