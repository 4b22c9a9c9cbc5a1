/**
 * Every metric lifeline records, created once per host from its meter (B9). Names, units and
 * attributes are documented in docs/observability.md, one row per instrument: the GenAI semantic
 * conventions' instruments where they define one, and lifeline's own under the `lifeline.` prefix
 * for what they leave out (retry chains, budgets, gates, permits, workers). Units are UCUM, times in
 * seconds. No attribute ever holds a session id, a prompt or a key (cardinality, secrets).
 */
import type { Counter, Histogram, Meter } from "@opentelemetry/api";

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
  attempts: Counter;
  retryDelay: Histogram;
  chains: Counter;
  chainAttempts: Histogram;
  budgetRefusals: Counter;
  gateWaits: Counter;
  gateWaitDuration: Histogram;
  credentialRotations: Counter;
  workerExits: Counter;
  sessionRestores: Counter;
  promptDuration: Histogram;
  compactions: Counter;
  toolExecutions: Counter;
}

/** Creates the instruments on `meter`. */
export function createInstruments(meter: Meter): Instruments {
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
    attempts: meter.createCounter("lifeline.model.attempts", {
      unit: "{attempt}",
      description: "Model requests, by outcome, retry class and whether each was a first attempt or a retry.",
    }),
    retryDelay: seconds("lifeline.retry.delay", "Backoff a retry chain scheduled before its next attempt."),
    chains: meter.createCounter("lifeline.retry.chains", {
      unit: "{chain}",
      description: "Retry chains that ended, by how they ended (auto_retry_end.reason).",
    }),
    chainAttempts: meter.createHistogram("lifeline.retry.chain.attempts", {
      unit: "{attempt}",
      description: "Retries a chain made before it ended (auto_retry_end.attempt).",
      advice: { explicitBucketBoundaries: ATTEMPT_BUCKETS },
    }),
    budgetRefusals: meter.createCounter("lifeline.retry.budget.refusals", {
      unit: "{retry}",
      description: "Retries the host's retry budget refused (B8).",
    }),
    gateWaits: meter.createCounter("lifeline.provider_gate.waits", {
      unit: "{wait}",
      description: "Waits at a closed provider gate (B8), before a retry or a new prompt.",
    }),
    gateWaitDuration: seconds(
      "lifeline.provider_gate.wait.duration",
      "How long a closed provider gate held a session back: the gate's remaining time when it waited.",
    ),
    credentialRotations: meter.createCounter("lifeline.credential.rotations", {
      unit: "{rotation}",
      description: "Model attempts sent with another key than the session's previous one (R4).",
    }),
    workerExits: meter.createCounter("lifeline.worker.exits", {
      unit: "{worker}",
      description: "Worker threads that died or were terminated (X5, X8), by cause; each is replaced.",
    }),
    sessionRestores: meter.createCounter("lifeline.session.restores", {
      unit: "{restore}",
      description: "Sessions restored on a fresh worker after theirs died (X7), by how it ended.",
    }),
    promptDuration: seconds(
      "lifeline.prompt.duration",
      "A prompt from its start to agent_settled, retries, gate waits and compactions included.",
    ),
    compactions: meter.createCounter("lifeline.compactions", {
      unit: "{compaction}",
      description: "Compactions that ended (R1), by reason and outcome.",
    }),
    toolExecutions: meter.createCounter("lifeline.tool.executions", {
      unit: "{execution}",
      description: "Tool executions that ended, by whether the tool reported an error.",
    }),
  };
}
