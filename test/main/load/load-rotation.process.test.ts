/**
 * `lifeline load` counts R4 key rotations: a real child process of the built `dist/main/cli.js`
 * (run `npm run build` first) drives a models.json provider whose two keys come from auth.json,
 * against the mock model server on 127.0.0.1, which records the key of every request. The report's
 * `verdicts.credentialRotations` must equal the key changes the server saw inside a conversation,
 * and a retry moved to another key is not judged against the failed key's retry hint (B6).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { LoadReport } from "../../../dist/main/load/index.js";
import { runLoadChild } from "../../fixtures/load-child.js";
import { mockServerSuite } from "../../fixtures/mock-server-suite.js";

const KEY_A = "sk-lifeline-load-key-a-3f2a9c";
const KEY_B = "sk-lifeline-load-key-b-8d41e7";

const suite = mockServerSuite();

function modelsJson(): string {
  const compat = { supportsDeveloperRole: false, supportsReasoningEffort: false };
  return JSON.stringify({
    providers: {
      "mock-keys": { baseUrl: `${suite.server.url}/v1`, api: "openai-completions", compat, models: [{ id: "keys-1" }] },
    },
  });
}

describe("lifeline load: credential rotations", () => {
  it("R4: verdicts.credentialRotations equals the key changes the server saw, and rotated retries are not judged by the hint", async () => {
    // Each session's first prompt names it, and so its conversation at the server. Sessions 0 and
    // 2 get a usage limit with a 5 s hint on their first request; sessions 1 and 3 are answered.
    suite.server.setScript({
      reply: "The mock answers.",
      conversations: [
        { match: "session 0,", steps: [{ type: "usage_limit", retryAfterMs: 5000 }, "ok"] },
        { match: "session 2,", steps: [{ type: "usage_limit", retryAfterMs: 5000 }, "ok"] },
      ],
    });
    const run = await runLoadChild(
      suite.cleanups,
      ["--model", "mock-keys/keys-1", "--sessions", "4", "--prompts", "2", "--out", "out"],
      {
        models: modelsJson(),
        auth: {
          "mock-keys": [
            { type: "api_key", key: KEY_A },
            { type: "api_key", key: KEY_B },
          ],
        },
        // respectRetryAfter on: a retry judged by the 5 s hint would be "early".
        settings: { retry: { baseDelayMs: 5, respectRetryAfter: true, maxDelayMs: 60_000 } },
        timeoutMs: 60_000,
      },
    );
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(readFileSync(join(run.cwd, "out", "report.json"), "utf8")) as LoadReport;

    // What the server saw: per conversation, the keys in order; a change is a rotation.
    const keys = new Map<string, string[]>();
    for (const record of suite.server.log) {
      if (record.conversation === "") continue;
      keys.set(record.conversation, [...(keys.get(record.conversation) ?? []), record.apiKey ?? ""]);
    }
    let changes = 0;
    for (const list of keys.values()) {
      for (let i = 1; i < list.length; i++) if (list[i] !== list[i - 1]) changes++;
    }
    expect([...keys.values()].flat().every((key) => key === KEY_A || key === KEY_B)).toBe(true);
    // Both limited sessions were moved: the first to the free sibling at once; the second too,
    // unless its sibling was blocked by then, when it waits for a key to free (no rotation).
    expect(changes).toBeGreaterThanOrEqual(1);
    expect(report.verdicts.credentialRotations).toBe(changes);
    expect(report.verdicts.retriesByCause).toEqual({ http_429: 2 });
    expect(report.verdicts.hints.total).toBe(2 - changes);
    expect(report.verdicts.fallbackSwitches).toBe(0);
    expect(report.totals.prompts.succeeded).toBe(8);
    expect(run.stdout).toContain(`key rotations ${changes}`);
  }, 70_000);
});
