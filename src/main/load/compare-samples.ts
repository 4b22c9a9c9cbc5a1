/**
 * The samples a comparison resamples, taken from records.jsonl's lines as report.json's figures
 * are taken from them (load-report.ts): request latencies of the requests that succeeded, prompt
 * latencies of the prompts that succeeded, requests and retries of every prompt.
 *
 * Each value carries its time block: the run's span of start times cut into
 * {@link TIME_BLOCKS} equal periods. The bootstrap resamples blocks whole, because requests
 * that run at the same time share the host's and the server's load (a pause of the host's event
 * loop delays every request in flight): they are not independent, and resampling them one by one
 * would take a busy moment of one run for a difference between the runs.
 */
import type { SampleSet } from "./compare-figures.js";
import type { ClusteredSample } from "./compare-stats.js";

/** Periods a run's records are cut into for the block bootstrap. */
const TIME_BLOCKS = 20;

/** One clustered sample per sample set. */
export type Samples = Record<SampleSet, ClusteredSample>;

interface Building {
  values: number[];
  clusters: number[];
}

/**
 * The sample sets of records.jsonl's parsed lines; lines of an unknown `type` or lacking a field
 * are skipped (a later report version may add lines).
 */
export function samplesFromRecords(records: readonly unknown[]): Samples {
  const lines = records.flatMap((line) =>
    typeof line === "object" && line !== null ? [line as Record<string, unknown>] : [],
  );
  const starts = lines.flatMap((line) => {
    const start = finite(line.startMs);
    return start === null ? [] : [start];
  });
  const first = Math.min(...starts);
  const span = Math.max(...starts) - first;
  const blockOf = (line: Record<string, unknown>) => {
    const start = finite(line.startMs) ?? first;
    return span > 0 ? Math.min(TIME_BLOCKS - 1, Math.floor(((start - first) / span) * TIME_BLOCKS)) : 0;
  };
  const sets: Record<SampleSet, Building> = {
    e2e: building(),
    ttft: building(),
    itl: building(),
    promptLatency: building(),
    promptRequests: building(),
    promptRetries: building(),
  };
  const add = (set: SampleSet, value: number | null, block: number) => {
    if (value === null) return;
    sets[set].values.push(value);
    sets[set].clusters.push(block);
  };
  for (const line of lines) {
    const block = blockOf(line);
    if (line.type === "request" && line.failure === undefined) {
      const e2e = finite(line.e2eMs);
      const ttft = finite(line.ttftMs);
      const tokens = finite(line.outputTokens);
      add("e2e", e2e, block);
      add("ttft", ttft, block);
      if (e2e !== null && ttft !== null && tokens !== null && tokens >= 2)
        add("itl", (e2e - ttft) / (tokens - 1), block);
    } else if (line.type === "prompt") {
      if (line.outcome === "succeeded") add("promptLatency", finite(line.latencyMs), block);
      add("promptRequests", finite(line.requests), block);
      add("promptRetries", finite(line.retries), block);
    }
  }
  return sets;
}

function building(): Building {
  return { values: [], clusters: [] };
}

function finite(value: unknown): number | null {
  return typeof value === "number" && Number.isFinite(value) ? value : null;
}
