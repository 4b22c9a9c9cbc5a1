/**
 * Extensions on the real stack: the built package, a real piscina worker, extension modules
 * written as .ts files into temporary directories and loaded through jiti, and the mock model
 * server on 127.0.0.1.
 *
 * SPEC rules: R14 (retry events reach the extension runner), X1 (an extension's tool runs in
 * the worker), X4 (events in order).
 *
 * The extensions' main-thread copies run in this test process, so they report to the test
 * through a probe on `globalThis`, keyed per test.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  type AgentSession,
  createSessionHost,
  type SessionEvent,
  type SessionHost,
  type SessionHostOptions,
} from "../../../dist/main/index.js";
import { type MockServer, startMockServer } from "../../../dist/mock-server/index.js";
import { tempDir, within } from "../../fixtures/bounded.js";
import { mockModel, workerApiModel } from "../../fixtures/models.mjs";

const TOOL_MODEL_MODULE = new URL("../../fixtures/ext-tool-model.mjs", import.meta.url);

/** Every event type delivered to extensions (the recorder subscribes to all of them). */
const ALL_TYPES = [
  "session_start",
  "agent_start",
  "agent_end",
  "turn_start",
  "turn_end",
  "message_start",
  "message_update",
  "message_end",
  "tool_execution_start",
  "tool_execution_update",
  "tool_execution_end",
  "auto_retry_start",
  "auto_retry_end",
  "agent_settled",
  "compaction_start",
  "compaction_end",
  "worker_exited",
  "session_restored",
  "session_shutdown",
];

type Probe = (event: { type: string }, ctx: { sessionId: string }) => unknown;
const probes = new Map<string, Probe>();
(globalThis as { __lifelineExtensionProbe?: unknown }).__lifelineExtensionProbe = (
  key: string,
  event: { type: string },
  ctx: { sessionId: string },
) => probes.get(key)?.(event, ctx);

let server: MockServer;
const cleanups: (() => Promise<void> | void)[] = [];

beforeAll(async () => {
  server = await startMockServer({
    script: {
      conversations: [
        { match: "r14-", steps: [503, "ok"] },
        { match: "faulty-", steps: [503, "ok"] },
      ],
    },
  });
});
afterAll(async () => {
  await server.close();
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  probes.clear();
});

let keys = 0;
/** A fresh probe key and the events it records. */
function recorder(): {
  key: string;
  seen: { type: string; sessionId: string }[];
  settled: (count?: number) => Promise<void>;
} {
  const key = `probe-${++keys}`;
  const seen: { type: string; sessionId: string }[] = [];
  const waiters: { count: number; resolve: () => void }[] = [];
  probes.set(key, (event, ctx) => {
    seen.push({ type: event.type, sessionId: ctx.sessionId });
    const settledCount = seen.filter((e) => e.type === "agent_settled").length;
    for (const waiter of waiters.filter((w) => w.count <= settledCount)) waiter.resolve();
  });
  return {
    key,
    seen,
    settled: (count = 1) =>
      seen.filter((e) => e.type === "agent_settled").length >= count
        ? Promise.resolve()
        : new Promise<void>((resolve) => waiters.push({ count, resolve })),
  };
}

/** Writes a TypeScript extension whose main-thread copy calls the probe `key` from `types`' handlers. */
function recorderSource(key: string, types: readonly string[] = ALL_TYPES): string {
  return `
type Ctx = { sessionId: string };
type Pi = { thread: "main" | "worker"; on(type: string, handler: (event: { type: string }, ctx: Ctx) => unknown): void };
const probe = (globalThis as { __lifelineExtensionProbe?: (key: string, event: unknown, ctx: Ctx) => unknown })
  .__lifelineExtensionProbe;
export default function (pi: Pi): void {
  const types: string[] = ${JSON.stringify(types)};
  for (const type of types) pi.on(type, (event, ctx) => probe?.(${JSON.stringify(key)}, event, ctx));
}
`;
}

function writeFile(dir: string, name: string, text: string): string {
  const file = join(dir, name);
  mkdirSync(join(file, ".."), { recursive: true });
  writeFileSync(file, text);
  return file;
}

function host(options: SessionHostOptions): SessionHost {
  const dir = tempDir(cleanups);
  const created = createSessionHost({
    lifelineDir: dir,
    cwd: dir,
    threads: 1,
    settings: { retry: { baseDelayMs: 5 } },
    ...options,
  });
  cleanups.push(() => created.close());
  return created;
}

function collect(session: AgentSession): SessionEvent[] {
  const events: SessionEvent[] = [];
  session.subscribe((event) => events.push(event));
  return events;
}

