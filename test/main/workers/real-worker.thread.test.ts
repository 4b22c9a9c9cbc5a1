/**
 * Real parts (STYLE 17, tier two): sessions through the built package, a real piscina pool and
 * real worker threads, worker modules loaded in those threads, and a real HTTP server on
 * 127.0.0.1. Run `npm run build` first; the host loads dist/worker/entry.js itself.
 *
 * Nothing here waits for wall-clock time to "let things happen": every wait is on an event or a
 * promise, bounded by {@link within}.
 */
import { spawn } from "node:child_process";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { getModels, type Model } from "@mariozechner/pi-ai";
import { afterEach, describe, expect, it } from "vitest";
import { withHostInternals } from "../../../dist/main/host/host-internals.js";
import {
  type AgentSession,
  LifelineError,
  type PromptResult,
  type SessionHost,
  type SessionHostOptions,
} from "../../../dist/main/index.js";
import { abortableSleep } from "../../../dist/main/retry/sleep.js";
import { tempDir, within } from "../../fixtures/bounded.js";
import { checkEventOrder, type LogEntry } from "../../fixtures/event-order.js";
import { nextEvent } from "../../fixtures/events.js";
import { mockModel, SSE_HEADERS, sseChunk, workerApiModel } from "../../fixtures/models.mjs";
import { realHost as sharedRealHost } from "../../fixtures/real-host.js";

const DIST_INDEX = new URL("../../../dist/main/index.js", import.meta.url).href;
const PACED_MODULE = new URL("../../fixtures/paced-provider.mjs", import.meta.url);
const CRASH_MODULE = new URL("../../fixtures/crash-provider.mjs", import.meta.url);
const TOOL_MODULE = new URL("../../fixtures/tool-module.mjs", import.meta.url);
const THROWING_MODULE = new URL("../../fixtures/throws-at-load.mjs", import.meta.url);
const SLOW_SETUP_MODULE = new URL("../../fixtures/slow-setup.mjs", import.meta.url);
const BLOCKING_MODULE = new URL("../../fixtures/blocking-provider.mjs", import.meta.url);

const PACED_MODEL = workerApiModel("lifeline-test-paced", "paced-1");
const STALL_MODEL = workerApiModel("lifeline-test-stall", "stall-1");
const CRASH_MODEL = workerApiModel("lifeline-test-crash", "crash-1");
const TOOLS_MODEL = workerApiModel("lifeline-test-tools", "tools-1");
const BLOCKING_MODEL = workerApiModel("lifeline-test-blocking", "blocking-1");

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A host on the real pool, isolated from any user or project settings file. */
function realHost(options: SessionHostOptions = {}): SessionHost {
  return sharedRealHost(cleanups, "lifeline-real-", options);
}

/** Starts `server` on 127.0.0.1 (a free port), closed after the test. */
async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return (server.address() as AddressInfo).port;
}

/** Resolves once another thread sets the first Int32 of `flag` (see {@link waitAsync}). */
function flagSet(flag: SharedArrayBuffer): Promise<unknown> {
  return Promise.resolve(waitAsync(new Int32Array(flag), 0, 0).value);
}

function record(session: AgentSession): LogEntry[] {
  const log: LogEntry[] = [];
  session.subscribe((event) => log.push(event));
  return log;
}

/** Sends a prompt and pushes a `prompt_resolved` marker into `log` when it resolves. */
function promptLogged(session: AgentSession, log: LogEntry[], text: string): Promise<PromptResult> {
  return session.prompt(text).then((result) => {
    log.push({ type: "prompt_resolved" });
    return result;
  });
}

function answerOf(result: PromptResult): string {
  return (result.message?.content ?? []).map((block) => (block.type === "text" ? block.text : "")).join("");
}

/**
 * Opens two sessions on the host's one worker (`threads: 1`), gets the first streaming on a model
 * that stalls, then has the second call a model whose stream function calls `process.exit(3)` in
 * that worker, every time it is called. Resolves once the crasher's prompt has settled (it is
 * given up after its restart budget, SPEC X7) and the stalled session, restored and retried, is
 * streaming again; then aborts it.
 */
