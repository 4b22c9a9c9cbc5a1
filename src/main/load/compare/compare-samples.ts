/**
 * The samples a comparison resamples, taken from records.jsonl's lines as report.json's figures
 * are taken from them (load-report.ts): request latencies of the requests that succeeded, prompt
 * latencies of the prompts that succeeded, requests and retries of every prompt.
 *
 * Each value carries its block: a sample set in order of start, cut into {@link BLOCKS} runs of
 * equal count (consecutive requests, so requests that ran at the same time share a block). The
 * bootstrap resamples blocks whole, because requests that run at the same time share the host's
 * and the server's load (a pause of the host's event loop delays every request in flight): they
 * are not independent, and resampling them one by one would take a busy moment of one run for a
 * difference between the runs. Equal counts, not equal periods: a run's first prompts all start
 * at once, and a block holding half the samples would make every resample a coin toss.
 */
import type { SampleSet } from "./compare-figures.js";
import type { ClusteredSample } from "./compare-stats.js";

/** Blocks each sample set is cut into for the block bootstrap. */
const BLOCKS = 20;

/** One clustered sample per sample set. */
export type Samples = Record<SampleSet, ClusteredSample>;

interface Building {
  values: number[];
  starts: number[];
}

/**
 * The sample sets of records.jsonl's parsed lines; lines of an unknown `type` or lacking a field
 * are skipped (a later report version may add lines).
 */
export function samplesFromRecords(records: readonly unknown[]): Samples {
  const sets: Record<SampleSet, Building> = {
    e2e: building(),
    ttft: building(),
    itl: building(),
    promptLatency: building(),
    promptRequests: building(),
    promptRetries: building(),
  };
  for (const line of records) {
    if (typeof line !== "object" || line === null) continue;
    const record = line as Record<string, unknown>;
    const start = finite(record.startMs) ?? 0;
    const add = (set: SampleSet, value: number | null) => {
      if (value === null) return;
      sets[set].values.push(value);
      sets[set].starts.push(start);
    };
    if (record.type === "request" && record.failure === undefined) {
      const e2e = finite(record.e2eMs);
      const ttft = finite(record.ttftMs);
      const tokens = finite(record.outputTokens);
      add("e2e", e2e);
      add("ttft", ttft);
      if (e2e !== null && ttft !== null && tokens !== null && tokens >= 2) add("itl", (e2e - ttft) / (tokens - 1));
    } else if (record.type === "prompt") {
      if (record.outcome === "succeeded") add("promptLatency", finite(record.latencyMs));
      add("promptRequests", finite(record.requests));
      add("promptRetries", finite(record.retries));
    }
  }
  const samples = {} as Samples;
  for (const [set, built] of Object.entries(sets) as [SampleSet, Building][]) samples[set] = blocked(built);
  return samples;
}

/** The values with their blocks: {@link BLOCKS} runs of equal count in order of start. */
function blocked(built: Building): ClusteredSample {
  const n = built.values.length;
  const order = Array.from({ length: n }, (_, i) => i).sort((x, y) => (built.starts[x] ?? 0) - (built.starts[y] ?? 0));
  const clusters = new Array<number>(n).fill(0);
  order.forEach((index, rank) => {
    clusters[index] = Math.floor((rank * BLOCKS) / n);
  });
  return { values: built.values, clusters };
}

function building(): Building {
  return { values: [], starts: [] };
}

function finite(value: unknown): number | null {
  return typeof value === "number" && Number.isFinite(value) ? value : null;
}
