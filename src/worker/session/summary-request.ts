/**
 * A compaction's model call (R1), made by the worker for the main thread's compaction: one
 * streamed request on the session's own model, key and provider settings, whose reply text is the
 * summary.
 */
import type { StreamFn, ThinkingLevel } from "@mariozechner/pi-agent-core";
import type { Api, Model } from "@mariozechner/pi-ai";
import { SUMMARY_SYSTEM_PROMPT, type SummaryRequest, summaryPrompt } from "../../shared/compaction/summary-prompt.js";
import { LifelineError } from "../../shared/errors.js";
import { messageText } from "../../shared/message-text.js";

/** What {@link requestSummary} sends the request with. */
export interface SummaryCall {
  /** The session's stream function: its request capture, key and permits apply. */
  streamFn: StreamFn;
  model: Model<Api>;
  /** The session's thinking level: the summary request reasons at it, as pi's does. */
  thinkingLevel: ThinkingLevel;
  apiKey: string | undefined;
  sessionId: string;
  /** Aborts the request; the summary is then undefined. */
  signal: AbortSignal;
}

/**
 * Asks the model for the summary `request` describes. `maxTokens` is capped at the model's own
 * limit. Resolves with the summary text, or undefined when aborted.
 * @throws LifelineError ERR_RUN_FAILED with the provider's error text when the request fails, or
 *   when the reply has no text.
 */
export async function requestSummary(request: SummaryRequest, call: SummaryCall): Promise<string | undefined> {
  const { model, apiKey, signal } = call;
  const maxTokens =
    request.maxTokens !== undefined && request.maxTokens > 0
      ? Math.min(request.maxTokens, model.maxTokens > 0 ? model.maxTokens : request.maxTokens)
      : undefined;
  const stream = await call.streamFn(
    model,
    {
      systemPrompt: SUMMARY_SYSTEM_PROMPT,
      messages: [{ role: "user", content: [{ type: "text", text: summaryPrompt(request) }], timestamp: Date.now() }],
    },
    {
      signal,
      sessionId: call.sessionId,
      ...(apiKey === undefined ? {} : { apiKey }),
      ...(maxTokens === undefined ? {} : { maxTokens }),
      ...(model.reasoning && call.thinkingLevel !== "off" ? { reasoning: call.thinkingLevel } : {}),
    },
  );
  const reply = await stream.result();
  if (reply.stopReason === "aborted" || signal.aborted) return undefined;
  if (reply.stopReason === "error") {
    throw new LifelineError("ERR_RUN_FAILED", `The summary request failed: ${reply.errorMessage ?? "no reason given"}`);
  }
  const text = messageText(reply.content).trim();
  if (text === "") throw new LifelineError("ERR_RUN_FAILED", "The summary request returned no text.");
  return text;
}
