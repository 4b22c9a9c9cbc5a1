/**
 * OpenAI chat completions on the wire: `chat.completion.chunk` SSE lines ending in
 * `data: [DONE]`, `chat.completion` JSON, and `{error: {message, type, param, code}}` bodies with
 * texts modelled on what api.openai.com and its Cloudflare front send.
 */
import {
  type AnswerContext,
  type ErrorSpec,
  type MockToolCall,
  maskKey,
  type RenderedError,
  type WireFormat,
} from "./wire.js";

interface OpenAiError {
  message: string;
  type: string;
  code: string | null;
}

function statusError(status: number, ctx: AnswerContext, retryAfter: number | undefined): OpenAiError {
  switch (status) {
    case 400:
      return { message: "Invalid request.", type: "invalid_request_error", code: null };
    case 401:
      return {
        message:
          ctx.apiKey === undefined
            ? "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."
            : `Incorrect API key provided: ${maskKey(ctx.apiKey)}. You can find your API key at https://platform.openai.com/account/api-keys.`,
        type: "invalid_request_error",
        code: "invalid_api_key",
      };
    case 403:
      return {
        message: `Project \`proj_mock\` does not have access to model \`${ctx.model}\``,
        type: "invalid_request_error",
        code: "model_not_found",
      };
    case 404:
      return {
        message: `The model \`${ctx.model}\` does not exist or you do not have access to it.`,
        type: "invalid_request_error",
        code: "model_not_found",
      };
    case 429:
      return {
        message: `Rate limit reached for requests per min (RPM) on ${ctx.model} in organization org-mock: Limit 500, Used 500, Requested 1. Please try again in ${retryAfter ?? 20}s. Visit https://platform.openai.com/account/rate-limits to learn more.`,
        type: "requests",
        code: "rate_limit_exceeded",
      };
    case 502:
      return { message: "Bad gateway.", type: "cf_bad_gateway", code: null };
    case 503:
      return {
        message: "The engine is currently overloaded, please try again later.",
        type: "server_error",
        code: null,
      };
    case 504:
      return { message: "Gateway timeout.", type: "cf_gateway_timeout", code: null };
    case 529:
      return { message: "Overloaded", type: "overloaded_error", code: null };
    default:
      return status < 500
        ? { message: `Request failed with status ${status}.`, type: "invalid_request_error", code: null }
        : {
            message: "The server had an error while processing your request. Sorry about that!",
            type: "server_error",
            code: null,
          };
  }
}

function describe(spec: ErrorSpec, ctx: AnswerContext): OpenAiError & { param: string | null } {
  switch (spec.reason) {
    case "context_overflow":
      return {
        message:
          "This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages.",
        type: "invalid_request_error",
        param: "messages",
        code: "context_length_exceeded",
      };
    case "usage_limit":
      return {
        message: spec.message ?? "You have reached your usage limit. Try again later.",
        type: "usage_limit_reached",
        param: null,
        code: "usage_limit_reached",
      };
    case "malformed":
      return {
        message: spec.message ?? "Invalid request.",
        type: "invalid_request_error",
        param: spec.param ?? null,
        code: null,
      };
    case "stream_error":
      return spec.errorType === undefined
        ? {
            message: spec.message ?? "The server had an error while processing your request. Sorry about that!",
            type: "server_error",
            param: null,
            code: spec.code ?? null,
          }
        : {
            message: spec.message ?? `The request failed with an error of type ${spec.errorType}.`,
            type: spec.errorType,
            param: null,
            code: spec.code ?? null,
          };
    case "status": {
      const base = statusError(spec.status, ctx, spec.retryAfter);
      return { ...base, message: spec.message ?? base.message, param: null };
    }
    default: {
      const unreachable: never = spec.reason;
      return unreachable;
    }
  }
}

function chunk(ctx: AnswerContext, delta: Record<string, unknown>, finishReason: "stop" | "tool_calls" | null): string {
  return sseData(ctx, { choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }] });
}

