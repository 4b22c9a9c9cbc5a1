/**
 * The seeded PRNG of everything a load run rolls: the mock's faults and tool calls, and the load
 * tool's failures. Plain functions, no state outside the returned closure, so the same seed gives
 * the same sequence in any thread.
 */

/**
 * mulberry32: a small, fast, well-distributed 32-bit PRNG, reproducible by seed. Returns a
 * function giving numbers in [0, 1). Not for anything secret.
 */
export function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The seed of sub-stream `stream` of `seed` (a session's own sequence, the mock's tool rolls beside
 * its fault rolls): distinct streams of one seed do not repeat each other's sequence.
 */
export function streamSeed(seed: number, stream: number): number {
  return (Math.imul(seed >>> 0, 0x9e3779b1) ^ Math.imul((stream + 1) >>> 0, 0x85ebca77)) >>> 0;
}
