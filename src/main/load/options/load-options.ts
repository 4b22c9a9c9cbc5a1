/**
 * The options of {@link runLoad}: one type, one defaults object, one schema (STYLE 9). The CLI's
 * flags are turned into these by the CLI (cli/groups/load-flags.ts); a program passes them directly.
 */
import * as z from "zod";
import type { SettingsInput } from "../../../shared/settings/settings.js";
import type { ThinkingLevel } from "../../../shared/thinking.js";
import { fn, settingsObject, thinkingLevelSchema, timerMs, validate } from "../../config/option-schemas.js";
import type { TelemetryOptions } from "../../telemetry/telemetry-options.js";
import type { LoadCounters, LoadProgress, RequestRecord } from "../metrics/load-metrics.js";
import type { TimelinePoint } from "../metrics/timeline.js";
import { parseThreshold, type Threshold } from "../verdicts/thresholds.js";
import { FAULT_KINDS, type FaultKind } from "./load-defaults.js";
import type { LoadToolBehaviour, MockTools } from "./load-tools.js";
import {
  type ArrivalOptions,
  arrivalSchema,
  openModelProblems,
  type SweepOptions,
  sweepSchema,
} from "./open-options.js";

/**
 * What `onSample` is handed every `sampleIntervalMs`: the timeline point just taken, the running
 * counters and the request records so far. The counters and the records are the run's own, live:
 * read them during the call (the records only grow, so an index remembers what was read), never
 * change them.
 */
export interface LoadSample {
  point: TimelinePoint;
  counters: Readonly<LoadCounters>;
  requests: readonly RequestRecord[];
}

// FAULT_KINDS and LOAD_DEFAULTS live in load-defaults.ts, which the CLI's help loads without zod.
export { type FaultKind, LOAD_DEFAULTS } from "./load-defaults.js";

/** One fault of the built-in mock: an HTTP status (400–599) or a step kind, and its probability. */
export interface LoadFault {
  step: number | FaultKind;
  /** For a status: a retry hint sent with it (`retry-after-ms`), as a provider's 429 or 529 carries. */
  retryAfterMs?: number;
  /** Probability per request, in [0, 1]; the probabilities of a run add up to at most 1. */
  probability: number;
}

/**
 * Options of {@link runLoad}. Only `sessions` and one of `prompts`/`durationMs` are required (in
 * the open model, `arrival` or `sweep` instead).
 */
