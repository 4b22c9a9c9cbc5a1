/**
 * SPEC B7 in RPC mode, in-process: "accepted" means durable, so the `prompt` response goes out
 * only after the prompt's user message is stored.
 */
import { PassThrough } from "node:stream";
import { MessageChannel } from "node:worker_threads";
import { afterEach, describe, expect, it } from "vitest";
import { runRpcMode } from "../src/main/rpc/rpc-mode.js";
import { FileSessionStore } from "../src/main/sessions/file-session-store.js";
import type { SessionStore } from "../src/main/sessions/session-store.js";
import { serveWorker } from "../src/worker/serve-worker.js";
import { tempDir, within } from "./fixtures/bounded.js";

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
      host: {
        lifelineDir: dir,
        cwd: dir,
        settings: { retry: { baseDelayMs: 1 } },
        sessions: { store },
        connect: () => {
          const { port1, port2 } = new MessageChannel();
          return { port: port1, done: serveWorker(port2, { batchIntervalMs: 0 }) };
        },
      },
    });
    input.write(`${JSON.stringify({ id: "1", type: "prompt", message: "hello" })}\n`);
    await within(settled, 10_000, "the prompt to settle");
    input.end();
    expect(await within(done, 10_000, "RPC mode to end")).toBe(0);
    expect(log).toEqual(["user message stored", "prompt response"]);
  });
});
