/**
 * Whatever a worker does, the host process stays up (SPEC X5, X8), and what was waiting settles
 * with a typed error that names the cause. These run the host in a child process of its own, so
 * "the host stays up" is observed from outside: an unhandled error would end that process.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { within } from "../../fixtures/bounded.js";

const HOST = fileURLToPath(new URL("../../fixtures/worker-failure-host.mjs", import.meta.url));
const PRELOAD = fileURLToPath(new URL("../../fixtures/throw-in-worker.cjs", import.meta.url));

interface Step {
  step?: string;
  resolved?: string;
  answer?: string;
  restored?: string[];
  rejected?: { code?: string; exitCause?: string; message?: string };
  alive?: boolean;
}

async function runHost(scenario: string, nodeArgs: string[] = []): Promise<{ code: number | null; steps: Step[] }> {
  const child = spawn(process.execPath, [...nodeArgs, HOST, scenario], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stdout.on("data", (chunk: Buffer) => {
    out += chunk.toString();
  });
  child.stderr.on("data", (chunk: Buffer) => {
    err += chunk.toString();
  });
  const code = await within(
    new Promise<number | null>((resolve) => child.on("exit", resolve)),
    30_000,
    `the ${scenario} host process to finish`,
  ).finally(() => child.kill("SIGKILL"));
  const steps = out
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as Step);
  if (code !== 0) throw new Error(`host exited with ${code}; stderr:\n${err}`);
  return { code, steps };
}

describe("a worker that fails never takes the host down", () => {
  it("X5: resourceLimits too small for a worker to start settle createSession with ERR_WORKER_START naming the out-of-memory, and the host lives on", async () => {
    const { steps } = await runHost("start-oom");
    expect(steps[0]).toMatchObject({ step: "start", rejected: { code: "ERR_WORKER_START" } });
    expect(steps[0]?.rejected?.message).toMatch(/ran out of memory while loading/);
    expect(steps[1]).toMatchObject({ step: "healthy", resolved: "stop" });
    expect(steps.at(-1)).toEqual({ alive: true });
  });

  it("X5: a worker that fails to load settles createSession with ERR_WORKER_START naming why, every time, and the host lives on", async () => {
    const { steps } = await runHost("preload", ["--require", PRELOAD]);
    for (const index of [0, 1]) {
      expect(steps[index]?.rejected?.code).toBe("ERR_WORKER_START");
      expect(steps[index]?.rejected?.message).toMatch(/failed to load \(preload failed in the worker\)/);
    }
    expect(steps.at(-1)).toEqual({ alive: true });
  });

  it("X5 X7: a tool that runs its worker out of memory is not re-run; the session is restored (cause oom), the model told, and the host lives on", async () => {
    const { steps } = await runHost("oom-prompt");
    expect(steps[0]).toMatchObject({ step: "oom", resolved: "stop", restored: ["oom"] });
    expect(steps[0]?.answer).toMatch(/^the tool said: Tool call interrupted: the worker running it ran out of memory/);
    expect(steps.at(-1)).toEqual({ alive: true });
  });

  it("X5 X7: a session whose worker keeps running out of memory is given up with ERR_SESSION_CRASHED (cause oom); host.close() right after does not crash the host", async () => {
    const { steps } = await runHost("oom-close");
    expect(steps[0]).toMatchObject({
      step: "oom",
      rejected: { code: "ERR_SESSION_CRASHED", exitCause: "oom" },
      restored: ["oom", "oom", "oom"],
    });
    expect(steps[0]?.rejected?.message).toMatch(/ran out of memory again, more than 3 restarts/);
    expect(steps[1]).toMatchObject({ step: "healthy", resolved: "stop" });
    expect(steps.at(-1)).toEqual({ alive: true });
  });
});