describe("extension handlers", () => {
  it("R14: an extension loaded from a .ts file receives auto_retry_start and auto_retry_end, and every other event, in order", async () => {
    const dir = tempDir(cleanups);
    const probe = recorder();
    const file = writeFile(dir, "recorder.ts", recorderSource(probe.key));
    const h = host({ extensions: [file] });
    const session = await h.createSession({ model: mockModel(server.port), apiKey: "dummy" });
    const events = collect(session);
    const result = await within(session.prompt("r14-flaky"), 10_000, "the prompt");
    expect(result.stopReason).toBe("stop");
    expect(result.retries).toBe(1);
    await within(probe.settled(), 5000, "the extension's agent_settled");
    const heard = probe.seen.map((e) => e.type);
    expect(heard.filter((type) => type.startsWith("auto_retry"))).toEqual(["auto_retry_start", "auto_retry_end"]);
    // Every session event, in the session's order, after the extension-only session_start.
    expect(heard).toEqual(["session_start", ...events.map((event) => event.type)]);
    expect(new Set(probe.seen.map((e) => e.sessionId))).toEqual(new Set([session.id]));
  });

  it("an extension that throws, rejects or hangs is reported as extension_error and the session and its retry complete", async () => {
    const dir = tempDir(cleanups);
    const probe = recorder();
    const file = writeFile(
      dir,
      "faulty.ts",
      `
type Pi = { on(type: string, handler: (event: { type: string }, ctx: unknown) => unknown): void };
const probe = (globalThis as { __lifelineExtensionProbe?: (k: string, e: unknown, c: unknown) => unknown }).__lifelineExtensionProbe;
export default function (pi: Pi): void {
  pi.on("agent_start", () => {
    throw new Error("thrown in agent_start");
  });
  pi.on("auto_retry_start", async () => {
    throw new Error("rejected in auto_retry_start");
  });
  pi.on("auto_retry_end", () => new Promise<void>(() => {}));
  pi.on("agent_settled", (event, ctx) => probe?.(${JSON.stringify(probe.key)}, event, ctx));
}
`,
    );
    const h = host({ extensions: [file], settings: { retry: { baseDelayMs: 5 }, extensionHandlerTimeoutMs: 200 } });
    const session = await h.createSession({ model: mockModel(server.port), apiKey: "dummy" });
    const events = collect(session);
    const timedOut = new Promise<void>((resolve) => {
      session.subscribe((event) => {
        if (event.type === "extension_error" && event.event === "auto_retry_end") resolve();
      });
    });
    const result = await within(session.prompt("faulty-handlers"), 10_000, "the prompt");
    expect(result.stopReason).toBe("stop");
    expect(result.retries).toBe(1);
    expect(events.filter((e) => e.type === "auto_retry_end")).toMatchObject([{ success: true }]);
    await within(timedOut, 5000, "the hung handler's extension_error");
    // The extension goes on after its hung handler: it still hears agent_settled.
    await within(probe.settled(), 5000, "the extension's agent_settled");
    const errors = events.filter((e) => e.type === "extension_error");
    expect(errors).toEqual([
      { type: "extension_error", extensionPath: file, event: "agent_start", error: "thrown in agent_start" },
      {
        type: "extension_error",
        extensionPath: file,
        event: "auto_retry_start",
        error: "rejected in auto_retry_start",
      },
      { type: "extension_error", extensionPath: file, event: "agent_start", error: "thrown in agent_start" },
      {
        type: "extension_error",
        extensionPath: file,
        event: "auto_retry_end",
        error: expect.stringContaining("did not settle within 200 ms"),
      },
    ]);
    // The session still takes the next prompt.
    expect((await within(session.prompt("faulty-handlers again"), 10_000, "the next prompt")).stopReason).toBe("stop");
  });

  it("a handler that never settles in one session does not delay another session's events", async () => {
    const dir = tempDir(cleanups);
    const probe = recorder();
    let release: () => void = () => {};
    const stuck = new Promise<void>((resolve) => {
      release = resolve;
    });
    cleanups.push(() => release());
    const slowSessions = new Set<string>();
    const record = probes.get(probe.key) as Probe;
    probes.set(probe.key, (event, ctx) => {
      record(event, ctx);
      // The slow session's agent_start handler waits on a promise only the test settles.
      if (event.type === "agent_start" && slowSessions.has(ctx.sessionId)) return stuck;
      return undefined;
    });
    const file = writeFile(dir, "recorder.ts", recorderSource(probe.key, ["agent_start", "agent_settled"]));
    const h = host({ extensions: [file], settings: { extensionHandlerTimeoutMs: 600_000 } });
    const slow = await h.createSession({ sessionId: "slow-session" });
    slowSessions.add(slow.id);
    const fast = await h.createSession({ sessionId: "fast-session" });
    // The slow session itself is not held up by its extension: its prompt settles.
    expect((await within(slow.prompt("one [fail=0]"), 10_000, "the slow session's prompt")).stopReason).toBe("stop");
    expect((await within(fast.prompt("two [fail=0]"), 10_000, "the fast session's prompt")).stopReason).toBe("stop");
    // The fast session's agent_settled reached the extension while the slow one's handler hangs.
    await within(probe.settled(1), 5000, "the fast session's agent_settled at the extension");
    expect(probe.seen).toEqual([
      { type: "agent_start", sessionId: "slow-session" },
      { type: "agent_start", sessionId: "fast-session" },
      { type: "agent_settled", sessionId: "fast-session" },
    ]);
    release();
    await within(probe.settled(2), 5000, "the slow session's agent_settled once its handler settles");
    expect(probe.seen.at(-1)).toEqual({ type: "agent_settled", sessionId: "slow-session" });
  });
});

