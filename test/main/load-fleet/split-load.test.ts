/**
 * How a distributed run's load is split among its generators (src/main/load-fleet/split-load.ts):
 * sessions (and concurrency) in shares that differ by at most one and add up, one seed per
 * generator, the rest as given, and nothing the coordinator keeps (key, thresholds, report folder).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { evenShares, splitLoad } from "../../../src/main/load-fleet/split-load.js";

describe("evenShares", () => {
  it("splits into shares that add up, differ by at most one, larger first", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 50 }), fc.integer({ min: 0, max: 10_000 }), (parts, extra) => {
        const total = parts + extra;
        const shares = evenShares(total, parts);
        expect(shares).toHaveLength(parts);
        expect(shares.reduce((t, s) => t + s, 0)).toBe(total);
        expect(Math.max(...shares) - Math.min(...shares)).toBeLessThanOrEqual(1);
        expect([...shares].sort((a, b) => b - a)).toEqual(shares);
      }),
    );
  });

  it("refuses fewer items than shares", () => {
    expect(() => evenShares(2, 3)).toThrow(RangeError);
  });
});

describe("splitLoad", () => {
  it("gives each generator its sessions, concurrency and seed + index, and the rest as given", () => {
    const shares = splitLoad(
      {
        sessions: 10,
        prompts: 5,
        concurrency: 4,
        seed: 40,
        faults: [{ step: 503, probability: 0.1 }],
        thinkTimeMs: 20,
        apiKey: "secret",
        thresholds: ["p99_latency_ms<100"],
        outDir: "/tmp/out",
      },
      3,
    );
    expect(shares).toEqual([
      { sessions: 4, seed: 40, prompts: 5, faults: [{ step: 503, probability: 0.1 }], thinkTimeMs: 20, concurrency: 2 },
      { sessions: 3, seed: 41, prompts: 5, faults: [{ step: 503, probability: 0.1 }], thinkTimeMs: 20, concurrency: 1 },
      { sessions: 3, seed: 42, prompts: 5, faults: [{ step: 503, probability: 0.1 }], thinkTimeMs: 20, concurrency: 1 },
    ]);
  });

  it("refuses fewer sessions or less concurrency than generators with ERR_INVALID_OPTIONS", () => {
    expect(() => splitLoad({ sessions: 2, prompts: 1 }, 3)).toThrow(
      expect.objectContaining({ code: "ERR_INVALID_OPTIONS" }),
    );
    expect(() => splitLoad({ sessions: 6, prompts: 1, concurrency: 2 }, 3)).toThrow(
      expect.objectContaining({ code: "ERR_INVALID_OPTIONS" }),
    );
  });
});
