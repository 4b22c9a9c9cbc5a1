/**
 * `AgentSession.executeBash` / `abortBash` on the real stack: the built package, a real piscina
 * worker, real shells, and the mock model server on 127.0.0.1 recording what the model was sent.
 *
 * SPEC rules: X1 (the command runs in the worker: the host's event loop is measured while it
 * writes 50 MB), X5 (a worker that dies while a command runs settles the call).
 */
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { describe, expect, it } from "vitest";
import { createSessionHost, type SessionHost, type SessionHostOptions } from "../../../dist/main/index.js";
import { tempDir, within } from "../../fixtures/bounded.js";
import { mockServerSuite } from "../../fixtures/mock-server-suite.js";
import { mockModel, workerApiModel } from "../../fixtures/models.mjs";
import { parseLines } from "../../fixtures/session-lines.js";

const suite = mockServerSuite();
const { cleanups } = suite;

const KILLER_MODULE = new URL("../../fixtures/killer-module.mjs", import.meta.url);

function host(options: SessionHostOptions = {}): { host: SessionHost; dir: string } {
  const dir = tempDir(cleanups);
  const created = createSessionHost({ lifelineDir: dir, cwd: dir, threads: 1, ...options });
  cleanups.push(() => created.close());
  return { host: created, dir };
}

async function session(options: SessionHostOptions = {}) {
  const { host: h, dir } = host(options);
  return { session: await h.createSession({ model: mockModel(suite.server.port), apiKey: "dummy" }), dir };
}

