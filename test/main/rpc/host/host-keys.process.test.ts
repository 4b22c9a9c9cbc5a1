/**
 * The mode's key (--api-key) in `lifeline --mode host` (docs/rpc.md, "Its own commands"): it is
 * the key of the provider of the mode's --model, so `resume_session` opens a stored session on
 * that provider with it (a stored session keeps no key), and a session on another provider
 * without it (that provider's own key from models.json must reach its model, not the mode's).
 * The mock server records which key each request carried.
 */
import { afterEach, describe, expect, it } from "vitest";
import { startMockServer } from "../../../../src/mock-server/index.js";
import { tempDir, within } from "../../../fixtures/bounded.js";
import { type Cleanups, settled, spawnHost } from "./host-lines.js";

const cleanups: Cleanups = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe("--mode host's --api-key", () => {
  it("goes to resumed sessions of its model's provider, and not to a session of another provider", async () => {
    const server = await startMockServer({ script: { reply: "Mock answer." } });
    cleanups.push(() => server.close());
    const models = JSON.stringify({
      providers: {
        mock: { baseUrl: `${server.url}/v1`, api: "openai-completions", models: [{ id: "mock-1" }] },
        other: { baseUrl: `${server.url}/v1`, api: "openai-completions", apiKey: "sk-other", models: [{ id: "o-1" }] },
      },
    });
    const dir = tempDir(cleanups, "lifeline-host-keys-");
    /** The keys the requests for `model` carried since `since` (a log seq). */
    const keysOf = (model: string, since: number) =>
      server.log.filter((record) => record.seq > since && record.model === model).map((record) => record.apiKey);

    // One session on each provider, stored by a host that has the mode's key.
    const first = spawnHost(cleanups, { dir, models, args: ["--model", "mock/mock-1", "--api-key", "sk-mode"] });
    const onMock = await first.ok<{ sessionId: string }>({ type: "open_session" });
    const onOther = await first.ok<{ sessionId: string }>({ type: "open_session", model: "other/o-1" });
    for (const { sessionId } of [onMock, onOther]) {
      await first.ok({ type: "prompt", sessionId, message: "hello" });
      await settled(first, sessionId);
    }
    first.child.stdin.end();
    expect(await within(first.exited, 15_000, "the first host's exit")).toBe(0);
    const before = server.log.at(-1)?.seq ?? 0;
    expect(keysOf("o-1", 0)).toContain("sk-other");

    // A second host resumes both.
    const second = spawnHost(cleanups, { dir, models, args: ["--model", "mock/mock-1", "--api-key", "sk-mode"] });
    for (const { sessionId } of [onOther, onMock]) {
      await second.ok({ type: "resume_session", ref: sessionId });
      const from = second.records.length;
      await second.ok({ type: "prompt", sessionId, message: "again" });
      const end = await settled(second, sessionId, from);
      expect(end, JSON.stringify(end)).toMatchObject({ type: "agent_settled" });
    }
    expect(new Set(keysOf("o-1", before))).toEqual(new Set(["sk-other"]));
    expect(new Set(keysOf("mock-1", before))).toEqual(new Set(["sk-mode"]));
    second.child.stdin.end();
    expect(await within(second.exited, 15_000, "the second host's exit")).toBe(0);
  }, 90_000);
});
