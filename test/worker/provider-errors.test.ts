/**
 * The provider-error parsers on literal bodies and event streams (SPEC B2): what the worker records
 * for OpenAI's, Anthropic's and Google's HTTP error responses and in-stream error events, and what
 * it leaves to R2's text patterns. request-capture.test.ts covers the same parsers on a live stream;
 * providers.thread.test.ts through the official SDKs.
 */
import { describe, expect, it } from "vitest";
import {
  errorResponseFailure,
  inStreamFailure,
  MAX_ERROR_BODY_BYTES,
} from "../../src/worker/request-capture/provider-errors.js";

/** An HTTP error response as the parser sees it. */
function failureOf(status: number, body: string | undefined, headers: Record<string, string> = {}) {
  return errorResponseFailure(status, new Headers(headers), body);
}

/** SSE events as a stream sends them: each `lines` block ends with a blank line. */
function sse(...events: string[]): string {
  return events.map((event) => `${event}\n\n`).join("");
}

const openAiChunk = (content: string) =>
  `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content }, finish_reason: null }] })}`;

describe("an HTTP error response (B2)", () => {
  describe("OpenAI", () => {
    it("records the error type and code of a chat completions error body", () => {
      const body = JSON.stringify({
        error: {
          message:
            "This model's maximum context length is 128000 tokens. However, your messages resulted in 130415 tokens.",
          type: "invalid_request_error",
          param: "messages",
          code: "context_length_exceeded",
        },
      });
      expect(failureOf(400, body)).toEqual({
        status: 400,
        errorType: "invalid_request_error",
        errorCode: "context_length_exceeded",
      });
    });

    it("records a 429's retry-after and retry-after-ms, and no other header", () => {
      const body = JSON.stringify({
        error: {
          message: "You exceeded your current quota, please check your plan and billing details.",
          type: "insufficient_quota",
          param: null,
          code: "insufficient_quota",
        },
      });
      const failure = failureOf(429, body, {
        "retry-after": "20",
        "retry-after-ms": "19500",
        "x-ratelimit-reset-requests": "1s",
        "x-request-id": "req_123",
      });
      expect(failure).toEqual({
        status: 429,
        headers: { "retry-after-ms": "19500", "retry-after": "20" },
        errorType: "insufficient_quota",
        errorCode: "insufficient_quota",
      });
      // The record travels to the main thread and into RPC output as JSON: its field order is fixed.
      expect(JSON.stringify(failure)).toBe(
        '{"status":429,"headers":{"retry-after-ms":"19500","retry-after":"20"},"errorType":"insufficient_quota","errorCode":"insufficient_quota"}',
      );
    });

    it("records every retry header the server sent, x-should-retry included", () => {
      const failure = failureOf(503, "", {
        "X-Should-Retry": "false",
        "x-ratelimit-reset-ms": "250",
        "x-ratelimit-reset": "1",
      });
      expect(failure).toEqual({
        status: 503,
        headers: { "x-ratelimit-reset-ms": "250", "x-ratelimit-reset": "1", "x-should-retry": "false" },
      });
    });

    it("records no code when the body's code is null", () => {
      const body = JSON.stringify({
        error: {
          message: "The server had an error while processing your request.",
          type: "server_error",
          param: null,
          code: null,
        },
      });
      expect(failureOf(500, body)).toEqual({ status: 500, errorType: "server_error" });
    });
  });

  describe("Anthropic", () => {
    it("records overloaded_error from a 529 body", () => {
      const body = JSON.stringify({
        type: "error",
        error: { type: "overloaded_error", message: "Overloaded" },
        request_id: "req_011CSHoEeqs5C35K2UUqR7Fy",
      });
      expect(failureOf(529, body)).toEqual({ status: 529, errorType: "overloaded_error" });
    });

    it("records rate_limit_error and the 429's retry-after, not Anthropic's own rate-limit headers", () => {
      const body = JSON.stringify({
        type: "error",
        error: {
          type: "rate_limit_error",
          message: "Number of request tokens has exceeded your per-minute rate limit",
        },
      });
      const failure = failureOf(429, body, {
        "retry-after": "7",
        "anthropic-ratelimit-requests-reset": "2025-01-01T00:00:07Z",
      });
      expect(failure).toEqual({ status: 429, headers: { "retry-after": "7" }, errorType: "rate_limit_error" });
    });
  });

  describe("Google", () => {
    it("records the status name as the type and the numeric code as its digits", () => {
      const body = JSON.stringify({
        error: { code: 429, message: "Resource has been exhausted (e.g. check quota).", status: "RESOURCE_EXHAUSTED" },
      });
      expect(failureOf(429, body)).toEqual({ status: 429, errorType: "RESOURCE_EXHAUSTED", errorCode: "429" });
    });

    it("reads the first element of a body that is an array of errors", () => {
      const body = JSON.stringify([
        { error: { code: 503, message: "The model is overloaded. Please try again later.", status: "UNAVAILABLE" } },
      ]);
      expect(failureOf(503, body)).toEqual({ status: 503, errorType: "UNAVAILABLE", errorCode: "503" });
    });

    it("records nothing of a RetryInfo retryDelay: retry advice is read from headers only", () => {
      const body = JSON.stringify({
        error: {
          code: 429,
          message: "You exceeded your current quota.",
          status: "RESOURCE_EXHAUSTED",
          details: [{ "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: "37s" }],
        },
      });
      expect(failureOf(429, body)).toEqual({ status: 429, errorType: "RESOURCE_EXHAUSTED", errorCode: "429" });
    });
  });

  describe("bodies the parser cannot read (R2: the text decides)", () => {
    it("records only the status of a non-JSON body", () => {
      expect(failureOf(502, "<html><body><h1>502 Bad Gateway</h1></body></html>")).toEqual({ status: 502 });
    });

    it("records only the status of an empty body, or of one that was not read", () => {
      expect(failureOf(503, "")).toEqual({ status: 503 });
      expect(failureOf(503, undefined, { "retry-after": "3" })).toEqual({
        status: 503,
        headers: { "retry-after": "3" },
      });
    });

    it("records only the status when `error` is a string, or the error fields are not under `error`", () => {
      expect(failureOf(401, JSON.stringify({ error: "Invalid API key" }))).toEqual({ status: 401 });
      const flat = { object: "error", message: "Bad request", type: "invalid_request_error", code: "1000" };
      expect(failureOf(400, JSON.stringify(flat))).toEqual({ status: 400 });
      expect(failureOf(400, "null")).toEqual({ status: 400 });
    });

    it("ignores a body longer than 64 KiB, however readable", () => {
      const body = JSON.stringify({ error: { type: "server_error" } }) + " ".repeat(MAX_ERROR_BODY_BYTES);
      expect(failureOf(500, body)).toEqual({ status: 500 });
    });
  });

  describe("B2: status-like numbers in text are not statuses", () => {
    it('takes nothing from "1500 tokens" or "5030" in a text body', () => {
      const body = "Request too large: 1500 tokens over the limit (upstream code 5030)";
      expect(failureOf(400, body)).toEqual({ status: 400 });
    });

    it("takes the type from a JSON body and nothing from the numbers in its message", () => {
      const body = JSON.stringify({
        type: "error",
        error: {
          type: "invalid_request_error",
          message: "prompt is too long: 210000 tokens > 200000 maximum; max_tokens 500",
        },
      });
      expect(failureOf(400, body)).toEqual({ status: 400, errorType: "invalid_request_error" });
    });
  });
});

describe("an error event in a stream that answered 200 (B2)", () => {
  it("records an OpenAI chat completions error chunk's type, after the answer's chunks", () => {
    const events = sse(
      openAiChunk("Hello"),
      `data: ${JSON.stringify({ error: { message: "The server had an error while processing your request.", type: "server_error", param: null, code: null } })}`,
    );
    expect(inStreamFailure(200, events)).toEqual({ status: 200, errorType: "server_error", inStream: true });
  });

  it("records OpenAI Responses' error event's code, and no type", () => {
    const event = {
      type: "error",
      code: "rate_limit_exceeded",
      message: "Rate limit reached",
      param: null,
      sequence_number: 4,
    };
    const events = sse(`event: error\ndata: ${JSON.stringify(event)}`);
    expect(inStreamFailure(200, events)).toEqual({ status: 200, errorCode: "rate_limit_exceeded", inStream: true });
  });

  it("records an OpenAI Responses error event without a code as an in-stream failure with no kinds", () => {
    const events = sse(`event: error\ndata: ${JSON.stringify({ type: "error", message: "Something went wrong" })}`);
    expect(inStreamFailure(200, events)).toEqual({ status: 200, inStream: true });
  });

  it("records the error code of OpenAI Responses' response.failed", () => {
    const failed = {
      type: "response.failed",
      sequence_number: 9,
      response: { id: "resp_1", status: "failed", error: { code: "server_error", message: "An error occurred." } },
    };
    const events = sse(`event: response.failed\ndata: ${JSON.stringify(failed)}`);
    expect(inStreamFailure(200, events)).toEqual({ status: 200, errorCode: "server_error", inStream: true });
  });

  it("records Anthropic's event: error", () => {
    const events = sse(
      `event: content_block_delta\ndata: ${JSON.stringify({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Hi" } })}`,
      `event: error\ndata: ${JSON.stringify({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } })}`,
    );
    expect(inStreamFailure(200, events)).toEqual({ status: 200, errorType: "overloaded_error", inStream: true });
  });

  it("records Google's in-stream error status and numeric code", () => {
    const events = sse(
      `data: ${JSON.stringify({ error: { code: 500, message: "Internal error encountered.", status: "INTERNAL" } })}`,
    );
    expect(inStreamFailure(200, events)).toEqual({
      status: 200,
      errorType: "INTERNAL",
      errorCode: "500",
      inStream: true,
    });
  });

  it("records OpenRouter's numeric in-stream code as its digits", () => {
    const events = sse(`data: ${JSON.stringify({ error: { code: 502, message: "Provider returned error" } })}`);
    expect(inStreamFailure(200, events)).toEqual({ status: 200, errorCode: "502", inStream: true });
  });

  it("records the last error event when there are several", () => {
    const events = sse(
      `data: ${JSON.stringify({ error: { type: "server_error" } })}`,
      `event: error\ndata: ${JSON.stringify({ type: "error", error: { type: "api_error", message: "later" } })}`,
    );
    expect(inStreamFailure(200, events)).toEqual({ status: 200, errorType: "api_error", inStream: true });
  });

  it("reads an event whose JSON spans several data: lines, CRLF line ends and data: without a space", () => {
    const multiLine = 'data: {"type": "error",\ndata: "error": {"type": "api_error", "message": "x"}}';
    expect(inStreamFailure(200, sse(multiLine))).toEqual({ status: 200, errorType: "api_error", inStream: true });
    const crlf = `event: error\r\ndata: ${JSON.stringify({ type: "error", error: { type: "overloaded_error" } })}\r\n\r\n`;
    expect(inStreamFailure(200, crlf)).toEqual({ status: 200, errorType: "overloaded_error", inStream: true });
    const tight = sse(`data:${JSON.stringify({ error: { type: "rate_limit_error" } })}`);
    expect(inStreamFailure(200, tight)).toEqual({ status: 200, errorType: "rate_limit_error", inStream: true });
  });

  it("skips an event cut at the start of the kept tail and still finds the error after it", () => {
    const events = `rror": {"type": "server_error"}}\n\n${sse(`data: ${JSON.stringify({ error: { type: "api_error" } })}`)}`;
    expect(inStreamFailure(200, events)).toEqual({ status: 200, errorType: "api_error", inStream: true });
    expect(inStreamFailure(200, `rror": {"type": "server_error"}}\n\n${sse(openAiChunk("ok"))}`)).toBeUndefined();
  });

  it("records nothing for an answer whose text mentions an error", () => {
    const events = sse(openAiChunk('{"error": {"type": "server_error"}} is what a failure looks like'), "data: [DONE]");
    expect(inStreamFailure(200, events)).toBeUndefined();
  });

  it("records nothing for an error event whose data is not JSON (R2: the text decides)", () => {
    expect(inStreamFailure(200, sse("event: error\ndata: upstream error"))).toBeUndefined();
  });

  it('B2: takes the type of an in-stream error and nothing from "1500 tokens" in its message', () => {
    const events = sse(
      `data: ${JSON.stringify({ error: { message: "1500 tokens exceed the 500 allowed", type: "invalid_request_error" } })}`,
    );
    expect(inStreamFailure(200, events)).toEqual({ status: 200, errorType: "invalid_request_error", inStream: true });
  });
});
