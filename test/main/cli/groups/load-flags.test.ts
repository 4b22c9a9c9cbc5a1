/**
 * `lifeline load`'s option groups (src/main/cli/groups/load-flags.ts, open-flags.ts,
 * mock-flags.ts): the command line as typed, run in this process with a recording runtime, and
 * the `LoadOptions` the load receives; a bad flag is refused with ERR_INVALID_OPTIONS naming it
 * (exit 2) and nothing runs.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { parseDuration } from "../../../../src/main/cli/flag-values.js";
import { DEFAULT_RETRY_BUDGET, parseFaults } from "../../../../src/main/cli/groups/mock-flags.js";
import { parseRate } from "../../../../src/main/cli/groups/open-flags.js";
import type { LoadCommandRequest } from "../../../../src/main/load/load-command.js";
import { mockScript } from "../../../../src/main/load/mock/mock-target.js";
import { checkLoadOptions, type LoadOptions } from "../../../../src/main/load/options/load-options.js";
import { parseMockScript } from "../../../../src/mock-server/index.js";
import { cliPlace, runRecorded } from "../../../fixtures/cli-runtime.js";

const place = cliPlace();
afterAll(() => place.remove());

/** The request `lifeline load …args` makes. */
async function loadRequest(args: readonly string[]): Promise<LoadCommandRequest> {
  const outcome = await runRecorded(["load", ...args], place);
  expect(outcome.code, outcome.stderr).toBe(0);
  expect(outcome.calls.map((call) => call.method)).toEqual(["load"]);
  return outcome.calls[0]?.request as LoadCommandRequest;
}

async function loadOptions(args: readonly string[]): Promise<LoadOptions> {
  return (await loadRequest(args)).options;
}

