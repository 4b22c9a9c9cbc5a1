/**
 * Answering one well-formed model request with its step: a normal answer, an error body, or one
 * of the connection faults. Wire formats supply the bytes; this file supplies the timing.
 *
 * Every write is guarded by `res.destroyed` and every wait by the exchange's signal, so a client
 * that leaves at any moment stops the work at the next await and nothing throws.
 */
import type { ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { wordTokens } from "./model-request.js";
import type { MutableRecord, Outcome } from "./request-log.js";
import type { MockScript, MockStep } from "./script.js";
import type { AnswerContext, ErrorSpec, MockToolCall, WireFormat } from "./wire.js";

/** One model request being answered. */
export interface Exchange {
  res: ServerResponse;
  wire: WireFormat;
  ctx: AnswerContext;
  record: MutableRecord;
  stream: boolean;
  /** The script the step came from, for its `reply` and `tokenDelayMs`. */
  script: MockScript;
  /** Aborted when the response closes, finished or not: pending delays stop at once. */
  signal: AbortSignal;
  /** The outcome the record gets when the response finishes normally; error steps set "fault". */
  finishAs: Outcome;
  /** Ends the record now, before the server cuts the connection itself. */
  end(outcome: Outcome): void;
}

const SSE_HEADERS = { "content-type": "text/event-stream", "cache-control": "no-cache" } as const;

/** Carries out `step`. Resolves when the response is sent, cut or left stalled; never rejects. */
export async function respond(ex: Exchange, step: MockStep): Promise<void> {
  if (step.delayMs !== undefined && step.delayMs > 0 && !(await delay(step.delayMs, ex.signal))) return;
  const { script } = ex;
  switch (step.type) {
    case "ok": {
      const tokens = wordTokens(step.text ?? script.reply, step.tokens);
      return answer(ex, tokens, step.tokenDelayMs ?? script.tokenDelayMs);
    }
    case "error":
      return sendError(ex, { reason: "status", status: step.status, message: step.message }, step);
    case "context_overflow":
      return sendError(ex, { reason: "context_overflow", status: 400 }, {});
    case "usage_limit":
      return sendError(
        ex,
        {
          reason: "usage_limit",
          status: 429,
          message:
            step.echoKey === true
              ? `You have reached your usage limit for key ${ex.ctx.apiKey ?? "(none)"}. Try again later.`
              : undefined,
        },
        step,
      );
    case "reset":
      ex.end("fault");
      return resetSocket(ex.res.socket);
    case "cut":
    case "stall": {
      const tokens = wordTokens(script.reply || "token", step.afterTokens);
      return partial(ex, tokens, step.tokenDelayMs ?? script.tokenDelayMs, step.type);
    }
    case "stream_error": {
      const spec: ErrorSpec = {
        reason: "stream_error",
        status: 500,
        errorType: step.errorType,
        code: step.code,
        message: step.message,
      };
      // Without streaming there is no stream to fail inside: the same error comes as a 500.
      if (!ex.stream) return sendError(ex, spec, {});
      const tokens = wordTokens(script.reply || "token", step.afterTokens);
      return streamError(ex, tokens, step.tokenDelayMs ?? script.tokenDelayMs, spec);
    }
    case "tool_calls": {
      const calls = Array.from({ length: step.calls }, (_, call) => ({
        name: step.name,
        arguments: JSON.stringify({ ...step.arguments, call }),
      }));
      return answerToolCalls(ex, calls, step.tokenDelayMs ?? script.tokenDelayMs);
    }
    default: {
      const unreachable: never = step;
      return unreachable;
    }
  }
}

/**
 * A tool-call answer: the calls in one assistant message, each streamed as its opening and its
 * arguments with `tokenDelayMs` before each chunk but the first. Its output tokens are its chunks.
 */
async function answerToolCalls(ex: Exchange, calls: readonly MockToolCall[], tokenDelayMs: number): Promise<void> {
  const { res, wire, ctx } = ex;
  ex.record.toolCalls = calls.length;
  const chunks = calls.flatMap((call, index) => wire.toolCallChunks(ctx, index, call));
  if (!ex.stream) {
    if (!res.destroyed) ex.record.usage = { input: ctx.promptTokens, output: chunks.length };
    return sendJson(ex, 200, wire.toolCompletion(ctx, calls, chunks.length), wire.headers(ctx));
  }
  writeHead(ex, 200, { ...SSE_HEADERS, ...wire.headers(ctx) });
  res.write(wire.toolStreamStart(ctx));
  const usage = wire.startUsage(ctx);
  if (usage !== undefined) ex.record.usage = usage;
  for (const [index, text] of chunks.entries()) {
    if (index > 0 && tokenDelayMs > 0 && !(await delay(tokenDelayMs, ex.signal))) return;
    if (res.destroyed) return;
    res.write(text);
  }
  if (res.destroyed) return;
  const end = wire.endUsage(ctx, chunks.length);
  if (end !== undefined) ex.record.usage = end;
  res.end(wire.toolStreamEnd(ctx, chunks.length));
}

async function answer(ex: Exchange, tokens: readonly string[], tokenDelayMs: number): Promise<void> {
  const { res, wire, ctx } = ex;
  if (!ex.stream) {
    if (!res.destroyed) ex.record.usage = { input: ctx.promptTokens, output: tokens.length };
    return sendJson(ex, 200, wire.completion(ctx, tokens.join(""), tokens.length), wire.headers(ctx));
  }
  writeHead(ex, 200, { ...SSE_HEADERS, ...wire.headers(ctx) });
  writeStreamStart(ex);
  if (!(await streamTokens(ex, tokens, tokenDelayMs))) return;
  const usage = wire.endUsage(ctx, tokens.length);
  if (usage !== undefined) ex.record.usage = usage;
  res.end(wire.streamEnd(ctx, tokens.length));
}

/** Writes the stream's preamble and records the usage it reports, if any. */
function writeStreamStart(ex: Exchange): void {
  ex.res.write(ex.wire.streamStart(ex.ctx));
  const usage = ex.wire.startUsage(ex.ctx);
  if (usage !== undefined) ex.record.usage = usage;
}

/** The 200 of a `cut` or `stall`: headers, the tokens (streaming only), then a cut or silence. */
async function partial(
  ex: Exchange,
  tokens: readonly string[],
  tokenDelayMs: number,
  kind: "cut" | "stall",
): Promise<void> {
  const { res, wire, ctx } = ex;
  const headers = ex.stream ? SSE_HEADERS : { "content-type": "application/json" };
  writeHead(ex, 200, { ...headers, ...wire.headers(ctx) });
  if (ex.stream && tokens.length > 0) {
    writeStreamStart(ex);
    if (!(await streamTokens(ex, tokens, tokenDelayMs))) return;
  }
  // Wait until everything written is handed to the kernel: destroy() drops data still queued.
  await new Promise<void>((resolve) => res.write("", () => resolve()));
  if (kind === "cut" && !res.destroyed) {
    ex.end("fault");
    res.socket?.destroy();
  }
}

/** The 200 of a `stream_error`: headers, the tokens (after the preamble), then the error event. */
async function streamError(
  ex: Exchange,
  tokens: readonly string[],
  tokenDelayMs: number,
  spec: ErrorSpec,
): Promise<void> {
  const { res, wire, ctx } = ex;
  ex.finishAs = "fault";
  writeHead(ex, 200, { ...SSE_HEADERS, ...wire.headers(ctx) });
  if (tokens.length > 0) {
    writeStreamStart(ex);
    if (!(await streamTokens(ex, tokens, tokenDelayMs))) return;
  }
  if (!res.destroyed) res.end(wire.streamError(spec, ctx));
}

/** Writes tokens with `tokenDelayMs` between them; false when the response closed meanwhile. */
async function streamTokens(ex: Exchange, tokens: readonly string[], tokenDelayMs: number): Promise<boolean> {
  for (const [index, token] of tokens.entries()) {
    if (index > 0 && tokenDelayMs > 0 && !(await delay(tokenDelayMs, ex.signal))) return false;
    if (ex.res.destroyed) return false;
    ex.res.write(ex.wire.streamToken(ex.ctx, token));
  }
  return !ex.res.destroyed;
}

interface ErrorExtras {
  retryAfter?: number | undefined;
  retryAfterMs?: number | undefined;
  headers?: Record<string, string> | undefined;
  emptyBody?: boolean | undefined;
}

function sendError(ex: Exchange, spec: ErrorSpec, extras: ErrorExtras): void {
  const rendered = ex.wire.error({ ...spec, retryAfter: extras.retryAfter }, ex.ctx);
  const headers: Record<string, string> = { ...rendered.headers };
  if (extras.retryAfter !== undefined) headers["retry-after"] = String(extras.retryAfter);
  if (extras.retryAfterMs !== undefined) headers["retry-after-ms"] = String(extras.retryAfterMs);
  Object.assign(headers, extras.headers);
  ex.finishAs = "fault";
  if (extras.emptyBody === true) {
    writeHead(ex, rendered.status, headers);
    ex.res.end();
    return;
  }
  sendJson(ex, rendered.status, rendered.body, headers);
}

function sendJson(ex: Exchange, status: number, body: unknown, headers: Record<string, string>): void {
  if (ex.res.destroyed) return;
  ex.record.status = status;
  writeJson(ex.res, status, body, headers);
}

function writeHead(ex: Exchange, status: number, headers: Record<string, string>): void {
  ex.record.status = status;
  ex.res.writeHead(status, headers);
}

/** Sends a complete JSON response, unless the response is already gone or started. */
export function writeJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  if (res.destroyed || res.headersSent) return;
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": String(Buffer.byteLength(text)),
    ...headers,
  });
  res.end(text);
}

/** A TCP reset rather than a clean close, so clients see ECONNRESET as from a crashed upstream. */
function resetSocket(socket: Socket | null): void {
  if (socket === null) return;
  try {
    socket.resetAndDestroy();
  } catch {
    socket.destroy();
  }
}

/** Resolves true after `ms`, or false as soon as `signal` aborts. */
function delay(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve(true);
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
