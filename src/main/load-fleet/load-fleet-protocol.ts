/**
 * The wire of a distributed load run (docs/load.md, "Distributed runs"): what a generator
 * (`lifeline load-agent`) registers, the commands a coordinator (`lifeline load --generators K`)
 * pushes to it, and the entries it appends to the run's stream. Written once, here, as
 * discriminated unions keyed by a snake_case `type`; everything travels as JSON in Redis under the
 * fleet's prefix (`lifeline:<name>:`):
 *
 * - `load:lock`: the run lock, {@link RunLockHolder}, `SET NX PX`, renewed by the coordinator.
 * - `load:agent:<id>`: a generator's registration, {@link AgentRegistration}, a lease (`SET PX`).
 * - `load:commands:<id>`: a list of {@link AgentCommand}s for that generator (`LPUSH` / `BLPOP`).
 * - `load:run:<runId>`: the run's stream of {@link RunEntry}s (`XADD` / `XREAD`), field `m`.
 */
import { LifelineError } from "../../shared/errors.js";
import type { LoadCounters } from "../load/metrics/load-metrics.js";
import type { SketchJson } from "../load/metrics/sketch.js";
import type { TimelinePoint } from "../load/metrics/timeline.js";
import type { LoadOptions } from "../load/options/load-options.js";
import type { LoadReport } from "../load/report/load-report.js";

/** Version of this wire; a generator of another one is refused like one of another lifeline version. */
export const LOAD_FLEET_PROTOCOL = 1;

/** A generator's registration lease lasts this long unless renewed. */
export const AGENT_LEASE_MS = 3000;
/** A generator renews its lease this often (three renewals per lease: one lost write is no loss). */
export const AGENT_RENEW_MS = 1000;

/** What a generator registers under `load:agent:<id>`. */
export interface AgentRegistration {
  /** `<hostname>-<pid>-<4 hex>`: unique per process. */
  id: string;
  host: string;
  pid: number;
  /** lifeline's package version. */
  version: string;
  /** The report.json schema it writes. */
  schema: string;
  protocol: number;
  /** `idle`: waits for a run; `busy`: runs `runId`. */
  state: "idle" | "busy";
  runId: string | null;
  /** When it joined, ms on Redis's clock. */
  joinedAtMs: number;
  /** Its clock's offset to Redis's (`redis − local`) and the estimate's error bound (half the best RTT), ms. */
  clockOffsetMs: number;
  clockErrorMs: number;
}

/** What the run lock `load:lock` holds. */
export interface RunLockHolder {
  runId: string;
  host: string;
  pid: number;
  /** ISO time on the coordinator's clock. */
  startedAt: string;
}

/**
 * The load options the coordinator keeps, each with why; a generator is handed every other field
 * of {@link LoadOptions} (split-load.ts), so a new load option reaches the generators unless it is
 * listed here. test/main/load-fleet/split-load.test.ts fails, at the type level, when a field a
 * generator would get is not plain data.
 */
export const COORDINATOR_ONLY = {
  apiKey: "a key never travels through Redis: each generator resolves its own (load-agent --api-key, its environment)",
  thresholds: "checked once, on the merged figures",
  outDir: "the coordinator writes the merged report",
  csv: "the coordinator writes the merged report's files",
  cwd: "each generator reads its settings and files from its own working directory",
  lifelineDir: "each generator reads its own user directory",
  workerEntry: "each generator runs its own worker script (load-agent --worker-entry)",
  telemetry: "the coordinator runs no session; each generator's host records its own",
  sweep: "refused: each step of a sweep is chosen from the target's answers to the last, which one process decides",
  signal: "this process's: each generator's run has its own, aborted by its stop command",
  onProgress: "this process's callback: the coordinator's progress comes from the generators' snapshots",
  progressIntervalMs: "this process's callback's pace",
  onSample: "this process's callback: each generator streams its own samples",
  beforeStart: "this process's callback: each generator waits for the run's common start itself",
} as const satisfies Partial<Record<keyof LoadOptions, string>>;

/** The load options a generator is handed: every field of {@link LoadOptions} but {@link COORDINATOR_ONLY}. */
export type ShareOptions = Omit<LoadOptions, keyof typeof COORDINATOR_ONLY>;

/** A generator's part of a run. */
export interface RunShare {
  /** 0-based position of the generator in the run. */
  index: number;
  /** Generators in the run. */
  generators: number;
  /** When to start, ms on Redis's clock: the same instant for every generator. */
  startAtMs: number;
  options: ShareOptions;
}

/** Commands on `load:commands:<id>`. */
export type AgentCommand =
  | { type: "run_start"; runId: string; share: RunShare }
  | { type: "run_stop"; runId: string; reason: string };

/** Cumulative sketches a snapshot carries (over the requests that succeeded so far). */
interface SnapshotSketches {
  e2eMs: SketchJson;
  ttftMs: SketchJson;
}

/** Entries of the run stream `load:run:<runId>`; `gen` is the generator's id, `atMs` Redis time. */
export type RunEntry =
  | { type: "run_accepted"; gen: string; atMs: number }
  | {
      type: "snapshot";
      gen: string;
      seq: number;
      atMs: number;
      counters: LoadCounters;
      point: TimelinePoint;
      sketches: SnapshotSketches;
    }
  | { type: "records"; gen: string; chunk: number; lines: string }
  | {
      type: "run_final";
      gen: string;
      atMs: number;
      /** When its run began, ms on Redis's clock (its report's `startedAt` shifted by its offset). */
      startedAtMs: number;
      report: LoadReport;
      /** `records` entries sent before this one. */
      chunks: number;
    }
  | { type: "run_failed"; gen: string; atMs: number; code: string; message: string };

/** Records per `records` entry. */
export const RECORDS_PER_CHUNK = 1000;

/** Keys of one fleet's distributed load runs; `key` is the fleet connection's `key()`. */
export function loadKeys(key: (...parts: string[]) => string) {
  return {
    lock: key("load", "lock"),
    agent: (id: string) => key("load", "agent", id),
    agentPattern: key("load", "agent", "*"),
    commands: (id: string) => key("load", "commands", id),
    run: (runId: string) => key("load", "run", runId),
  };
}

/** Parses one JSON message, checking its `type` is one of `types`. @throws ERR_PROTOCOL otherwise. */
export function decodeMessage<T extends { type: string }>(raw: string, types: readonly T["type"][], what: string): T {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw new LifelineError("ERR_PROTOCOL", `A ${what} is not JSON: ${raw.slice(0, 80)}`);
  }
  const type = (value as { type?: unknown } | null)?.type;
  if (typeof type !== "string" || !(types as readonly string[]).includes(type)) {
    throw new LifelineError(
      "ERR_PROTOCOL",
      `A ${what} has an unknown type ${JSON.stringify(type)}; is every machine on the same lifeline version?`,
    );
  }
  return value as T;
}

/** Parses a registration, or undefined for one that is not (a foreign key under the prefix). */
export function decodeRegistration(raw: string | null): AgentRegistration | undefined {
  if (raw === null) return undefined;
  try {
    const value = JSON.parse(raw) as Partial<AgentRegistration> | null;
    if (typeof value?.id !== "string" || typeof value.version !== "string") return undefined;
    return value as AgentRegistration;
  } catch {
    return undefined;
  }
}
