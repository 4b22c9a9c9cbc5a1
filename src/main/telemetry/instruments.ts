/**
 * Every metric lifeline records, created once per meter (B9) and shared by every host recording
 * into that meter. Names, units and attributes are documented in docs/observability.md, one row
 * per instrument: the GenAI semantic conventions' instruments where they define one, and
 * lifeline's own under the `lifeline.` prefix for what they leave out (retry chains, budgets,
 * gates, permits, workers). Units are UCUM, times in seconds. No attribute ever holds a session
 * id, a prompt or a key (cardinality, secrets).
 *
 * Counters are {@link TalliedCounter}s: counted in plain numbers, observed at collection. They are
 * per meter, not per host, because an observable counter's value is the whole count of its
 * attribute set: two hosts observing the same set separately would each report only their own.
 */
import type { Histogram, Meter } from "@opentelemetry/api";
import { ModelSeriesTable } from "./model-series.js";
import { TalliedCounter } from "./tallied-counter.js";

/** Bucket boundaries the GenAI conventions give for their duration histograms, in s. */
const DURATION_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];
/** The GenAI conventions' boundaries for the time per output token or chunk, in s. */
const CHUNK_BUCKETS = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5];
/** The GenAI conventions' boundaries for token counts. */
const TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864];
/** Attempts per retry chain: `retry.maxRetries` is small. */
const ATTEMPT_BUCKETS = [1, 2, 3, 4, 5, 6, 8, 10, 15, 20];

/** The instruments recorded from session events and host callbacks. */
export interface Instruments {
  operationDuration: Histogram;
  tokenUsage: Histogram;
  timeToFirstChunk: Histogram;
  timePerOutputChunk: Histogram;
  /** The attribute sets of each (provider, model)'s request metrics, made once, and its `lifeline.model.attempts`. */
  models: ModelSeriesTable;
  retryDelay: Histogram;
  chains: TalliedCounter;
  chainAttempts: Histogram;
  budgetRefusals: TalliedCounter;
  gateWaits: TalliedCounter;
  gateWaitDuration: Histogram;
  credentialRotations: TalliedCounter;
  workerExits: TalliedCounter;
  sessionRestores: TalliedCounter;
  promptDuration: Histogram;
  compactions: TalliedCounter;
  toolExecutions: TalliedCounter;
}

const byMeter = new WeakMap<Meter, Instruments>();

/** The instruments of `meter`, created on its first use (see the file comment). */
export function instrumentsOf(meter: Meter): Instruments {
  let instruments = byMeter.get(meter);
  if (instruments === undefined) {
    instruments = createInstruments(meter);
    byMeter.set(meter, instruments);
  }
  return instruments;
}

function createInstruments(meter: Meter): Instruments {
  const counter = (name: string, unit: string, description: string) =>
    new TalliedCounter(meter, name, { unit, description });
  const attempts = counter(
    "lifeline.model.attempts",
    "{attempt}",
    "Model requests, by outcome, retry class and whether each was a first attempt or a retry.",
  );
  const seconds = (name: string, description: string, boundaries = DURATION_BUCKETS) =>
    meter.createHistogram(name, { unit: "s", description, advice: { explicitBucketBoundaries: boundaries } });
  return {
    operationDuration: seconds(
      "gen_ai.client.operation.duration",
      "GenAI operation duration: one model request (attempt), from its start in the worker to its end.",
    ),
    tokenUsage: meter.createHistogram("gen_ai.client.token.usage", {
      unit: "{token}",
      description: "Input and output tokens a model request used, as the provider reported them.",
      advice: { explicitBucketBoundaries: TOKEN_BUCKETS },
    }),
    timeToFirstChunk: seconds(
      "gen_ai.client.operation.time_to_first_chunk",
      "Time from a streamed model request's start to its first chunk.",
    ),
    timePerOutputChunk: seconds(
      "gen_ai.client.operation.time_per_output_chunk",
      "Time between consecutive chunks of a streamed model request, recorded for each chunk after the first.",
      CHUNK_BUCKETS,
    ),
    models: new ModelSeriesTable(attempts),
    retryDelay: seconds("lifeline.retry.delay", "Backoff a retry chain scheduled before its next attempt."),
    chains: counter(
      "lifeline.retry.chains",
      "{chain}",
      "Retry chains that ended, by how they ended (auto_retry_end.reason).",
    ),
    chainAttempts: meter.createHistogram("lifeline.retry.chain.attempts", {
      unit: "{attempt}",
      description: "Retries a chain made before it ended (auto_retry_end.attempt).",
      advice: { explicitBucketBoundaries: ATTEMPT_BUCKETS },
    }),
    budgetRefusals: counter(
      "lifeline.retry.budget.refusals",
      "{retry}",
      "Retries the host's retry budget refused (B8).",
    ),
    gateWaits: counter(
      "lifeline.provider_gate.waits",
      "{wait}",
      "Waits at a closed provider gate (B8), before a retry or a new prompt.",
    ),
    gateWaitDuration: seconds(
      "lifeline.provider_gate.wait.duration",
      "How long a closed provider gate held a session back: the gate's remaining time when it waited.",
    ),
    credentialRotations: counter(
      "lifeline.credential.rotations",
      "{rotation}",
      "Model attempts sent with another key than the session's previous one (R4).",
    ),
    workerExits: counter(
      "lifeline.worker.exits",
      "{worker}",
      "Worker threads that died or were terminated (X5, X8), by cause; each is replaced.",
    ),
    sessionRestores: counter(
      "lifeline.session.restores",
      "{restore}",
      "Sessions restored on a fresh worker after theirs died (X7), by how it ended.",
    ),
    promptDuration: seconds(
      "lifeline.prompt.duration",
      "A prompt from its start to agent_settled, retries, gate waits and compactions included.",
    ),
    compactions: counter("lifeline.compactions", "{compaction}", "Compactions that ended (R1), by reason and outcome."),
    toolExecutions: counter(
      "lifeline.tool.executions",
      "{execution}",
      "Tool executions that ended, by whether the tool reported an error.",
    ),
  };
}