async function crashWorkerMidRun(host: SessionHost) {
  const stalled = await host.createSession({ model: STALL_MODEL, workerModule: CRASH_MODULE });
  const crasher = await host.createSession({ model: CRASH_MODEL, workerModule: CRASH_MODULE });
  expect(host.workerCount).toBe(1);
  const stalledLog = record(stalled);
  const crasherLog = record(crasher);
  const streaming = nextEvent(stalled, "message_update");
  const stalledPrompt = stalled.prompt("wait for me");
  await within(streaming, 5000, "the stalled session's first delta");
  const streamingAgain = nextEvent(stalled, "message_update");
  const crashOutcome = await within(
    crasher.prompt("crash the worker").catch((error: unknown) => error),
    20_000,
    "the crasher's prompt to settle",
  );
  await within(streamingAgain, 10_000, "the stalled session to stream again on a fresh worker");
  await stalled.abort();
  const stalledResult = await within(stalledPrompt, 5000, "the stalled prompt after abort()");
  return { stalled, crasher, stalledLog, crasherLog, crashOutcome, stalledResult };
}

/** Node's Atomics.waitAsync (ES2024; the project's lib predates it). */
const waitAsync = (
  Atomics as unknown as {
    waitAsync(array: Int32Array, index: number, value: number): { async: boolean; value: Promise<string> | string };
  }
).waitAsync;

