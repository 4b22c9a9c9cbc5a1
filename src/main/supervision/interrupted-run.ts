/**
 * What a run its worker did not survive leaves in the transcript (SPEC X7), built on the main
 * thread from its mirror. Pure.
 *
 * - A tool call that was running may have had side effects, so it is never re-run silently: each
 *   tool call of the last assistant turn that has no result gets one saying it was interrupted,
 *   so the model sees what happened and decides.
 * - The reply in flight (or, if none was, the run itself) ends as a failed assistant message whose
 *   `errorMessage` names the worker's fate, marked with a {@link WORKER_EXIT_DIAGNOSTIC} entry so
 *   the retry controller treats it as a transient failure, like a 503.
 */
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import type { Api, AssistantMessage, Model, ToolResultMessage } from "@mariozechner/pi-ai";
import type { WorkerExitCause } from "../../shared/errors.js";
import { WORKER_EXIT_DIAGNOSTIC } from "../../shared/failures/request-failure.js";
import { emptyUsage } from "../../shared/usage.js";

/** What the main thread knows of the run when its worker died. */
export interface InterruptedRunInput {
  /** The main thread's runtime transcript. */
  messages: readonly AgentMessage[];
  /** The assistant message being streamed, as rebuilt on main, if one was. */
  partial: AssistantMessage | undefined;
  model: Model<Api>;
  cause: WorkerExitCause;
  /** True when `abort()` had been asked for this run: it ends as aborted, never retried. */
  aborted: boolean;
  now: number;
}

/** The messages that close the interrupted run, in transcript order. */
export interface InterruptedRun {
  toolResults: ToolResultMessage[];
  reply: AssistantMessage;
}

/** How a worker's end reads in a sentence: "the worker running this session <fate>". */
export function workerFate(cause: WorkerExitCause): string {
  switch (cause) {
    case "oom":
      return "ran out of memory";
    case "exit":
      return "exited";
    case "crash":
      return "crashed";
    case "hung":
      return "stopped answering and was terminated";
    default: {
      const unreachable: never = cause;
      return unreachable;
    }
  }
}

/** Builds the messages that end a run whose worker died; see the file comment. */
export function interruptedRun(input: InterruptedRunInput): InterruptedRun {
  const fate = workerFate(input.cause);
  const toolResults = unansweredToolCalls(input.messages).map(
    (call): ToolResultMessage => ({
      role: "toolResult",
      toolCallId: call.id,
      toolName: call.name,
      content: [
        {
          type: "text",
          text: `Tool call interrupted: the worker running it ${fate}. It was not run again; it may have had effects before it stopped.`,
        },
      ],
      isError: true,
      timestamp: input.now,
    }),
  );
  // Text and thinking streamed so far stay for the history; a half-streamed tool call does not.
  const content = (input.partial?.content ?? []).filter((block) => block.type !== "toolCall");
  const reply: AssistantMessage = {
    role: "assistant",
    content,
    api: input.model.api,
    provider: input.model.provider,
    model: input.model.id,
    usage: emptyUsage(),
    stopReason: input.aborted ? "aborted" : "error",
    errorMessage: input.aborted
      ? `Request was aborted (the worker running this session ${fate}).`
      : `The worker running this session ${fate} (${input.cause}); the run was interrupted.`,
    timestamp: input.now,
  };
  if (!input.aborted) {
    reply.diagnostics = [{ type: WORKER_EXIT_DIAGNOSTIC, timestamp: input.now, details: { cause: input.cause } }];
  }
  return { toolResults, reply };
}

/** Tool calls of the last assistant turn that no tool result answers yet. */
function unansweredToolCalls(messages: readonly AgentMessage[]): { id: string; name: string }[] {
  const answered = new Set<string>();
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i];
    if (message?.role === "toolResult") {
      answered.add(message.toolCallId);
      continue;
    }
    if (message?.role !== "assistant") return [];
    return message.content.flatMap((block) =>
      block.type === "toolCall" && !answered.has(block.id) ? [{ id: block.id, name: block.name }] : [],
    );
  }
  return [];
}

/**
 * What the end of a stored transcript says of the last run it holds, for a host that opens the
 * session after the host running it stopped (fleet mode): `finished` (a reply that ended the run:
 * stop, length, aborted), `failed` (a failed reply: the run's retry decision is made on it), or
 * `interrupted` (a user message, a tool result, or a reply calling tools: the run was cut off and
 * ends as {@link interruptedRun} says); `none` for a transcript with no run to finish.
 */
export type StoredRunTail =
  | { kind: "finished" | "failed"; reply: AssistantMessage }
  | { kind: "interrupted" }
  | { kind: "none" };

/** Reads a runtime transcript's end; see {@link StoredRunTail}. Pure. */
export function storedRunTail(messages: readonly AgentMessage[]): StoredRunTail {
  const last = messages[messages.length - 1];
  if (last?.role === "user" || last?.role === "toolResult") return { kind: "interrupted" };
  if (last?.role !== "assistant") return { kind: "none" };
  if (last.stopReason === "toolUse") return { kind: "interrupted" };
  return { kind: last.stopReason === "error" ? "failed" : "finished", reply: last };
}
