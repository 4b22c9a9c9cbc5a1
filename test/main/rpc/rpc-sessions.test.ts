/**
 * SPEC B7 in RPC mode, in-process: "accepted" means durable, so the `prompt` response goes out
 * only after the prompt's user message is stored.
 */
import { PassThrough } from "node:stream";
import { MessageChannel } from "node:worker_threads";
import { afterEach, describe, expect, it } from "vitest";
import { withHostInternals } from "../../../src/main/host/host-internals.js";
import { runRpcMode } from "../../../src/main/rpc/rpc-mode.js";
import { FileSessionStore } from "../../../src/main/session-files/file-session-store.js";
import type { SessionStore } from "../../../src/main/session-files/session-store.js";
import { serveWorker } from "../../../src/worker/serve-worker.js";
import { tempDir, within } from "../../fixtures/bounded.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe("RPC mode with persistence (B7)", () => {
  it("B7: the prompt response is written after the user message is stored (regression: it went out first)", async () => {
    const dir = tempDir(cleanups);
    const files = new FileSessionStore({ root: dir });
    const log: string[] = [];
    const store: SessionStore = {
      create: async (header) => {
        const writer = await files.create(header);
        return {
          path: writer.path,
          append: async (entries) => {
            await writer.append(entries);
            const user = entries.some(
              (entry) => entry.type === "message" && (entry as { message: { role: string } }).message.role === "user",
            );
            if (user) log.push("user message stored");
          },
          flush: () => writer.flush(),
          close: () => writer.close(),
        };
      },
      open: (ref, cwd) => files.open(ref, cwd),
      list: (cwd) => files.list(cwd),
    };
    const input = new PassThrough();
    let settle: () => void = () => {};
    const settled = new Promise<void>((resolve) => {
      settle = resolve;
    });
    const done = runRpcMode({
      input,
      output: (line) => {
        const record = JSON.parse(line) as { type: string; command?: string };
        if (record.type === "response" && record.command === "prompt") log.push("prompt response");
        if (record.type === "agent_settled") settle();
      },
      errors: () => {},
      host: withHostInternals(
        {
          lifelineDir: dir,
          cwd: dir,
          settings: { retry: { baseDelayMs: 1 } },
          sessions: { store },
        },
        {
          connect: () => {
            const { port1, port2 } = new MessageChannel();
            return { port: port1, done: serveWorker(port2, { batchIntervalMs: 0 }) };
          },
        },
      ),
    });
    input.write(`${JSON.stringify({ id: "1", type: "prompt", message: "hello" })}\n`);
    await within(settled, 10_000, "the prompt to settle");
    input.end();
    expect(await within(done, 10_000, "RPC mode to end")).toBe(0);
    expect(log).toEqual(["user message stored", "prompt response"]);
  });

  it("B7: new_session starts another file and switch_session resumes the first, with its transcript", async () => {
    const dir = tempDir(cleanups);
    const input = new PassThrough();
    const responses = new Map<string, { success: boolean; data?: unknown; error?: string }>();
    const waiters = new Map<string, () => void>();
    const settledWaiters: (() => void)[] = [];
    const done = runRpcMode({
      input,
      output: (line) => {
        const record = JSON.parse(line) as { type: string; id?: string; success?: boolean; data?: unknown };
        if (record.type === "agent_settled") settledWaiters.shift()?.();
        if (record.type !== "response" || record.id === undefined) return;
        responses.set(record.id, record as { success: boolean });
        waiters.get(record.id)?.();
      },
      errors: () => {},
      host: withHostInternals(
        {
          lifelineDir: dir,
          cwd: dir,
          settings: { retry: { baseDelayMs: 1 } },
          sessions: {},
        },
        {
          connect: () => {
            const { port1, port2 } = new MessageChannel();
            return { port: port1, done: serveWorker(port2, { batchIntervalMs: 0 }) };
          },
        },
      ),
    });
    let next = 0;
    const send = async (command: Record<string, unknown>) => {
      const id = String(++next);
      const answered = new Promise<void>((resolve) => waiters.set(id, resolve));
      input.write(`${JSON.stringify({ id, ...command })}\n`);
      await within(answered, 10_000, `the response to ${String(command.type)}`);
      return responses.get(id) as { success: boolean; data?: unknown; error?: string };
    };
    const settled = new Promise<void>((resolve) => settledWaiters.push(resolve));
    await send({ type: "prompt", message: "remember me" });
    await within(settled, 10_000, "the prompt to settle");
    const first = (await send({ type: "get_state" })).data as { sessionFile: string; sessionId: string };
    await send({ type: "new_session" });
    const second = (await send({ type: "get_state" })).data as { sessionFile: string };
    expect(second.sessionFile).not.toBe(first.sessionFile);
    const switched = await send({ type: "switch_session", sessionPath: first.sessionFile });
    expect(switched).toMatchObject({ success: true, data: { cancelled: false } });
    const state = (await send({ type: "get_state" })).data as { sessionFile: string; sessionId: string };
    expect(state).toMatchObject({ sessionFile: first.sessionFile, sessionId: first.sessionId });
    const messages = ((await send({ type: "get_messages" })).data as { messages: { role: string }[] }).messages;
    expect(messages[0]).toMatchObject({ role: "user", content: [{ type: "text", text: "remember me" }] });
    const missing = await send({ type: "switch_session", sessionPath: "nosuchsession" });
    expect(missing.success).toBe(false);
    input.end();
    expect(await within(done, 10_000, "RPC mode to end")).toBe(0);
  });
});