export interface LoadOptions {
  /** Concurrent sessions. In the open model and the sweep: the most conversations open at once (the cap). */
  sessions: number;
  /**
   * Prompts each session sends, one after another. With `durationMs`, whichever ends first ends the
   * run. In the open model and the sweep: prompts per conversation. @default 1 in the open model
   */
  prompts?: number;
  /** Length of the run in ms; sessions keep prompting until then (or until `prompts` are sent). */
  durationMs?: number;
  /**
   * `"provider/id"` of a real endpoint, resolved as the host resolves any model (models.json,
   * environment keys). @default the built-in mock server, started in a worker thread of its own
   */
  model?: string;
  /** Key for `model`'s provider. @default models.json, else the provider's environment variable */
  apiKey?: string;
  /**
   * Every load session's thinking level (clamped to what the model supports, as any session's).
   * @default the settings' defaultThinkingLevel
   */
  thinkingLevel?: ThinkingLevel;
  /** Faults of the built-in mock (refused with `model`). @default none */
  faults?: readonly LoadFault[];
  /** Seed of the mock's fault PRNG. @default 0 */
  seed?: number;
  /** Threshold expressions such as `"p99_latency_ms<8000"` (see thresholds.ts). @default none */
  thresholds?: readonly string[];
  /**
   * Service-level objective, such as `"ttft<=500ms,itl<=50ms,e2e<=10s"` (slo.ts): report.json
   * `slo` gives its attainment and goodput. @default none (`slo` is null)
   */
  slo?: string;
  /**
   * Folder for report.json, report.html and records.jsonl; created if missing. `false` writes
   * nothing. @default `lifeline-load-<timestamp>` in `cwd`
   */
  outDir?: string | false;
  /** Also write records.csv and summary.csv into `outDir` (see docs/load.md). @default false */
  csv?: boolean;
  /** Sessions start evenly spread over this many ms. @default 0 (all at once) */
  rampUpMs?: number;
  /** Most prompts in flight at once across all sessions. @default `sessions` */
  concurrency?: number;
  /** Prompt texts, used round-robin across the run. @default generated, one distinct text per prompt */
  promptTexts?: readonly string[];
  /**
   * One conversation per session (session i sends `conversations[i % length]`): its turns in
   * order, from the first again when the session sends more prompts than it has. Not with
   * `promptTexts`. @default none
   */
  conversations?: readonly (readonly string[])[];
  /**
   * This run's slice of `promptTexts` and `conversations`: session (or, in the open model,
   * conversation) i plays conversation `offset + i × stride`, and the n-th text sent is
   * `promptTexts[offset + n × stride]` (both modulo their length). A distributed run gives each
   * generator its own (load-fleet/split-load.ts), so that the target does not see K copies of
   * the same conversations at the same point. @default { offset: 0, stride: 1 }
   */
  promptSlice?: PromptSlice;
  /**
   * The load tool, `load_tool`, which every session then gets in its worker: its wait, CPU work
   * and failure rate per call (load-tools.ts). Set with `mock.tools` for the mock to call it; a
   * real `model` may call it too. @default no tool, unless `mock.tools` is set
   */
  tools?: LoadToolBehaviour;
  /** Pause of a session between the end of one prompt and its next. @default 0 */
  thinkTimeMs?: number;
  /** Worker threads of the host. @default the host's default */
  threads?: number;
  /**
   * Settings over the settings files, for every load session (the CLI's `--retry-budget`,
   * `--coordinate`, `--max-concurrent` and `--idle-timeout` land here). Against the built-in mock,
   * `retry.provider.idleTimeoutMs` defaults to max(5 s, 50 × `mock.tokenDelayMs`) when neither
   * these nor the settings files set it (mock-idle-timeout.ts). @default none
   */
  settings?: SettingsInput;
  /** The built-in mock's answers: word tokens per answer and the pause between them. @default 32 tokens, 5 ms */
  mock?: {
    tokens?: number;
    tokenDelayMs?: number;
    /** A provider-wide limit: at most `requests` per `windowMs`, the others get a 429 with the time left. */
    rateLimit?: { requests: number; windowMs: number };
    /** Tool calls of the load tool instead of text, with this probability per turn (load-tools.ts). */
    tools?: MockTools;
  };
  /** Base of relative paths and of the default `outDir`; the project settings are read from here. @default process.cwd() */
  cwd?: string;
  /** As the host option: the user directory of settings.json and models.json; `false` reads neither. */
  lifelineDir?: string | false;
  /** As the host option: the worker script. */
  workerEntry?: string | URL;
  /** As the host option (B9): where the load host records metrics and spans (`--metrics-port`'s provider). */
  telemetry?: TelemetryOptions | false;
  /** The open model: conversations arriving at a rate or over stages (open-options.ts). @default the closed model */
  arrival?: ArrivalOptions;
  /** A sweep of rates from a synchronous baseline to a throughput probe (open-options.ts, sweep.ts). */
  sweep?: SweepOptions;
  /** Aborting it stops the run: prompts in flight are aborted and a partial report is written. */
  signal?: AbortSignal;
  /** Called every `progressIntervalMs` with live counters, and once at the end. */
  onProgress?: (progress: LoadProgress) => void;
  /** @default 1000 */
  progressIntervalMs?: number;
  /** Spacing of the report's time series (concurrency, loop delay, retries over time). @default 1000 */
  sampleIntervalMs?: number;
  /**
   * Called on the main thread at each timeline sample but the first and the last (every
   * `sampleIntervalMs`), synchronously: a distributed run's generator streams its snapshots from
   * here (load-fleet/). It must not throw. @default none
   */
  onSample?: (sample: LoadSample) => void;
  /**
   * Awaited once the run is set up (its mock; its host, whose worker a first session started; in
   * the closed model, its sessions),
   * right before the load begins; the run's clock starts after it. A distributed run's generator
   * waits here for the run's common start instant, so that how long each machine takes to set up
   * does not skew when the generators' loads begin. It must not reject; an abort of `signal`
   * while it waits ends the run at once. @default none
   */
  beforeStart?: () => Promise<void>;
}

/** See {@link LoadOptions.promptSlice}. */
export interface PromptSlice {
  offset: number;
  stride: number;
}

/** The index into `promptTexts` or `conversations` of item `n` of a run with `slice`. */
export function sliceIndex(slice: PromptSlice | undefined, n: number): number {
  return slice === undefined ? n : slice.offset + n * slice.stride;
}

const count = (max: number) => z.number().int().min(1).max(max);

