/**
 * RpcHostClient against a real `lifeline --mode host` child (the built dist/main/cli.js: run
 * `npm run build` first), spawned by the client or listening on a Unix socket, with its own LIFELINE_DIR, its sessions answered by the mock model server
 * on 127.0.0.1. A prompt whose text contains "stall" gets a response that goes silent, so a run
 * stays live until it is aborted. Every wait is bounded; every child is stopped after its test.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { startMockServer } from "../../../../dist/mock-server/index.js";
import type { HostEvent } from "../../../../src/main/rpc/host/host-protocol.js";
import { RpcHostClient } from "../../../../src/main/rpc/host/rpc-host-client.js";
import type { RpcSessionHandle } from "../../../../src/main/rpc/host/rpc-session-handle.js";
import { tempDir, within } from "../../../fixtures/bounded.js";

const CLI = fileURLToPath(new URL("../../../../dist/main/cli.js", import.meta.url));

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  // Last in, first out: children stop before their directories and the mock server go.
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const KEY = "sk-host-client-test";

/**
 * A LIFELINE_DIR whose `mock/mock-1` model is answered by a fresh mock server. With `keyInModels`
 * the key is in models.json; otherwise the client passes it as `apiKey` (LIFELINE_API_KEY): a
 * session that `fork` or `clone` makes does not get the mode's key (`SessionHost.forkSession` takes
 * none), so a fork must find it in the provider's configuration.
 */
async function lifelineDir(keyInModels: boolean): Promise<string> {
  const server = await startMockServer({
    script: { reply: "Mock answer.", conversations: [{ match: "stall", steps: [{ type: "stall", afterTokens: 1 }] }] },
  });
  cleanups.push(() => server.close());
  const dir = tempDir(cleanups, "lifeline-host-client-");
  writeFileSync(join(dir, "settings.json"), JSON.stringify({ retry: { baseDelayMs: 5 } }));
  writeFileSync(
    join(dir, "models.json"),
    JSON.stringify({
      providers: {
        mock: {
          baseUrl: `${server.url}/v1`,
          api: "openai-completions",
          models: [{ id: "mock-1" }],
          ...(keyInModels ? { apiKey: KEY } : {}),
        },
      },
    }),
  );
  return dir;
}

/** Starts `client` and stops it after the test. */
async function started(client: RpcHostClient): Promise<RpcHostClient> {
  cleanups.push(async () => {
    const pid = client.pid;
    // A test may leave its child stopped (SIGSTOP): let it run so it can take the EOF.
    if (pid !== undefined && isAlive(pid)) process.kill(pid, "SIGCONT");
    await within(client.stop(), 10_000, "stop() in cleanup");
  });
  await within(client.start(), 20_000, "start()");
  return client;
}

/** A started client of a host child whose default model is the mock server's; stopped after the test. */
async function startClient(keyInModels = false): Promise<RpcHostClient> {
  const dir = await lifelineDir(keyInModels);
  return started(
    new RpcHostClient({
      cliPath: CLI,
      cwd: dir,
      env: { LIFELINE_DIR: dir },
      model: "mock/mock-1",
      ...(keyInModels ? {} : { apiKey: KEY }),
    }),
  );
}

