/**
 * pi's `queue_update` event in `lifeline --mode rpc`, side by side with pi 0.73.1 itself
 * (installed outside the repository, LIFELINE_PI_PACKAGE; see test/fixtures/pi-package.ts): both
 * children hold a run open in a tool that waits for the client (test/fixtures/held-tool.ts), take
 * steering and a follow-up meanwhile, then deliver them. Run `npm run build` first.
 */
import { afterEach, describe, expect, it } from "vitest";
import { tempDir } from "../../fixtures/bounded.js";
import { holdingModel, promptAndHold, release, writeHoldExtension } from "../../fixtures/held-tool.js";
import { spawnPiRpc } from "../../fixtures/pi-rpc-child.js";
import { type RpcChild, type RpcRecord, spawnRpc } from "../../fixtures/rpc-child.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const MODEL = ["--provider", "mock", "--model", "mock-1"];

/** The `hold` extension, written once per test. */
function extension(): string {
  return writeHoldExtension(tempDir(cleanups, "lifeline-hold-"));
}

/** The queue updates and the user messages' starts from `from` on, in order: what a client's queue view sees. */
function queueView(records: RpcRecord[], from: number): unknown[] {
  return records.slice(from).flatMap((record): unknown[] => {
    if (record.type === "queue_update") return [{ steering: record.steering, followUp: record.followUp }];
    const message = record.message as { role?: string; content?: { text?: string }[] } | undefined;
    if (record.type === "message_start" && message?.role === "user") {
      return [`user: ${(message.content ?? []).map((part) => part.text ?? "").join("")}`];
    }
    return [];
  });
}

describe("queue_update", () => {
  it("is emitted as pi emits it: on each steer and follow_up, and as each queued message starts (regression: never emitted)", async () => {
    const path = extension();
    const run = async (child: RpcChild, end: "agent_end" | "agent_settled") => {
      const from = child.records.length;
      const held = await promptAndHold(child, "use the tool");
      for (const [type, message] of [
        ["steer", "steer one"],
        ["steer", "steer two"],
        ["follow_up", "later one"],
      ] as const) {
        const at = child.records.length;
        expect(await child.request({ type, message })).toMatchObject({ success: true });
        // Announced before the command's response, as pi does.
        const update = child.records.findIndex((record, i) => i >= at && record.type === "queue_update");
        const response = child.records.findIndex((record, i) => i >= at && record.type === "response");
        expect(update).toBeGreaterThanOrEqual(0);
        expect(update).toBeLessThan(response);
      }
      expect((await child.request({ type: "get_state" })).data).toMatchObject({ pendingMessageCount: 3 });
      release(child, held);
      await child.waitFor((record) => record.type === end, end, from, 20_000);
      expect((await child.request({ type: "get_state" })).data).toMatchObject({ pendingMessageCount: 0 });
      return queueView(child.records, from);
    };
    const ours = await holdingModel(cleanups);
    const theirs = await holdingModel(cleanups);
    const lifeline = spawnRpc(cleanups, { models: ours.models, args: ["--no-session", ...MODEL, "-e", path] });
    const pi = spawnPiRpc(cleanups, {
      models: theirs.models,
      args: [...MODEL, "-e", path],
      tools: "--no-builtin-tools",
    });
    const [ourView, piView] = await Promise.all([run(lifeline, "agent_settled"), run(pi, "agent_end")]);
    expect(piView).toEqual([
      "user: use the tool",
      { steering: ["steer one"], followUp: [] },
      { steering: ["steer one", "steer two"], followUp: [] },
      { steering: ["steer one", "steer two"], followUp: ["later one"] },
      { steering: ["steer two"], followUp: ["later one"] },
      "user: steer one",
      { steering: [], followUp: ["later one"] },
      "user: steer two",
      { steering: [], followUp: [] },
      "user: later one",
    ]);
    expect(ourView).toEqual(piView);
  });

  it("abort drops the queued messages and says so with empty queues (pi keeps them for its next run)", async () => {
    const { models } = await holdingModel(cleanups);
    const lifeline = spawnRpc(cleanups, { models, args: ["--no-session", ...MODEL, "-e", extension()] });
    const held = await promptAndHold(lifeline, "use the tool");
    await lifeline.request({ type: "follow_up", message: "never sent" });
    const from = lifeline.records.length;
    await lifeline.request({ type: "abort" });
    release(lifeline, held);
    await lifeline.waitFor((record) => record.type === "agent_settled", "agent_settled", from, 20_000);
    expect(queueView(lifeline.records, from)).toEqual([{ steering: [], followUp: [] }]);
  });
});
