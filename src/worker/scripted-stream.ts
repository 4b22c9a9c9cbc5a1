/**
 * Streams a scripted answer as a pi-ai provider stream: the event sequence of a real provider
 * (start, block starts, deltas and ends, then done or error), with no network.
 *
 * Written for lifeline instead of reusing pi-ai's faux provider, whose streaming does not fit a
 * long-lived worker: it keeps a per-session prompt cache for its usage estimate that is never
 * released (memory grows with every session a worker ever served), and unpaced it pushes every
 * chunk from one chain of microtasks, so a long answer runs ahead of its consumer (the event
 * queue grows to the whole answer and draining it is quadratic) and nothing else in the worker,
 * `abort` included, runs until the answer is complete. Here an unpaced stream yields a macrotask
 * every {@link YIELD_EVERY} chunks: the queue stays short, the cost is linear in the answer,
 * and an abort reaches the stream while it runs.
 */
import {
  type Api,
  type AssistantMessage,
  type AssistantMessageEventStream,
  type Context,
  createAssistantMessageEventStream,
  type ImageContent,
  type Model,
  type SimpleStreamOptions,
  type TextContent,
  type ThinkingContent,
  type ToolCall,
  type Usage,
} from "@mariozechner/pi-ai";
import { errorText } from "../shared/failures/error-text.js";
import { emptyUsage } from "../shared/usage.js";

/** Chunks streamed between two macrotask yields when no pace is set. */
const YIELD_EVERY = 64;

/** How a scripted answer is cut and paced. */
export interface StreamPace {
  /** Tokens per second; unset streams as fast as the consumer takes it. */
  tokensPerSecond?: number | undefined;
  /** Tokens (of 4 characters) per chunk, chosen at random in [min, max]. @default 3 to 5 */
  tokenSize?: { min?: number; max?: number } | undefined;
}

/**
 * Streams `answer` (or the error it rejects with, as a provider reports one) for `model`.
 * Returns at once; the stream ends with the message, or as aborted when `options.signal` aborts.
 */
export function streamScripted(
  model: Model<Api>,
  context: Context,
  options: SimpleStreamOptions | undefined,
  answer: AssistantMessage | Promise<AssistantMessage>,
  pace: StreamPace,
): AssistantMessageEventStream {
  const stream = createAssistantMessageEventStream();
  void run(stream, model, context, options, answer, pace);
  return stream;
}

async function run(
  stream: AssistantMessageEventStream,
  model: Model<Api>,
  context: Context,
  options: SimpleStreamOptions | undefined,
  answer: AssistantMessage | Promise<AssistantMessage>,
  pace: StreamPace,
): Promise<void> {
  try {
    await options?.onResponse?.({ status: 200, headers: {} }, model);
    const scripted = await answer;
    const message: AssistantMessage = {
      ...structuredClone(scripted),
      api: model.api,
      provider: model.provider,
      model: model.id,
      usage: estimateUsage(context, scripted),
      timestamp: scripted.timestamp ?? Date.now(),
    };
    await streamMessage(stream, message, new Pacer(pace), options?.signal);
  } catch (error) {
    const message: AssistantMessage = {
      role: "assistant",
      content: [],
      api: model.api,
      provider: model.provider,
      model: model.id,
      usage: emptyUsage(),
      stopReason: "error",
      errorMessage: errorText(error),
      timestamp: Date.now(),
    };
    stream.push({ type: "error", reason: "error", error: message });
    stream.end(message);
  }
}

