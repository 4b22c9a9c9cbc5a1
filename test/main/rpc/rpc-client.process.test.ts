/**
 * RpcClient against real child processes: the built `dist/main/cli.js --mode rpc` (run
 * `npm run build` first) with its own LIFELINE_DIR and fast retries (SPEC R, B4), and, for what the
 * real server never does (garbage on stdout, a command left unanswered, ignoring EOF and SIGTERM),
 * a small scripted fake written to a temporary directory. Every wait is bounded; every child is
 * stopped after its test.
 */
import { chmodSync, copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { RpcClient as BuiltRpcClient } from "../../../dist/main/rpc/rpc-client.js";
import { startMockServer } from "../../../dist/mock-server/index.js";
import { RpcClient, type RpcClientOptions } from "../../../src/main/rpc/rpc-client.js";
import type { RpcEvent } from "../../../src/main/rpc/rpc-protocol.js";
import { tempDir, within } from "../../fixtures/bounded.js";

const CLI = fileURLToPath(new URL("../../../dist/main/cli.js", import.meta.url));
const FAST_RETRIES = { retry: { baseDelayMs: 5 } };

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  // Last in, first out: children stop before their directories are removed.
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface TestClientOptions extends RpcClientOptions {
  /** `$LIFELINE_DIR/settings.json`. @default fast retries */
  settings?: object;
}

/** A client of the real CLI with its own LIFELINE_DIR and cwd; stopped after the test. */
function cliClient(options: TestClientOptions = {}): RpcClient {
  const { settings = FAST_RETRIES, ...clientOptions } = options;
  const dir = tempDir(cleanups, "lifeline-rpc-client-");
  writeFileSync(join(dir, "settings.json"), JSON.stringify(settings));
  const client = new RpcClient({ cliPath: CLI, cwd: dir, env: { LIFELINE_DIR: dir }, ...clientOptions });
  track(client);
  return client;
}

function track(client: RpcClient | BuiltRpcClient): void {
  cleanups.push(async () => {
    const pid = client.pid;
    // A test may leave its child stopped (SIGSTOP): let it run so it can take the EOF.
    if (pid !== undefined && isAlive(pid)) process.kill(pid, "SIGCONT");
    await within(client.stop(), 10_000, "stop() in cleanup");
  });
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The next event of `type` the client reports, within `ms`. */
function nextEvent(client: RpcClient, type: RpcEvent["type"], ms = 10_000): Promise<RpcEvent> {
  let off = () => {};
  const event = new Promise<RpcEvent>((resolve) => {
    off = client.onEvent((candidate) => {
      if (candidate.type === type) resolve(candidate);
    });
  });
  return within(event, ms, type).finally(off);
}

function types(events: readonly RpcEvent[]): string[] {
  return events.map((event) => event.type);
}

/**
 * A stand-in for `lifeline --mode rpc` with behaviour the real server never shows. Before each
 * get_state answer it writes lines the client must ignore. `abort` is never answered. A prompt
 * containing "refuse" is refused; another is accepted and followed by agent_start, agent_end,
 * agent_settled. With --ignore-eof it survives EOF and SIGTERM.
 */
const FAKE_SERVER = String.raw`
const ignoreEof = process.argv.includes("--ignore-eof");
const write = (record) => process.stdout.write(JSON.stringify(record) + "\n");
process.stderr.write("fake rpc server ready\n");
if (ignoreEof) {
  process.on("SIGTERM", () => process.stderr.write("fake: ignoring SIGTERM\n"));
  setInterval(() => {}, 1 << 30);
}
let buffer = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => {
  buffer += chunk;
  for (let lf = buffer.indexOf("\n"); lf !== -1; lf = buffer.indexOf("\n")) {
    const command = JSON.parse(buffer.slice(0, lf));
    buffer = buffer.slice(lf + 1);
    const reply = (fields) => write({ id: command.id, type: "response", command: command.type, ...fields });
    if (command.type === "get_state") {
      process.stdout.write('not json\n[1,2]\n"a string"\n{"no":"type"}\n\n');
      write({ id: "req_999", type: "response", command: "get_state", success: true, data: { isIdle: false } });
      write({ type: "response", command: "parse", success: false, error: "no id" });
      reply({ success: true, data: { isIdle: true, sessionId: "fake" } });
    } else if (command.type === "prompt" && command.message.includes("refuse")) {
      reply({ success: false, error: "The fake refuses this prompt." });
    } else if (command.type === "prompt") {
      reply({ success: true });
      write({ type: "agent_start" });
      write({ type: "agent_end", messages: [], willRetry: false });
      write({ type: "agent_settled", stopReason: "stop", retries: 0 });
    } else if (command.type !== "abort") {
      reply({ success: false, error: "Unknown command: " + command.type });
    }
  }
});
process.stdin.on("end", () => {
  if (ignoreEof) process.stderr.write("fake: ignoring EOF\n");
  else process.exit(0);
});
`;

/** A client of the fake server; stopped after the test. */
function fakeClient(options: RpcClientOptions = {}): RpcClient {
  const dir = tempDir(cleanups, "lifeline-rpc-fake-");
  const cliPath = join(dir, "fake-rpc-server.mjs");
  writeFileSync(cliPath, FAKE_SERVER);
  const client = new RpcClient({ cliPath, cwd: dir, ...options });
  track(client);
  return client;
}

describe("RpcClient with lifeline --mode rpc", () => {
  it("apiKey reaches the child through its environment, not its command line, and the model answers", async () => {
    const server = await startMockServer({ script: { reply: "Keyed answer." } });
    cleanups.push(() => server.close());
    const dir = tempDir(cleanups, "lifeline-rpc-key-");
    writeFileSync(join(dir, "settings.json"), JSON.stringify(FAST_RETRIES));
    writeFileSync(
      join(dir, "models.json"),
      JSON.stringify({
        providers: { mock: { baseUrl: `${server.url}/v1`, api: "openai-completions", models: [{ id: "mock-1" }] } },
      }),
    );
    const secret = "sk-rpc-client-7e6d5c4b3a";
    const client = new RpcClient({
      cliPath: CLI,
      cwd: dir,
      env: { LIFELINE_DIR: dir },
      model: "mock/mock-1",
      apiKey: secret,
    });
    track(client);
    await client.start();
    const pid = client.pid;
    expect(readFileSync(`/proc/${pid}/cmdline`, "utf8")).not.toContain(secret);
    const { settled } = await client.promptAndWait("hello", 15_000);
    expect(settled.stopReason).toBe("stop");
    expect(await client.getLastAssistantText()).toBe("Keyed answer.");
  });
  it("starts after a get_state handshake, reports the session state, and stop() ends the child", async () => {
    const client = cliClient();
    await within(client.start(), 15_000, "start()");
    const pid = client.pid;
    expect(pid).toBeTypeOf("number");
    const state = await client.getState();
    expect(state).toMatchObject({
      isIdle: true,
      isStreaming: false,
      autoRetryEnabled: true,
      isRetrying: false,
      retryAttempt: 0,
      messageCount: 0,
    });
    expect(state.model?.id).toBe("demo-1");
    await within(client.stop(), 5_000, "stop()");
    expect(isAlive(pid ?? -1)).toBe(false);
    await client.stop(); // idempotent
  });

  it("promptAndWait returns only after agent_settled of a retry chain, not at its first agent_end (R11, B4)", async () => {
    const client = cliClient({ provider: "demo", model: "demo-1" });
    await within(client.start(), 15_000, "start()");
    const { events, settled } = await within(client.promptAndWait("Hello"), 15_000, "promptAndWait");
    const names = types(events);
    expect(names.filter((name) => name === "auto_retry_start")).toHaveLength(2);
    expect(names.filter((name) => name === "agent_end").length).toBeGreaterThanOrEqual(3);
    expect(events.filter((event) => event.type === "auto_retry_end")).toEqual([
      expect.objectContaining({ success: true, attempt: 2 }),
    ]);
    expect(names.at(-1)).toBe("agent_settled");
    expect(names.indexOf("auto_retry_end")).toBeLessThan(names.length - 1);
    expect(names.indexOf("agent_end")).toBeLessThan(names.indexOf("auto_retry_start"));
    expect(settled).toMatchObject({ type: "agent_settled", stopReason: "stop", retries: 2 });
    expect((await client.getState()).isIdle).toBe(true);
  });

  it("waitForIdle resolves undefined on an idle session", async () => {
    const client = cliClient();
    await within(client.start(), 15_000, "start()");
    await expect(within(client.waitForIdle(), 10_000, "waitForIdle")).resolves.toBeUndefined();
  });

  it("waitForIdle called right after prompt resolves with that prompt's settle, however fast it is", async () => {
    const client = cliClient({ model: "demo-fast" });
    await within(client.start(), 15_000, "start()");
    // Not awaited: the prompt is still unanswered when waitForIdle asks, so it must not report idle.
    const accepted = client.prompt("[fail=1] quick");
    const settled = await within(client.waitForIdle(), 10_000, "waitForIdle");
    await accepted;
    expect(settled).toMatchObject({ type: "agent_settled", stopReason: "stop", retries: 1 });
  });

  it("with setAutoRetry(false) a failing prompt settles with stopReason error and no auto_retry_start (B5)", async () => {
    const client = cliClient();
    await within(client.start(), 15_000, "start()");
    await client.setAutoRetry(false);
    expect((await client.getState()).autoRetryEnabled).toBe(false);
    const { events, settled } = await within(client.promptAndWait("[fail=1] once"), 15_000, "promptAndWait");
    expect(types(events)).not.toContain("auto_retry_start");
    expect(settled).toMatchObject({ stopReason: "error", retries: 0 });
    expect(settled.errorMessage).toMatch(/503/);
  });

  it("getLastAssistantText is null before any answer and the answer's text after one", async () => {
    const client = cliClient({ model: "demo-fast" });
    await within(client.start(), 15_000, "start()");
    expect(await client.getLastAssistantText()).toBeNull();
    const { settled } = await within(client.promptAndWait("[words=5] hi"), 15_000, "promptAndWait");
    const text = await client.getLastAssistantText();
    expect(text).toEqual(expect.any(String));
    expect(text).not.toBe("");
    const answer = settled.message?.content.map((block) => (block.type === "text" ? block.text : "")).join("");
    expect(text).toBe(answer);
    expect((await client.getMessages()).map((message) => message.role)).toEqual(["user", "assistant"]);
  });

  it("refuses a second prompt while one is live with ERR_RPC_FAILED carrying the server's reason", async () => {
    const client = cliClient({ settings: { retry: { baseDelayMs: 60_000 } } });
    await within(client.start(), 15_000, "start()");
    const retrying = nextEvent(client, "auto_retry_start");
    await client.prompt("first");
    await retrying;
    const refused = client.promptAndWait("second");
    await expect(refused).rejects.toMatchObject({ code: "ERR_RPC_FAILED", message: expect.stringMatching(/retry/) });
    expect((await client.getState()).isIdle).toBe(false);
  });

  it("abortRetry ends a sleeping retry chain, and waitForIdle resolves with its settle", async () => {
    const client = cliClient({ settings: { retry: { baseDelayMs: 60_000 } } });
    await within(client.start(), 15_000, "start()");
    const retrying = nextEvent(client, "auto_retry_start");
    await client.prompt("Hello");
    await retrying;
    expect(await client.getState()).toMatchObject({ isIdle: false, isRetrying: true, retryAttempt: 1 });
    const idle = client.waitForIdle(10_000);
    await client.abortRetry();
    expect(await idle).toMatchObject({ type: "agent_settled", stopReason: "error" });
    expect((await client.getState()).isIdle).toBe(true);
  });

  it("switches models, lists them, and starts a new session with an empty transcript", async () => {
    const client = cliClient();
    await within(client.start(), 15_000, "start()");
    const ids = (await client.getAvailableModels()).map((model) => `${model.provider}/${model.id}`);
    expect(ids).toEqual(expect.arrayContaining(["demo/demo-1", "demo/demo-fast"]));
    expect(await client.setModel("demo", "demo-fast")).toMatchObject({ provider: "demo", id: "demo-fast" });
    await expect(client.setModel("demo", "no-such-model")).rejects.toMatchObject({ code: "ERR_RPC_FAILED" });
    const { settled } = await within(client.promptAndWait("hi"), 15_000, "promptAndWait");
    expect(settled.retries).toBe(0); // demo-fast does not fail
    expect(await client.newSession()).toEqual({ cancelled: false });
    expect(await client.getMessages()).toEqual([]);
  });

  it("rejects a pending waitForIdle and a pending request with ERR_RPC_EXITED as soon as the child dies", async () => {
    const client = cliClient({ settings: { retry: { baseDelayMs: 60_000 } } });
    await within(client.start(), 15_000, "start()");
    const retrying = nextEvent(client, "auto_retry_start");
    await client.prompt("Hello");
    await retrying;
    const idle = client.waitForIdle(); // 60 s default: only the exit can end it in time
    // Commands are answered in order: after two more round trips waitForIdle's own get_state has
    // been answered (not idle), so it is waiting for agent_settled when the child dies.
    await client.getState();
    await client.getState();
    const pid = client.pid ?? -1;
    process.kill(pid, "SIGSTOP"); // so the next request certainly stays unanswered
    const state = client.getState(); // 30 s default request timeout
    process.kill(pid, "SIGKILL");
    const exited = { code: "ERR_RPC_EXITED", message: expect.stringMatching(/SIGKILL/) };
    await expect(within(idle, 5_000, "waitForIdle to reject")).rejects.toMatchObject(exited);
    await expect(within(state, 5_000, "getState to reject")).rejects.toMatchObject(exited);
    await expect(client.getState()).rejects.toMatchObject(exited);
    await expect(client.waitForIdle()).rejects.toMatchObject(exited);
    await within(client.stop(), 1_000, "stop() after the exit");
  });

  it("start() rejects with ERR_RPC_EXITED quoting stderr when the child exits before answering", async () => {
    const client = cliClient({ provider: "demo", model: "no-such-model" });
    const error = await within(client.start(), 15_000, "start()").catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: "ERR_RPC_EXITED", message: expect.stringMatching(/exited with code 2/) });
    expect((error as Error).message).toContain("no-such-model");
    expect(client.getStderr()).toContain("no-such-model");
    await expect(client.getState()).rejects.toMatchObject({ code: "ERR_RPC_EXITED" });
  });

  it("start() rejects with ERR_RPC_TIMEOUT when a stopped child never answers, and leaves no process", async () => {
    const client = cliClient({ requestTimeoutMs: 200 });
    const starting = client.start();
    const pid = client.pid ?? -1;
    process.kill(pid, "SIGSTOP");
    // The failed start stops the child: EOF, SIGTERM after 2 s, then SIGKILL, which a stopped process cannot ignore.
    await expect(within(starting, 10_000, "start()")).rejects.toMatchObject({ code: "ERR_RPC_TIMEOUT" });
    expect(isAlive(pid)).toBe(false);
    await expect(client.getState()).rejects.toMatchObject({ code: "ERR_RPC_NOT_STARTED" });
  });

  it("rejects every call with ERR_RPC_NOT_STARTED before start() and after stop()", async () => {
    const client = cliClient();
    const notStarted = { code: "ERR_RPC_NOT_STARTED" };
    await expect(client.getState()).rejects.toMatchObject(notStarted);
    await expect(client.waitForIdle()).rejects.toMatchObject(notStarted);
    await within(client.start(), 15_000, "start()");
    await within(client.stop(), 5_000, "stop()");
    await expect(client.getState()).rejects.toMatchObject(notStarted);
    await expect(client.prompt("hi")).rejects.toMatchObject(notStarted);
    await expect(client.collectEvents(1_000)).rejects.toMatchObject(notStarted);
    await expect(client.promptAndWait("hi")).rejects.toMatchObject(notStarted);
    await expect(client.start()).resolves.toBeUndefined(); // the same, settled start() promise
  });

  it("stop() rejects a pending wait with ERR_RPC_EXITED at once", async () => {
    const client = cliClient();
    await within(client.start(), 15_000, "start()");
    const collecting = client.collectEvents(); // an idle session: only stop() can end it in time
    const stopping = client.stop();
    await expect(within(collecting, 1_000, "collectEvents to reject")).rejects.toMatchObject({
      code: "ERR_RPC_EXITED",
    });
    await within(stopping, 5_000, "stop()");
  });

  it("the built client finds the package's own CLI when no cliPath is given", async () => {
    const dir = tempDir(cleanups, "lifeline-rpc-client-");
    writeFileSync(join(dir, "settings.json"), JSON.stringify(FAST_RETRIES));
    const client = new BuiltRpcClient({ cwd: dir, env: { LIFELINE_DIR: dir }, model: "demo-fast" });
    track(client);
    await within(client.start(), 15_000, "start()");
    expect((await client.getState()).model?.id).toBe("demo-fast");
  });
});