/** One `data:` record of a chat.completion.chunk with the exchange's id, time and model. */
function sseData(ctx: AnswerContext, fields: Record<string, unknown>): string {
  const body = {
    id: `chatcmpl-mock${ctx.seq}`,
    object: "chat.completion.chunk",
    created: ctx.created,
    model: ctx.model,
    system_fingerprint: null,
    ...fields,
  };
  return `data: ${JSON.stringify(body)}\n\n`;
}

const toolCallId = (ctx: AnswerContext, index: number) => `call_mock${ctx.seq}_${index}`;

/** The end of a stream: the finish reason, the usage chunk when asked for, `[DONE]`. */
function streamEnd(ctx: AnswerContext, completionTokens: number, finishReason: "stop" | "tool_calls"): string {
  let text = chunk(ctx, {}, finishReason);
  if (ctx.includeUsage) {
    text += sseData(ctx, { choices: [], usage: usage(ctx, completionTokens) });
  }
  return `${text}data: [DONE]\n\n`;
}

function usage(ctx: AnswerContext, completionTokens: number) {
  return {
    prompt_tokens: ctx.promptTokens,
    completion_tokens: completionTokens,
    total_tokens: ctx.promptTokens + completionTokens,
  };
}

/** The OpenAI chat-completions wire format. */
export const openAiWire: WireFormat = {
  api: "openai",
  headers: (ctx) => ({ "x-request-id": `req_mock${ctx.seq}` }),
  error(spec: ErrorSpec, ctx: AnswerContext): RenderedError {
    const { message, type, param, code } = describe(spec, ctx);
    return { status: spec.status, body: { error: { message, type, param, code } }, headers: openAiWire.headers(ctx) };
  },
  streamStart: (ctx) => chunk(ctx, { role: "assistant", content: "" }, null),
  streamToken: (ctx, token) => chunk(ctx, { content: token }, null),
  // What api.openai.com sends when a request fails after the stream began: an `error` object in
  // place of a chunk, then the end of the response.
  streamError(spec: ErrorSpec, ctx: AnswerContext): string {
    const { message, type, param, code } = describe(spec, ctx);
    return `data: ${JSON.stringify({ error: { message, type, param, code } })}\n\n`;
  },
  streamEnd: (ctx, completionTokens) => streamEnd(ctx, completionTokens, "stop"),
  completion: (ctx, text, completionTokens) => ({
    id: `chatcmpl-mock${ctx.seq}`,
    object: "chat.completion",
    created: ctx.created,
    model: ctx.model,
    system_fingerprint: null,
    choices: [
      {
        index: 0,
        message: { role: "assistant", content: text, refusal: null },
        logprobs: null,
        finish_reason: "stop",
      },
    ],
    usage: usage(ctx, completionTokens),
  }),
  toolStreamStart: (ctx) => chunk(ctx, { role: "assistant", content: null }, null),
  // As api.openai.com streams a call: its id, type and name with empty arguments, then the arguments.
  toolCallChunks: (ctx, index, call) => [
    chunk(
      ctx,
      {
        tool_calls: [
          { index, id: toolCallId(ctx, index), type: "function", function: { name: call.name, arguments: "" } },
        ],
      },
      null,
    ),
    chunk(ctx, { tool_calls: [{ index, function: { arguments: call.arguments } }] }, null),
  ],
  toolStreamEnd: (ctx, completionTokens) => streamEnd(ctx, completionTokens, "tool_calls"),
  toolCompletion: (ctx, calls: readonly MockToolCall[], completionTokens) => ({
    id: `chatcmpl-mock${ctx.seq}`,
    object: "chat.completion",
    created: ctx.created,
    model: ctx.model,
    system_fingerprint: null,
    choices: [
      {
        index: 0,
        message: {
          role: "assistant",
          content: null,
          refusal: null,
          tool_calls: calls.map((call, index) => ({
            id: toolCallId(ctx, index),
            type: "function",
            function: { name: call.name, arguments: call.arguments },
          })),
        },
        logprobs: null,
        finish_reason: "tool_calls",
      },
    ],
    usage: usage(ctx, completionTokens),
  }),
  startUsage: () => undefined,
  // The usage chunk comes only when the request asked for it (`stream_options.include_usage`).
  endUsage: (ctx, completionTokens) =>
    ctx.includeUsage ? { input: ctx.promptTokens, output: completionTokens } : undefined,
};
