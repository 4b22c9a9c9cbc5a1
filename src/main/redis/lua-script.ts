/**
 * Fleet mode's Redis Lua scripts, as every part that keeps state in Redis runs them (the B8
 * coordination, the session store): a script is sent by its SHA1 (`EVALSHA`), and a `NOSCRIPT`
 * answer (Redis restarted, or its script cache was flushed) is answered by `EVAL` of the same
 * source, which also caches it again. One round trip either way in the common case.
 */
import { createHash } from "node:crypto";
import type { Redis } from "ioredis";

/** A script's source and its SHA1, computed once. */
export interface LuaScript {
  readonly source: string;
  readonly sha: string;
}

/** The script of `source`. */
export function luaScript(source: string): LuaScript {
  return { source, sha: createHash("sha1").update(source).digest("hex") };
}

/**
 * Runs `script` with its first `numKeys` arguments as keys: EVALSHA, else EVAL on NOSCRIPT.
 * @throws what Redis answers (a script's own error, or the connection's while Redis is away).
 */
export async function evalLua(
  redis: Redis,
  script: LuaScript,
  numKeys: number,
  args: readonly (string | number)[],
): Promise<unknown> {
  try {
    return await redis.evalsha(script.sha, numKeys, ...args);
  } catch (error) {
    if (!(error instanceof Error) || !error.message.startsWith("NOSCRIPT")) throw error;
    return redis.eval(script.source, numKeys, ...args);
  }
}