describe("RpcClient in a packaged app (Electron simulated: a wrapper program in place of its binary)", () => {
  it("runs the CLI with execPath, passing env (ELECTRON_RUN_AS_NODE), and the child runs its workers from LIFELINE_WORKER_ENTRY", async () => {
    const dir = tempDir(cleanups, "lifeline-rpc-exec-");
    writeFileSync(join(dir, "settings.json"), JSON.stringify(FAST_RETRIES));
    const unpacked = join(dir, "app.asar.unpacked #1");
    mkdirSync(unpacked);
    copyFileSync(
      fileURLToPath(new URL("../../../dist/lifeline-worker.mjs", import.meta.url)),
      join(unpacked, "worker.mjs"),
    );
    const wrapper = join(dir, "electron-like");
    writeFileSync(
      wrapper,
      `#!/bin/sh\necho "wrapper ran, ELECTRON_RUN_AS_NODE=$ELECTRON_RUN_AS_NODE" >&2\nexec ${JSON.stringify(process.execPath)} "$@"\n`,
    );
    chmodSync(wrapper, 0o755);
    const env = { ELECTRON_RUN_AS_NODE: "1", LIFELINE_WORKER_ENTRY: join(unpacked, "worker.mjs") };
    const client = cliClient({ execPath: wrapper, env: { ...env, LIFELINE_DIR: dir } });
    await within(client.start(), 15_000, "start()");
    const { settled } = await within(client.promptAndWait("Hello"), 15_000, "promptAndWait");
    expect(settled).toMatchObject({ type: "agent_settled", stopReason: "stop" });
    expect(client.getStderr()).toContain("wrapper ran, ELECTRON_RUN_AS_NODE=1");

    // The same child with a worker entry that is not there: proof that the variable is read.
    const missing = join(dir, "not-unpacked", "worker.mjs");
    const broken = cliClient({ execPath: wrapper, env: { ...env, LIFELINE_DIR: dir, LIFELINE_WORKER_ENTRY: missing } });
    await expect(within(broken.start(), 15_000, "start()")).rejects.toMatchObject({
      code: "ERR_RPC_EXITED",
      // In the command line's words: the variable that named the file.
      message: expect.stringContaining(`LIFELINE_WORKER_ENTRY): ${missing} does not exist`),
    });
  });

  it("rejects an empty execPath with ERR_INVALID_OPTIONS naming the option", () => {
    expect(() => new RpcClient({ execPath: "" })).toThrow(
      expect.objectContaining({ code: "ERR_INVALID_OPTIONS", message: expect.stringContaining("execPath") }),
    );
  });
});

