/**
 * The fleet's queue of prompts (docs/fleet.md, "The queue of prompts"), as both sides see it: the
 * BullMQ queue's name and prefix, a job's data and result, the events a job streams, and the
 * options every job is added with. Written once here so `lifeline serve` (serve-fleet.ts) and the
 * client (fleet-client.ts) cannot disagree.
 *
 * Keys: BullMQ's under `lifeline:<name>:prompts:…` (its `prefix` option is `lifeline:<name>`), a
 * job's events under `lifeline:<name>:job:<jobId>:events`: every key starts with the fleet's
 * prefix, so two fleets on one Redis never see each other's jobs.
 */
import type { PromptResult, SessionEvent } from "../../shared/events.js";
import type { ThinkingLevel } from "../../shared/thinking.js";
import type { ModelRef } from "../../shared/wire/protocol.js";
import { fleetPrefix } from "../redis/fleet-connection.js";

/** The BullMQ queue's name. */
export const PROMPT_QUEUE = "prompts";

/** BullMQ's `prefix` option for fleet `name`: its keys then start with the fleet's prefix. */
export function queuePrefix(name: string): string {
  return fleetPrefix(name).slice(0, -1);
}

/** The Redis stream a job's events go to (see job-events.ts). */
export function jobEventsKey(name: string, jobId: string): string {
  return `${fleetPrefix(name)}job:${jobId}:events`;
}

/** What a prompt job carries. */
export interface PromptJobData {
  /** The session: opened from the fleet's store, or created with this id when it does not exist. */
  sessionId: string;
  text: string;
  /**
   * The session's model: `"provider/id"`, `{ provider, id }` or a pi-ai Model object (plain data).
   * A stored session keeps the model it last used unless a job names one. @default the host's default
   */
  model?: string | ModelRef;
  /** The session's thinking level; a stored session keeps its own unless a job names one. */
  thinkingLevel?: ThinkingLevel;
  /** For a new session: its system prompt. */
  systemPrompt?: string;
  /**
   * B9: the W3C `traceparent` of the span that was active where the prompt was submitted, so the
   * serving host's `invoke_agent` span continues the client's trace. Absent without tracing.
   */
  traceparent?: string;
}

/** What a prompt job resolves to: how the prompt ended (as `prompt()` resolves), and where. */
export interface PromptJobResult extends PromptResult {
  jobId: string;
  sessionId: string;
  /**
   * True when this delivery found the prompt already answered in the session (an earlier
   * delivery ran it and its host died before the queue heard) and returned the stored result.
   */
  replayed: boolean;
}

/**
 * What a job's event stream carries: the session's events while the job ran, and `job_taken`
 * each time a host takes the job (again, after a host died: `delivery` counts them).
 */
export type FleetEvent = SessionEvent | JobTakenEvent;

/** A host took the job: its first delivery, or a redelivery after the host running it died. */
export interface JobTakenEvent {
  type: "job_taken";
  jobId: string;
  /** `<hostname>/<pid>` of the serving process. */
  host: string;
  /** 1 for the first delivery, more for each takeover. */
  delivery: number;
}

/** How long a finished job (and its result) is kept for late waiters and re-submits, in s. */
const FINISHED_JOB_AGE_S = 3600;

/**
 * Options of every prompt job. `attempts`: how many times a job whose host failed it for want of
 * Redis or storage is tried again (a host's death is not an attempt: BullMQ's stalled check
 * hands the job on, see serve-fleet.ts). A prompt the model failed is a result, not a failure.
 */
export const JOB_OPTIONS = {
  attempts: 30,
  backoff: { type: "fixed", delay: 1000 },
  removeOnComplete: { age: FINISHED_JOB_AGE_S },
  removeOnFail: { age: FINISHED_JOB_AGE_S },
} as const;
