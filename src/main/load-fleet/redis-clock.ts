/**
 * A common clock for the machines of a distributed load run: Redis's `TIME`. Each process
 * estimates its offset to it once (Cristian's method: the server's time is taken to be read at the
 * midpoint of the round trip, best of a few tries), then stamps with `local + offset`. The
 * estimate is off by at most half the best round trip (`errorMs`), plus the drift of the local
 * clock since, which over a load run (minutes) is far below a millisecond.
 */
import { performance } from "node:perf_hooks";
import type { Redis } from "ioredis";

/** An estimate of `redis − local`, ms. */
export interface ClockOffset {
  offsetMs: number;
  /** Bound of the estimate's error: half the round trip of the sample it was read from. */
  errorMs: number;
}

/** Tries of {@link measureClockOffset}: the fastest round trip wins. */
const CLOCK_SAMPLES = 5;

/** Local wall-clock time with sub-millisecond resolution. */
function localNowMs(): number {
  return performance.timeOrigin + performance.now();
}

/**
 * Estimates this process's offset to Redis's clock from `samples` `TIME` round trips.
 * @throws what Redis answers when it is away.
 */
export async function measureClockOffset(redis: Redis, samples = CLOCK_SAMPLES): Promise<ClockOffset> {
  let best: { rtt: number; offset: number } | undefined;
  for (let i = 0; i < samples; i++) {
    const sent = localNowMs();
    const [seconds, micros] = await redis.time();
    const received = localNowMs();
    const server = Number(seconds) * 1000 + Number(micros) / 1000;
    const rtt = received - sent;
    if (best === undefined || rtt < best.rtt) best = { rtt, offset: server - (sent + received) / 2 };
  }
  const found = best ?? { rtt: 0, offset: 0 };
  return { offsetMs: found.offset, errorMs: found.rtt / 2 };
}

/** Now on Redis's clock, from a measured offset. */
export function redisNowMs(clock: ClockOffset): number {
  return localNowMs() + clock.offsetMs;
}
