/**
 * A prompt on the main thread: the options `prompt()` takes, its state from `prompt()` to its
 * `agent_settled`, and the result it settles with (R11).
 */
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import type { AssistantMessage } from "@mariozechner/pi-ai";
import type { PromptResult } from "../../../shared/events.js";
import { isFailedStop } from "../../../shared/failures/classify.js";
import type { CompactingPrompt } from "../../compaction/session-compaction.js";

/** Options of `AgentSession.prompt`. */
export interface PromptOptions {
  /**
   * When the session is busy, wait for the current prompt to settle and then run, instead of
   * rejecting with ERR_SESSION_BUSY. @default false
   */
  queue?: boolean;
  /**
   * The caller's id for this prompt (1 to 200 characters), such as a queue job's id. A persisted
   * session stores it with the prompt's user message (a `lifeline.prompt` entry in the same
   * append) and with its outcome (`lifeline.prompt_end`, when it settles), so that whoever opens
   * the session later can tell what became of the prompt: `AgentSession.promptRecord`.
   */
  id?: string;
}

/** The session's live prompt. */
export interface PendingPrompt extends CompactingPrompt {
  resolve: (result: PromptResult) => void;
  reject: (error: Error) => void;
  /** Its retry requests that went out (run-events.ts counts them), not its `auto_retry_start`s. */
  retries: number;
  /** Its latest reply (what it settles with). */
  lastAssistant: AssistantMessage | undefined;
  /** Why it failed when no reply says so (a run that ended without one, an aborted wait). */
  failure: string | undefined;
  /** abort() came before its run was posted (write-ahead, provider gate): its run never starts. */
  abortedEarly?: boolean;
  /** The caller's id for it (`prompt(text, { id })`): its outcome is recorded under it (prompt-records.ts). */
  id?: string | undefined;
  /**
   * Set once it is no longer the session's live prompt (settled, rejected, the session closed):
   * a step still waiting for it (prompt-admission.ts) then goes no further.
   */
  over?: true;
}

/** A prompt sent with `{ queue: true }` while the session was busy; it begins when the session is free. */
export interface QueuedPrompt {
  text: string;
  id?: string | undefined;
  resolve: (result: PromptResult) => void;
  reject: (error: Error) => void;
  /** B9: the trace context `prompt()` was called in (opaque; see `PromptTracing`). */
  trace?: unknown;
}

/** What `pending` settles with: its last reply's outcome, else how it failed. Pure. */
export function settledResult(pending: PendingPrompt): PromptResult {
  const last = pending.lastAssistant;
  const stopReason = last?.stopReason ?? (pending.abortedEarly === true ? "aborted" : "error");
  const result: PromptResult = { stopReason, retries: pending.retries };
  const errorMessage = last?.errorMessage ?? pending.failure;
  if (errorMessage !== undefined && (last === undefined || isFailedStop(last.stopReason))) {
    result.errorMessage = errorMessage;
  }
  if (last !== undefined) result.message = last;
  return result;
}

/** The last assistant message of `messages`, if any. */
export function lastAssistant(messages: readonly AgentMessage[]): AssistantMessage | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i];
    if (message?.role === "assistant") return message;
  }
  return undefined;
}
