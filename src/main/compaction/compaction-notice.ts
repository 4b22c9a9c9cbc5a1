/**
 * The one line the CLI (stderr progress) and the TUI (a notice) show for a compaction event.
 */
import type { CompactionEndEvent, CompactionStartEvent } from "../../shared/events.js";

const STARTS: Record<CompactionStartEvent["reason"], string> = {
  overflow: "Context overflow (not retried): compacting the conversation…",
  threshold: "Context nearly full: compacting the conversation…",
  manual: "Compacting the conversation…",
};

export function compactionNotice(event: CompactionStartEvent | CompactionEndEvent): string {
  if (event.type === "compaction_start") return STARTS[event.reason];
  if (event.result !== null) {
    const { tokensBefore, tokensAfter } = event.result;
    return `Compacted: about ${tokensBefore} → ${tokensAfter} tokens${event.willRetry ? "; the prompt goes on" : ""}.`;
  }
  if (event.aborted) return "Compaction aborted.";
  if (event.errorMessage !== undefined) return `Compaction failed: ${event.errorMessage}`;
  return "Nothing was compacted.";
}