/** The refusal of `lifeline load …args`: exit 2, ERR_INVALID_OPTIONS on stderr, nothing run. */
async function refusal(args: readonly string[]): Promise<string> {
  const outcome = await runRecorded(["load", ...args], place);
  expect(outcome.code, outcome.stderr).toBe(2);
  expect(outcome.calls).toEqual([]);
  expect(outcome.stderr).toContain("[ERR_INVALID_OPTIONS]");
  return outcome.stderr;
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
    const options = await loadOptions([
      "--sessions",
      "100",
      "--prompts",
      "5",
      "--duration",
      "60s",
      "--faults",
      "503:0.1,429:0.05,reset:0.02,stall:0.01",
      "--seed",
      "42",
      "--threshold",
      "p99_latency_ms<8000",
      "--threshold",
      "failure_rate<0.01",
      "--out",
      "reports/run1",
      "--ramp-up",
      "10s",
      "--concurrency",
      "50",
      "--think-time",
      "250ms",
      "--threads",
      "2",
    ]);
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
      outDir: join(place.cwd, "reports/run1"),
      rampUpMs: 10_000,
      concurrency: 50,
      thinkTimeMs: 250,
      threads: 2,
      cwd: place.cwd,
    });
    expect(checkLoadOptions(options)).toHaveLength(2);
  });

  it("--model is resolved as everywhere, and the mock's flags are refused with it", async () => {
    expect((await loadOptions(["--sessions", "2", "--duration", "5s", "--model", "openai/gpt-4o-mini"])).model).toBe(
      "openai/gpt-4o-mini",
    );
    // As pi: the first provider in pi-ai's order that has the id (azure-openai-responses before openai).
    expect((await loadOptions(["--sessions", "2", "--duration", "5s", "--model", "gpt-4o-mini"])).model).toBe(
      "azure-openai-responses/gpt-4o-mini",
    );
    expect(
      await refusal(["--sessions", "2", "--prompts", "1", "--model", "openai/gpt-4o", "--faults", "503:0.1"]),
    ).toMatch(/--faults .* cannot be combined with --model/);
  });

  it("--thinking, alone or as the model's suffix, becomes every load session's thinking level", async () => {
    expect((await loadOptions(["--sessions", "1", "--prompts", "1", "--thinking", "high"])).thinkingLevel).toBe("high");
    const suffixed = await loadOptions(["--sessions", "1", "--prompts", "1", "--model", "openai/gpt-4o-mini:low"]);
    expect(suffixed).toMatchObject({ model: "openai/gpt-4o-mini", thinkingLevel: "low" });
  });

  it("--csv becomes csv: true, and no --csv leaves csv out (no CSV files)", async () => {
    expect((await loadOptions(["--sessions", "1", "--prompts", "1", "--csv"])).csv).toBe(true);
    expect((await loadOptions(["--sessions", "1", "--prompts", "1"])).csv).toBeUndefined();
  });

  it("--prompts-file is read as JSONL, one prompt per line, relative to the working directory", async () => {
    writeFileSync(join(place.cwd, "p.jsonl"), '{"prompt": "first"}\n\n{"prompt": "second", "tag": 1}\n');
    const options = await loadOptions(["--sessions", "1", "--prompts", "1", "--prompts-file", "p.jsonl"]);
    expect(options.promptTexts).toEqual(["first", "second"]);
  });

  it("--tool-calls, --tool-turns and the --tool-* behaviour flags become mock.tools and tools", async () => {
    const options = await loadOptions([
      "--sessions",
      "2",
      "--prompts",
      "1",
      "--tool-calls",
      "0.3:2",
      "--tool-turns",
      "4",
      "--tool-latency",
      "50ms",
      "--tool-cpu",
      "5ms",
      "--tool-failure",
      "0.05",
    ]);
    expect(options.mock?.tools).toEqual({ probability: 0.3, calls: 2, maxTurns: 4 });
    expect(options.tools).toEqual({ latencyMs: 50, cpuMs: 5, failureRate: 0.05 });
    expect(() => checkLoadOptions(options)).not.toThrow();
    expect((await loadOptions(["--sessions", "1", "--prompts", "1", "--tool-calls", "1"])).mock?.tools).toEqual({
      probability: 1,
    });
    expect(
      await refusal(["--sessions", "1", "--prompts", "1", "--model", "openai/gpt-4o", "--tool-calls", "0.5"]),
    ).toMatch(/script the built-in mock; not with --model/);
    // A real model may call the load tool too: its behaviour flags are allowed with --model.
    const real = await loadOptions([
      "--sessions",
      "1",
      "--prompts",
      "1",
      "--model",
      "openai/gpt-4o",
      "--tool-cpu",
      "1ms",
    ]);
    expect(real.tools).toEqual({ cpuMs: 1 });
  });

  it("a bare number is milliseconds in every duration flag", async () => {
    const options = await loadOptions([
      "--sessions",
      "1",
      "--duration",
      "60",
      "--think-time",
      "250",
      "--idle-timeout",
      "30",
    ]);
    expect(options).toMatchObject({
      durationMs: 60,
      thinkTimeMs: 250,
      settings: { retry: { provider: { idleTimeoutMs: 30 } } },
    });
  });

  it.each<[string, string[], RegExp]>([
    ["no --sessions", ["--prompts", "1"], /--sessions <n> is required/],
    ["neither --prompts nor --duration", ["--sessions", "1"], /--prompts <n>.*--duration <time>/],
    ["--sessions 0", ["--sessions", "0", "--prompts", "1"], /--sessions "0" must be a whole number from 1/],
    ["--sessions 1.5", ["--sessions", "1.5", "--prompts", "1"], /--sessions "1.5"/],
    ["--prompts abc", ["--sessions", "1", "--prompts", "abc"], /--prompts "abc"/],
    [
      "--duration 60x",
      ["--sessions", "1", "--duration", "60x"],
      /--duration "60x" is not a duration; write a number and a unit/,
    ],
    ["--duration 0s", ["--sessions", "1", "--duration", "0s"], /--duration "0s" is too short/],
    ["--ramp-up 5x", ["--sessions", "1", "--prompts", "1", "--ramp-up", "5x"], /--ramp-up "5x"/],
    [
      "--threads 65",
      ["--sessions", "1", "--prompts", "1", "--threads", "65"],
      /--threads "65" must be a whole number from 1 to 64/,
    ],
    ["--seed x", ["--sessions", "1", "--prompts", "1", "--seed", "x"], /--seed "x"/],
    [
      "a bad --threshold",
      ["--sessions", "1", "--prompts", "1", "--threshold", "p42_latency_ms<1"],
      /unknown metric "p42_latency_ms"/,
    ],
    [
      "a missing --prompts-file",
      ["--sessions", "1", "--prompts", "1", "--prompts-file", "/nonexistent/p.jsonl"],
      /--prompts-file .* cannot be read/,
    ],
    [
      "--generator-timeout without --generators",
      ["--sessions", "1", "--prompts", "1", "--generator-timeout", "5s"],
      /give --generators/,
    ],
  ])("%s is refused, naming the flag", async (_case, args, message) => {
    expect(await refusal(args)).toMatch(message);
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
    const options = await loadOptions(["--sessions", "2", "--prompts", "1", "--mock-rate-limit", "50/2s"]);
    expect(options.mock).toEqual({ rateLimit: { requests: 50, windowMs: 2000 } });
    const script = parseMockScript(
      mockScript({ faults: [], seed: 0, tokens: 3, tokenDelayMs: 0, rateLimit: { requests: 50, windowMs: 2000 } }),
    );
    expect(script.rateLimit).toEqual({ requests: 50, windowMs: 2000 });
    expect(await refusal(["--sessions", "2", "--prompts", "1", "--mock-rate-limit", "50"])).toMatch(
      /--mock-rate-limit "50" is not <requests>\/<window>/,
    );
    expect(await refusal(["--sessions", "2", "--prompts", "1", "--mock-rate-limit", "0/1s"])).toMatch(
      /--mock-rate-limit "0" must be a whole number from 1/,
    );
    expect(
      await refusal(["--sessions", "2", "--prompts", "1", "--model", "openai/gpt-4o", "--mock-rate-limit", "5/1s"]),
    ).toMatch(/--mock-rate-limit, --tool-calls and --tool-turns script the built-in mock/);
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
      { verbose: true },
    );
  });
});

