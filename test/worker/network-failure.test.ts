/**
 * What the worker records of a transport failure (SPEC B2, X6): the socket error's code and
 * message as undici reports them, and the server's origin without a path or query that may hold a
 * key. On literal errors; request-capture.test.ts and providers.thread.test.ts see real ones.
 */
import { describe, expect, it } from "vitest";
import { isAbort, networkFailure, originOf } from "../../src/worker/request-capture/network-failure.js";

/** A socket error as Node reports it. */
function socketError(code: string, message: string): Error {
  return Object.assign(new Error(message), { code });
}

describe("a transport failure", () => {
  it("records the code and message of the socket error undici wraps in `cause`", () => {
    const error = new TypeError("fetch failed", {
      cause: socketError("ECONNREFUSED", "connect ECONNREFUSED 127.0.0.1:9"),
    });
    expect(networkFailure("request", error, undefined, "http://127.0.0.1:9")).toEqual({
      network: {
        phase: "request",
        code: "ECONNREFUSED",
        message: "connect ECONNREFUSED 127.0.0.1:9",
        origin: "http://127.0.0.1:9",
      },
    });
  });

  it("records a body that broke off with the status its response had answered", () => {
    const error = new TypeError("terminated", { cause: socketError("UND_ERR_SOCKET", "other side closed") });
    expect(networkFailure("body", error, 200)).toEqual({
      network: { phase: "body", code: "UND_ERR_SOCKET", message: "other side closed" },
      status: 200,
    });
  });

  it("records the error's own code when it has no cause, such as the stream-idle timeout's", () => {
    const error = socketError("ERR_STREAM_IDLE", "Stream idle timeout");
    expect(networkFailure("body", error, 200).network).toEqual({
      phase: "body",
      code: "ERR_STREAM_IDLE",
      message: "Stream idle timeout",
    });
  });

  it("names a timeout or an abort by the error's name", () => {
    const timeout = new DOMException("The operation was aborted due to timeout", "TimeoutError");
    expect(networkFailure("request", timeout).network).toEqual({
      phase: "request",
      code: "TimeoutError",
      message: "The operation was aborted due to timeout",
    });
  });

  it("records the message alone of an error with no code", () => {
    expect(networkFailure("request", new Error("boom")).network).toEqual({ phase: "request", message: "boom" });
    expect(networkFailure("request", "a thrown string").network).toEqual({
      phase: "request",
      message: "a thrown string",
    });
  });
});

describe("the origin of a request", () => {
  it("keeps scheme, host and port, never the path or a query that holds a key", () => {
    const url = "https://generativelanguage.googleapis.com/v1beta/models/gemini:streamGenerateContent?key=SECRET";
    expect(originOf(url)).toBe("https://generativelanguage.googleapis.com");
    expect(originOf(new URL("http://localhost:8080/v1/chat/completions"))).toBe("http://localhost:8080");
    expect(originOf(new Request("https://api.anthropic.com/v1/messages"))).toBe("https://api.anthropic.com");
  });

  it("is undefined for an input that is not a URL", () => {
    expect(originOf("not a url")).toBeUndefined();
  });
});

describe("an abort", () => {
  it("is an error named AbortError, and nothing else", () => {
    expect(isAbort(new DOMException("This operation was aborted", "AbortError"))).toBe(true);
    expect(isAbort(new Error("aborted"))).toBe(false);
    expect(isAbort(undefined)).toBe(false);
  });
});
