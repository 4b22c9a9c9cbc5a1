/**
 * The host's `onContextOverflow` hook: what it receives, what it may answer, and how an answer
 * becomes the transcript a session installs.
 */
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import { isSummaryMessage } from "../../shared/compaction/summary-message.js";
import { transcriptText } from "../../shared/compaction/summary-prompt.js";
import { LifelineError } from "../../shared/errors.js";
import { isRemovableFailure } from "../../shared/failures/classify.js";

/** What a host's `onContextOverflow` hook receives. */
export interface ContextOverflowInfo {
  sessionId: string;
  errorMessage: string;
  /** The runtime transcript at the time of the overflow, its failed reply last. */
  messages: readonly AgentMessage[];
}

/**
 * What a context overflow hook may answer: `{ messages }` installs that transcript (the prompt
 * then goes on with it, once); anything else (`false`, `true`, nothing) installs nothing and the
 * prompt settles with the overflow error.
 */
export type ContextOverflowAnswer = { messages: AgentMessage[] } | boolean | undefined;

/**
 * Replaces lifeline's own compaction on a context overflow (never retried, SPEC R1). Threshold
 * and manual compactions still use lifeline's summary. A hook that throws is reported as a
 * failed compaction (`compaction_end.errorMessage`).
 */
export type ContextOverflowHook = (info: ContextOverflowInfo) => ContextOverflowAnswer | Promise<ContextOverflowAnswer>;

/** A hook's transcript, ready to install and to record as pi's compaction entry. */
export interface HookTranscript {
  /** The answer's messages, any failed reply at their end dropped. */
  messages: AgentMessage[];
  /** The first message the hook kept from the old transcript (a summary is never "kept"). */
  firstKept: AgentMessage | undefined;
  /** The entry's summary: the text of the messages the hook added. */
  summary: string;
}

/**
 * Reads a hook's answer against the transcript it was given (`before`). Called by the session's
 * compaction right after the hook resolves; pure.
 * @returns undefined when the answer installs nothing (`false`, `true`, nothing).
 * @throws ERR_INVALID_OPTIONS for an object without a `messages` array.
 */
export function hookTranscript(
  answer: ContextOverflowAnswer,
  before: readonly AgentMessage[],
): HookTranscript | undefined {
  if (answer === null || typeof answer !== "object") return undefined;
  if (!Array.isArray(answer.messages)) {
    throw new LifelineError(
      "ERR_INVALID_OPTIONS",
      "onContextOverflow returned an object without a messages array; return { messages } or false.",
    );
  }
  const messages = [...answer.messages];
  // The overflowed reply cannot be continued from; the model never sees it anyway.
  while (isRemovableFailure(messages[messages.length - 1])) messages.pop();
  const old = new Set(before);
  const firstKept = messages.find((m) => old.has(m) && !isSummaryMessage(m));
  const added = messages.filter((m) => !old.has(m));
  const summary = added.map((m) => (isSummaryMessage(m) ? m.summary : transcriptText([m]))).join("\n\n");
  return { messages, firstKept, summary };
}
