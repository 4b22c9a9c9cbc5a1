/**
 * The key pool behind FileAuthStorage (R4): which key each session gets, how limits block keys,
 * and what `markLimited` answers, on an injected clock.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DEFAULT_BLOCK_MS, KeyPool } from "../../../src/main/auth/key-pool.js";

function poolWith(keys: Record<string, string[]>, clock = { now: 1_000_000 }) {
  const pool = new KeyPool({ now: () => clock.now });
  pool.setKeys(new Map(Object.entries(keys)));
  return { pool, clock };
}

describe("KeyPool", () => {
  it("R4: a session keeps its key across requests while the key is free", () => {
    const { pool } = poolWith({ openai: ["A", "B", "C"] });
    const first = pool.pick("openai", "s1");
    for (let i = 0; i < 5; i++) expect(pool.pick("openai", "s1")).toBe(first);
  });

  it("R4: new sessions spread over the keys, fewest sessions first", () => {
    const { pool } = poolWith({ openai: ["A", "B", "C"] });
    expect(["s1", "s2", "s3", "s4"].map((id) => pool.pick("openai", id))).toEqual(["A", "B", "C", "A"]);
  });

  it("R4: a released session's key counts no more, so the next session takes it", () => {
    const { pool } = poolWith({ openai: ["A", "B"] });
    pool.pick("openai", "s1");
    pool.pick("openai", "s2");
    pool.release("s1");
    expect(pool.pick("openai", "s3")).toBe("A");
  });

  it("R4: a usage limit blocks the session's key and moves it to a free sibling", () => {
    const { pool } = poolWith({ openai: ["A", "B"] });
    expect(pool.pick("openai", "s1")).toBe("A");
    expect(pool.markLimited("openai", "s1", "usage_limit")).toEqual({ switched: true });
    expect(pool.pick("openai", "s1")).toBe("B");
    expect(pool.pick("openai", "s2")).toBe("B");
  });

  it("R4: with every key blocked it answers when the first frees: the retry hint, else the default per class", () => {
    const { pool, clock } = poolWith({ openai: ["A", "B"] });
    pool.pick("openai", "s1");
    expect(pool.markLimited("openai", "s1", "rate_limit")).toEqual({ switched: true });
    clock.now += 1000;
    expect(pool.markLimited("openai", "s1", "usage_limit", 120_000)).toEqual({
      switched: false,
      retryAfterMs: DEFAULT_BLOCK_MS.rate_limit - 1000,
    });
    expect(pool.isExhausted("openai")).toBe(true);
    clock.now += DEFAULT_BLOCK_MS.rate_limit;
    expect(pool.isExhausted("openai")).toBe(false);
    expect(pool.pick("openai", "s1")).toBe("A");
  });

  it("R4: a provider without stored keys answers did-not-switch with no wait, as before rotation", () => {
    const { pool } = poolWith({ openai: ["A"] });
    expect(pool.markLimited("anthropic", "s1", "usage_limit")).toEqual({ switched: false });
    expect(pool.pick("anthropic", "s1")).toBeUndefined();
  });

  it("R4: a rate limit on a provider's only key blocks nothing: the ordinary backoff handles it", () => {
    const { pool } = poolWith({ openai: ["A"] });
    pool.pick("openai", "s1");
    expect(pool.markLimited("openai", "s1", "rate_limit")).toEqual({ switched: false });
    expect(pool.blockedUntil("openai", "A")).toBeUndefined();
    expect(pool.markLimited("openai", "s1", "usage_limit")).toEqual({
      switched: false,
      retryAfterMs: DEFAULT_BLOCK_MS.usage_limit,
    });
  });

  it("R4: a session whose key is not stored here (its own apiKey) blocks no stored key", () => {
    const { pool } = poolWith({ openai: ["A", "B"] });
    expect(pool.markLimited("openai", "pinned", "usage_limit")).toEqual({ switched: false });
    expect(pool.blockedUntil("openai", "A")).toBeUndefined();
    expect(pool.isExhausted("openai")).toBe(false);
  });

  it("R4: keys survive a reload of the file with their blocks; a removed key is dropped from its sessions", () => {
    const { pool } = poolWith({ openai: ["A", "B"] });
    pool.pick("openai", "s1");
    pool.markLimited("openai", "s1", "usage_limit");
    pool.setKeys(new Map([["openai", ["A", "C"]]]));
    expect(pool.blockedUntil("openai", "A")).toBeDefined();
    expect(pool.pick("openai", "s1")).toBe("C");
  });

  it("R4: whatever the reports, a picked key is a stored key, free whenever any key is free, and waits are never negative", () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant("pick" as const), session: fc.integer({ min: 0, max: 4 }) }),
      fc.record({
        kind: fc.constant("mark" as const),
        session: fc.integer({ min: 0, max: 4 }),
        limit: fc.constantFrom("usage_limit" as const, "rate_limit" as const),
        hint: fc.option(fc.integer({ min: 0, max: 3_600_000 }), { nil: undefined }),
      }),
      fc.record({ kind: fc.constant("tick" as const), ms: fc.integer({ min: 0, max: 2_000_000 }) }),
      fc.record({ kind: fc.constant("release" as const), session: fc.integer({ min: 0, max: 4 }) }),
    );
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 4 }), fc.array(op, { maxLength: 60 }), (count, ops) => {
        const keys = Array.from({ length: count }, (_, i) => `K${i}`);
        const { pool, clock } = poolWith({ p: keys });
        for (const step of ops) {
          if (step.kind === "tick") clock.now += step.ms;
          else if (step.kind === "release") pool.release(`s${step.session}`);
          else if (step.kind === "pick") {
            const key = pool.pick("p", `s${step.session}`);
            expect(keys).toContain(key);
            const anyFree = keys.some((k) => pool.blockedUntil("p", k) === undefined);
            if (anyFree) expect(pool.blockedUntil("p", key as string)).toBeUndefined();
          } else {
            const outcome = pool.markLimited("p", `s${step.session}`, step.limit, step.hint);
            if (outcome.switched === false && outcome.retryAfterMs === undefined) continue; // never picked
            if (outcome.switched) {
              expect(outcome.retryAfterMs).toBeUndefined();
              expect(pool.blockedUntil("p", pool.pick("p", `s${step.session}`) as string)).toBeUndefined();
            } else {
              expect(outcome.retryAfterMs).toBeGreaterThanOrEqual(0);
              expect(pool.isExhausted("p")).toBe(outcome.retryAfterMs !== 0);
            }
          }
        }
      }),
    );
  });
});
