/**
 * `lifeline load`'s flags (src/main/load/load-flags.ts) and runLoad's option check
 * (load-options.ts): what each flag becomes, and that a bad one is refused with
 * ERR_INVALID_OPTIONS naming the flag (the command exits 2 with that message).
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import {
  DEFAULT_RETRY_BUDGET,
  type LoadFlags,
  loadOptionsFromFlags,
  parseDuration,
  parseFaults,
  parsePromptsJsonl,
  retrySettingsOverrides,
} from "../../../src/main/load/load-flags.js";
import { checkLoadOptions } from "../../../src/main/load/load-options.js";
import { mockScript } from "../../../src/main/load/mock-target.js";
import { parseMockScript } from "../../../src/mock-server/index.js";
import { tempDir } from "../../fixtures/bounded.js";

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

async function refusal(flags: LoadFlags): Promise<{ code?: string; message: string }> {
  try {
    await loadOptionsFromFlags(flags, "/work");
  } catch (error) {
    return error as { code?: string; message: string };
  }
  throw new Error(`flags were accepted: ${JSON.stringify(flags)}`);
}

function thrown(run: () => unknown): { code?: string; message: string } {
  try {
    run();
  } catch (error) {
    return error as { code?: string; message: string };
  }
  throw new Error("nothing was thrown");
}

describe("flags → options", () => {
  it("the command line of docs/load.md becomes the options runLoad takes", async () => {
    const options = await loadOptionsFromFlags(
      {
        sessions: "100",
        prompts: "5",
        duration: "60s",
        faults: "503:0.1,429:0.05,reset:0.02,stall:0.01",
        seed: "42",
        threshold: ["p99_latency_ms<8000", "failure_rate<0.01"],
        out: "reports/run1",
        rampUp: "10s",
        concurrency: "50",
        thinkTime: "250ms",
        threads: "2",
      },
      "/work",
    );
    expect(options).toEqual({
      sessions: 100,
      prompts: 5,
      durationMs: 60_000,
      faults: [
        { step: 503, probability: 0.1 },
        { step: 429, probability: 0.05 },
        { step: "reset", probability: 0.02 },
        { step: "stall", probability: 0.01 },
      ],
      seed: 42,
      thresholds: ["p99_latency_ms<8000", "failure_rate<0.01"],
      outDir: "/work/reports/run1",
      rampUpMs: 10_000,
      concurrency: 50,
      thinkTimeMs: 250,
      threads: 2,
      cwd: "/work",
    });
    expect(checkLoadOptions(options)).toHaveLength(2);
  });

  it("--model takes a provider/id and no mock flags", async () => {
    const options = await loadOptionsFromFlags({ sessions: "2", duration: "5s", model: "openai/gpt-4o-mini" }, "/w");
    expect(options.model).toBe("openai/gpt-4o-mini");
    expect((await refusal({ sessions: "2", prompts: "1", model: "openai/x", faults: "503:0.1" })).message).toMatch(
      /--faults .* cannot be combined with --model/,
    );
    expect((await refusal({ sessions: "2", prompts: "1", model: "gpt-4o" })).message).toMatch(/--model "gpt-4o"/);
  });

  it("--csv becomes csv: true, and no --csv leaves csv out (no CSV files)", async () => {
    expect((await loadOptionsFromFlags({ sessions: "1", prompts: "1", csv: true }, "/w")).csv).toBe(true);
    expect((await loadOptionsFromFlags({ sessions: "1", prompts: "1" }, "/w")).csv).toBeUndefined();
  });

  it("--prompts-file is read as JSONL, one prompt per line, relative to the working directory", async () => {
    const dir = tempDir(cleanups, "lifeline-load-flags-");
    writeFileSync(join(dir, "p.jsonl"), '{"prompt": "first"}\n\n{"prompt": "second", "tag": 1}\n');
    const options = await loadOptionsFromFlags({ sessions: "1", prompts: "1", promptsFile: "p.jsonl" }, dir);
    expect(options.promptTexts).toEqual(["first", "second"]);
  });

  it.each<[string, LoadFlags, RegExp]>([
    ["no --sessions", { prompts: "1" }, /--sessions <n> is required/],
    ["neither --prompts nor --duration", { sessions: "1" }, /--prompts <n>.*--duration <time>/],
    ["--sessions 0", { sessions: "0", prompts: "1" }, /--sessions "0" must be a whole number from 1/],
    ["--sessions 1.5", { sessions: "1.5", prompts: "1" }, /--sessions "1.5"/],
    ["--prompts abc", { sessions: "1", prompts: "abc" }, /--prompts "abc"/],
    ["--duration 60", { sessions: "1", duration: "60" }, /--duration "60" is not a duration; use a number and a unit/],
    ["--duration 0s", { sessions: "1", duration: "0s" }, /--duration "0s" is too short/],
    ["--ramp-up 5x", { sessions: "1", prompts: "1", rampUp: "5x" }, /--ramp-up "5x"/],
    [
      "--threads 65",
      { sessions: "1", prompts: "1", threads: "65" },
      /--threads "65" must be a whole number from 1 to 64/,
    ],
    ["--seed x", { sessions: "1", prompts: "1", seed: "x" }, /--seed "x"/],
    [
      "a bad --threshold",
      { sessions: "1", prompts: "1", threshold: ["p42_latency_ms<1"] },
      /unknown metric "p42_latency_ms"/,
    ],
    [
      "a missing --prompts-file",
      { sessions: "1", prompts: "1", promptsFile: "/nonexistent/p.jsonl" },
      /--prompts-file .* cannot be read/,
    ],
  ])("%s is refused, naming the flag", async (_case, flags, message) => {
    const error = await refusal(flags);
    expect(error.code).toBe("ERR_INVALID_OPTIONS");
    expect(error.message).toMatch(message);
  });
});

describe("--faults", () => {
  it.each([
    [
      "an unknown fault",
      "teapot:0.1",
      /unknown fault "teapot"; use a status from 400 to 599 \(with an optional retry hint, 429@2s\) or one of reset, cut, stall/,
    ],
    ["a status below 400", "302:0.1", /must be a status from 400 to 599/],
    ["a probability over 1", "503:1.5", /probability must be a number from 0 to 1/],
    ["no probability", "503", /is not <fault>:<probability>/],
    ["probabilities adding up to more than 1", "503:0.6,reset:0.5", /add up to 1.1, more than 1/],
    ["an empty list", ",", /names no fault/],
  ])("%s is refused", (_case, text, message) => {
    const error = thrown(() => parseFaults(text));
    expect(error.code).toBe("ERR_INVALID_OPTIONS");
    expect(error.message).toMatch(message);
  });

  it("--mock-rate-limit <n>/<window> becomes the mock script's rateLimit", async () => {
    const options = await loadOptionsFromFlags({ sessions: "2", prompts: "1", mockRateLimit: "50/2s" }, "/w");
    expect(options.mock).toEqual({ rateLimit: { requests: 50, windowMs: 2000 } });
    const script = parseMockScript(
      mockScript({ faults: [], seed: 0, tokens: 3, tokenDelayMs: 0, rateLimit: { requests: 50, windowMs: 2000 } }),
    );
    expect(script.rateLimit).toEqual({ requests: 50, windowMs: 2000 });
    expect((await refusal({ sessions: "2", prompts: "1", mockRateLimit: "50" })).message).toMatch(
      /--mock-rate-limit "50" is not <requests>\/<window>/,
    );
    expect((await refusal({ sessions: "2", prompts: "1", mockRateLimit: "0/1s" })).message).toMatch(
      /--mock-rate-limit "0" must be a whole number from 1/,
    );
    expect((await refusal({ sessions: "2", prompts: "1", model: "a/b", mockRateLimit: "5/1s" })).message).toMatch(
      /--mock-rate-limit apply to the built-in mock/,
    );
  });

  it("a status may carry a retry hint, 429@2s, which the mock sends as retry-after-ms", () => {
    const faults = parseFaults("429@2s:0.05,529@500ms:0.01,503:0.1");
    expect(faults).toEqual([
      { step: 429, probability: 0.05, retryAfterMs: 2000 },
      { step: 529, probability: 0.01, retryAfterMs: 500 },
      { step: 503, probability: 0.1 },
    ]);
    const script = parseMockScript(mockScript({ faults, seed: 1, tokens: 3, tokenDelayMs: 0 }));
    expect(script.faults.map((fault) => fault.step)).toEqual([
      expect.objectContaining({ type: "error", status: 429, retryAfterMs: 2000 }),
      expect.objectContaining({ type: "error", status: 529, retryAfterMs: 500 }),
      expect.objectContaining({ type: "error", status: 503 }),
    ]);
    expect(thrown(() => parseFaults("429@soon:0.1")).message).toMatch(/the retry hint "soon" is not a duration/);
  });

  it("any list of statuses and kinds with probabilities adding up to at most 1 round-trips", () => {
    const fault = fc.record({
      step: fc.oneof(fc.integer({ min: 400, max: 599 }), fc.constantFrom("reset", "cut", "stall", "stream_error")),
      probability: fc.integer({ min: 0, max: 100 }).map((n) => n / 1000),
    });
    fc.assert(
      fc.property(fc.array(fault, { minLength: 1, maxLength: 10 }), (faults) => {
        const text = faults.map((f) => `${f.step}:${f.probability}`).join(",");
        expect(parseFaults(text)).toEqual(faults);
      }),
    );
  });
});

describe("durations", () => {
  it("ms, s, m and h convert to milliseconds", () => {
    expect(parseDuration("--d", "500ms", 0)).toBe(500);
    expect(parseDuration("--d", "1.5s", 0)).toBe(1500);
    expect(parseDuration("--d", "2m", 0)).toBe(120_000);
    expect(parseDuration("--d", "1h", 0)).toBe(3_600_000);
    expect(parseDuration("--d", "0s", 0)).toBe(0);
  });
});

describe("--prompts-file contents", () => {
  it("a line that is not {prompt: string} is refused with its file and line number", () => {
    expect(thrown(() => parsePromptsJsonl('{"prompt":"a"}\n{"text":"b"}\n', "p.jsonl")).message).toMatch(/p.jsonl:2:/);
    expect(thrown(() => parsePromptsJsonl("not json\n", "p.jsonl")).message).toMatch(/p.jsonl:1: not JSON/);
    expect(thrown(() => parsePromptsJsonl("\n\n", "p.jsonl")).message).toMatch(/holds no prompt/);
  });
});

describe("retry flags → settings overrides (the flags over the settings files)", () => {
  it("no retry flag sets nothing", () => {
    expect(retrySettingsOverrides({})).toBeUndefined();
  });

  it("--retry-budget, --coordinate and --max-concurrent map to retry.budget, retry.coordinate and retry.maxConcurrentRequests", () => {
    expect(retrySettingsOverrides({ retryBudget: "0.1,5,30s", coordinate: true, maxConcurrent: "8" })).toEqual({
      retry: { budget: { ratio: 0.1, minPerSecond: 5, windowMs: 30_000 }, coordinate: true, maxConcurrentRequests: 8 },
    });
  });

  it("--retry-budget on is Finagle's 20 % + 10/s over 10 s; off is false; left-out figures keep those defaults", () => {
    expect(DEFAULT_RETRY_BUDGET).toEqual({ ratio: 0.2, minPerSecond: 10, windowMs: 10_000 });
    expect(retrySettingsOverrides({ retryBudget: "on" })).toEqual({ retry: { budget: DEFAULT_RETRY_BUDGET } });
    expect(retrySettingsOverrides({ retryBudget: "off" })).toEqual({ retry: { budget: false } });
    expect(retrySettingsOverrides({ retryBudget: "0.5" })).toEqual({
      retry: { budget: { ratio: 0.5, minPerSecond: 10, windowMs: 10_000 } },
    });
  });

  it("--idle-timeout maps to retry.provider.idleTimeoutMs", () => {
    expect(retrySettingsOverrides({ idleTimeout: "1.5s" })).toEqual({ retry: { provider: { idleTimeoutMs: 1500 } } });
  });

  it("--no-coordinate sets retry.coordinate to false", () => {
    expect(retrySettingsOverrides({ coordinate: false })).toEqual({ retry: { coordinate: false } });
  });

  it("the overrides reach runLoad's settings option through the flags", async () => {
    const options = await loadOptionsFromFlags(
      { sessions: "1", prompts: "1", coordinate: true, maxConcurrent: "4" },
      "/w",
    );
    expect(options.settings).toEqual({ retry: { coordinate: true, maxConcurrentRequests: 4 } });
  });

  it.each([
    ["--retry-budget maybe", { retryBudget: "maybe" }, /--retry-budget "maybe" is not a budget; allowed: off, on/],
    ["--retry-budget -1", { retryBudget: "-1" }, /--retry-budget "-1"/],
    ["--retry-budget 0.2,x", { retryBudget: "0.2,x" }, /minPerSecond must be a number/],
    ["--retry-budget 0.2,10,10", { retryBudget: "0.2,10,10" }, /--retry-budget window "10" is not a duration/],
    ["--max-concurrent 0", { maxConcurrent: "0" }, /--max-concurrent "0" must be a whole number from 1/],
    ["--idle-timeout 30", { idleTimeout: "30" }, /--idle-timeout "30" is not a duration/],
    ["--idle-timeout 0ms", { idleTimeout: "0ms" }, /--idle-timeout "0ms" is too short/],
  ])("%s is refused", (_case, flags, message) => {
    const error = thrown(() => retrySettingsOverrides(flags));
    expect(error.code).toBe("ERR_INVALID_OPTIONS");
    expect(error.message).toMatch(message);
  });
});

describe("runLoad's option check", () => {
  function codeAndMessage(options: Parameters<typeof checkLoadOptions>[0]) {
    const error = thrown(() => checkLoadOptions(options));
    return { code: error.code, message: error.message };
  }

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
});
