/**
 * report.json `failures` (src/main/load/verdicts/failure-groups.ts): failed requests grouped by kind with
 * one example each, and no key in any example (X6), whether the run knows the key or not.
 */
import { describe, expect, it } from "vitest";
import type { RequestRecord } from "../../../../src/main/load/metrics/load-metrics.js";
import { groupFailures } from "../../../../src/main/load/verdicts/failure-groups.js";

function failedRequest(kind: string, message: string): RequestRecord {
  return {
    type: "request",
    session: 0,
    prompt: 0,
    attempt: 0,
    turn: 0,
    startMs: 0,
    ttftMs: null,
    ttfbMs: null,
    e2eMs: 1,
    outputTokens: 0,
    inputTokens: 0,
    costUsd: 0,
    stopReason: "error",
    failure: { kind, class: "retryable", message },
  };
}

const ok: RequestRecord = { ...failedRequest("x", "x"), stopReason: "stop" };
delete ok.failure;

describe("groupFailures", () => {
  it("counts failed requests by kind, most frequent first, with the first message of each", () => {
    const groups = groupFailures(
      [
        failedRequest("http_503", "503 overloaded (first)"),
        ok,
        failedRequest("connection", "Connection error."),
        failedRequest("http_503", "503 overloaded (second)"),
        failedRequest("aborted", "aborted"),
      ],
      [],
    );
    expect(groups).toEqual([
      { label: "http_503", count: 2, example: "503 overloaded (first)" },
      { label: "aborted", count: 1, example: "aborted" },
      { label: "connection", count: 1, example: "Connection error." },
    ]);
  });

  it("an example never carries a key the run knows", () => {
    const key = "lifeline-test-key-0123456789";
    const [group] = groupFailures(
      [failedRequest("http_401", `401 Incorrect API key provided: ${key}. Check ${key} again.`)],
      [key],
    );
    expect(group?.example).toBe("401 Incorrect API key provided: [redacted]. Check [redacted] again.");
  });

  it("nor a key of a known shape that the run was not told of", () => {
    const openai = `sk-proj-${"a1B2".repeat(10)}`;
    const google = `AIza${"Sy9_x-".repeat(6)}`;
    const [group] = groupFailures(
      [
        failedRequest(
          "http_401",
          `bad key ${openai}; also ${google}; header Authorization: Bearer abcdefghijklmnop0123`,
        ),
      ],
      [],
    );
    expect(group?.example).not.toContain(openai);
    expect(group?.example).not.toContain(google);
    expect(group?.example).not.toContain("abcdefghijklmnop0123");
    expect(group?.example).toBe("bad key [redacted]; also [redacted]; header Authorization: [redacted]");
  });

  it("a long message is shortened after redaction, so a key cut in half cannot slip through", () => {
    const key = "lifeline-test-key-0123456789";
    const message = `${"x".repeat(490)}${key}${"y".repeat(100)}`;
    const [group] = groupFailures([failedRequest("other", message)], [key]);
    expect(group?.example.startsWith(`${"x".repeat(490)}[redacted]`)).toBe(true);
    expect(group?.example).not.toContain("lifeline-test");
    expect(group?.example.length).toBe(501);
  });
});