describe("RpcClient protocol handling (scripted fake server)", () => {
  it("ignores stdout lines that are not JSON objects and responses for no pending request", async () => {
    const client = fakeClient();
    const events: RpcEvent[] = [];
    client.onEvent((event) => events.push(event));
    await within(client.start(), 10_000, "start()");
    expect(await client.getState()).toEqual({ isIdle: true, sessionId: "fake" });
    expect(events).toEqual([]);
  });

  it("rejects a request with ERR_RPC_TIMEOUT after requestTimeoutMs while the child goes on", async () => {
    const client = fakeClient({ requestTimeoutMs: 1_000 });
    await within(client.start(), 10_000, "start()");
    await expect(within(client.abort(), 5_000, "abort")).rejects.toMatchObject({
      code: "ERR_RPC_TIMEOUT",
      message: expect.stringContaining("abort got no response in 1000 ms"),
    });
    expect((await client.getState()).isIdle).toBe(true);
  });

  it("rejects a refused prompt with ERR_RPC_FAILED carrying the server's error", async () => {
    const client = fakeClient();
    await within(client.start(), 10_000, "start()");
    await expect(client.promptAndWait("please refuse")).rejects.toMatchObject({
      code: "ERR_RPC_FAILED",
      message: expect.stringContaining("The fake refuses this prompt."),
    });
    await expect(client.newSession()).rejects.toMatchObject({ code: "ERR_RPC_FAILED" });
  });

  it("keeps delivering events to every listener when one throws, and reports the error", async () => {
    const reported: string[] = [];
    const client = fakeClient({ onListenerError: (_error, event) => reported.push(event.type) });
    client.onEvent(() => {
      throw new Error("listener bug");
    });
    const seen: string[] = [];
    const off = client.onEvent((event) => seen.push(event.type));
    await within(client.start(), 10_000, "start()");
    const { events } = await within(client.promptAndWait("hello"), 10_000, "promptAndWait");
    expect(types(events)).toEqual(["agent_start", "agent_end", "agent_settled"]);
    expect(seen).toEqual(["agent_start", "agent_end", "agent_settled"]);
    expect(reported).toEqual(["agent_start", "agent_end", "agent_settled"]);
    off();
    await within(client.promptAndWait("again"), 10_000, "promptAndWait");
    expect(seen).toHaveLength(3);
  });

  it("collectEvents returns every event through the next agent_settled", async () => {
    const client = fakeClient();
    await within(client.start(), 10_000, "start()");
    const collecting = client.collectEvents(10_000);
    await client.prompt("hello");
    expect(types(await collecting)).toEqual(["agent_start", "agent_end", "agent_settled"]);
  });

  it("stop() ends a child that ignores EOF and SIGTERM within its bound, with SIGKILL", async () => {
    const client = fakeClient({ args: ["--ignore-eof"] });
    await within(client.start(), 10_000, "start()");
    const pid = client.pid ?? -1;
    await within(client.stop(), 6_000, "stop()");
    expect(isAlive(pid)).toBe(false);
    expect(client.getStderr()).toContain("fake: ignoring EOF");
    expect(client.getStderr()).toContain("fake: ignoring SIGTERM");
  });

  it("start() rejects with ERR_RPC_EXITED naming the problem when the CLI path does not exist", async () => {
    const dir = tempDir(cleanups, "lifeline-rpc-fake-");
    const client = new RpcClient({ cliPath: join(dir, "missing.js"), cwd: dir });
    track(client);
    await expect(within(client.start(), 10_000, "start()")).rejects.toMatchObject({
      code: "ERR_RPC_EXITED",
      message: expect.stringMatching(/exited with code 1[\s\S]*Cannot find module/),
    });
  });

  it("start() rejects with ERR_RPC_EXITED when the child cannot be spawned at all", async () => {
    const dir = tempDir(cleanups, "lifeline-rpc-fake-");
    const client = new RpcClient({ cliPath: join(dir, "fake.mjs"), cwd: join(dir, "missing-dir") });
    track(client);
    await expect(within(client.start(), 10_000, "start()")).rejects.toMatchObject({
      code: "ERR_RPC_EXITED",
      message: expect.stringContaining("could not be started"),
    });
    expect(client.pid).toBeUndefined();
    await within(client.stop(), 1_000, "stop()");
  });

  it("rejects invalid timeouts with ERR_INVALID_OPTIONS naming the option", async () => {
    expect(() => new RpcClient({ requestTimeoutMs: 0 })).toThrow(
      expect.objectContaining({ code: "ERR_INVALID_OPTIONS" }),
    );
    expect(() => new RpcClient({ requestTimeoutMs: Number.NaN })).toThrow(/requestTimeoutMs/);
    const client = fakeClient();
    await within(client.start(), 10_000, "start()");
    await expect(client.waitForIdle(-1)).rejects.toMatchObject({ code: "ERR_INVALID_OPTIONS" });
  });
});
