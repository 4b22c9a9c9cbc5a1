/**
 * runLoad's option check (src/main/load/options/load-options.ts, open-options.ts): options a program
 * passes directly are refused with ERR_INVALID_OPTIONS naming the field. (The CLI's flags that
 * become these options are test/main/cli/groups/load-flags.test.ts's.)
 */
import { describe, expect, it } from "vitest";
import { checkLoadOptions, type LoadOptions } from "../../../../src/main/load/options/load-options.js";
import { defaultOpenCap } from "../../../../src/main/load/options/open-options.js";

function codeAndMessage(options: LoadOptions): { code?: string; message: string } {
  try {
    checkLoadOptions(options);
  } catch (error) {
    const { code, message } = error as { code?: string; message: string };
    return { ...(code === undefined ? {} : { code }), message };
  }
  throw new Error(`options ${JSON.stringify(options)} were accepted`);
}

describe("runLoad's option check", () => {
  it("refuses a run bounded by neither prompts nor duration", () => {
    expect(codeAndMessage({ sessions: 1 })).toMatchObject({
      code: "ERR_INVALID_OPTIONS",
      message: expect.stringMatching(/give prompts \(per session\), durationMs, or both/),
    });
  });

  it("refuses faults with a real model, unknown options, and probabilities over 1", () => {
    expect(
      codeAndMessage({ sessions: 1, prompts: 1, model: "a/b", faults: [{ step: 503, probability: 0.1 }] }).message,
    ).toMatch(/faults apply to the built-in mock only/);
    expect(codeAndMessage({ sessions: 1, prompts: 1, sesions: 3 } as never).message).toMatch(
      /unknown option\(s\) sesions/,
    );
    expect(
      codeAndMessage({
        sessions: 1,
        prompts: 1,
        faults: [
          { step: 503, probability: 0.7 },
          { step: "reset", probability: 0.7 },
        ],
      }).message,
    ).toMatch(/faults: the probabilities add up to more than 1/);
  });

  it("refuses a thinking level that is none, and a prompt slice without a stride", () => {
    expect(codeAndMessage({ sessions: 1, prompts: 1, thinkingLevel: "max" as never }).message).toMatch(/thinkingLevel/);
    expect(codeAndMessage({ sessions: 1, prompts: 1, promptSlice: { offset: 1, stride: 0 } }).message).toMatch(
      /promptSlice.stride/,
    );
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
    const error = codeAndMessage(options as LoadOptions);
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
    expect(codeAndMessage(options as LoadOptions).code).toBe("ERR_INVALID_OPTIONS");
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

  it("the default cap is what the peak rate opens in 60 s, from 1 to 100,000", () => {
    expect(defaultOpenCap({ rate: 20 }, 30_000)).toBe(1200);
    expect(defaultOpenCap({ rate: 1, stages: [{ durationMs: 1000, rate: 7.5 }] }, undefined)).toBe(450);
    expect(defaultOpenCap({ rate: 0.001 }, 1000)).toBe(1);
    expect(defaultOpenCap({ rate: 100_000 }, 1000)).toBe(100_000);
  });
});
