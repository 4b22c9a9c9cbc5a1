import type { AssistantMessage } from "@mariozechner/pi-ai";
import { isContextOverflow } from "@mariozechner/pi-ai";
import { describe, expect, it } from "vitest";
import {
  type ClassifiableMessage,
  classifyMessage,
  isRetryableErrorText,
  parseRetryHeaders,
  parseRetryHintsFromText,
} from "../src/shared/classify.js";

const overflow = (m: ClassifiableMessage) => isContextOverflow(m as AssistantMessage);
const error = (errorMessage: string, status?: number): ClassifiableMessage =>
  status === undefined ? { stopReason: "error", errorMessage } : { stopReason: "error", errorMessage, status };

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
    expect(isRetryableErrorText(text)).toBe(true);
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

  it("B2: a structured HTTP status wins over the text", () => {
    expect(classifyMessage(error("something odd", 503), overflow)).toBe("retryable");
    expect(classifyMessage(error("server error (but really a 400)", 400), overflow)).toBe("fatal");
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
});
