/**
 * The open model's and the sweep's flags (src/main/load/open-flags.ts) through
 * `loadOptionsFromFlags`, and runLoad's check of the same options (open-options.ts): what each
 * flag becomes, and that flags which do not go together are refused with ERR_INVALID_OPTIONS
 * naming them.
 */
import { describe, expect, it } from "vitest";
import { type LoadFlags, loadOptionsFromFlags } from "../../../src/main/load/load-flags.js";
import { checkLoadOptions, type LoadOptions } from "../../../src/main/load/load-options.js";
import { parseRate } from "../../../src/main/load/open-flags.js";

async function refusal(flags: LoadFlags): Promise<{ code?: string; message: string }> {
  try {
    await loadOptionsFromFlags(flags, "/tmp");
  } catch (error) {
    return error as { code?: string; message: string };
  }
  throw new Error(`flags ${JSON.stringify(flags)} were accepted`);
}

function checkRefusal(options: LoadOptions): { code?: string; message: string } {
  try {
    checkLoadOptions(options);
  } catch (error) {
    return error as { code?: string; message: string };
  }
  throw new Error(`options ${JSON.stringify(options)} were accepted`);
}

describe("rates", () => {
  it.each([
    ["50", 50],
    ["50/s", 50],
    ["0.5/s", 0.5],
    ["600/m", 10],
    ["3600/h", 1],
    ["2/ms", 2000],
  ])("--rate %s is %d arrivals per second", (text, perSecond) => {
    expect(parseRate("--rate", text)).toBeCloseTo(perSecond, 9);
  });

  it.each(["fast", "-5/s", "5/d", "", "200000/s"])("--rate %j is refused, naming the flag", (text) => {
    expect(() => parseRate("--rate", text)).toThrow(/--rate/);
  });
});

describe("the open model's flags", () => {
  it("--rate with --duration is one constant stage; --prompts is prompts per conversation", async () => {
    const options = await loadOptionsFromFlags(
      { sessions: "100", rate: "20/s", duration: "30s", prompts: "3" },
      "/tmp",
    );
    expect(options).toMatchObject({ sessions: 100, prompts: 3, durationMs: 30_000, arrival: { rate: 20 } });
    expect(() => checkLoadOptions(options)).not.toThrow();
  });

  it("--stage is repeatable and needs no --prompts or --duration; --arrival and --on-cap shape it", async () => {
    const options = await loadOptionsFromFlags(
      { sessions: "10", stage: ["30s:10/s", "2m:50/s"], arrival: "poisson", onCap: "delay" },
      "/tmp",
    );
    expect(options.arrival).toEqual({
      stages: [
        { durationMs: 30_000, rate: 10 },
        { durationMs: 120_000, rate: 50 },
      ],
      process: "poisson",
      onCap: "delay",
    });
    expect(() => checkLoadOptions(options)).not.toThrow();
  });

  it("--sweep alone takes the default rates; --sweep 3 --sweep-step 5s sets both", async () => {
    expect((await loadOptionsFromFlags({ sessions: "8", sweep: true }, "/tmp")).sweep).toEqual({});
    expect((await loadOptionsFromFlags({ sessions: "8", sweep: "3", sweepStep: "5s" }, "/tmp")).sweep).toEqual({
      rates: 3,
      stepMs: 5000,
    });
  });

  it.each([
    [{ sessions: "5", rate: "10/s" }, /--rate needs --duration/],
    [{ sessions: "5", stage: ["10s:5/s"], duration: "10s" }, /--stage lengths add up.*--duration/],
    [{ sessions: "5", stage: ["10s"] }, /--stage "10s" is not <time>:<rate>/],
    [
      { sessions: "5", rate: "5/s", duration: "5s", arrival: "bursty" },
      /--arrival "bursty" must be constant or poisson/,
    ],
    [{ sessions: "5", rate: "5/s", duration: "5s", onCap: "wait" }, /--on-cap "wait" must be drop or delay/],
    [{ sessions: "5", rate: "5/s", duration: "5s", rampUp: "2s" }, /--ramp-up is for the closed model/],
    [{ sessions: "5", rate: "5/s", duration: "5s", concurrency: "2" }, /--sessions is the cap/],
    [{ sessions: "5", sweep: true, rate: "5/s" }, /--sweep chooses its own rates/],
    [{ sessions: "5", sweep: true, duration: "5s" }, /--sweep's length is its steps/],
    [{ sessions: "5", sweep: "0" }, /--sweep "0" must be a whole number from 1 to 50/],
    [{ sessions: "5", prompts: "1", onCap: "drop" }, /--arrival and --on-cap shape the open model/],
    [{ sessions: "5", prompts: "1", sweepStep: "5s" }, /give --sweep with it/],
  ])("%j is refused: %s", async (flags, message) => {
    const error = await refusal(flags as LoadFlags);
    expect(error.code).toBe("ERR_INVALID_OPTIONS");
    expect(error.message).toMatch(message);
  });
});

describe("runLoad's check of the open model's options", () => {
  it.each([
    [{ sessions: 5, arrival: { rate: 5 } }, /durationMs: a constant rate needs durationMs/],
    [{ sessions: 5, arrival: {}, durationMs: 1000 }, /arrival: give a rate \(with durationMs\) or stages/],
    [{ sessions: 5, arrival: { stages: [{ durationMs: 100, rate: 1 }] }, durationMs: 100 }, /durationMs: the stages/],
    [{ sessions: 5, arrival: { rate: 1 }, durationMs: 100, sweep: {} }, /sweep: give arrival or sweep, not both/],
    [{ sessions: 5, sweep: {}, concurrency: 2 }, /concurrency: in the open model/],
    [{ sessions: 5, sweep: { rates: 0 } }, /sweep.rates/],
    [{ sessions: 5, arrival: { rate: -1 }, durationMs: 100 }, /arrival.rate/],
  ])("%j is refused: %s", (options, message) => {
    const error = checkRefusal(options as LoadOptions);
    expect(error.code).toBe("ERR_INVALID_OPTIONS");
    expect(error.message).toMatch(message);
  });

  // A run that can offer no arrival would send nothing and report "completed", so a gate without
  // thresholds would go green on it.
  it.each([
    ["a lone rate of 0", { sessions: 2, arrival: { rate: 0 }, durationMs: 1000 }],
    ["stages all at 0 from the default start", { sessions: 2, arrival: { stages: [{ durationMs: 1000, rate: 0 }] } }],
    [
      "stages all at 0 from a start rate of 0",
      {
        sessions: 2,
        arrival: {
          rate: 0,
          stages: [
            { durationMs: 1000, rate: 0 },
            { durationMs: 500, rate: 0 },
          ],
        },
      },
    ],
  ])("a profile that offers no arrival is refused: %s", (_case, options) => {
    expect(checkRefusal(options as LoadOptions).code).toBe("ERR_INVALID_OPTIONS");
  });

  it.each([
    [
      "one stage above 0",
      {
        sessions: 2,
        arrival: {
          stages: [
            { durationMs: 1000, rate: 0 },
            { durationMs: 1000, rate: 5 },
          ],
        },
      },
    ],
    [
      "a start rate above 0 ramping down to 0",
      { sessions: 2, arrival: { rate: 5, stages: [{ durationMs: 1000, rate: 0 }] } },
    ],
    ["a constant rate above 0", { sessions: 2, arrival: { rate: 0.5 }, durationMs: 1000 }],
  ])("a profile with some rate above 0 is accepted: %s", (_case, options) => {
    expect(() => checkLoadOptions(options as LoadOptions)).not.toThrow();
  });
});
