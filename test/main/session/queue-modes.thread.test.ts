/**
 * Queue modes survive a dead worker (SPEC X7): the restored worker's agent is given the session's
 * steering and follow-up modes before the messages still queued, so they are delivered as the
 * mode says. The built package, a real piscina worker killed with `process.exit`, and the mock
 * model server on 127.0.0.1, which logs every request. Run `npm run build` first.
 */
import { writeFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { createSessionHost, type QueueMode, type SessionEvent } from "../../../dist/main/index.js";
import { tempDir, within } from "../../fixtures/bounded.js";
import { mockServerSuite } from "../../fixtures/mock-server-suite.js";

const EXIT_MODULE = new URL("../../fixtures/exit-on-flag.mjs", import.meta.url);

const suite = mockServerSuite();
const { cleanups } = suite;

/**
 * A prompt whose first request stalls; two follow-ups are queued, then the worker dies. Returns
 * the outcomes of the conversation's requests, oldest first: the stalled one, its retry on the
 * restored worker, then one request per delivery of the follow-ups.
 */
async function followUpsAcrossACrash(mode: QueueMode): Promise<string[]> {
  const dir = tempDir(cleanups);
  writeFileSync(
    `${dir}/models.json`,
    JSON.stringify({
      providers: {
        "mock-openai": {
          baseUrl: `${suite.server.url}/v1`,
          api: "openai-completions",
          apiKey: "mock-key",
          models: [{ id: "plain" }],
        },
      },
    }),
  );
  const host = createSessionHost({ lifelineDir: dir, cwd: dir, threads: 1, settings: { retry: { baseDelayMs: 5 } } });
  cleanups.push(() => host.close());
  const exit = new SharedArrayBuffer(4);
  const session = await host.createSession({
    model: "mock-openai/plain",
    workerModule: EXIT_MODULE,
    workerModuleOptions: { exit },
  });
  await session.setQueueMode("followUp", mode);
  const text = `queue modes across a crash, ${mode}`;
  suite.server.setScript({ conversations: [{ match: text, steps: ["stall", "ok", "ok", "ok"] }] });
  const restored = new Promise<SessionEvent>((resolve) => {
    session.subscribe((event) => {
      if (event.type === "session_restored") resolve(event);
    });
  });
  const started = new Promise<void>((resolve) => {
    const off = suite.server.on("request_start", (record) => {
      if (record.conversation !== text) return;
      off();
      resolve();
    });
  });
  const done = session.prompt(text);
  await within(started, 10_000, "the stalled request to reach the mock");
  await session.queueMessage("followUp", "one");
  await session.queueMessage("followUp", "two");
  const flag = new Int32Array(exit);
  Atomics.store(flag, 0, 1);
  Atomics.notify(flag, 0);
  await within(restored, 10_000, "session_restored");
  const result = await within(done, 10_000, "the prompt on the restored worker");
  expect(result.stopReason).toBe("stop");
  expect(session.queueModes.followUp).toBe(mode);
  return suite.server.log.filter((record) => record.conversation === text).map((record) => record.outcome ?? "open");
}

describe("queue modes across a worker crash", () => {
  it("X7: follow-up mode all, set before the crash, delivers both queued messages in one call on the restored worker", async () => {
    expect(await followUpsAcrossACrash("all")).toEqual(["client_closed", "completed", "completed"]);
  });

  it("X7: one-at-a-time (the default) still delivers them one call each after the restore", async () => {
    expect(await followUpsAcrossACrash("one-at-a-time")).toEqual([
      "client_closed",
      "completed",
      "completed",
      "completed",
    ]);
  });
});
