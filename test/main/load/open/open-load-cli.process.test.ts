/**
 * `lifeline load`'s open-model and sweep flags as users type them: real child processes of the
 * built `dist/main/cli.js` (run `npm run build` first) against the built-in mock. The summary's
 * arrivals line and report.json's `config.arrival` and `totals.arrivals` agree; flags that do not
 * go together exit 2 before anything runs.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { LoadReport } from "../../../../dist/main/load/index.js";
import { runLoadChild } from "../../../fixtures/load-child.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe("lifeline load, open model", () => {
  it("--rate 20/s --duration 2s offers 40 conversations, prints their fate and writes them to report.json", async () => {
    const run = await runLoadChild(
      cleanups,
      "--sessions 50 --rate 20/s --duration 2s --mock-tokens 4 --mock-token-delay 1ms --out out".split(" "),
    );
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain("constant arrivals of 1 prompt(s): 2 s to 20/s");
    const report = JSON.parse(readFileSync(join(run.cwd, "out", "report.json"), "utf8")) as LoadReport;
    expect(report.config.arrival).toMatchObject({
      model: "open",
      process: "constant",
      stages: [{ durationMs: 2000, rate: 20 }],
      startRate: 20,
      promptsPerArrival: 1,
      maxInFlight: 50,
      onCap: "drop",
      sweep: null,
    });
    const a = report.totals.arrivals;
    expect(a?.offered).toBe(40);
    expect((a?.started ?? 0) + (a?.dropped ?? 0) + (a?.unstarted ?? 0)).toBe(40);
    // One prompt per started conversation.
    expect(report.totals.prompts.sent).toBe(a?.started);
    expect(report.sweep).toBeNull();
    expect(run.stdout).toContain(`arrivals  40 offered, ${a?.started} started, ${a?.dropped} dropped`);
  });

  it("regression: without --sessions the cap is what the peak rate opens in 60 s, and the run goes on", async () => {
    const run = await runLoadChild(
      cleanups,
      "--rate 5/s --duration 1s --mock-tokens 4 --mock-token-delay 1ms --out out".split(" "),
    );
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(readFileSync(join(run.cwd, "out", "report.json"), "utf8")) as LoadReport;
    expect(report.config.sessions).toBe(300);
    expect(report.config.arrival).toMatchObject({ maxInFlight: 300 });
    expect(report.totals.arrivals?.offered).toBe(5);
  });

  it.each([
    [["--sessions", "5", "--sweep", "--rate", "5/s"], /--sweep chooses its own rates/],
    [["--sessions", "5", "--rate", "5/s"], /--rate needs --duration/],
    [["--sessions", "5", "--stage", "10s:5/s", "--concurrency", "2"], /--sessions is the cap/],
  ])("lifeline load %j exits 2 and names the flag", async (args, message) => {
    const run = await runLoadChild(cleanups, args);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toMatch(message);
    expect(readdirSync(run.cwd)).toEqual([]);
  });

  it("--rate 0 exits 2 before anything runs: a run that offers no arrival is not a completed run", async () => {
    const run = await runLoadChild(cleanups, ["--rate", "0", "--duration", "1s", "--sessions", "2"]);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain("[ERR_INVALID_OPTIONS]");
    // Refused when the command line is read: no run's banner comes first.
    expect(run.stderr).not.toContain("lifeline load:");
    expect(readdirSync(run.cwd)).toEqual([]);
  });
});
