/**
 * What the worker adds to a failed reply's text (SPEC B2, X6; docs/errors.md): the hint for a
 * certificate TLS did not trust (docs/network.md), once, and nothing for other failures.
 */
import type { AssistantMessage } from "@mariozechner/pi-ai";
import { describe, expect, it } from "vitest";
import type { RequestFailure } from "../../../src/shared/failures/request-failure.js";
import { emptyUsage } from "../../../src/shared/usage.js";
import { finishFailedMessage } from "../../../src/worker/session/finish-failed-message.js";

function failedReply(): AssistantMessage {
  return {
    role: "assistant",
    content: [],
    api: "openai-completions",
    provider: "corp",
    model: "m",
    usage: emptyUsage(),
    stopReason: "error",
    errorMessage: "Connection error.",
    timestamp: 0,
  };
}

const untrusted: RequestFailure = {
  network: {
    phase: "request",
    code: "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
    message: "unable to verify the first certificate",
    origin: "https://llm.corp.example",
  },
};

describe("finishFailedMessage", () => {
  it("names the server, the certificate problem and the caFile setting when TLS did not trust the certificate", () => {
    const message = failedReply();
    finishFailedMessage(message, untrusted, [], 0);
    expect(message.errorMessage).toBe(
      'Connection error. (the TLS certificate of https://llm.corp.example for provider "corp" is not trusted: UNABLE_TO_VERIFY_LEAF_SIGNATURE, unable to verify the first certificate; if a proxy or the server uses a CA of your own, trust it with the caFile setting or NODE_EXTRA_CA_CERTS, docs/network.md)',
    );
  });

  it("adds the hint once when called again on the same message", () => {
    const message = failedReply();
    finishFailedMessage(message, untrusted, [], 0);
    const once = message.errorMessage;
    finishFailedMessage(message, untrusted, [], 0);
    expect(message.errorMessage).toBe(once);
  });

  it("adds no TLS hint for a reset or for a failure after the response started", () => {
    const reset = failedReply();
    finishFailedMessage(reset, { network: { phase: "request", code: "ECONNRESET", message: "socket hang up" } }, [], 0);
    expect(reset.errorMessage).toBe("Connection error.");
    const body = failedReply();
    const broken: RequestFailure = {
      status: 200,
      network: {
        phase: "body",
        code: "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
        message: "unable to verify the first certificate",
      },
    };
    finishFailedMessage(body, broken, [], 0);
    expect(body.errorMessage).toBe("Connection error.");
  });
});

describe("finishFailedMessage behind a proxy", () => {
  const refused: RequestFailure = {
    network: { phase: "request", code: "ECONNREFUSED", message: "connect ECONNREFUSED", origin: "http://127.0.0.1:9" },
  };

  it("names the proxies an unreachable server may have been tried through", () => {
    const message = failedReply();
    finishFailedMessage(message, refused, [], 0, ["http://proxy.corp.example:3128"]);
    expect(message.errorMessage).toBe(
      'Connection error. (could not reach http://127.0.0.1:9 for provider "corp": ECONNREFUSED, directly or through the proxy http://proxy.corp.example:3128; check its baseUrl and that the server is running)',
    );
  });

  it("names none without a proxy", () => {
    const message = failedReply();
    finishFailedMessage(message, refused, [], 0, []);
    expect(message.errorMessage).toBe(
      'Connection error. (could not reach http://127.0.0.1:9 for provider "corp": ECONNREFUSED; check its baseUrl and that the server is running)',
    );
  });
});
