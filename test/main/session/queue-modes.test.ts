/**
 * pi's steering and follow-up modes (`setQueueMode`, RPC `set_steering_mode` /
 * `set_follow_up_mode`): `one-at-a-time` delivers one queued message per model call, `all`
 * delivers every queued message in the next one, as pi-agent-core's modes do. In-process, over a
 * MessageChannel, with the shared scripted provider.
 */
import type { Message } from "@mariozechner/pi-ai";
import { afterEach, describe, expect, it } from "vitest";
import { within } from "../../fixtures/bounded.js";
import { inProcessHost } from "../../fixtures/in-process-host.js";
import { gate, scriptedModel } from "../../fixtures/scripted-provider.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** The texts of the user messages after the last assistant message of a context: what one call added. */
function newUserTexts(messages: readonly Message[]): string[] {
  const lastReply = messages.map((message) => message.role).lastIndexOf("assistant");
  return messages
    .slice(lastReply + 1)
    .filter((message) => message.role === "user")
    .map((message) =>
      typeof message.content === "string"
        ? message.content
        : message.content.map((block) => (block.type === "text" ? block.text : "")).join(""),
    );
}

/** Runs a prompt whose first reply is held while two messages are queued to `kind`; returns each call's new user texts. */
async function deliveries(kind: "steer" | "followUp", mode: "all" | "one-at-a-time" | undefined): Promise<string[][]> {
  const held = gate();
  const scripted = scriptedModel([{ text: "first", after: held.promise }, { text: "next" }]);
  cleanups.push(() => scripted.unregister());
  const { host } = inProcessHost();
  cleanups.push(() => host.close());
  const session = await host.createSession({ model: scripted.model });
  if (mode !== undefined) await session.setQueueMode(kind, mode);
  const done = session.prompt("go");
  await within(scripted.waitForCall(1), 5000, "the first model call");
  await session.queueMessage(kind, "one");
  await session.queueMessage(kind, "two");
  held.open();
  await within(done, 5000, "the prompt");
  return scripted.contexts.map((context) => newUserTexts(context.messages));
}

describe("queue modes", () => {
  for (const kind of ["steer", "followUp"] as const) {
    it(`${kind}: one-at-a-time (the default) delivers one queued message per model call`, async () => {
      expect(await deliveries(kind, undefined)).toEqual([["go"], ["one"], ["two"]]);
    });

    it(`${kind}: all delivers every queued message in the next model call`, async () => {
      // Each a user message of its own, as pi sends them (only an API that requires alternating
      // roles gets them merged, in its payload: alternating-turns.ts).
      expect(await deliveries(kind, "all")).toEqual([["go"], ["one", "two"]]);
    });
  }

  it("reports the modes set, per queue, and refuses another mode naming the field", async () => {
    const { host } = inProcessHost();
    cleanups.push(() => host.close());
    const scripted = scriptedModel([{ text: "ok" }]);
    cleanups.push(() => scripted.unregister());
    const session = await host.createSession({ model: scripted.model });
    expect(session.queueModes).toEqual({ steer: "one-at-a-time", followUp: "one-at-a-time" });
    await session.setQueueMode("followUp", "all");
    expect(session.queueModes).toEqual({ steer: "one-at-a-time", followUp: "all" });
    await expect(session.setQueueMode("steer", "some" as "all")).rejects.toMatchObject({
      code: "ERR_INVALID_OPTIONS",
      message: expect.stringContaining("mode"),
    });
  });
});