/** Resolves once `pid` no longer exists (polled; bounded by the caller). */
async function gone(pid: number): Promise<void> {
  for (;;) {
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The pid a command wrote to `file` (its background `sleep`), once written; polled, bounded by the caller. */
async function pidWritten(file: string): Promise<number> {
  for (;;) {
    const text = existsSync(file) ? readFileSync(file, "utf8").trim() : "";
    if (text.endsWith("\n") || /^\d+$/.test(text)) return Number(text);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe("executeBash", () => {
  it("returns the command's stdout and stderr together and its exit code, run in the session's cwd", async () => {
    const { session: s, dir } = await session();
    const result = await within(s.executeBash("echo out; pwd; echo err >&2; exit 3"), 10_000, "bash");
    expect({ ...result, output: undefined }).toEqual({
      output: undefined,
      exitCode: 3,
      cancelled: false,
      truncated: false,
    });
    // Two pipes: the order between stdout's and stderr's lines is the kernel's, not the command's.
    expect(result.output.split("\n").sort()).toEqual(["", dir, "err", "out"].sort());
  });

  it("abortBash() kills `sleep 30` and its whole process group; the call settles within 2 s with cancelled: true", async () => {
    const { session: s, dir } = await session();
    const pidFile = join(dir, "sleep.pid");
    const running = s.executeBash(`sleep 30 & echo $! > ${pidFile}; wait`);
    const sleepPid = await within(pidWritten(pidFile), 10_000, "the command to start");
    const aborted = performance.now();
    await s.abortBash();
    const result = await within(running, 2000, "the aborted command's result");
    expect(performance.now() - aborted).toBeLessThan(2000);
    expect(result.cancelled).toBe(true);
    expect(result.exitCode).toBeUndefined();
    expect(s.isBashRunning).toBe(false);
    await within(gone(sleepPid), 2000, "the shell's sleep to be killed");
  });

  it("bounds the output to the last 2000 lines and keeps the whole of it in fullOutputPath", async () => {
    const { session: s } = await session();
    const result = await within(s.executeBash("seq 1 200000"), 20_000, "bash");
    expect(result.truncated).toBe(true);
    expect(result.exitCode).toBe(0);
    const lines = result.output.split("\n");
    expect(lines.length).toBeLessThanOrEqual(2000);
    expect(Buffer.byteLength(result.output)).toBeLessThanOrEqual(50 * 1024);
    expect(result.output.endsWith("199999\n200000\n")).toBe(true);
    expect(result.fullOutputPath).toBeDefined();
    // The temp file is the caller's to keep or delete, as in pi.
    cleanups.push(() => rmSync(result.fullOutputPath as string, { force: true }));
    const full = readFileSync(result.fullOutputPath as string, "utf8");
    expect(full.split("\n").length).toBe(200001);
    expect(full.startsWith("1\n2\n3\n")).toBe(true);
  });

  it("X1: the host's event loop stays responsive while a command writes 50 MB", async () => {
    const { session: s } = await session();
    const idle = monitorEventLoopDelay({ resolution: 10 });
    idle.enable();
    await new Promise((resolve) => setTimeout(resolve, 300));
    idle.disable();
    const busy = monitorEventLoopDelay({ resolution: 10 });
    busy.enable();
    const result = await within(
      s.executeBash("yes 0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLM | head -c 52428800"),
      60_000,
      "50 MB of output",
    );
    busy.disable();
    if (result.fullOutputPath !== undefined)
      cleanups.push(() => rmSync(result.fullOutputPath as string, { force: true }));
    expect(result.exitCode, result.output.slice(0, 200)).toBe(0);
    expect(result.truncated, JSON.stringify({ ...result, output: result.output.length })).toBe(true);
    expect(Buffer.byteLength(result.output)).toBeLessThanOrEqual(50 * 1024);
    // Timer lateness on the main thread, in ms: what a blocked loop would show as seconds.
    const busyMaxMs = busy.max / 1e6;
    const idleMaxMs = idle.max / 1e6;
    expect(busyMaxMs, `idle max ${idleMaxMs.toFixed(1)} ms`).toBeLessThan(100 + idleMaxMs);
  });

  it("puts the command and its output into the next model request and the session file as pi's bashExecution message", async () => {
    const { session: s } = await session({ sessions: {} });
    const marker = `marker-${process.pid}-${Date.now()}`;
    await within(s.executeBash(`echo ${marker}`), 10_000, "bash");
    expect(s.messages.at(-1)).toMatchObject({
      role: "bashExecution",
      command: `echo ${marker}`,
      output: `${marker}\n`,
    });
    const since = suite.server.log.at(-1)?.seq ?? 0;
    const result = await within(s.prompt("what did it print?"), 10_000, "the prompt");
    expect(result.stopReason).toBe("stop");
    const request = suite.server.log.find((record) => record.seq > since);
    // The mock keys a conversation by its first user text: the command's turn, merged with the prompt.
    expect(request?.conversation).toContain(`Ran \`echo ${marker}\``);
    expect(request?.conversation).toContain(marker);
    await s.flushSession();
    const entries = parseLines(readFileSync(s.sessionFile as string, "utf8"));
    const messages = entries
      .filter((entry) => entry.type === "message")
      .map((entry) => entry.message as { role: string });
    expect(messages.map((message) => message.role)).toEqual(["bashExecution", "user", "assistant"]);
    expect(messages[0]).toEqual({
      role: "bashExecution",
      command: `echo ${marker}`,
      output: `${marker}\n`,
      exitCode: 0,
      cancelled: false,
      truncated: false,
      timestamp: expect.any(Number),
    });
  });

  it("a command that ends while a prompt is live enters the transcript just before the next prompt, not inside the live one", async () => {
    const { session: s } = await session();
    const prompt = s.prompt("a long answer please");
    const result = await within(s.executeBash("echo during"), 10_000, "bash");
    expect(result.output).toBe("during\n");
    await within(prompt, 10_000, "the first prompt");
    expect(s.messages.map((message) => message.role)).toEqual(["user", "assistant"]);
    await within(s.prompt("next"), 10_000, "the second prompt");
    expect(s.messages.map((message) => message.role)).toEqual([
      "user",
      "assistant",
      "bashExecution",
      "user",
      "assistant",
    ]);
  });

  it("X5: a worker that dies while a command runs settles executeBash with ERR_WORKER_EXITED and kills the command", async () => {
    const { host: h, dir } = host({ settings: { retry: { baseDelayMs: 5 } } });
    const killed = new SharedArrayBuffer(4);
    const s = await h.createSession({
      model: workerApiModel("lifeline-test-killer", "killer-1"),
      workerModule: KILLER_MODULE,
      workerModuleOptions: { killed, killAfterMs: 0 },
    });
    const pidFile = join(dir, "sleep.pid");
    const running = s.executeBash(`sleep 30 & echo $! > ${pidFile}; wait`);
    running.catch(() => {});
    const sleepPid = await within(pidWritten(pidFile), 10_000, "the command to start");
    // The killer model's first call ends the worker; the session is restored and the prompt retried (X7).
    const prompt = s.prompt("go");
    await expect(within(running, 10_000, "the bash call")).rejects.toMatchObject({ code: "ERR_WORKER_EXITED" });
    await within(gone(sleepPid), 2000, "the orphaned command to be killed");
    expect((await within(prompt, 20_000, "the restored prompt")).stopReason).toBe("stop");
  });
});
