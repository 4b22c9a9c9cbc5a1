/**
 * An explicit `compact` as pi 0.73.1 does it, side by side with pi itself (installed outside the
 * repository, LIFELINE_PI_PACKAGE; see test/fixtures/pi-package.ts): the built CLI and pi in RPC
 * mode on the same mock model server, compacting a session far within `keepRecentTokens`. The
 * automatic compactions keep their thresholds (compaction.process.test.ts). Run `npm run build` first.
 */
import { describe, expect, it } from "vitest";
import { mockServerSuite } from "../../fixtures/mock-server-suite.js";
import { mockModelsJson } from "../../fixtures/models.mjs";
import { spawnPiRpc } from "../../fixtures/pi-rpc-child.js";
import { type RpcChild, type RpcRecord, spawnRpc } from "../../fixtures/rpc-child.js";

const suite = mockServerSuite({ script: { reply: "Mock reply." } });
const { cleanups } = suite;

const ARGS = ["--no-session", "--provider", "mock", "--model", "mock-1"];

/** What the comparison keeps of a `compact`: its response (the result's own fields checked apart) and its events. */
async function compact(child: RpcChild): Promise<{ response: RpcRecord; events: unknown[] }> {
  const from = child.records.length;
  const response = await child.request({ type: "compact" }, 20_000);
  const events = child.records.slice(from).flatMap((record): unknown[] => {
    if (record.type === "compaction_start") return [record];
    if (record.type !== "compaction_end") return [];
    const { result, errorMessage, ...rest } = record as RpcRecord & {
      result?: { summary: string };
      errorMessage?: string;
    };
    return [
      {
        ...rest,
        summary: result?.summary,
        error: errorMessage === undefined ? undefined : /Already compacted/.test(errorMessage),
      },
    ];
  });
  return { response, events };
}

/** A `compact` response as compared: success, and the summary or whether the error is pi's "Already compacted". */
function outcome(response: RpcRecord): unknown {
  if (response.success !== true)
    return { success: false, alreadyCompacted: /^Already compacted/.test(String(response.error)) };
  const data = response.data as { summary: string; firstKeptEntryId: unknown; tokensBefore: unknown };
  expect(typeof data.firstKeptEntryId).toBe("string");
  expect(typeof data.tokensBefore).toBe("number");
  return { success: true, summary: data.summary };
}

async function answer(child: RpcChild, message: string): Promise<void> {
  const from = child.records.length;
  expect(await child.request({ type: "prompt", message }, 20_000)).toMatchObject({ success: true });
  await child.waitFor((record) => record.type === "agent_end", "agent_end", from, 20_000);
}

describe("compact, as pi does it", () => {
  it("compacts a short session and answers with a summary, as pi (regression: it failed with Nothing to compact)", async () => {
    const models = mockModelsJson(suite.server.url);
    const run = async (child: RpcChild) => {
      const seen: unknown[] = [];
      const step = async () => {
        const { response, events } = await compact(child);
        seen.push(outcome(response), events);
        return response;
      };
      // An empty session, then at once again (nothing came after the compaction).
      await step();
      await step();
      // One short exchange: far within keepRecentTokens.
      await answer(child, "a short exchange");
      const short = await step();
      const messages = ((await child.request({ type: "get_messages" })).data as { messages: { role: string }[] })
        .messages;
      seen.push(messages.map((message) => message.role));
      return { seen, short };
    };
    const [ours, theirs] = await Promise.all([
      run(spawnRpc(cleanups, { models, args: ARGS })),
      run(spawnPiRpc(cleanups, { models, args: ARGS })),
    ]);
    const manual = (summary: string | undefined, error: boolean | undefined) => [
      { type: "compaction_start", reason: "manual" },
      { type: "compaction_end", reason: "manual", aborted: false, willRetry: false, summary, error },
    ];
    expect(theirs.seen).toEqual([
      { success: true, summary: "Mock reply." },
      manual("Mock reply.", undefined),
      { success: false, alreadyCompacted: true },
      manual(undefined, true),
      { success: true, summary: "Mock reply." },
      manual("Mock reply.", undefined),
      ["compactionSummary", "user", "assistant"],
    ]);
    expect(ours.seen).toEqual(theirs.seen);
    // The short exchange, all of it kept, was counted before.
    expect((ours.short.data as { tokensBefore: number }).tokensBefore).toBeGreaterThan(0);
  });
});
