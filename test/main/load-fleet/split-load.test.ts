/**
 * How a distributed run's load is split among its generators (src/main/load-fleet/split-load.ts):
 * sessions (and concurrency) in shares that differ by at most one and add up, one seed per
 * generator, the rest as given, and nothing the coordinator keeps (key, thresholds, report folder);
 * the open model's rates divided among the generators so that together they play the undivided
 * schedule; the sweep refused.
 */
import fc from "fast-check";
import { describe, expect, expectTypeOf, it } from "vitest";
import { arrivalTimes, expectedArrivals } from "../../../src/main/load/open/arrivals.js";
import type { LoadOptions } from "../../../src/main/load/options/load-options.js";
import type { ArrivalStage } from "../../../src/main/load/options/open-options.js";
import { COORDINATOR_ONLY, type ShareOptions } from "../../../src/main/load-fleet/load-fleet-protocol.js";
import { evenShares, splitArrival, splitLoad } from "../../../src/main/load-fleet/split-load.js";

/** The schedule's expected arrivals from its start to `ms`: its stages cut at `ms` (a ramp at its rate there). */
function arrivalsBy(stages: readonly ArrivalStage[], startRate: number, ms: number): number {
  const cut: ArrivalStage[] = [];
  let from = startRate;
  let at = 0;
  for (const stage of stages) {
    if (at + stage.durationMs <= ms) cut.push(stage);
    else {
      const part = ms - at;
      if (part > 0) cut.push({ durationMs: part, rate: from + ((stage.rate - from) * part) / stage.durationMs });
      break;
    }
    at += stage.durationMs;
    from = stage.rate;
  }
  return expectedArrivals(cut, startRate);
}

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
    const common = { prompts: 5, faults: [{ step: 503, probability: 0.1 }], thinkTimeMs: 20 };
    expect(shares).toEqual([
      { sessions: 4, seed: 40, ...common, concurrency: 2, promptSlice: { offset: 0, stride: 1 } },
      { sessions: 3, seed: 41, ...common, concurrency: 1, promptSlice: { offset: 4, stride: 1 } },
      { sessions: 3, seed: 42, ...common, concurrency: 1, promptSlice: { offset: 7, stride: 1 } },
    ]);
  });

  it("regression: hands the generators every option the coordinator does not keep (conversations, slo, the load tool…)", () => {
    const options: Required<ShareOptions> = {
      sessions: 4,
      prompts: 2,
      durationMs: 60_000,
      model: "local/local-1",
      thinkingLevel: "low",
      faults: [],
      seed: 3,
      slo: "e2e<=2s",
      rampUpMs: 10,
      concurrency: 4,
      promptTexts: ["a"],
      conversations: [["first", "second"], ["other"]],
      promptSlice: { offset: 0, stride: 1 },
      tools: { latencyMs: 4000, cpuMs: 5, failureRate: 0.1 },
      thinkTimeMs: 5,
      threads: 2,
      settings: { retry: { maxRetries: 1 } },
      mock: { tokens: 3 },
      arrival: { rate: 2, process: "poisson" },
      sampleIntervalMs: 500,
    };
    const [first] = splitLoad(options, 2);
    const { sessions, seed, concurrency, arrival, promptSlice, ...asGiven } = options;
    expect(first).toMatchObject(asGiven);
    expect(Object.keys(first ?? {}).sort()).toEqual(Object.keys(options).sort());
  });

  it("the generators' fields are every LoadOptions field but the coordinator's, and all plain data", () => {
    // A field in neither list would be a new option the generators silently miss: there is none,
    // since ShareOptions is LoadOptions without COORDINATOR_ONLY. What must hold is that each
    // field a generator gets can travel as JSON through Redis: a function, a signal or a URL
    // option has to be listed as COORDINATOR_ONLY, with its reason.
    type NotData = ((...args: never[]) => unknown) | AbortSignal | URL;
    type Carried = {
      [K in keyof ShareOptions]-?: [Extract<NonNullable<ShareOptions[K]>, NotData>] extends [never] ? never : K;
    }[keyof ShareOptions];
    expectTypeOf<Carried>().toEqualTypeOf<never>();
    expectTypeOf<
      Exclude<keyof LoadOptions, keyof ShareOptions | keyof typeof COORDINATOR_ONLY>
    >().toEqualTypeOf<never>();
    for (const reason of Object.values(COORDINATOR_ONLY)) expect(reason.length).toBeGreaterThan(10);
  });

  it("gives each generator its own slice of the prompts: the closed model's sessions after the previous generators', the open model's arrivals interleaved", () => {
    expect(splitLoad({ sessions: 5, prompts: 1 }, 2).map((share) => share.promptSlice)).toEqual([
      { offset: 0, stride: 1 },
      { offset: 3, stride: 1 },
    ]);
    expect(
      splitLoad({ sessions: 6, durationMs: 1000, arrival: { rate: 3 } }, 3).map((share) => share.promptSlice),
    ).toEqual([
      { offset: 0, stride: 3 },
      { offset: 1, stride: 3 },
      { offset: 2, stride: 3 },
    ]);
    // Within a slice the run was given: generator 1 of 2 takes every other conversation of it.
    expect(
      splitLoad({ sessions: 2, durationMs: 1000, arrival: { rate: 2 }, promptSlice: { offset: 5, stride: 10 } }, 2)[1]
        ?.promptSlice,
    ).toEqual({ offset: 15, stride: 20 });
  });

  it("the open model's generators together play each conversation once, in the undivided order", () => {
    const k = 3;
    const shares = splitLoad({ sessions: 9, durationMs: 1000, arrival: { rate: 9 } }, k);
    const played = shares.flatMap((share) =>
      [0, 1, 2].map((n) => (share.promptSlice?.offset ?? 0) + n * (share.promptSlice?.stride ?? 1)),
    );
    expect(played.sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
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

describe("splitting the open model", () => {
  const stage = fc.record({
    durationMs: fc.integer({ min: 1, max: 20_000 }),
    rate: fc.double({ min: 0, max: 200, noNaN: true }),
  });

  it("evenly spaced arrivals: the generators' arrivals together are the undivided schedule's", () => {
    fc.assert(
      fc.property(
        fc.array(stage, { minLength: 1, maxLength: 4 }),
        fc.double({ min: 0, max: 100, noNaN: true }),
        fc.integer({ min: 1, max: 7 }),
        (stages: ArrivalStage[], rate, k) => {
          const whole = [...arrivalTimes({ stages, startRate: rate, process: "constant", seed: 1 })];
          const parts: number[] = [];
          for (let i = 0; i < k; i++) {
            const part = splitArrival({ rate, stages }, i, k);
            expect(part.phase).toBe(i / k);
            parts.push(
              ...arrivalTimes({
                stages: part.stages ?? [],
                startRate: part.rate ?? 0,
                process: "constant",
                seed: 1,
                phase: part.phase ?? 0,
              }),
            );
          }
          parts.sort((a, b) => a - b);
          // Generator i plays arrivals i, i + k, i + 2k, … of the whole; they agree but for the
          // float rounding of dividing the rates (and the arrival at a stage's very end, which
          // rounding can move by one). Compared by time where that is well conditioned, else by
          // the whole's expected arrivals at each time: where a ramp nears a rate of 0 a rounding
          // of 1e-16 moves an arrival by up to a third of a millisecond (fast-check found one, on
          // a ramp from 200/s to 0 over 20 s) while the count there moves by far less than 1e-6.
          expect(Math.abs(parts.length - whole.length)).toBeLessThanOrEqual(k);
          const n = Math.min(parts.length, whole.length);
          for (let j = 0; j < n; j++) {
            const [a, b] = [parts[j] ?? 0, whole[j] ?? 0];
            if (Math.abs(a - b) < 1e-3) continue;
            expect(Math.abs(arrivalsBy(stages, rate, a) - arrivalsBy(stages, rate, b))).toBeLessThan(1e-6);
          }
        },
      ),
    );
  });

  it("a lone constant rate over a whole number of arrivals: exactly the undivided count, spaced as the whole", () => {
    const whole = [
      ...arrivalTimes({ stages: [{ durationMs: 3000, rate: 20 }], startRate: 20, process: "constant", seed: 1 }),
    ];
    expect(whole).toHaveLength(60);
    const shares = splitLoad({ sessions: 30, prompts: 1, durationMs: 3000, arrival: { rate: 20 } }, 3);
    expect(shares.map((s) => [s.sessions, s.arrival])).toEqual([
      [10, { rate: 20 / 3, phase: 0 }],
      [10, { rate: 20 / 3, phase: 1 / 3 }],
      [10, { rate: 20 / 3, phase: 2 / 3 }],
    ]);
    const union = shares
      .flatMap((s) => [
        ...arrivalTimes({
          stages: [{ durationMs: 3000, rate: 20 / 3 }],
          startRate: 20 / 3,
          process: "constant",
          seed: 1,
          phase: s.arrival?.phase ?? 0,
        }),
      ])
      .sort((a, b) => a - b);
    expect(union).toHaveLength(60);
    for (const [j, t] of union.entries()) expect(t).toBeCloseTo(j * 50, 6);
  });

  it("divides every stage's rate and the start rate, keeps the process and the cap's behaviour", () => {
    const [first, second] = splitLoad(
      {
        sessions: 9,
        prompts: 2,
        seed: 5,
        arrival: {
          rate: 4,
          stages: [
            { durationMs: 1000, rate: 10 },
            { durationMs: 2000, rate: 0 },
          ],
          process: "poisson",
          onCap: "delay",
        },
      },
      2,
    );
    expect(first).toMatchObject({
      sessions: 5,
      seed: 5,
      arrival: {
        rate: 2,
        stages: [
          { durationMs: 1000, rate: 5 },
          { durationMs: 2000, rate: 0 },
        ],
        process: "poisson",
        onCap: "delay",
        phase: 0,
      },
    });
    expect(second).toMatchObject({ sessions: 4, seed: 6, arrival: { rate: 2, phase: 0.5 } });
  });

  it("refuses the sweep with ERR_INVALID_OPTIONS, saying what to do instead", () => {
    expect(() => splitLoad({ sessions: 4, sweep: {} }, 2)).toThrow(
      expect.objectContaining({ code: "ERR_INVALID_OPTIONS", message: expect.stringMatching(/--sweep .*--rate/) }),
    );
  });
});
