/**
 * The contract between a load run (main) and the load tool it gives its sessions (the worker
 * module src/worker/load/load-tool.ts): the tool's name, which the built-in mock's tool calls
 * name too, and its behaviour as the plain data that crosses to the worker as the session's
 * `workerModuleOptions`.
 */
import { streamSeed } from "./prng.js";

/** The name of the load tool, and of the tool the built-in mock calls in a load run. */
export const LOAD_TOOL_NAME = "load_tool";

/** What one session's load tool does on each call. Plain data: it is structured-cloned to the worker. */
export interface LoadToolConfig {
  /** Time each call waits (a timer, as a tool waiting on I/O does), in ms. */
  latencyMs: number;
  /** Time each call keeps its worker thread busy in synchronous code, in ms. */
  cpuMs: number;
  /** Probability, in [0, 1], that a call throws, so the model gets an error result. */
  failureRate: number;
  /** The run's seed. */
  seed: number;
  /** The session's number in the run: each session rolls from its own stream of `seed`. */
  stream: number;
}

/**
 * The PRNG seed of session `session`'s load tool: stream `1 + session` of the run's seed (stream 0
 * is the mock's tool-call rolls), so each session rolls its own sequence whatever the others do.
 */
export function loadToolSeed(seed: number, session: number): number {
  return streamSeed(seed, 1 + session);
}

/**
 * `value` as a {@link LoadToolConfig}, or a sentence saying what is wrong with it. The worker
 * checks what it is given: a worker module's options are `unknown` on the wire.
 */
export function checkLoadToolConfig(value: unknown): LoadToolConfig | string {
  if (value === null || typeof value !== "object") return "the options must be an object";
  const config = value as Record<string, unknown>;
  const problems = [
    number(config.latencyMs, 0, Number.MAX_SAFE_INTEGER) ? undefined : "latencyMs (ms ≥ 0)",
    number(config.cpuMs, 0, Number.MAX_SAFE_INTEGER) ? undefined : "cpuMs (ms ≥ 0)",
    number(config.failureRate, 0, 1) ? undefined : "failureRate (0 to 1)",
    Number.isSafeInteger(config.seed) ? undefined : "seed (an integer)",
    Number.isSafeInteger(config.stream) ? undefined : "stream (an integer)",
  ].filter((problem) => problem !== undefined);
  if (problems.length > 0) return `bad or missing ${problems.join(", ")}`;
  return value as LoadToolConfig;
}

function number(value: unknown, min: number, max: number): boolean {
  return typeof value === "number" && Number.isFinite(value) && value >= min && value <= max;
}