describe("sessions through a real worker pool", () => {
  it("X4: delivers thousands of events from concurrent sessions in order, and prompt() settles only after agent_end, the chain and agent_settled", async () => {
    const host = realHost({ threads: 2, batchIntervalMs: 0 });
    // Each session runs two prompts one after the other; `fail` is the number of retries expected.
    const plans: {
      name: string;
      model: string | Model<string>;
      workerModule?: URL;
      prompts: { text: string; fail: number; words?: number }[];
    }[] = [
      {
        name: "fast-a",
        model: "demo/demo-fast",
        prompts: [
          { text: "a1 [words=3000]", fail: 0, words: 3000 },
          { text: "a2 [fail=2] [words=3000]", fail: 2, words: 3000 },
        ],
      },
      {
        name: "fast-b",
        model: "demo/demo-fast",
        prompts: [
          { text: "b1 [fail=2] [words=3000]", fail: 2, words: 3000 },
          { text: "b2 [words=3000]", fail: 0, words: 3000 },
        ],
      },
      {
        name: "fast-c",
        model: "demo/demo-fast",
        prompts: [
          { text: "c1 [fail=1] [words=3000]", fail: 1, words: 3000 },
          { text: "c2 [fail=3] [words=3000]", fail: 3, words: 3000 },
        ],
      },
      {
        name: "demo-1",
        model: "demo/demo-1",
        prompts: [
          { text: "d1 hello [fail=2]", fail: 2 },
          { text: "d2 again [fail=2]", fail: 2 },
        ],
      },
      {
        name: "paced-a",
        model: PACED_MODEL,
        workerModule: PACED_MODULE,
        prompts: [
          { text: "p1 [words=500]", fail: 0, words: 500 },
          { text: "p2 [fail=2] [words=500]", fail: 2, words: 500 },
        ],
      },
      {
        name: "paced-b",
        model: PACED_MODEL,
        workerModule: PACED_MODULE,
        prompts: [
          { text: "q1 [fail=1] [words=500]", fail: 1, words: 500 },
          { text: "q2 [words=500]", fail: 0, words: 500 },
        ],
      },
    ];
    const runs = plans.map(async (plan) => {
      const session = await host.createSession({
        model: plan.model,
        ...(plan.workerModule === undefined ? {} : { workerModule: plan.workerModule }),
      });
      const log = record(session);
      const results: PromptResult[] = [];
      for (const prompt of plan.prompts) results.push(await promptLogged(session, log, prompt.text));
      return { plan, log, results };
    });
    const outcomes = await within(Promise.all(runs), 18_000, "every session's prompts");

    let updates = 0;
    for (const { plan, log, results } of outcomes) {
      expect({ session: plan.name, problems: checkEventOrder(log) }).toEqual({ session: plan.name, problems: [] });
      expect(log.filter((entry) => entry.type === "agent_settled")).toHaveLength(plan.prompts.length);
      plan.prompts.forEach((prompt, i) => {
        const result = results[i];
        expect(result?.stopReason, `${plan.name} prompt ${i}`).toBe("stop");
        expect(result?.retries, `${plan.name} prompt ${i}`).toBe(prompt.fail);
        if (prompt.words !== undefined && result !== undefined) {
          expect(answerOf(result).split(" "), `${plan.name} prompt ${i}`).toHaveLength(prompt.words);
        }
      });
      updates += log.filter((entry) => entry.type === "message_update").length;
    }
    // The load is real: the paced sessions alone stream one delta per timer tick in the worker.
    expect(updates).toBeGreaterThan(1000);
  });

  it("X5 X7: a worker that exits mid-run: both sessions come back on workers of their own; the poison prompt is given up after its restart budget, its neighbour goes on", async () => {
    const host = realHost({ threads: 1, callTimeoutMs: 5000 });
    const { stalled, crasher, stalledLog, crasherLog, crashOutcome, stalledResult } = await crashWorkerMidRun(host);

    // The crasher killed a fresh worker on every try: restored 3 times, given up at the 4th crash.
    expect(crashOutcome).toBeInstanceOf(LifelineError);
    expect(crashOutcome).toMatchObject({ code: "ERR_SESSION_CRASHED", exitCause: "exit" });
    expect(crasherLog.filter((entry) => entry.type === "session_restored")).toHaveLength(3);
    expect(crasherLog.filter((entry) => entry.type === "auto_retry_start")).toHaveLength(3);
    expect(crasherLog.at(-1)).toMatchObject({ type: "worker_exited", error: { code: "ERR_SESSION_CRASHED" } });
    expect(crasher.isClosed).toBe(true);
    await expect(within(crasher.prompt("again"), 2000, "a prompt on a given-up session")).rejects.toMatchObject({
      code: "ERR_SESSION_CRASHED",
    });

    // The neighbour's run was interrupted once: a failed reply naming the worker's fate, agent_end
    // {willRetry}, session_restored, then its retry, which streamed until abort().
    const order = stalledLog.map((entry) =>
      entry.type === "message_end" && entry.message.role === "assistant"
        ? `message_end ${entry.message.stopReason}`
        : entry.type === "agent_end"
          ? `agent_end ${entry.willRetry}`
          : entry.type,
    );
    const ended = order.indexOf("message_end error");
    expect(order.slice(ended, ended + 4)).toEqual([
      "message_end error",
      "agent_end true",
      "session_restored",
      "auto_retry_start",
    ]);
    expect(stalledLog.find((entry) => entry.type === "auto_retry_start")).toMatchObject({
      errorMessage: expect.stringMatching(/worker running this session exited \(exit\)/),
    });
    expect(stalledLog.filter((entry) => entry.type === "worker_exited")).toHaveLength(0);
    expect(stalledResult).toMatchObject({ stopReason: "aborted", retries: 1 });
    expect(stalled.isClosed).toBe(false);
    await within(stalled.dispose(), 2000, "dispose() of the restored session");
  });

  it("X7: a tool call its worker crashed in is never re-run: the model gets an interrupted result and the prompt is answered on a fresh worker", async () => {
    const host = realHost({ threads: 1 });
    const session = await host.createSession({ model: TOOLS_MODEL, workerModule: TOOL_MODULE });
    const restored = nextEvent(session, "session_restored");
    const result = await within(session.prompt("please [crash]"), 10_000, "the crashed prompt to settle");
    expect(await restored).toMatchObject({ reason: "crash", restarts: 1 });
    expect(result.stopReason).toBe("stop");
    expect(answerOf(result)).toMatch(/^the tool said: Tool call interrupted: the worker running it crashed\./);
    const toolResults = session.messages.filter((message) => message.role === "toolResult");
    expect(toolResults).toHaveLength(1);
    expect(toolResults[0]).toMatchObject({ toolName: "crash", isError: true });
    // The history keeps the failed attempt; the transcript the model sees does not.
    expect(session.history.some((m) => m.role === "assistant" && m.stopReason === "error")).toBe(true);
    expect(session.messages.some((m) => m.role === "assistant" && m.stopReason === "error")).toBe(false);
  });

  it("X5: a session created right after a worker crash gets a fresh worker and answers", async () => {
    // A short call timeout bounds how long a call to a worker that never starts can wait.
    const host = realHost({ threads: 1, callTimeoutMs: 5000 });
    const { stalled } = await crashWorkerMidRun(host);
    await stalled.dispose();

    const fresh = await within(host.createSession({ model: "demo/demo-fast" }), 8000, "a new session after the crash");
    const result = await within(fresh.prompt("still there?"), 8000, "the new session's prompt");
    expect(result.stopReason).toBe("stop");
    expect(answerOf(result)).toContain("still there?");
  });

  it("X5: a worker stuck in synchronous code is terminated when a call to it times out, and nothing waits forever", async () => {
    const host = realHost({ callTimeoutMs: 500 });
    const session = await host.createSession({ model: TOOLS_MODEL, workerModule: TOOL_MODULE });
    const restored = nextEvent(session, "session_restored");
    const spinning = nextEvent(session, "tool_execution_start");
    const stuck = session.prompt("please [spin]");
    // The tool is running (its start is flushed before it runs): an abort sent earlier would stop
    // the run before the tool (the control channel reaches it between two events).
    await within(spinning, 5000, "the spinning tool to start");
    // Bounded by callTimeoutMs here: abort() returns once the unanswering worker is terminated.
    await within(session.abort(), 5000, "abort() on a stuck worker");
    // It was aborted: the interrupted run ends as aborted and is not retried (X7, R9).
    expect(await within(stuck, 5000, "the stuck prompt to settle")).toMatchObject({ stopReason: "aborted" });
    expect(await within(restored, 5000, "session_restored")).toMatchObject({ reason: "hung" });
    const fresh = await host.createSession({ model: "demo/demo-fast" });
    expect((await within(fresh.prompt("still there?"), 5000, "a prompt on a fresh worker")).stopReason).toBe("stop");
  });

  it("X8 X7: a tool that blocks its worker after yielding is found by the watchdog with nothing calling it; the session is restored and the model told, and the host goes on", async () => {
    const host = realHost({ threads: 2, hangTimeoutMs: 500 });
    const session = await host.createSession({ model: TOOLS_MODEL, workerModule: TOOL_MODULE });
    const neighbour = await host.createSession({ model: "demo/demo-fast" });
    const restored = nextEvent(session, "session_restored");
    const log = record(session);
    const result = await within(session.prompt("please [spin-later]"), 15_000, "the watchdog to end the hang");
    expect(await restored).toMatchObject({ reason: "hung", restarts: 1 });
    // The reply of the interrupted run: a failed message naming the worker's fate.
    const failed = log.find(
      (entry) =>
        entry.type === "message_end" && entry.message.role === "assistant" && entry.message.stopReason === "error",
    );
    expect(failed).toMatchObject({ message: { errorMessage: expect.stringMatching(/stopped answering/) } });
    expect(log.find((entry) => entry.type === "auto_retry_start")).toMatchObject({
      errorMessage: expect.stringMatching(/stopped answering and was terminated \(hung\)/),
    });
    // The spinning tool was not run again: the model got an "interrupted" result and answered.
    expect(answerOf(result)).toMatch(/^the tool said: Tool call interrupted: the worker running it stopped answering/);
    expect(session.isClosed).toBe(false);
    // The neighbour on the other worker was untouched; new sessions get a fresh worker.
    expect((await within(neighbour.prompt("hi"), 5000, "the neighbour's prompt")).stopReason).toBe("stop");
    const fresh = await host.createSession({ model: "demo/demo-fast" });
    expect((await within(fresh.prompt("still there?"), 5000, "a fresh worker")).stopReason).toBe("stop");
  });

  it("X8: a synchronous tool that keeps its worker busy for less than hangTimeoutMs is not terminated", async () => {
    const host = realHost({ threads: 1, hangTimeoutMs: 4000 });
    const session = await host.createSession({ model: TOOLS_MODEL, workerModule: TOOL_MODULE });
    const result = await within(session.prompt("crunch [busy=600]"), 15_000, "the busy tool's prompt");
    expect(answerOf(result)).toBe("the tool said: worked 600 ms");
    expect(session.isClosed).toBe(false);
  });

  it("X8: abort() and host.close() on a worker stuck in synchronous code finish within their bound, not callTimeoutMs", async () => {
    // The watchdog would wait a minute and calls 30 s: the control bound (2 s) must act first.
    const host = realHost({ hangTimeoutMs: 60_000 });
    const spinning = async () => {
      const flag = new SharedArrayBuffer(4);
      const session = await host.createSession({
        model: TOOLS_MODEL,
        workerModule: TOOL_MODULE,
        workerModuleOptions: { flag },
      });
      const stuck = session.prompt("please [spin-flag]").catch((error: unknown) => error);
      await within(flagSet(flag), 10_000, "the worker to block");
      return { session, stuck };
    };
    const first = await spinning();
    await within(first.session.abort(), 6000, "abort() on a stuck worker");
    // Terminated as hung; the run was aborted, so it ends as aborted and is not retried.
    expect(await within(first.stuck, 6000, "the aborted prompt to settle")).toMatchObject({ stopReason: "aborted" });
    const second = await spinning();
    await within(host.close(), 8000, "host.close() with a stuck worker");
    expect(await within(second.stuck, 1000, "the prompt of the closed host")).toMatchObject({
      code: "ERR_SESSION_DISPOSED",
    });
  });

  it("a slow but healthy worker-module setup() rejects only its createSession with ERR_WORKER_MODULE (setupTimeoutMs); neighbours keep streaming", async () => {
    const host = realHost({ threads: 1, callTimeoutMs: 1000, setupTimeoutMs: 300 });
    const neighbour = await host.createSession({ model: "demo/demo-stream" });
    const streaming = neighbour.prompt("talk [words=100]");
    await within(nextEvent(neighbour, "message_update"), 5000, "the neighbour to stream");
    const slow = host.createSession({
      sessionId: "slow-1",
      model: "demo/demo-fast",
      workerModule: SLOW_SETUP_MODULE,
      workerModuleOptions: { waitMs: 1500 },
    });
    const error = await within(
      slow.catch((e: unknown) => e),
      5000,
      "the slow createSession",
    );
    expect(error).toMatchObject({ code: "ERR_WORKER_MODULE" });
    expect((error as Error).message).toMatch(/setup\(\) did not finish within 300 ms \(setupTimeoutMs\)/);
    // The worker was not killed: the neighbour finishes its answer.
    const result = await within(streaming, 15_000, "the neighbour's prompt");
    expect(result.stopReason).toBe("stop");
    expect(answerOf(result).split(" ")).toHaveLength(100);
    // The cancelled open freed its id: the same id opens again, on the same worker.
    const again = await host.createSession({ sessionId: "slow-1", model: "demo/demo-fast" });
    expect((await within(again.prompt("hi"), 5000, "the re-opened session")).stopReason).toBe("stop");
    expect(host.workerCount).toBe(1);
  });

  it("X8: the watchdog allows a worker module's synchronous setup() up to setupTimeoutMs", async () => {
    const host = realHost({ threads: 1, hangTimeoutMs: 300, setupTimeoutMs: 10_000 });
    const session = await within(
      host.createSession({
        model: "demo/demo-fast",
        workerModule: SLOW_SETUP_MODULE,
        workerModuleOptions: { busyMs: 1200 },
      }),
      15_000,
      "a session whose setup() blocks for 1.2 s",
    );
    expect((await within(session.prompt("hi"), 5000, "its prompt")).stopReason).toBe("stop");
  });

  it.each([
    { label: "unset (the default, 0)", providerRetries: undefined, expected: 4 },
    { label: "1", providerRetries: 1, expected: 8 },
  ])(
    "B1: an exhausted chain through the OpenAI SDK sends $expected requests when retry.provider.maxRetries is $label",
    async ({ providerRetries, expected }) => {
      let count = 0;
      const server = createServer((req: IncomingMessage, res: ServerResponse) => {
        count++;
        req.resume();
        res.writeHead(503, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: "Service Unavailable", type: "server_error" } }));
      });
      const port = await listen(server);
      const retry = providerRetries === undefined ? {} : { provider: { maxRetries: providerRetries } };
      const host = realHost({ threads: 1, settings: { retry: { baseDelayMs: 1, ...retry } } });
      const session = await host.createSession({ model: mockModel(port), apiKey: "dummy" });
      const log = record(session);
      const result = await within(session.prompt("hi"), 15_000, "the exhausted chain");
      expect(result.stopReason).toBe("error");
      expect(result.errorMessage).toMatch(/503/);
      expect(log.filter((e) => e.type === "auto_retry_start")).toHaveLength(3);
      expect(log.filter((e) => e.type === "auto_retry_end")).toEqual([
        expect.objectContaining({ success: false, attempt: 3 }),
      ]);
      // Default (B1): the SDK's own retries are off, so lifeline's 1 + 3 attempts are the only requests.
      expect(count).toBe(expected);
    },
  );

  it("X3: abort() closes the worker's in-flight HTTP request, the prompt settles as aborted and nothing is retried", async () => {
    const requests: string[] = [];
    let sawRequest: () => void = () => {};
    const requestSeen = new Promise<void>((resolve) => {
      sawRequest = resolve;
    });
    let connectionClosed: () => void = () => {};
    const closed = new Promise<void>((resolve) => {
      connectionClosed = resolve;
    });
    const server = createServer((req: IncomingMessage, res: ServerResponse) => {
      requests.push(`${req.method} ${req.url}`);
      if (req.method !== "POST" || req.url !== "/v1/chat/completions") {
        res.writeHead(404).end();
        return;
      }
      req.resume();
      res.on("close", () => connectionClosed());
      res.writeHead(200, SSE_HEADERS);
      res.write(sseChunk({ role: "assistant", content: "Hel" }));
      sawRequest();
      // Then the server stalls: no more chunks, no end.
    });
    const port = await listen(server);

    const host = realHost({ threads: 1 });
    const model = mockModel(port);
    const session = await host.createSession({ model, apiKey: "dummy" });
    const log = record(session);
    const firstDelta = nextEvent(session, "message_update");
    const prompt = session.prompt("stream something");
    prompt.catch(() => {});
    await within(requestSeen, 5000, "the server to see the request");
    await within(firstDelta, 5000, "the first streamed delta on the main thread");

    await within(session.abort(), 5000, "abort()");
    await within(closed, 5000, "the server to see the connection close");
    const result = await within(prompt, 5000, "the aborted prompt to settle");

    expect(result.stopReason).toBe("aborted");
    expect(result.retries).toBe(0);
    expect(log.some((entry) => entry.type === "auto_retry_start" || entry.type === "auto_retry_end")).toBe(false);
    expect(log.filter((entry) => entry.type === "agent_settled")).toHaveLength(1);
    expect(requests).toEqual(["POST /v1/chat/completions"]);
  });

  it("X6: a worker module that throws at load makes createSession reject with ERR_WORKER_MODULE naming the module, and the host keeps serving", async () => {
    const host = realHost({ threads: 1 });
    const failure = host.createSession({ workerModule: THROWING_MODULE });
    await expect(within(failure, 10_000, "createSession")).rejects.toMatchObject({
      code: "ERR_WORKER_MODULE",
      message: expect.stringContaining("throws-at-load.mjs"),
    });
    await expect(failure).rejects.toThrow(/broken on purpose/);
    const missing = host.createSession({ workerModule: new URL("./fixtures/no-such-module.mjs", import.meta.url) });
    await expect(within(missing, 10_000, "createSession")).rejects.toMatchObject({
      code: "ERR_WORKER_MODULE",
      message: expect.stringContaining("no-such-module.mjs"),
    });
    expect(host.sessionCount).toBe(0);

    const session = await within(host.createSession({ model: "demo/demo-fast" }), 10_000, "a good session");
    const result = await within(session.prompt("after a broken module"), 10_000, "its prompt");
    expect(result.stopReason).toBe("stop");
    expect(host.sessionCount).toBe(1);
  });

  it("X1: a worker module's tool is called by the model and runs in the worker thread, with tool_execution events in order", async () => {
    const host = realHost({ threads: 1 });
    const session = await host.createSession({
      model: TOOLS_MODEL,
      workerModule: TOOL_MODULE,
      workerModuleOptions: { tag: "from-main" },
    });
    const log = record(session);
    const result = await within(promptLogged(session, log, "where does the tool run?"), 10_000, "the tool prompt");

    expect(checkEventOrder(log)).toEqual([]);
    const starts = log.filter((entry) => entry.type === "tool_execution_start");
    const ends = log.filter((entry) => entry.type === "tool_execution_end");
    expect(starts).toHaveLength(1);
    expect(ends).toHaveLength(1);
    expect(starts[0]).toMatchObject({ toolName: "whereami", args: { label: "probe" } });
    expect(ends[0]?.isError).toBe(false);
    const toolText =
      (ends[0]?.result as { content?: { type: string; text: string }[] } | undefined)?.content?.[0]?.text ?? "";
    expect(toolText).toMatch(/^isMainThread=false threadId=[1-9]\d* /);
    expect(toolText).toContain(`session=${session.id} tag=from-main label=probe`);
    expect(log.indexOf(starts[0] as LogEntry)).toBeLessThan(log.indexOf(ends[0] as LogEntry));
    expect(result.stopReason).toBe("stop");
    expect(answerOf(result)).toBe(`the tool said: ${toolText}`);
    expect(session.messages.map((message) => message.role)).toEqual(["user", "assistant", "toolResult", "assistant"]);
  });

  it("X2: the retry decision and its backoff timer live on the main thread: a worker blocked through the whole backoff delays neither, and continue reaches it only after the main-side timer", async () => {
    // Slots shared with the worker module (see blocking-provider.mjs).
    const [BLOCK, BLOCKED, RELEASE, SLEPT] = [0, 1, 2, 3];
    const slots = new Int32Array(new SharedArrayBuffer(16));
    const log: string[] = [];
    let session: AgentSession | undefined;
    const host = realHost(
      withHostInternals(
        { threads: 1, settings: { retry: { baseDelayMs: 25 } } },
        {
          // The production timer, wrapped to block the worker for the whole backoff window.
          sleep: async (ms, signal) => {
            log.push(`sleep ${ms}`);
            Atomics.store(slots, BLOCK, 1);
            Atomics.notify(slots, BLOCK);
            const blocked = waitAsync(slots, BLOCKED, 0);
            if (blocked.async) await within(Promise.resolve(blocked.value), 5000, "the worker to block its event loop");
            log.push(`worker blocked; continue posted: ${session?.isStreaming}`);
            await abortableSleep(ms, signal);
            Atomics.store(slots, SLEPT, 1);
            log.push(`main-side timer fired; continue posted: ${session?.isStreaming}`);
            // After the controller has acted on the timer (it posts continue synchronously after it).
            setImmediate(() => {
              log.push(`worker still blocked; continue posted: ${session?.isStreaming}`);
              Atomics.store(slots, RELEASE, 1);
              Atomics.notify(slots, RELEASE);
            });
          },
        },
      ),
    );
    session = await host.createSession({
      model: BLOCKING_MODEL,
      workerModule: BLOCKING_MODULE,
      workerModuleOptions: { shared: slots.buffer },
    });
    session.subscribe((event) => {
      if (event.type === "agent_start") log.push("agent_start");
      if (event.type === "agent_end") log.push(`agent_end willRetry=${event.willRetry}`);
      if (event.type === "auto_retry_start") log.push(`auto_retry_start ${event.attempt} delay=${event.delayMs}`);
      if (event.type === "auto_retry_end") log.push(`auto_retry_end success=${event.success}`);
    });
    const result = await within(session.prompt("hi"), 15_000, "the retried prompt");

    expect(log).toEqual([
      "agent_start",
      "agent_end willRetry=true",
      "auto_retry_start 1 delay=25",
      "sleep 25",
      "worker blocked; continue posted: false",
      "main-side timer fired; continue posted: false",
      "worker still blocked; continue posted: true",
      "agent_start",
      "auto_retry_end success=true",
      "agent_end willRetry=false",
    ]);
    expect(result.stopReason).toBe("stop");
    expect(result.retries).toBe(1);
    // The retried request started after the main thread's timer had fired.
    expect(answerOf(result)).toBe("request 2 saw slept=1");
  });

  it("a Model whose api only a worker module registers is refused without that module, naming model.api", async () => {
    const host = realHost({ threads: 1 });
    const failure = host.createSession({ model: TOOLS_MODEL });
    await expect(within(failure, 10_000, "createSession")).rejects.toMatchObject({
      code: "ERR_INVALID_OPTIONS",
      message: expect.stringContaining('model.api "lifeline-test-tools"'),
    });
    const session = await within(
      host.createSession({ model: TOOLS_MODEL, workerModule: TOOL_MODULE }),
      10_000,
      "createSession with the module that registers the api",
    );
    expect(session.model.api).toBe("lifeline-test-tools");
  });

  it("X6: an unknown provider or model makes createSession reject with ERR_UNKNOWN_MODEL listing what exists, and the host keeps working", async () => {
    const host = realHost({ threads: 1 });
    const unknownProvider = host.createSession({ model: "no-such-provider/x" });
    await expect(within(unknownProvider, 10_000, "createSession")).rejects.toMatchObject({ code: "ERR_UNKNOWN_MODEL" });
    const providerMessage = String(((await unknownProvider.catch((error: unknown) => error)) as Error).message);
    expect(providerMessage).toContain("no-such-provider");
    expect(providerMessage).toMatch(/\bdemo\b/);
    expect(providerMessage).toMatch(/\bopenai\b/);

    const unknownDemo = host.createSession({ model: "demo/demo-99" });
    await expect(within(unknownDemo, 10_000, "createSession")).rejects.toMatchObject({ code: "ERR_UNKNOWN_MODEL" });
    const demoMessage = String(((await unknownDemo.catch((error: unknown) => error)) as Error).message);
    for (const id of ["demo-99", "demo-1", "demo-stream", "demo-fast"]) expect(demoMessage).toContain(id);

    const unknownOpenai = host.createSession({ model: "openai/no-such-model" });
    await expect(within(unknownOpenai, 10_000, "createSession")).rejects.toMatchObject({ code: "ERR_UNKNOWN_MODEL" });
    const openaiMessage = String(((await unknownOpenai.catch((error: unknown) => error)) as Error).message);
    expect(openaiMessage).toContain("no-such-model");
    expect(openaiMessage).toContain(getModels("openai")[0]?.id ?? "(no openai models?)");
    expect(host.sessionCount).toBe(0);

    const session = await within(host.createSession({ model: "demo/demo-fast" }), 10_000, "a good session");
    const result = await within(session.prompt("known model"), 10_000, "its prompt");
    expect(result.stopReason).toBe("stop");
  });
});

