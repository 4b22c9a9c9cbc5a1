/**
 * report.json's `agentic`: what a run's tool turns did. Built from the tool figures
 * (agentic-metrics.ts) and the prompt records; pure.
 */
import type { ToolFigures } from "../metrics/agentic-metrics.js";
import type { PromptRecord } from "../metrics/load-metrics.js";
import { type Summary, summarize } from "../metrics/stats.js";

/** report.json `agentic`. */
export interface AgenticReport {
  /** Tool executions started (`tool_execution_start`); equals `totals.toolCalls`. */
  toolCalls: number;
  /** Tool executions that ended with an error result (`tool_execution_end` with `isError`). */
  toolFailures: number;
  /** Agent turns of each prompt that succeeded: 1, plus 1 for each reply with tool calls; retries not counted. */
  turnsPerPrompt: Summary;
  /** Each tool execution that ended, `tool_execution_start` → `tool_execution_end`, as the main thread saw them. */
  toolLatencyMs: Summary;
  /**
   * Per session whose prompts all settled (none cancelled by the run's end): its first prompt's
   * start to its last prompt's settling, think time included.
   */
  sessionCompletionMs: Summary;
}

/** The `agentic` section of a run with these figures and prompt records. */
export function agenticReport(tools: ToolFigures, prompts: readonly PromptRecord[]): AgenticReport {
  return {
    toolCalls: tools.toolCalls,
    toolFailures: tools.toolFailures,
    turnsPerPrompt: summarize(prompts.filter((p) => p.outcome === "succeeded").map((p) => p.turns)),
    toolLatencyMs: summarize(tools.toolLatenciesMs),
    sessionCompletionMs: summarize(sessionCompletions(prompts)),
  };
}

/** First start to last settling of each session none of whose prompts was cancelled. */
function sessionCompletions(prompts: readonly PromptRecord[]): number[] {
  const spans = new Map<number, { start: number; end: number; cancelled: boolean }>();
  for (const prompt of prompts) {
    const end = prompt.startMs + prompt.latencyMs;
    const span = spans.get(prompt.session);
    if (span === undefined) {
      spans.set(prompt.session, { start: prompt.startMs, end, cancelled: prompt.outcome === "cancelled" });
      continue;
    }
    span.start = Math.min(span.start, prompt.startMs);
    span.end = Math.max(span.end, end);
    span.cancelled ||= prompt.outcome === "cancelled";
  }
  return [...spans.values()].filter((span) => !span.cancelled).map((span) => span.end - span.start);
}