describe("durations", () => {
  it("ms, s, m and h convert to milliseconds; a bare number is milliseconds", () => {
    expect(parseDuration("--d", "500ms", 0)).toBe(500);
    expect(parseDuration("--d", "1.5s", 0)).toBe(1500);
    expect(parseDuration("--d", "2m", 0)).toBe(120_000);
    expect(parseDuration("--d", "1h", 0)).toBe(3_600_000);
    expect(parseDuration("--d", "0s", 0)).toBe(0);
    expect(parseDuration("--d", "30000", 0)).toBe(30_000);
  });

  it.each(["10x", "abc", "-5s", "5 minutes", ""])("%j is refused, naming the flag", (text) => {
    expect(thrown(() => parseDuration("--timeout", text, 0))).toMatchObject({
      code: "ERR_INVALID_OPTIONS",
      message: expect.stringContaining(`--timeout "${text}" is not a duration`),
    });
  });
});

describe("retry flags → settings overrides (the flags over the settings files)", () => {
  const settingsOf = async (args: string[]) =>
    (await loadOptions(["--sessions", "1", "--prompts", "1", ...args])).settings;

  it("no retry flag sets nothing", async () => {
    expect(await settingsOf([])).toBeUndefined();
  });

  it("--retry-budget, --coordinate and --max-concurrent map to retry.budget, retry.coordinate and retry.maxConcurrentRequests", async () => {
    expect(await settingsOf(["--retry-budget", "0.1,5,30s", "--coordinate", "--max-concurrent", "8"])).toEqual({
      retry: { budget: { ratio: 0.1, minPerSecond: 5, windowMs: 30_000 }, coordinate: true, maxConcurrentRequests: 8 },
    });
  });

  it("--retry-budget on is Finagle's 20 % + 10/s over 10 s; off is false; left-out figures keep those defaults", async () => {
    expect(DEFAULT_RETRY_BUDGET).toEqual({ ratio: 0.2, minPerSecond: 10, windowMs: 10_000 });
    expect(await settingsOf(["--retry-budget", "on"])).toEqual({ retry: { budget: DEFAULT_RETRY_BUDGET } });
    expect(await settingsOf(["--retry-budget", "off"])).toEqual({ retry: { budget: false } });
    expect(await settingsOf(["--retry-budget", "0.5"])).toEqual({
      retry: { budget: { ratio: 0.5, minPerSecond: 10, windowMs: 10_000 } },
    });
  });

  it("--idle-timeout maps to retry.provider.idleTimeoutMs; --no-coordinate sets retry.coordinate to false", async () => {
    expect(await settingsOf(["--idle-timeout", "1.5s"])).toEqual({ retry: { provider: { idleTimeoutMs: 1500 } } });
    expect(await settingsOf(["--no-coordinate"])).toEqual({ retry: { coordinate: false } });
  });

  it.each([
    ["--retry-budget maybe", ["--retry-budget", "maybe"], /--retry-budget "maybe" is not a budget; allowed: off, on/],
    ["--retry-budget -1", ["--retry-budget", "-1"], /--retry-budget "-1"/],
    ["--retry-budget 0.2,x", ["--retry-budget", "0.2,x"], /minPerSecond must be a number/],
    ["--retry-budget 0.2,10,10x", ["--retry-budget", "0.2,10,10x"], /--retry-budget window "10x" is not a duration/],
    ["--max-concurrent 0", ["--max-concurrent", "0"], /--max-concurrent "0" must be a whole number from 1/],
    ["--idle-timeout 30x", ["--idle-timeout", "30x"], /--idle-timeout "30x" is not a duration/],
    ["--idle-timeout 0ms", ["--idle-timeout", "0ms"], /--idle-timeout "0ms" is too short/],
  ])("%s is refused", async (_case, args, message) => {
    expect(await refusal(["--sessions", "1", "--prompts", "1", ...args])).toMatch(message);
  });
});

