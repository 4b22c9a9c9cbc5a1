/**
 * `lifeline load` with agentic workloads, as users run it (child processes of the built
 * `dist/main/cli.js`; run `npm run build` first): the built-in mock answers with tool calls,
 * the sessions run `load_tool` in their workers, and the report's tool turns are counted exactly
 * against the mock's own counters and the seeded failure rolls. Also `--prompts-file`
 * conversations, and a malformed line refused with its number (exit 2).
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { LoadReport, PromptRecord } from "../../../dist/main/load/index.js";
import { startMockServer } from "../../../dist/mock-server/index.js";
import { loadToolSeed } from "../../../src/shared/load-tool.js";
import { mulberry32 } from "../../../src/shared/prng.js";
import { tempDir } from "../../fixtures/bounded.js";
import { type LoadRun, runLoadChild } from "../../fixtures/load-child.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function runLoad(args: readonly string[], options: { models?: string } = {}): Promise<LoadRun> {
  return runLoadChild(cleanups, args, options);
}

const FAST_MOCK = ["--mock-tokens", "4", "--mock-token-delay", "1ms", "--out", "out"];

function readReport(run: LoadRun): LoadReport {
  return JSON.parse(readFileSync(join(run.cwd, "out", "report.json"), "utf8")) as LoadReport;
}

function promptRecords(run: LoadRun): PromptRecord[] {
  return readFileSync(join(run.cwd, "out", "records.jsonl"), "utf8")
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as { type: string })
    .filter((record): record is PromptRecord => record.type === "prompt");
}

describe("tool turns against the built-in mock", () => {
  it("with --tool-calls 1:2, every prompt makes one tool turn: sessions × prompts × 2 tool executions", async () => {
    const [sessions, prompts, calls] = [3, 2, 2];
    const run = await runLoad([
      ...["--sessions", String(sessions), "--prompts", String(prompts), "--tool-calls", `1:${calls}`],
      ...["--tool-latency", "2ms", "--tool-cpu", "1ms", ...FAST_MOCK],
    ]);
    expect(run.code, run.stderr).toBe(0);
    const report = readReport(run);
    const promptCount = sessions * prompts;
    expect(report.agentic.toolCalls).toBe(promptCount * calls);
    expect(report.totals.toolCalls).toBe(promptCount * calls);
    expect(report.agentic.toolFailures).toBe(0);
    expect(report.agentic.toolLatencyMs.count).toBe(promptCount * calls);
    // Each prompt: a tool-call answer, then the answer to the tool results. No retries.
    expect(report.mock?.received).toBe(promptCount * 2);
    expect(report.totals.requests.sent).toBe(promptCount * 2);
    expect(report.totals.retries).toBe(0);
    expect(report.mock?.steps).toEqual({ tool_calls: promptCount, ok: promptCount });
    expect(report.mock?.toolCalls).toBe(promptCount * calls);
    expect(report.agentic.turnsPerPrompt).toMatchObject({ count: promptCount, min: 2, max: 2 });
    expect(report.agentic.sessionCompletionMs.count).toBe(sessions);
    expect(promptRecords(run).map((p) => [p.turns, p.toolCalls, p.requests])).toEqual(
      Array.from({ length: promptCount }, () => [2, calls, 2]),
    );
    expect(report.config.tools).toEqual({ name: "load_tool", latencyMs: 2, cpuMs: 1, failureRate: 0 });
    expect(report.config.mock?.tools).toEqual({ probability: 1, calls, maxTurns: 1 });
    // The summary on stdout shows the tools and their distributions.
    expect(run.stdout).toMatch(new RegExp(`tools +${promptCount * calls} calls, 0 failed`));
    expect(run.stdout).toMatch(/turns per prompt +6 +2 /);
  });

  it("with p = 0.5 seeded, the tool turns counted equal the tool-call answers the mock sent", async () => {
    const run = await runLoad([
      ...["--sessions", "4", "--prompts", "3", "--tool-calls", "0.5:3", "--tool-turns", "3", "--seed", "9"],
      ...FAST_MOCK,
    ]);
    expect(run.code, run.stderr).toBe(0);
    const report = readReport(run);
    const records = promptRecords(run);
    const answers = report.mock?.steps.tool_calls ?? 0;
    expect(answers).toBeGreaterThan(0);
    expect(report.mock?.steps.ok).toBe(12);
    expect(report.agentic.toolCalls).toBe(answers * 3);
    expect(report.mock?.toolCalls).toBe(answers * 3);
    // A prompt's turns are its tool-call answers plus its final answer.
    expect(records.reduce((sum, p) => sum + p.turns - 1, 0)).toBe(answers);
    expect(records.reduce((sum, p) => sum + p.toolCalls, 0)).toBe(answers * 3);
    expect(Math.max(...records.map((p) => p.turns))).toBeLessThanOrEqual(4);
    expect(report.totals.requests.sent).toBe(report.mock?.received);
    expect(report.totals.requests.sent).toBe(12 + answers);
  });

  it("tool failures are counted exactly: the seeded rolls of each session's own stream", async () => {
    const [sessions, prompts, calls, seed, rate] = [3, 2, 2, 5, 0.5];
    const run = await runLoad([
      ...["--sessions", String(sessions), "--prompts", String(prompts), "--tool-calls", `1:${calls}`],
      ...["--tool-failure", String(rate), "--seed", String(seed), ...FAST_MOCK],
      ...["--threshold", "tool_failure_rate<=1", "--threshold", "p99_tool_latency_ms>=0"],
      ...["--threshold", "p99_session_completion_ms>0"],
    ]);
    expect(run.code, run.stderr).toBe(0);
    const report = readReport(run);
    // Each session's tool rolls once per call, from its own stream: the total does not depend on timing.
    let expected = 0;
    for (let session = 0; session < sessions; session++) {
      const random = mulberry32(loadToolSeed(seed, session));
      for (let call = 0; call < prompts * calls; call++) if (random() < rate) expected++;
    }
    expect(report.agentic.toolCalls).toBe(sessions * prompts * calls);
    expect(report.agentic.toolFailures).toBe(expected);
    // The tool thresholds read the agentic figures.
    expect(report.thresholds.map((t) => [t.metric, t.actual])).toEqual([
      ["tool_failure_rate", Math.round((expected / (sessions * prompts * calls)) * 1e6) / 1e6],
      ["p99_tool_latency_ms", report.agentic.toolLatencyMs.p99],
      ["p99_session_completion_ms", report.agentic.sessionCompletionMs.p99],
    ]);
    // A failed tool is an error result for the model, not a failed prompt.
    expect(report.totals.prompts.succeeded).toBe(sessions * prompts);
  });

  it("--tool-failure 1 fails every call", async () => {
    const run = await runLoad([
      "--sessions",
      "2",
      "--prompts",
      "2",
      "--tool-calls",
      "1:2",
      "--tool-failure",
      "1",
      ...FAST_MOCK,
      ...["--threshold", "tool_failure_rate<0.5"],
    ]);
    // Every call failed: the threshold on the failure rate fails the run (k6's exit code 99).
    expect(run.code, run.stderr).toBe(99);
    const report = readReport(run);
    expect(report.agentic).toMatchObject({ toolCalls: 8, toolFailures: 8 });
    expect(report.thresholds).toMatchObject([{ metric: "tool_failure_rate", actual: 1, passed: false }]);
  });
});

describe("--prompts-file conversations", () => {
  it("each session sends its own conversation, one session per line (turn order: prompts-file.test.ts)", async () => {
    const server = await startMockServer({ script: { reply: "ok" } });
    cleanups.push(() => server.close());
    const models = JSON.stringify({
      providers: {
        mock: { baseUrl: `${server.url}/v1`, api: "openai-completions", apiKey: "dummy", models: [{ id: "mock-1" }] },
      },
    });
    const dir = tempDir(cleanups, "lifeline-load-conversations-");
    const file = join(dir, "c.jsonl");
    writeFileSync(file, '{"turns": ["alpha one", "alpha two"]}\n{"prompt": "beta"}\n');
    const run = await runLoad(
      ["--model", "mock/mock-1", "--sessions", "2", "--prompts", "3", "--prompts-file", file, "--out", "out"],
      { models },
    );
    expect(run.code, run.stderr).toBe(0);
    const report = readReport(run);
    expect(report.config).toMatchObject({ conversations: 2, promptTexts: 0 });
    // The mock keys a conversation by its first user message: one key per session, 3 requests each.
    expect(server.stats().conversations).toEqual({ "alpha one": 3, beta: 3 });
  });

  it("a malformed line is refused with its line number: exit 2, nothing written", async () => {
    const dir = tempDir(cleanups, "lifeline-load-conversations-");
    const file = join(dir, "bad.jsonl");
    writeFileSync(file, '{"turns": ["a", "b"]}\n\n{"turns": "not a list"}\n');
    const run = await runLoad(["--sessions", "1", "--prompts", "1", "--prompts-file", file]);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toMatch(/--prompts-file .*bad\.jsonl:3: each line must be/);
    expect(readdirSync(run.cwd)).toEqual([]);
  });
});

describe("bad tool flags exit 2 naming the flag", () => {
  it.each([
    [["--tool-calls", "1.5"], /--tool-calls "1.5" must be a probability/],
    [["--tool-calls", "0.5:0"], /--tool-calls \(calls\) "0" must be a whole number from 1 to 64/],
    [["--tool-turns", "2"], /--tool-turns bounds the mock's tool calls; give --tool-calls/],
    [["--tool-failure", "x"], /--tool-failure "x" must be a probability/],
    [["--tool-latency", "5x"], /--tool-latency "5x" is not a duration/],
  ])("lifeline load %j", async (args, message) => {
    const run = await runLoad(["--sessions", "1", "--prompts", "1", ...args]);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toMatch(message);
  });
});