const faultSchema = z.strictObject({
  step: z.union([z.number().int().min(400).max(599), z.enum(FAULT_KINDS)], {
    error: `must be an HTTP status from 400 to 599 or one of ${FAULT_KINDS.join(", ")}`,
  }),
  probability: z.number().min(0).max(1),
  retryAfterMs: timerMs(0).optional(),
});

const loadOptionsSchema = z
  .strictObject({
    sessions: count(100_000),
    prompts: count(1_000_000).optional(),
    durationMs: timerMs(1).optional(),
    model: z
      .string()
      .regex(/^[^/\s]+\/\S+$/, 'use "provider/id", for example "openai/gpt-4o-mini"')
      .optional(),
    apiKey: z.string().min(1).optional(),
    thinkingLevel: thinkingLevelSchema.optional(),
    faults: z
      .array(faultSchema)
      .refine((faults) => faults.reduce((sum, fault) => sum + fault.probability, 0) <= 1 + 1e-9, {
        message: "the probabilities add up to more than 1",
      })
      .optional(),
    seed: z.number().int().optional(),
    thresholds: z.array(z.string()).optional(),
    slo: z.string().optional(),
    outDir: z.union([z.string().min(1), z.literal(false)]).optional(),
    csv: z.boolean().optional(),
    rampUpMs: timerMs(0).optional(),
    concurrency: count(100_000).optional(),
    promptTexts: z.array(z.string().min(1)).min(1).optional(),
    conversations: z
      .array(z.array(z.string().min(1)).min(1))
      .min(1)
      .optional(),
    promptSlice: z.strictObject({ offset: z.number().int().min(0), stride: z.number().int().min(1) }).optional(),
    tools: z
      .strictObject({
        latencyMs: timerMs(0).optional(),
        cpuMs: timerMs(0).optional(),
        failureRate: z.number().min(0).max(1).optional(),
      })
      .optional(),
    thinkTimeMs: timerMs(0).optional(),
    threads: z.number().int().min(1).max(64).optional(),
    settings: settingsObject.optional(),
    mock: z
      .strictObject({
        tokens: count(100_000).optional(),
        tokenDelayMs: timerMs(0).optional(),
        rateLimit: z.strictObject({ requests: count(1_000_000), windowMs: timerMs(1) }).optional(),
        tools: z
          .strictObject({
            probability: z.number().min(0).max(1),
            calls: count(64).optional(),
            maxTurns: count(1000).optional(),
          })
          .optional(),
      })
      .optional(),
    cwd: z.string().min(1).optional(),
    lifelineDir: z.union([z.string().min(1), z.literal(false)]).optional(),
    workerEntry: z.union([z.string().min(1), z.instanceof(URL)]).optional(),
    signal: z.instanceof(AbortSignal).optional(),
    // Its content is checked by createSessionHost, as the host option's.
    telemetry: z
      .union([z.literal(false), z.custom<object>((value) => value !== null && typeof value === "object")])
      .optional(),
    onProgress: fn.optional(),
    onSample: fn.optional(),
    beforeStart: fn.optional(),
    progressIntervalMs: timerMs(10).optional(),
    sampleIntervalMs: timerMs(10).optional(),
    arrival: arrivalSchema.optional(),
    sweep: sweepSchema.optional(),
  })
  .refine(
    (options) =>
      options.prompts !== undefined ||
      options.durationMs !== undefined ||
      options.arrival !== undefined ||
      options.sweep !== undefined,
    { message: "give prompts (per session), durationMs, or both" },
  )
  .superRefine((options, context) => {
    for (const [field, message] of openModelProblems(options))
      context.addIssue({ code: "custom", path: [field], message });
  })
  .refine((options) => options.model === undefined || (options.faults ?? []).length === 0, {
    message: "faults apply to the built-in mock only; leave them out with model",
  })
  .refine((options) => options.promptTexts === undefined || options.conversations === undefined, {
    message: "give promptTexts or conversations, not both",
  })
  .refine((options) => options.model === undefined || options.mock === undefined, {
    message: "mock configures the built-in mock only; leave it out with model",
  });

/**
 * Validates `options` and parses the thresholds.
 * @throws ERR_INVALID_OPTIONS naming each bad field; a bad threshold names its expression.
 */
export function checkLoadOptions(options: LoadOptions): Threshold[] {
  validate(loadOptionsSchema, options, "runLoad options");
  return (options.thresholds ?? []).map(parseThreshold);
}