describe("extension tools", () => {
  it("X1: a tool an extension registers is called by the model, runs in the worker, and its result reaches the transcript", async () => {
    const dir = tempDir(cleanups);
    const file = writeFile(
      dir,
      "where.ts",
      `
import { Type } from "typebox";
import { isMainThread } from "node:worker_threads";

interface Ctx { sessionId: string; cwd: string; hasUI: boolean }
export default function (pi: { thread: string; registerTool(tool: unknown): void }): void {
  pi.registerTool({
    name: "ext_where",
    label: "Where",
    description: "Says where it runs.",
    parameters: Type.Object({ who: Type.String() }),
    async execute(_id: string, params: { who: string }, _signal: AbortSignal | undefined, _onUpdate: unknown, ctx: Ctx) {
      const text = \`who=\${params.who} isMainThread=\${isMainThread} thread=\${pi.thread} session=\${ctx.sessionId} hasUI=\${ctx.hasUI}\`;
      return { content: [{ type: "text", text }], details: { cwd: ctx.cwd } };
    },
  });
}
`,
    );
    const h = host({ extensions: [file] });
    const session = await h.createSession({
      model: workerApiModel("lifeline-ext-tools", "ext-tools-1"),
      workerModule: TOOL_MODEL_MODULE,
      sessionId: "tool-session",
    });
    const result = await within(session.prompt("[call=ext_where]"), 10_000, "the prompt");
    const said = "who=model isMainThread=false thread=worker session=tool-session hasUI=false";
    expect(result.stopReason).toBe("stop");
    expect(result.message?.content).toEqual([{ type: "text", text: `the tool said: ${said}` }]);
    const toolResult = session.messages.find((message) => message.role === "toolResult");
    expect(toolResult).toMatchObject({
      toolName: "ext_where",
      isError: false,
      content: [{ type: "text", text: said }],
    });
  });
});

describe("extension tools after a worker crash", () => {
  it("X7: a session restored on a fresh worker has its extension tools there too", async () => {
    const dir = tempDir(cleanups);
    const marker = join(dir, "crashed-once");
    const file = writeFile(
      dir,
      "crash-once.ts",
      `
import { existsSync, writeFileSync } from "node:fs";
export default function (pi: { registerTool(tool: unknown): void }): void {
  pi.registerTool({
    name: "ext_crash_once",
    label: "Crash once",
    description: "Kills its worker the first time it runs, then answers.",
    parameters: { type: "object", properties: { who: { type: "string" } } },
    async execute() {
      if (!existsSync(${JSON.stringify(marker)})) {
        writeFileSync(${JSON.stringify(marker)}, "");
        setTimeout(() => {
          throw new Error("an extension tool bug nothing caught");
        }, 0);
        return new Promise(() => {});
      }
      return { content: [{ type: "text", text: "survived" }], details: {} };
    },
  });
}
`,
    );
    const h = host({ extensions: [file] });
    const session = await h.createSession({
      model: workerApiModel("lifeline-ext-tools", "ext-tools-1"),
      workerModule: TOOL_MODEL_MODULE,
    });
    const events = collect(session);
    const first = await within(session.prompt("[call=ext_crash_once] first"), 15_000, "the crashed prompt");
    expect(events.map((event) => event.type)).toContain("session_restored");
    expect(first.stopReason).toBe("stop");
    // The next prompt calls the tool on the fresh worker, which loaded the extension for the session.
    const second = await within(session.prompt("[call=ext_crash_once] second"), 15_000, "the next prompt");
    expect(second.message?.content).toEqual([{ type: "text", text: "the tool said: survived" }]);
  });
});

