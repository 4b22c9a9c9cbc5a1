/**
 * The samples a comparison resamples, taken from records.jsonl's lines as report.json's figures
 * are taken from them (load-report.ts): request latencies of the requests that succeeded, prompt
 * latencies of the prompts that succeeded, requests and retries of every prompt.
 */
import type { SampleSet } from "./compare-figures.js";

/** One array of values per sample set. */
export type Samples = Record<SampleSet, number[]>;

/**
 * The sample sets of records.jsonl's parsed lines; lines of an unknown `type` or lacking a field
 * are skipped (a later report version may add lines).
 */
export function samplesFromRecords(records: readonly unknown[]): Samples {
  const samples: Samples = { e2e: [], ttft: [], itl: [], promptLatency: [], promptRequests: [], promptRetries: [] };
  for (const line of records) {
    if (typeof line !== "object" || line === null) continue;
    const record = line as Record<string, unknown>;
    if (record.type === "request" && record.failure === undefined) {
      const e2e = finite(record.e2eMs);
      const ttft = finite(record.ttftMs);
      const tokens = finite(record.outputTokens);
      if (e2e !== null) samples.e2e.push(e2e);
      if (ttft !== null) samples.ttft.push(ttft);
      if (e2e !== null && ttft !== null && tokens !== null && tokens >= 2)
        samples.itl.push((e2e - ttft) / (tokens - 1));
    } else if (record.type === "prompt") {
      const latency = finite(record.latencyMs);
      const requests = finite(record.requests);
      const retries = finite(record.retries);
      if (record.outcome === "succeeded" && latency !== null) samples.promptLatency.push(latency);
      if (requests !== null) samples.promptRequests.push(requests);
      if (retries !== null) samples.promptRetries.push(retries);
    }
  }
  return samples;
}

function finite(value: unknown): number | null {
  return typeof value === "number" && Number.isFinite(value) ? value : null;
}
