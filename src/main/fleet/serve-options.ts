/**
 * The options of {@link serveFleet} (serve-fleet.ts), in a module of their own so that the CLI can
 * show their defaults without loading BullMQ.
 */
import type { SessionOptions } from "../host/host-options.js";

/**
 * Options of every session a serving host opens or resumes: a worker module whose `setup()` gives
 * the sessions their tools, and its options; a new session's model, thinking level and key when
 * its job names none (a stored session keeps the model and level it has).
 */
export type ServeSessionOptions = Pick<
  SessionOptions,
  "workerModule" | "workerModuleOptions" | "model" | "thinkingLevel" | "apiKey"
>;

/** Options of `serveFleet`. */
export interface ServeOptions {
  /** Prompt jobs this host runs at once (over all its sessions). @default 16 */
  concurrency?: number;
  /**
   * Options of every session this host opens (see {@link ServeSessionOptions}). Every host of a
   * fleet should serve the same tools.
   */
  session?: ServeSessionOptions;
}

/** Defaults of {@link ServeOptions}. */
export const SERVE_DEFAULTS = {
  /** Prompts mostly wait on their model: many run well on a few worker threads. */
  concurrency: 16,
} as const;