describe("loading extensions", () => {
  it("a path that does not exist is refused at createSessionHost with ERR_EXTENSION_LOAD naming the path", () => {
    const dir = tempDir(cleanups);
    let error: unknown;
    try {
      createSessionHost({ cwd: dir, lifelineDir: false, extensions: ["./missing-extension.ts"] });
    } catch (caught) {
      error = caught;
    }
    expect(error).toMatchObject({ code: "ERR_EXTENSION_LOAD", extensionPath: "./missing-extension.ts" });
    expect((error as Error).message).toContain(join(dir, "missing-extension.ts"));
  });

  it("an extension that uses a pi API member lifeline does not support fails createSession with ERR_EXTENSION_LOAD naming the member", async () => {
    const dir = tempDir(cleanups);
    const file = writeFile(dir, "commands.ts", `export default function (pi: any) { pi.registerCommand("hi", {}); }\n`);
    const h = host({ extensions: [file] });
    const error = await h.createSession().catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: "ERR_EXTENSION_LOAD", extensionPath: file });
    expect((error as Error).cause).toMatchObject({ code: "ERR_EXTENSION_UNSUPPORTED", member: "registerCommand" });
    expect(h.sessionCount).toBe(0);
  });

  it("a handler for a pi event lifeline never emits (tool_call) is refused rather than never called", async () => {
    const dir = tempDir(cleanups);
    const file = writeFile(
      dir,
      "gate.ts",
      `export default function (pi: any) { pi.on("tool_call", () => ({ block: true })); }\n`,
    );
    const error = await host({ extensions: [file] })
      .createSession()
      .catch((caught: unknown) => caught);
    expect((error as Error).cause).toMatchObject({ code: "ERR_EXTENSION_UNSUPPORTED", member: 'on("tool_call")' });
  });

  it("a malformed tool fails createSession with ERR_EXTENSION_LOAD naming the extension", async () => {
    const dir = tempDir(cleanups);
    const file = writeFile(
      dir,
      "no-execute.ts",
      `export default function (pi: any) { pi.registerTool({ name: "t", description: "d", parameters: {} }); }\n`,
    );
    const error = await host({ extensions: [file] })
      .createSession()
      .catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: "ERR_EXTENSION_LOAD", extensionPath: file });
    expect((error as Error).message).toContain('tool "t": execute must be a function');
  });

  it("directories load as in pi: a package.json pi manifest, else index.ts", async () => {
    const dir = tempDir(cleanups);
    const manifest = recorder();
    const index = recorder();
    writeFile(dir, "pkg/package.json", JSON.stringify({ name: "x", pi: { extensions: ["./src/entry.ts"] } }));
    writeFile(dir, "pkg/src/entry.ts", recorderSource(manifest.key, ["session_start"]));
    writeFile(
      dir,
      "pkg/index.ts",
      "export default function () { throw new Error('the manifest wins over index.ts'); }\n",
    );
    writeFile(dir, "plain/index.ts", recorderSource(index.key, ["session_start"]));
    const h = host({ extensions: ["pkg", "plain"], cwd: dir });
    await h.createSession();
    await within(h.close(), 10_000, "close");
    expect(manifest.seen.map((e) => e.type)).toEqual(["session_start"]);
    expect(index.seen.map((e) => e.type)).toEqual(["session_start"]);
  });

  it("the library never loads the extensions a settings file lists", async () => {
    const dir = tempDir(cleanups);
    const probe = recorder();
    const file = writeFile(dir, "from-settings.ts", recorderSource(probe.key, ["session_start"]));
    writeFileSync(join(dir, "settings.json"), JSON.stringify({ extensions: [file] }));
    const h = createSessionHost({ lifelineDir: dir, cwd: dir, threads: 1 });
    cleanups.push(() => h.close());
    const session = await h.createSession();
    await within(session.prompt("hello [fail=0]"), 10_000, "the prompt");
    await within(h.close(), 10_000, "close");
    expect(probe.seen).toEqual([]);
    expect(() => createSessionHost({ settings: { extensions: [file] } })).toThrow(
      expect.objectContaining({ code: "ERR_INVALID_OPTIONS" }),
    );
  });

  it("host.close() waits for an extension's async session_shutdown handler", async () => {
    const dir = tempDir(cleanups);
    const probe = recorder();
    const file = writeFile(
      dir,
      "bye.ts",
      `
type Ctx = { sessionId: string };
const probe = (globalThis as { __lifelineExtensionProbe?: (k: string, e: unknown, c: Ctx) => unknown }).__lifelineExtensionProbe;
export default function (pi: { on(type: string, handler: (event: { type: string }, ctx: Ctx) => unknown): void }): void {
  pi.on("session_start", (event, ctx) => probe?.(${JSON.stringify(probe.key)}, event, ctx));
  // Cleanup work that takes a while, such as flushing a log.
  pi.on("session_shutdown", async (event, ctx) => {
    await new Promise((resolve) => setTimeout(resolve, 300));
    probe?.(${JSON.stringify(probe.key)}, event, ctx);
  });
}
`,
    );
    const h = host({ extensions: [file] });
    const session = await h.createSession();
    await within(h.close(), 10_000, "close");
    expect(probe.seen).toEqual([
      { type: "session_start", sessionId: session.id },
      { type: "session_shutdown", sessionId: session.id },
    ]);
  });
});