/** `lifeline --mode host --socket <path>` as a child of the test, listening; killed after the test. */
async function startSocketHost(): Promise<{ socketPath: string; host: ChildProcess }> {
  const dir = await lifelineDir(false);
  const socketPath = join(dir, "host.sock");
  const host = spawn(process.execPath, [CLI, "--mode", "host", "--model", "mock/mock-1", "--socket", socketPath], {
    cwd: dir,
    env: { ...process.env, LIFELINE_DIR: dir, LIFELINE_API_KEY: KEY },
    stdio: ["ignore", "ignore", "pipe"],
  });
  const exited = new Promise<void>((resolve) => host.once("exit", () => resolve()));
  cleanups.push(async () => {
    if (host.exitCode === null && host.signalCode === null) host.kill("SIGKILL");
    await within(exited, 10_000, "the socket host's exit");
  });
  let stderr = "";
  const listening = new Promise<void>((resolve) => {
    host.stderr.setEncoding("utf8");
    host.stderr.on("data", (text: string) => {
      stderr += text;
      if (stderr.includes("listening on")) resolve();
    });
  });
  await within(listening, 20_000, "the socket host's 'listening on'");
  return { socketPath, host };
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Resolves once `handle` reports an event of `type`. */
function nextEvent(handle: RpcSessionHandle, type: string, ms = 15_000): Promise<HostEvent> {
  let off = () => {};
  const event = new Promise<HostEvent>((resolve) => {
    off = handle.onEvent((candidate) => {
      if (candidate.type === type) resolve(candidate);
    });
  });
  return within(event, ms, type).finally(off);
}

/** The text of every user message in a transcript. */
async function userTexts(handle: RpcSessionHandle): Promise<string[]> {
  const texts: string[] = [];
  for (const message of await handle.getMessages()) {
    if (message.role !== "user") continue;
    const content = message.content;
    texts.push(
      typeof content === "string" ? content : content.map((part) => ("text" in part ? part.text : "")).join(""),
    );
  }
  return texts;
}

/** The prompt texts that user messages in `events` carry. */
function promptsIn(events: readonly HostEvent[]): string[] {
  const texts: string[] = [];
  for (const event of events) {
    if (event.type !== "message_start" || event.message.role !== "user") continue;
    const content = event.message.content;
    texts.push(
      typeof content === "string" ? content : content.map((part) => ("text" in part ? part.text : "")).join(""),
    );
  }
  return texts;
}

describe("RpcHostClient with lifeline --mode host", () => {
  it("50 sessions prompt at once: each promptAndWait settles with its own session's events only", async () => {
    const client = await startClient();
    const all: HostEvent[] = [];
    client.onEvent((event) => all.push(event));
    const handles = await within(
      Promise.all(Array.from({ length: 50 }, (_, i) => client.openSession({ name: `s${i}` }))),
      30_000,
      "50 openSession",
    );
    expect(new Set(handles.map((handle) => handle.sessionId)).size).toBe(50);
    const heard = handles.map((handle) => {
      const events: HostEvent[] = [];
      handle.onEvent((event) => events.push(event));
      return events;
    });
    const results = await within(
      Promise.all(handles.map((handle, i) => handle.promptAndWait(`prompt of session ${i}`, 90_000))),
      100_000,
      "50 promptAndWait",
    );
    for (const [i, handle] of handles.entries()) {
      const { events, settled } = results[i] ?? { events: [], settled: undefined };
      expect(settled?.stopReason).toBe("stop");
      for (const list of [events, heard[i] ?? []]) {
        expect(list.every((event) => event.sessionId === handle.sessionId)).toBe(true);
        expect(promptsIn(list)).toEqual([`prompt of session ${i}`]);
        // This session's sequence numbers, in order, none missing (nothing was coalesced here: the
        // test reads as fast as the child writes, or the jump equals `coalesced`).
        const seqs = list.map((event) => event.seq);
        for (let k = 1; k < list.length; k++) {
          expect((seqs[k] ?? 0) - (seqs[k - 1] ?? 0)).toBe(list[k]?.coalesced ?? 1);
        }
      }
      expect(await handle.getLastAssistantText()).toBe("Mock answer.");
      expect(await userTexts(handle)).toEqual([`prompt of session ${i}`]);
    }
    // The client-wide listener heard every session.
    expect(new Set(all.map((event) => event.sessionId))).toEqual(new Set(handles.map((handle) => handle.sessionId)));
    expect((await client.listSessions()).map((info) => info.sessionId).sort()).toEqual(
      handles.map((handle) => handle.sessionId).sort(),
    );
  }, 150_000);

  it("abort ends one session's live run; another session answers meanwhile and hears none of it", async () => {
    const client = await startClient();
    const [stalled, other] = await Promise.all([client.openSession(), client.openSession()]);
    if (stalled === undefined || other === undefined) throw new Error("two sessions were opened");
    const otherEvents: HostEvent[] = [];
    other.onEvent((event) => otherEvents.push(event));
    const started = nextEvent(stalled, "message_update");
    const run = stalled.promptAndWait("stall here", 30_000);
    await started;
    expect((await stalled.getState()).isIdle).toBe(false);
    const { settled } = await within(other.promptAndWait("a normal question", 30_000), 35_000, "other session");
    expect(settled.stopReason).toBe("stop");
    await within(stalled.abort(), 10_000, "abort");
    const aborted = await within(run, 15_000, "the aborted run's settle");
    expect(aborted.settled.stopReason).toBe("aborted");
    expect(aborted.events.every((event) => event.sessionId === stalled.sessionId)).toBe(true);
    expect(otherEvents.every((event) => event.sessionId === other.sessionId)).toBe(true);
    expect(promptsIn(otherEvents)).toEqual(["a normal question"]);
    expect((await stalled.getState()).isIdle).toBe(true);
    expect(await stalled.waitForIdle(5_000)).toBeUndefined();
  }, 60_000);

  it("close() ends the handle (its waits and later calls reject typed); resumeSession gives a new handle on the stored session", async () => {
    const client = await startClient();
    const handle = await client.openSession();
    await within(handle.promptAndWait("remember this", 30_000), 35_000, "first prompt");
    const wait = handle.collectEvents(30_000);
    await within(handle.close(), 10_000, "close()");
    expect(handle.closed).toBe(true);
    await expect(within(wait, 5_000, "the closed session's wait")).rejects.toMatchObject({
      code: "ERR_SESSION_DISPOSED",
    });
    await expect(handle.getState()).rejects.toMatchObject({ code: "ERR_SESSION_DISPOSED" });
    await expect(handle.promptAndWait("again")).rejects.toMatchObject({ code: "ERR_SESSION_DISPOSED" });
    expect(await client.listSessions()).toEqual([]);

    const resumed = await within(client.resumeSession(handle.sessionId), 15_000, "resumeSession");
    expect(resumed).not.toBe(handle);
    expect(resumed.sessionId).toBe(handle.sessionId);
    expect(client.session(handle.sessionId)).toBe(resumed);
    expect(await userTexts(resumed)).toEqual(["remember this"]);
    const { events } = await within(resumed.promptAndWait("and this", 30_000), 35_000, "resumed prompt");
    expect(promptsIn(events)).toEqual(["and this"]);
    expect(await userTexts(resumed)).toEqual(["remember this", "and this"]);
  }, 60_000);

  it("fork and clone give new handles on new sessions; the source stays open and usable", async () => {
    const client = await startClient(true);
    const source = await client.openSession();
    await within(source.promptAndWait("first", 30_000), 35_000, "first");
    await within(source.promptAndWait("second", 30_000), 35_000, "second");
    const second = (await source.getForkMessages()).find((message) => message.text === "second");
    if (second === undefined) throw new Error("second is a fork point");
    const { session: fork, text } = await within(source.fork(second.entryId), 15_000, "fork");
    expect(text).toBe("second");
    expect(fork.sessionId).not.toBe(source.sessionId);
    expect(await userTexts(fork)).toEqual(["first"]);
    const clone = await within(source.clone(), 15_000, "clone");
    expect(await userTexts(clone)).toEqual(["first", "second"]);

    const sourceEvents: HostEvent[] = [];
    source.onEvent((event) => sourceEvents.push(event));
    const [fromSource, fromFork] = await within(
      Promise.all([source.promptAndWait("third", 30_000), fork.promptAndWait("branch", 30_000)]),
      35_000,
      "source and fork at once",
    );
    expect(promptsIn(fromSource.events)).toEqual(["third"]);
    expect(promptsIn(fromFork.events)).toEqual(["branch"]);
    expect(promptsIn(sourceEvents)).toEqual(["third"]);
    expect(await userTexts(source)).toEqual(["first", "second", "third"]);
    expect(await userTexts(fork)).toEqual(["first", "branch"]);
    const ids = (await client.listSessions()).map((info) => info.sessionId);
    expect(ids.sort()).toEqual([source.sessionId, fork.sessionId, clone.sessionId].sort());
  }, 60_000);

  it("stop() rejects pending requests and waits at once with ERR_RPC_EXITED; later calls with ERR_RPC_NOT_STARTED", async () => {
    const client = await startClient();
    const [a, b] = await Promise.all([client.openSession(), client.openSession()]);
    if (a === undefined || b === undefined) throw new Error("two sessions were opened");
    const started = nextEvent(a, "message_update");
    const run = a.promptAndWait("stall for stop", 60_000);
    await started;
    const pid = client.pid;
    if (pid === undefined) throw new Error("the child runs");
    // A stopped child answers nothing: these requests stay pending until stop() releases them.
    process.kill(pid, "SIGSTOP");
    const pending: Promise<unknown>[] = [
      a.getState(),
      b.getMessages(),
      client.listSessions(),
      b.promptAndWait("never sent", 60_000),
    ];
    for (const promise of pending) promise.catch(() => {});
    const stopped = client.stop();
    const exited = { code: "ERR_RPC_EXITED" };
    for (const promise of [run, ...pending])
      await expect(within(promise, 1_000, "a pending call")).rejects.toMatchObject(exited);
    process.kill(pid, "SIGCONT");
    await within(stopped, 10_000, "stop()");
    await expect(a.getState()).rejects.toMatchObject({ code: "ERR_RPC_NOT_STARTED" });
    await expect(client.openSession()).rejects.toMatchObject({ code: "ERR_RPC_NOT_STARTED" });
  }, 60_000);

  it("the child killed (SIGKILL) mid-prompt rejects every pending call and wait at once with ERR_RPC_EXITED", async () => {
    const client = await startClient();
    const [a, b] = await Promise.all([client.openSession(), client.openSession()]);
    if (a === undefined || b === undefined) throw new Error("two sessions were opened");
    const started = nextEvent(a, "message_update");
    const run = a.promptAndWait("stall until killed", 60_000);
    const idle = b.waitForIdle(60_000);
    await started;
    const pid = client.pid;
    if (pid === undefined) throw new Error("the child runs");
    process.kill(pid, "SIGSTOP");
    const pending: Promise<unknown>[] = [a.getState(), b.getSessionStats(), client.openSession()];
    for (const promise of pending) promise.catch(() => {});
    process.kill(pid, "SIGKILL");
    const killed = { code: "ERR_RPC_EXITED", message: expect.stringMatching(/SIGKILL/) };
    // Far below the request timeout (30 s) and the waits' (60 s): released by the exit itself.
    for (const promise of [run, ...pending])
      await expect(within(promise, 2_000, "a pending call")).rejects.toMatchObject(killed);
    // b was idle: its wait either resolved before the kill or was released by it.
    await within(
      idle.then(
        () => undefined,
        (error: unknown) => error,
      ),
      2_000,
      "b's wait",
    );
    await expect(b.getState()).rejects.toMatchObject(killed);
    await expect(client.listSessions()).rejects.toMatchObject(killed);
  }, 60_000);
});

describe("RpcHostClient on the socket of a running lifeline --mode host", () => {
  it("connects with socketPath; stop() ends the connection, the host keeps serving, and a new client resumes the session", async () => {
    const { socketPath } = await startSocketHost();
    const first = await started(new RpcHostClient({ socketPath }));
    expect(first.pid).toBeUndefined();
    const handle = await first.openSession();
    const { settled } = await within(handle.promptAndWait("over the socket", 30_000), 35_000, "prompt");
    expect(settled.stopReason).toBe("stop");
    await within(first.stop(), 5_000, "stop()");
    await expect(handle.getState()).rejects.toMatchObject({ code: "ERR_RPC_NOT_STARTED" });

    const second = await started(new RpcHostClient({ socketPath }));
    // The host closes a departed client's sessions as it notices the disconnect: retry briefly.
    let resumed: RpcSessionHandle | undefined;
    for (let attempt = 0; resumed === undefined; attempt++) {
      try {
        resumed = await second.resumeSession(handle.sessionId);
      } catch (error) {
        if (attempt >= 50) throw error;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    expect(await userTexts(resumed)).toEqual(["over the socket"]);
  }, 60_000);

  it("a socket nothing listens on fails start() with ERR_RPC_EXITED; the host killed mid-prompt releases pending calls at once", async () => {
    const dir = tempDir(cleanups, "lifeline-host-client-none-");
    const nowhere = new RpcHostClient({ socketPath: join(dir, "none.sock") });
    await expect(within(nowhere.start(), 5_000, "start() on no socket")).rejects.toMatchObject({
      code: "ERR_RPC_EXITED",
    });
    expect(() => new RpcHostClient({ socketPath: "" })).toThrow(
      expect.objectContaining({ code: "ERR_INVALID_OPTIONS" }),
    );

    const { socketPath, host } = await startSocketHost();
    const client = await started(new RpcHostClient({ socketPath }));
    const handle = await client.openSession();
    const live = nextEvent(handle, "message_update");
    const run = handle.promptAndWait("stall on the socket", 60_000);
    await live;
    host.kill("SIGSTOP");
    const pending = handle.getState();
    pending.catch(() => {});
    host.kill("SIGKILL");
    for (const promise of [run, pending] as Promise<unknown>[]) {
      await expect(within(promise, 2_000, "a pending call")).rejects.toMatchObject({ code: "ERR_RPC_EXITED" });
    }
    await expect(client.listSessions()).rejects.toMatchObject({ code: "ERR_RPC_EXITED" });
  }, 60_000);
});
