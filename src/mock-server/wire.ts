/**
 * What a wire format (OpenAI chat completions, Anthropic messages) provides to the server: the
 * bytes of answers and errors. The server decides what to send and when; a wire format only
 * decides how it looks, so both formats get every fault the same way.
 */

/** Which wire format a request used. */
export type WireApi = "openai" | "anthropic";

/** Facts about the request being answered that bodies quote. */
export interface AnswerContext {
  /** The request's sequence number; ids derive from it so runs are reproducible. */
  seq: number;
  model: string;
  promptTokens: number;
  includeUsage: boolean;
  /**
   * The key the client sent (Bearer token or `x-api-key`), for realistic 401 texts (masked there);
   * echoed whole only by a `usage_limit` step with `echoKey`.
   */
  apiKey: string | undefined;
  /** Epoch seconds, as OpenAI's `created`. */
  created: number;
}

/**
 * An error to render:
 * - `status`: the provider's realistic body for that HTTP status (`message` overrides the text);
 * - `context_overflow`: the provider's 400 for a prompt over the context window;
 * - `usage_limit`: a 429 whose text says "usage limit";
 * - `malformed`: the request itself was refused; `message` says why and `param` names the field;
 * - `stream_error`: the error a `stream_error` step sends inside a 200 stream, with its own
 *   `errorType`, `code` and `message` (each defaulted per format); `status` is used only when the
 *   request did not stream.
 */
export interface ErrorSpec {
  reason: "status" | "context_overflow" | "usage_limit" | "malformed" | "stream_error";
  status: number;
  message?: string | undefined;
  errorType?: string | undefined;
  code?: string | undefined;
  param?: string | null | undefined;
  /** Seconds the client should wait, quoted by texts that mention it. */
  retryAfter?: number | undefined;
}

/** A rendered error: its status, JSON body and the headers that belong to the body. */
export interface RenderedError {
  status: number;
  body: unknown;
  headers: Record<string, string>;
}

/** Token usage as a response reports it: the prompt's tokens and the completion's. */
export interface MockUsage {
  input: number;
  output: number;
}

/** One tool call of a `tool_calls` answer; the wire format gives it an id from the request's seq. */
export interface MockToolCall {
  name: string;
  /** The arguments as JSON text. */
  arguments: string;
}

/** One wire format. Pure functions of their arguments. */
export interface WireFormat {
  readonly api: WireApi;
  /** Headers of every response, such as the request-id header. */
  headers(ctx: AnswerContext): Record<string, string>;
  error(spec: ErrorSpec, ctx: AnswerContext): RenderedError;
  /** SSE text before the first token. */
  streamStart(ctx: AnswerContext): string;
  /** SSE text of one token. */
  streamToken(ctx: AnswerContext, token: string): string;
  /**
   * SSE text of an error event inside a stream that already answered 200 (OpenAI: a `data:` line
   * holding `{error}`; Anthropic: `event: error`). The response ends after it, with no end marker.
   */
  streamError(spec: ErrorSpec, ctx: AnswerContext): string;
  /** SSE text after the last token, up to and including the end marker. */
  streamEnd(ctx: AnswerContext, completionTokens: number): string;
  /** The JSON body of a non-streaming answer. */
  completion(ctx: AnswerContext, text: string, completionTokens: number): unknown;
  /** SSE text that opens a tool-call answer, before its first call. */
  toolStreamStart(ctx: AnswerContext): string;
  /** SSE text of call `index` of a tool-call answer: its id and name, then its arguments. */
  toolCallChunks(ctx: AnswerContext, index: number, call: MockToolCall): string[];
  /** SSE text after the last call: the tool-use stop reason, up to and including the end marker. */
  toolStreamEnd(ctx: AnswerContext, completionTokens: number): string;
  /** The JSON body of a non-streaming tool-call answer. */
  toolCompletion(ctx: AnswerContext, calls: readonly MockToolCall[], completionTokens: number): unknown;
  /**
   * The usage `streamStart` reports, which a client keeps if the stream fails later (Anthropic's
   * `message_start`); undefined when the preamble reports none (OpenAI).
   */
  startUsage(ctx: AnswerContext): MockUsage | undefined;
  /** The usage `streamEnd` leaves the client with; undefined when the stream reports none. */
  endUsage(ctx: AnswerContext, completionTokens: number): MockUsage | undefined;
}

/** Masks a secret the way OpenAI does in 401 texts: a short head and tail, never the whole key. */
export function maskKey(key: string): string {
  return key.length >= 12 ? `${key.slice(0, 5)}****${key.slice(-4)}` : "****";
}