describe("--slo", () => {
  it("--slo reaches runLoad's options as given, with thresholds on SLO figures", async () => {
    const options = await loadOptions([
      "--sessions",
      "2",
      "--prompts",
      "3",
      "--slo",
      "ttft<=500ms,e2e<=10s",
      "--threshold",
      "slo_attainment>0.95",
      "--threshold",
      "goodput>20",
    ]);
    expect(options.slo).toBe("ttft<=500ms,e2e<=10s");
    expect(checkLoadOptions(options).map((threshold) => threshold.metric)).toEqual(["slo_attainment", "goodput"]);
  });

  it("a bad --slo, or an SLO threshold without --slo, is refused before the run", async () => {
    expect(await refusal(["--sessions", "1", "--prompts", "1", "--slo", "ttft<=fast"])).toContain('"ttft<=fast"');
    expect(await refusal(["--sessions", "1", "--prompts", "1", "--threshold", "prompt_goodput>1"])).toContain(
      "prompt_goodput needs an SLO",
    );
  });
});

describe("rates", () => {
  it.each([
    ["50", 50],
    ["50/s", 50],
    ["0.5/s", 0.5],
    ["600/m", 10],
    ["3600/h", 1],
    ["2/ms", 2000],
  ])("--rate %s is %d arrivals per second", (text, perSecond) => {
    expect(parseRate(text, "--rate")).toBeCloseTo(perSecond, 9);
  });

  it.each(["fast", "-5/s", "5/d", "", "200000/s"])("--rate %j is refused, naming the flag", (text) => {
    expect(() => parseRate(text, "--rate")).toThrow(/--rate/);
  });
});

describe("the open model's flags", () => {
  it("--rate with --duration is one constant stage; --prompts is prompts per conversation", async () => {
    const options = await loadOptions(["--sessions", "100", "--rate", "20/s", "--duration", "30s", "--prompts", "3"]);
    expect(options).toMatchObject({ sessions: 100, prompts: 3, durationMs: 30_000, arrival: { rate: 20 } });
    expect(() => checkLoadOptions(options)).not.toThrow();
  });

  it("without --sessions, the open model's cap is what its peak rate opens in 60 s (docs/load.md)", async () => {
    expect((await loadOptions(["--rate", "20/s", "--duration", "30s"])).sessions).toBe(1200);
    expect((await loadOptions(["--stage", "10s:5/s", "--stage", "20s:0.5/s"])).sessions).toBe(300);
    expect((await loadOptions(["--rate", "0.01/s", "--duration", "30s"])).sessions).toBe(1);
    expect(await refusal(["--sweep", "3"])).toMatch(/--sessions <n> is required with --sweep/);
  });

  it("--stage is repeatable and needs no --prompts or --duration; --arrival and --on-cap shape it", async () => {
    const options = await loadOptions([
      "--sessions",
      "10",
      "--stage",
      "30s:10/s",
      "--stage",
      "2m:50/s",
      "--arrival",
      "poisson",
      "--on-cap",
      "delay",
    ]);
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
    expect((await loadOptions(["--sessions", "8", "--sweep"])).sweep).toEqual({ rates: 5 });
    expect((await loadOptions(["--sessions", "8", "--sweep", "3", "--sweep-step", "5s"])).sweep).toEqual({
      rates: 3,
      stepMs: 5000,
    });
  });

  it.each<[string[], RegExp]>([
    [["--sessions", "5", "--rate", "10/s"], /--rate needs --duration/],
    [["--sessions", "5", "--stage", "10s:5/s", "--duration", "10s"], /--stage lengths add up.*--duration/],
    [["--sessions", "5", "--stage", "10s"], /--stage "10s" is not <time>:<rate>/],
    [
      ["--sessions", "5", "--rate", "5/s", "--duration", "5s", "--arrival", "bursty"],
      /--arrival "bursty" must be one of: constant, poisson/,
    ],
    [
      ["--sessions", "5", "--rate", "5/s", "--duration", "5s", "--on-cap", "wait"],
      /--on-cap "wait" must be one of: drop, delay/,
    ],
    [["--sessions", "5", "--rate", "5/s", "--duration", "5s", "--ramp-up", "2s"], /--ramp-up is for the closed model/],
    [["--sessions", "5", "--rate", "5/s", "--duration", "5s", "--concurrency", "2"], /--sessions is the cap/],
    [["--sessions", "5", "--sweep", "--rate", "5/s"], /--sweep chooses its own rates/],
    [["--sessions", "5", "--sweep", "--duration", "5s"], /--sweep's length is its steps/],
    [["--sessions", "5", "--sweep", "0"], /--sweep "0" must be a whole number from 1 to 50/],
    [["--sessions", "5", "--prompts", "1", "--on-cap", "drop"], /--arrival and --on-cap shape the open model/],
    [["--sessions", "5", "--prompts", "1", "--sweep-step", "5s"], /give --sweep with it/],
  ])("%j is refused: %s", async (args, message) => {
    expect(await refusal(args)).toMatch(message);
  });
});
