/**
 * The worker's request capture on an event stream, in-process: what it records when the consumer
 * cancels after an error event, when the body breaks, and when an answer merely mentions an error
 * (SPEC B2). The parsers alone, on literal text, are in provider-errors.test.ts; the real-stack
 * versions, through the official SDKs, in providers.thread.test.ts.
 */
import { describe, expect, it } from "vitest";
import { RequestCapture } from "../../src/worker/request-capture/request-capture.js";
import { within } from "../fixtures/bounded.js";

const encoder = new TextEncoder();

/** An SSE response whose body sends `chunks`, then stays open (or fails with `error`). */
function sseResponse(chunks: readonly string[], error?: Error): Response {
  let next = 0;
  const body = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        const chunk = chunks[next++];
        if (chunk !== undefined) controller.enqueue(encoder.encode(chunk));
        else if (error !== undefined) controller.error(error);
      },
    },
    { highWaterMark: 0 },
  );
  return new Response(body, { status: 200, headers: { "content-type": "text/event-stream" } });
}

async function observed(response: Response): Promise<{ capture: RequestCapture; reader: ReadableStreamDefaultReader }> {
  const capture = new RequestCapture();
  capture.begin();
  const copy = await capture.observe(response);
  const body = copy.body;
  if (body === null) throw new Error("the copy has no body");
  return { capture, reader: body.getReader() };
}

const openAiChunk = (content: string) =>
  `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`;
const openAiError = `data: ${JSON.stringify({
  error: { message: "Refused.", type: "invalid_request_error", param: null, code: "content_policy_violation" },
})}\n\n`;

describe("request capture on an event stream", () => {
  it("a consumer that cancels after an error event records the event's type and code, not a broken stream", async () => {
    const { capture, reader } = await observed(sseResponse([openAiChunk("Hello"), openAiError]));
    await reader.read();
    await reader.read();
    // The SDK throws on the error event and cancels the body while a read is still pending.
    const pending = reader.read();
    await reader.cancel(new Error("the SDK is done with this stream"));
    await within(pending, 5_000, "the pending read");
    expect(capture.failure()).toEqual({
      status: 200,
      errorType: "invalid_request_error",
      errorCode: "content_policy_violation",
      inStream: true,
    });
  });

  it("finds an Anthropic error event after a long answer, split across chunks, before the body is cancelled", async () => {
    const event = `event: error\ndata: ${JSON.stringify({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } })}\n\n`;
    const answer = Array.from({ length: 200 }, (_, index) => openAiChunk(`token ${index} `));
    const { capture, reader } = await observed(sseResponse([...answer, event.slice(0, 20), event.slice(20)]));
    for (let index = 0; index < answer.length + 2; index++) await reader.read();
    // pi-ai's Anthropic provider reports the failure before the SDK's cancel reaches the body.
    expect(capture.failure()).toEqual({ status: 200, errorType: "overloaded_error", inStream: true });
    await reader.cancel();
  });

  it("an answer whose text mentions an error records nothing", async () => {
    const body = [openAiChunk('{"error": {"type": "server_error"}} is what a failure looks like'), "data: [DONE]\n\n"];
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const chunk of body) controller.enqueue(encoder.encode(chunk));
        controller.close();
      },
    });
    const response = new Response(stream, { status: 200, headers: { "content-type": "text/event-stream" } });
    const { capture, reader } = await observed(response);
    while (!(await reader.read()).done);
    expect(capture.failure()).toBeUndefined();
  });

  it("a body that breaks off is still a network failure of the body", async () => {
    const cut = new TypeError("terminated", { cause: { code: "UND_ERR_SOCKET", message: "other side closed" } });
    const { capture, reader } = await observed(sseResponse([openAiChunk("Hel")], cut));
    await reader.read();
    await expect(reader.read()).rejects.toBe(cut);
    expect(capture.failure()).toEqual({
      status: 200,
      network: { phase: "body", code: "UND_ERR_SOCKET", message: "other side closed" },
    });
  });
});
