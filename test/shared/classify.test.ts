import type { AssistantMessage } from "@mariozechner/pi-ai";
import { isContextOverflow } from "@mariozechner/pi-ai";
import { describe, expect, it } from "vitest";
import {
  type ClassifiableMessage,
  classifyMessage,
  explainMessage,
  parseRetryHeaders,
  parseRetryHintsFromText,
  retryHintsOf,
} from "../../src/shared/failures/classify.js";
import {
  attachRequestFailure,
  type RequestFailure,
  requestFailureOf,
} from "../../src/shared/failures/request-failure.js";

const overflow = (m: ClassifiableMessage) => isContextOverflow(m as AssistantMessage);
const error = (errorMessage: string, failure?: RequestFailure): ClassifiableMessage => {
  const message: ClassifiableMessage = { stopReason: "error", errorMessage };
  if (failure !== undefined) attachRequestFailure(message, failure, 0);
  return message;
};

describe("R2 classification", () => {
  it.each([
    "Overloaded",
    "529 overloaded_error",
    "Rate limit exceeded",
    "rate_limit_error",
    "Too Many Requests",
    "429 status code (no body)",
    "500 Internal server error",
    "HTTP 502",
    "503",
    "status 504: gateway timeout",
    "Service Unavailable",
    "server_error",
    "internal error",
    "Connection error.",
    "TypeError: fetch failed",
    "Please retry delay 20s",
  ])("R2: %s is retryable", (text) => {
    expect(classifyMessage(error(text), overflow)).toBe("retryable");
  });

  it.each([
    "400 Bad Request",
    "401 Unauthorized: invalid x-api-key",
    "used 1500 tokens",
    "error code 5030",
    "version 1.500.2",
    "model not found",
  ])("B2: %s is not retryable (status-like numbers match only as whole tokens)", (text) => {
    expect(classifyMessage(error(text), overflow)).toBe("fatal");
  });

  it("R2: usage-limit errors are their own retryable class", () => {
    expect(classifyMessage(error("You have reached your usage limit"), overflow)).toBe("usage_limit");
  });

  it("R1: a context overflow is never retryable, even when its text looks retryable", () => {
    expect(classifyMessage(error("prompt is too long: 213462 tokens > 200000 maximum"), overflow)).toBe("overflow");
    expect(classifyMessage(error("500 prompt is too long: 9 > 8"), overflow)).toBe("overflow");
  });

  it("R2: only stopReason error with a message is a failure; aborted and success are their own classes", () => {
    expect(classifyMessage({ stopReason: "stop" }, overflow)).toBe("success");
    expect(classifyMessage({ stopReason: "toolUse" }, overflow)).toBe("success");
    expect(classifyMessage({ stopReason: "aborted", errorMessage: "503" }, overflow)).toBe("aborted");
    expect(classifyMessage({ stopReason: "error" }, overflow)).toBe("fatal");
    expect(classifyMessage({ stopReason: "error", errorMessage: "" }, overflow)).toBe("fatal");
  });
});

