/**
 * The load run's constants that the CLI's help shows (defaults, the mock's fault kinds), in a
 * module of their own without the options' schemas: `lifeline --help` and `lifeline load --help`
 * load them without zod. load-options.ts and open-options.ts re-export them.
 */

/** A step kind the built-in mock can be told to fail with (see docs/mock-server.md). */
export const FAULT_KINDS = ["reset", "cut", "stall", "stream_error", "context_overflow", "usage_limit"] as const;
/** One of {@link FAULT_KINDS}. */
export type FaultKind = (typeof FAULT_KINDS)[number];

/** Defaults of the optional numeric options. */
export const LOAD_DEFAULTS = {
  seed: 0,
  rampUpMs: 0,
  thinkTimeMs: 0,
  mockTokens: 32,
  mockTokenDelayMs: 5,
  progressIntervalMs: 1000,
  sampleIntervalMs: 1000,
} as const;

/** Defaults of the open model and the sweep. */
export const OPEN_DEFAULTS = {
  process: "constant",
  onCap: "drop",
  sweepRates: 5,
  sweepStepMs: 20_000,
  /** Prompts per conversation in the open model and the sweep. */
  promptsPerArrival: 1,
} as const;