interface ChildOutcome {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

/** Runs an ES module script in a child node process; kills it if it has not exited within `timeoutMs`. */
function runNodeScript(script: string, env: Record<string, string>, timeoutMs: number): Promise<ChildOutcome> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--input-type=module", "-e", script], {
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    let timedOut = false;
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill("SIGKILL");
    }, timeoutMs);
    child.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, timedOut });
    });
  });
}

describe("host.close() in a process of its own", () => {
  it("X5: after a prompt and host.close() no handle keeps the process alive", async () => {
    const dir = tempDir(cleanups, "lifeline-real-");
    const script = `
      const { createSessionHost } = await import(process.env.LIFELINE_DIST);
      const dir = process.env.LIFELINE_TEST_DIR;
      const host = createSessionHost({ lifelineDir: dir, cwd: dir, settings: { retry: { baseDelayMs: 1 } } });
      const session = await host.createSession({ model: "demo/demo-1" });
      const result = await session.prompt("hi");
      await host.close();
      process.stdout.write(JSON.stringify({ stopReason: result.stopReason, retries: result.retries, sessions: host.sessionCount, workers: host.workerCount }));
    `;
    const outcome = await runNodeScript(script, { LIFELINE_DIST: DIST_INDEX, LIFELINE_TEST_DIR: dir }, 15_000);
    expect(outcome.timedOut, `stderr: ${outcome.stderr}`).toBe(false);
    expect(outcome.code, `stderr: ${outcome.stderr}`).toBe(0);
    expect(JSON.parse(outcome.stdout)).toEqual({ stopReason: "stop", retries: 2, sessions: 0, workers: 0 });
  });

  it("X5: host.close() during a streaming prompt rejects it with ERR_SESSION_DISPOSED and the process exits by itself", async () => {
    const dir = tempDir(cleanups, "lifeline-real-");
    const script = `
      const { createSessionHost } = await import(process.env.LIFELINE_DIST);
      const dir = process.env.LIFELINE_TEST_DIR;
      const host = createSessionHost({ lifelineDir: dir, cwd: dir });
      const session = await host.createSession({ model: "demo/demo-stream" });
      const streaming = new Promise((resolve) => {
        const off = session.subscribe((event) => { if (event.type === "message_update") { off(); resolve(); } });
      });
      const prompt = session.prompt("a very long answer [words=100000]").then(() => "resolved", (error) => error.code);
      await streaming;
      await host.close();
      process.stdout.write(JSON.stringify({ prompt: await prompt }));
    `;
    const outcome = await runNodeScript(script, { LIFELINE_DIST: DIST_INDEX, LIFELINE_TEST_DIR: dir }, 15_000);
    expect(outcome.timedOut, `stderr: ${outcome.stderr}`).toBe(false);
    expect(outcome.code, `stderr: ${outcome.stderr}`).toBe(0);
    expect(JSON.parse(outcome.stdout)).toEqual({ prompt: "ERR_SESSION_DISPOSED" });
  });
});