async function streamMessage(
  stream: AssistantMessageEventStream,
  message: AssistantMessage,
  pacer: Pacer,
  signal: AbortSignal | undefined,
): Promise<void> {
  const partial: AssistantMessage = { ...message, content: [] };
  const aborted = () => {
    const final: AssistantMessage = {
      ...partial,
      stopReason: "aborted",
      errorMessage: "Request was aborted",
      timestamp: Date.now(),
    };
    stream.push({ type: "error", reason: "aborted", error: final });
    stream.end(final);
  };
  if (signal?.aborted) return aborted();
  stream.push({ type: "start", partial: { ...partial } });
  for (let index = 0; index < message.content.length; index++) {
    const block = message.content[index];
    if (block === undefined) continue;
    if (signal?.aborted) return aborted();
    if (block.type === "toolCall") {
      partial.content = [...partial.content, { ...block, arguments: {} }];
      stream.push({ type: "toolcall_start", contentIndex: index, partial: { ...partial } });
      for (const chunk of pacer.chunks(JSON.stringify(block.arguments))) {
        await pacer.wait(chunk);
        if (signal?.aborted) return aborted();
        stream.push({ type: "toolcall_delta", contentIndex: index, delta: chunk, partial: { ...partial } });
      }
      partial.content[index] = block;
      stream.push({ type: "toolcall_end", contentIndex: index, toolCall: block, partial: { ...partial } });
      continue;
    }
    const kind = block.type;
    const full = kind === "text" ? block.text : block.thinking;
    const open = kind === "text" ? { type: kind, text: "" } : { type: kind, thinking: "" };
    partial.content = [...partial.content, open];
    stream.push({ type: `${kind}_start`, contentIndex: index, partial: { ...partial } });
    let sent = "";
    for (const chunk of pacer.chunks(full)) {
      await pacer.wait(chunk);
      if (signal?.aborted) return aborted();
      sent += chunk;
      if (open.type === "text") open.text = sent;
      else open.thinking = sent;
      stream.push({ type: `${kind}_delta`, contentIndex: index, delta: chunk, partial: { ...partial } });
    }
    partial.content[index] = block;
    stream.push({ type: `${kind}_end`, contentIndex: index, content: full, partial: { ...partial } });
  }
  if (message.stopReason === "error" || message.stopReason === "aborted") {
    stream.push({ type: "error", reason: message.stopReason, error: message });
  } else {
    stream.push({ type: "done", reason: message.stopReason, message });
  }
  stream.end(message);
}

/** Cuts text into chunks and spaces them: by the pace when set, else a macrotask yield now and then. */
class Pacer {
  readonly #tokensPerSecond: number | undefined;
  readonly #min: number;
  readonly #max: number;
  #sinceYield = 0;

  constructor(pace: StreamPace) {
    this.#tokensPerSecond =
      pace.tokensPerSecond !== undefined && pace.tokensPerSecond > 0 ? pace.tokensPerSecond : undefined;
    this.#min = Math.max(1, Math.min(pace.tokenSize?.min ?? 3, pace.tokenSize?.max ?? 5));
    this.#max = Math.max(this.#min, pace.tokenSize?.max ?? 5);
  }

  /** The chunks of `text`, lazily (an empty text is one empty chunk, as a provider sends it). */
  *chunks(text: string): Generator<string> {
    if (text.length === 0) {
      yield "";
      return;
    }
    for (let at = 0; at < text.length; ) {
      const tokens = this.#min + Math.floor(Math.random() * (this.#max - this.#min + 1));
      const next = at + tokens * 4;
      yield text.slice(at, next);
      at = next;
    }
  }

  /** Waits before sending `chunk`. */
  async wait(chunk: string): Promise<void> {
    if (this.#tokensPerSecond !== undefined) {
      const ms = (Math.ceil(chunk.length / 4) / this.#tokensPerSecond) * 1000;
      await new Promise((resolve) => setTimeout(resolve, ms));
      return;
    }
    if (++this.#sinceYield < YIELD_EVERY) return;
    this.#sinceYield = 0;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** A rough token count (4 characters a token), computed per request: nothing kept per session. */
function estimateUsage(context: Context, answer: AssistantMessage): Usage {
  let promptChars = context.systemPrompt?.length ?? 0;
  for (const message of context.messages) {
    if (typeof message.content === "string") {
      promptChars += message.content.length;
      continue;
    }
    for (const block of message.content) promptChars += blockChars(block);
  }
  let outputChars = 0;
  for (const block of answer.content) outputChars += blockChars(block);
  const usage = emptyUsage();
  usage.input = Math.ceil(promptChars / 4);
  usage.output = Math.ceil(outputChars / 4);
  usage.totalTokens = usage.input + usage.output;
  return usage;
}

function blockChars(block: TextContent | ThinkingContent | ToolCall | ImageContent): number {
  if (block.type === "text") return block.text.length;
  if (block.type === "thinking") return block.thinking.length;
  if (block.type === "toolCall") return JSON.stringify(block.arguments ?? {}).length;
  return 0;
}
