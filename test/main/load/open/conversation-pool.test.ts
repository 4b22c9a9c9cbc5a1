/**
 * The open model's conversations (src/main/load/open/conversation-pool.ts) with real sessions over the
 * in-process worker API and the scripted model, the arrivals handed in by hand: what the counts
 * say about each arrival, and that every started conversation leaves a prompt record, also when
 * its session cannot be opened or the step ends before its first prompt goes out.
 */
import { afterEach, describe, expect, it } from "vitest";
import { RunMeter } from "../../../../src/main/load/metrics/run-meter.js";
import type { ArrivalCounts } from "../../../../src/main/load/open/arrival-report.js";
import { ConversationPool, emptyCounts } from "../../../../src/main/load/open/conversation-pool.js";
import type { OnCap } from "../../../../src/main/load/options/open-options.js";
import type { AgentSession } from "../../../../src/main/session/agent-session.js";
import { tempDir } from "../../../fixtures/bounded.js";
import { inProcessHost } from "../../../fixtures/in-process-host.js";
import { gate, type Step, scriptedModel } from "../../../fixtures/scripted-provider.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A pool of `cap` conversations of one prompt each, whose sessions `open` makes. */
function pool(cap: number, onCap: OnCap, open: (conversation: number) => Promise<AgentSession>) {
  const meter = new RunMeter(() => 0, 0);
  const conversations = new ConversationPool({
    open,
    meter,
    now: () => 0,
    prompts: 1,
    think: () => Promise.resolve(true),
    text: (conversation) => `hello ${conversation}`,
    cap,
    onCap,
  });
  conversations.beginStep();
  return { conversations, meter, counts: emptyCounts() };
}

/** A host whose sessions answer with `steps` (in the order their requests come). */
function host(steps: readonly Step[]) {
  const dir = tempDir(cleanups);
  const env = inProcessHost({ lifelineDir: dir, cwd: dir });
  cleanups.push(() => env.host.close());
  const scripted = scriptedModel(steps);
  cleanups.push(() => scripted.unregister());
  return { host: env.host, scripted, open: () => env.host.createSession({ model: scripted.model }) };
}

/** The sessions (conversations) with at least one prompt record. */
function recordedConversations(meter: RunMeter): Set<number> {
  return new Set(meter.metrics.prompts.map((record) => record.session));
}

const sum = (counts: ArrivalCounts) => counts.started + counts.dropped + counts.unstarted;

describe("arrivals over the cap with onCap delay", () => {
  it("delayed counts only the arrivals that started after their wait; one still waiting at the step's end is unstarted, not delayed", async () => {
    const first = gate();
    const { scripted, open } = host([{ text: "one", after: first.promise }, { stall: true }]);
    const { conversations, meter, counts } = pool(1, "delay", open);
    conversations.arrive(0, counts);
    conversations.arrive(0, counts);
    conversations.arrive(0, counts);
    await scripted.waitForCall(1);
    first.open();
    // The second arrival takes the first's place and its request is in flight; the third still waits.
    await scripted.waitForCall(2);
    await conversations.endStep();
    expect(counts).toMatchObject({ offered: 3, started: 2, delayed: 1, unstarted: 1, completed: 1, cancelled: 1 });
    expect(sum(counts)).toBe(counts.offered);
    expect(conversations.capWaitMs).toHaveLength(counts.delayed);
    expect(recordedConversations(meter).size).toBe(counts.started);
  });
});

describe("every started conversation has a prompt record", () => {
  it("a conversation whose session cannot be opened fails its first prompt, with the opening's error and no request", async () => {
    const { host: opened } = host([{ text: "never" }]);
    const { conversations, meter, counts } = pool(2, "drop", () =>
      opened.createSession({ model: "nowhere/no-such-model" }),
    );
    conversations.arrive(0, counts);
    await conversations.idle();
    await conversations.endStep();
    expect(counts).toMatchObject({ offered: 1, started: 1, failed: 1 });
    expect(meter.metrics.prompts).toEqual([
      expect.objectContaining({ session: 0, prompt: 0, outcome: "failed", requests: 0, error: expect.any(String) }),
    ]);
    expect(meter.metrics.counters).toMatchObject({ promptsSent: 1, promptsFailed: 1, inFlightPrompts: 0 });
  });

  it("a conversation the step's end cuts while its session opens has its first prompt recorded as cancelled", async () => {
    const opening = gate();
    const { scripted, open } = host([{ text: "never" }]);
    const { conversations, meter, counts } = pool(2, "drop", async () => {
      await opening.promise;
      return open();
    });
    conversations.arrive(0, counts);
    const ended = conversations.endStep();
    opening.open();
    await ended;
    expect(counts).toMatchObject({ offered: 1, started: 1, cancelled: 1 });
    expect(meter.metrics.prompts).toEqual([
      expect.objectContaining({ session: 0, prompt: 0, outcome: "cancelled", requests: 0 }),
    ]);
    expect(meter.metrics.counters).toMatchObject({ promptsSent: 1, promptsCancelled: 1, inFlightPrompts: 0 });
    expect(scripted.calls()).toBe(0);
  });
});