describe("B2 structured classification", () => {
  it("a structured HTTP status wins over the text", () => {
    expect(explainMessage(error("something odd", { status: 503 }), overflow)).toEqual({
      failureClass: "retryable",
      basis: "status 503",
    });
    expect(classifyMessage(error("400 max_tokens must be below 500", { status: 400 }), overflow)).toBe("fatal");
    expect(classifyMessage(error("server error (but really a 401)", { status: 401 }), overflow)).toBe("fatal");
    expect(classifyMessage(error("Overloaded", { status: 529, errorType: "overloaded_error" }), overflow)).toBe(
      "retryable",
    );
  });

  it("the server's x-should-retry advice wins over the status", () => {
    const noRetry = error("429 Rate limit", { status: 429, headers: { "x-should-retry": "false" } });
    expect(explainMessage(noRetry, overflow)).toEqual({ failureClass: "fatal", basis: "x-should-retry: false" });
    const retry = error("409 conflict", { status: 409, headers: { "x-should-retry": "true" } });
    expect(classifyMessage(retry, overflow)).toBe("retryable");
  });

  it("error codes mark overflow and usage limits that the text does not name", () => {
    const tooLong = error("400 input is long", { status: 400, errorCode: "context_length_exceeded" });
    expect(classifyMessage(tooLong, overflow)).toBe("overflow");
    expect(classifyMessage(error("413 too big", { status: 413, errorType: "request_too_large" }), overflow)).toBe(
      "overflow",
    );
    const quota = error("429 You exceeded your current quota", { status: 429, errorCode: "insufficient_quota" });
    expect(explainMessage(quota, overflow)).toEqual({ failureClass: "usage_limit", basis: "error insufficient_quota" });
  });

  it("a stream that broke after a 200 is a transient network failure, not a 200", () => {
    const cut = error("terminated", {
      status: 200,
      network: { phase: "body", code: "UND_ERR_SOCKET", message: "other side closed" },
    });
    expect(explainMessage(cut, overflow)).toEqual({
      failureClass: "retryable",
      basis: "network UND_ERR_SOCKET (stream broke off)",
    });
    const midStream = error("Anthropic says no", { status: 200, errorType: "overloaded_error" });
    expect(classifyMessage(midStream, overflow)).toBe("retryable");
    const refused = error("Connection refused", { network: { phase: "request", code: "ECONNREFUSED", message: "x" } });
    expect(classifyMessage(refused, overflow)).toBe("retryable");
  });

  it("an in-stream error is decided by its own type or code: transient ones retry, refusals are fatal", () => {
    const inStream = (errorMessage: string, kinds: Pick<RequestFailure, "errorType" | "errorCode">) =>
      error(errorMessage, { status: 200, ...kinds, inStream: true });
    expect(explainMessage(inStream("Overloaded", { errorType: "overloaded_error" }), overflow)).toEqual({
      failureClass: "retryable",
      basis: "error overloaded_error in stream",
    });
    // The text matches R2's "server error", but the provider called it a refusal.
    const refusal = inStream("server error: refused by the content policy", {
      errorType: "invalid_request_error",
      errorCode: "content_policy_violation",
    });
    expect(explainMessage(refusal, overflow)).toEqual({
      failureClass: "fatal",
      basis: "error content_policy_violation in stream",
    });
    expect(explainMessage(inStream("Provider returned error", { errorCode: "502" }), overflow)).toEqual({
      failureClass: "retryable",
      basis: "error 502 in stream",
    });
    expect(classifyMessage(inStream("Bad request", { errorCode: "400" }), overflow)).toBe("fatal");
    expect(classifyMessage(inStream("too long", { errorCode: "context_length_exceeded" }), overflow)).toBe("overflow");
    // An error event with neither type nor code leaves it to the text.
    expect(explainMessage(inStream("503 later", {}), overflow).basis).toMatch(/^text matches/);
  });

  it("falls back to the R2 patterns when the record says nothing decisive", () => {
    expect(explainMessage(error("terminated", { status: 200 }), overflow).failureClass).toBe("fatal");
    expect(explainMessage(error("503 whatever"), overflow)).toEqual({
      failureClass: "retryable",
      basis: "text matches /(?<![\\w.])(?:429|500|502|503|504)(?!\\w|\\.\\d)/",
    });
  });

  it("the record travels as a diagnostics entry and replaces an earlier one", () => {
    const message = error("x", { status: 500 });
    attachRequestFailure(message, { status: 502 }, 1);
    expect(message.diagnostics).toHaveLength(1);
    expect(requestFailureOf(message)).toEqual({ status: 502 });
    expect(JSON.parse(JSON.stringify(message))).toEqual(message);
  });
});

describe("retry hints", () => {
  const now = Date.parse("2026-11-30T12:00:00Z");

  it("reads retry-after-ms first, then retry-after, then the rate-limit resets", () => {
    expect(parseRetryHeaders({ "retry-after-ms": "1500", "retry-after": "9" }, now)).toEqual({ retryAfterMs: 1500 });
    expect(parseRetryHeaders({ "Retry-After": "9" }, now)).toEqual({ retryAfterMs: 9000 });
    expect(parseRetryHeaders({ "x-ratelimit-reset-ms": "250" }, now)).toEqual({ retryAfterMs: 250 });
    expect(parseRetryHeaders({ "x-ratelimit-reset": "6m0s" }, now)).toEqual({ retryAfterMs: 360_000 });
    expect(parseRetryHeaders({ "x-ratelimit-reset": "20" }, now)).toEqual({ retryAfterMs: 20_000 });
  });

  it("reads HTTP dates and epoch-second resets relative to now", () => {
    expect(parseRetryHeaders({ "retry-after": "Mon, 30 Nov 2026 12:00:30 GMT" }, now)).toEqual({
      retryAfterMs: 30_000,
    });
    expect(parseRetryHeaders({ "x-ratelimit-reset": String(now / 1000 + 45) }, now)).toEqual({ retryAfterMs: 45_000 });
  });

  it("ignores values it cannot read and falls through to the next hint", () => {
    expect(parseRetryHeaders({ "retry-after": "soon", "x-ratelimit-reset-ms": "700" }, now)).toEqual({
      retryAfterMs: 700,
    });
    expect(parseRetryHeaders({ "retry-after-ms": "-5" }, now)).toEqual({});
    expect(parseRetryHeaders({}, now)).toEqual({});
  });

  it("finds hints inside error text", () => {
    expect(parseRetryHintsFromText("429 rate limited (retry-after: 30)", now)).toEqual({ retryAfterMs: 30_000 });
    expect(parseRetryHintsFromText('{"retry-after-ms":"1200"}', now)).toEqual({ retryAfterMs: 1200 });
    expect(parseRetryHintsFromText("retry-after: Mon, 30 Nov 2026 12:01:00 GMT; then", now)).toEqual({
      retryAfterMs: 60_000,
    });
    expect(parseRetryHintsFromText("no hint here", now)).toEqual({});
  });

  it("B6: prefers the recorded headers to hints in the text", () => {
    const message = error("429 (retry-after: 30)", { status: 429, headers: { "retry-after-ms": "1500" } });
    expect(retryHintsOf(message, now)).toEqual({ retryAfterMs: 1500 });
    expect(retryHintsOf(error("429 (retry-after: 30)", { status: 429 }), now)).toEqual({ retryAfterMs: 30_000 });
  });
});
