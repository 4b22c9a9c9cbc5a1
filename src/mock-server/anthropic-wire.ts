/**
 * Anthropic messages on the wire: `event: <type>` / `data: <json>` SSE from `message_start` to
 * `message_stop`, `message` JSON, and `{type: "error", error: {type, message}, request_id}` bodies
 * with a matching `request-id` header.
 */
import type { AnswerContext, ErrorSpec, MockToolCall, RenderedError, WireFormat } from "./wire.js";

// 502 and 504 come from a gateway in front of the API, so they are plain api_error; 503 means
// capacity, which Anthropic reports as overloaded_error (as for its own 529).
const TYPES: Readonly<Record<number, string>> = {
  400: "invalid_request_error",
  401: "authentication_error",
  403: "permission_error",
  404: "not_found_error",
  413: "request_too_large",
  429: "rate_limit_error",
  500: "api_error",
  502: "api_error",
  503: "overloaded_error",
  504: "api_error",
  529: "overloaded_error",
};

function statusMessage(status: number, ctx: AnswerContext): string {
  switch (status) {
    case 400:
      return "Invalid request.";
    case 401:
      return "invalid x-api-key";
    case 403:
      return "Your API key does not have permission to use the specified resource.";
    case 404:
      return `model: ${ctx.model}`;
    case 413:
      return "Request exceeds the maximum allowed number of bytes.";
    case 429:
      return "This request would exceed the rate limit for your organization of 50 requests per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits.";
    case 500:
      return "Internal server error";
    case 502:
      return "Bad gateway";
    case 504:
      return "Gateway timeout";
    case 529:
    case 503:
      return "Overloaded";
    default:
      return status < 500 ? `Request failed with status ${status}.` : "Internal server error";
  }
}

function describe(spec: ErrorSpec, ctx: AnswerContext): { type: string; message: string } {
  const type = TYPES[spec.status] ?? (spec.status < 500 ? "invalid_request_error" : "api_error");
  switch (spec.reason) {
    case "context_overflow":
      return { type: "invalid_request_error", message: "prompt is too long: 213456 tokens > 200000 maximum" };
    case "usage_limit":
      return {
        type: "rate_limit_error",
        message: spec.message ?? "You have reached your usage limit. Try again later.",
      };
    case "stream_error":
      return spec.errorType === undefined
        ? { type: "overloaded_error", message: spec.message ?? "Overloaded" }
        : {
            type: spec.errorType,
            message: spec.message ?? `The request failed with an error of type ${spec.errorType}.`,
          };
    case "malformed":
    case "status":
      return { type, message: spec.message ?? statusMessage(spec.status, ctx) };
    default: {
      const unreachable: never = spec.reason;
      return unreachable;
    }
  }
}

function event(type: string, data: Record<string, unknown>): string {
  return `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
}

const messageId = (ctx: AnswerContext) => `msg_mock${ctx.seq}`;

/** The output count `message_start` reports, as Anthropic's does before any token. */
const START_OUTPUT_TOKENS = 1;

const toolUseId = (ctx: AnswerContext, index: number) => `toolu_mock${ctx.seq}_${index}`;

function messageStart(ctx: AnswerContext): string {
  return event("message_start", {
    message: {
      id: messageId(ctx),
      type: "message",
      role: "assistant",
      content: [],
      model: ctx.model,
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: ctx.promptTokens, output_tokens: START_OUTPUT_TOKENS },
    },
  });
}

function messageEnd(stopReason: "end_turn" | "tool_use", completionTokens: number): string {
  return (
    event("message_delta", {
      delta: { stop_reason: stopReason, stop_sequence: null },
      usage: { output_tokens: completionTokens },
    }) + event("message_stop", {})
  );
}

/** The Anthropic messages wire format. */
export const anthropicWire: WireFormat = {
  api: "anthropic",
  headers: (ctx) => ({ "request-id": `req_mock${ctx.seq}` }),
  error(spec: ErrorSpec, ctx: AnswerContext): RenderedError {
    const error = describe(spec, ctx);
    return {
      status: spec.status,
      body: { type: "error", error, request_id: `req_mock${ctx.seq}` },
      headers: anthropicWire.headers(ctx),
    };
  },
  streamStart: (ctx) =>
    messageStart(ctx) +
    event("content_block_start", { index: 0, content_block: { type: "text", text: "" } }) +
    event("ping", {}),
  streamToken: (_ctx, token) => event("content_block_delta", { index: 0, delta: { type: "text_delta", text: token } }),
  // Anthropic's in-stream failure (an overload mid-answer, say): `event: error`, then the end.
  // Its error objects have a type and a message, no code.
  streamError: (spec, ctx) => event("error", { error: describe(spec, ctx) }),
  streamEnd: (_ctx, completionTokens) =>
    event("content_block_stop", { index: 0 }) + messageEnd("end_turn", completionTokens),
  completion: (ctx, text, completionTokens) => ({
    id: messageId(ctx),
    type: "message",
    role: "assistant",
    model: ctx.model,
    content: [{ type: "text", text }],
    stop_reason: "end_turn",
    stop_sequence: null,
    usage: { input_tokens: ctx.promptTokens, output_tokens: completionTokens },
  }),
  toolStreamStart: (ctx) => messageStart(ctx) + event("ping", {}),
  // One content block per call: a tool_use block with empty input, its input as JSON, its stop.
  toolCallChunks: (ctx, index, call) => [
    event("content_block_start", {
      index,
      content_block: { type: "tool_use", id: toolUseId(ctx, index), name: call.name, input: {} },
    }),
    event("content_block_delta", { index, delta: { type: "input_json_delta", partial_json: call.arguments } }) +
      event("content_block_stop", { index }),
  ],
  toolStreamEnd: (_ctx, completionTokens) => messageEnd("tool_use", completionTokens),
  toolCompletion: (ctx, calls: readonly MockToolCall[], completionTokens) => ({
    id: messageId(ctx),
    type: "message",
    role: "assistant",
    model: ctx.model,
    content: calls.map((call, index) => ({
      type: "tool_use",
      id: toolUseId(ctx, index),
      name: call.name,
      input: JSON.parse(call.arguments) as unknown,
    })),
    stop_reason: "tool_use",
    stop_sequence: null,
    usage: { input_tokens: ctx.promptTokens, output_tokens: completionTokens },
  }),
  // `message_start` reports the input; `message_delta` only replaces the output count.
  startUsage: (ctx) => ({ input: ctx.promptTokens, output: START_OUTPUT_TOKENS }),
  endUsage: (ctx, completionTokens) => ({ input: ctx.promptTokens, output: completionTokens }),
};
