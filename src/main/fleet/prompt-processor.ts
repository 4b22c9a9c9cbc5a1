/**
 * What a serving host does with one prompt job (docs/fleet.md, "Guarantees"): opens the job's
 * session from the fleet's store (or creates it), runs the prompt in its workers, streams its
 * events, and resolves with its result. BullMQ delivers a job at least once (a host that dies
 * mid-prompt has its job handed to another after the stall interval), so each delivery makes the
 * job's effect on the transcript happen once, by the prompt's id (its job id) stored with it:
 *
 * - answered already (a `lifeline.prompt_end` for the id): the stored result, nothing runs;
 * - stored, its run cut off (its host died): `resumeRun()` finishes it by SPEC X7's rules (a tool
 *   call is never run again; the run is retried like a 503);
 * - not stored: the prompt is sent (`prompt(text, { id })`).
 *
 * One prompt at a time per session, fleet-wide, comes from the session's lease in the store: a
 * host that cannot open the session because another holds it moves the job back to BullMQ's
 * delayed set for (at most a quarter of) the lease's time left, and another delivery tries again.
 * Jobs of one session taken by the same host wait for each other here ({@link SessionSlots}); the
 * session stays open between them and is closed (its lease released) when none is left.
 */
import { hostname } from "node:os";
import { DelayedError, type Job, UnrecoverableError } from "bullmq";
import { LifelineError } from "../../shared/errors.js";
import type { PromptResult } from "../../shared/events.js";
import { errorText } from "../../shared/failures/error-text.js";
import type { ResumeOptions, SessionHost } from "../host/session-host.js";
import type { AgentSession } from "../session/agent-session.js";
import type { PromptJobData, PromptJobResult } from "./fleet-queue.js";
import type { JobEventsWriter } from "./job-events.js";
import type { ServeSessionOptions } from "./serve-options.js";

/** Errors no retry of the job can fix: the job fails at once (BullMQ's UnrecoverableError). */
const PERMANENT = new Set([
  "ERR_INVALID_OPTIONS",
  "ERR_INVALID_SETTINGS",
  "ERR_INVALID_MODELS",
  "ERR_UNKNOWN_MODEL",
  "ERR_MISSING_API_KEY",
  "ERR_WORKER_MODULE",
  "ERR_EXTENSION_LOAD",
]);

/** `<hostname>/<pid>`: who took a job, in its `job_taken` event. */
const HOST = `${hostname()}/${process.pid}`;

/** What the processor uses of its server. */
export interface PromptProcessorParts {
  host: SessionHost;
  /** The events writer of a job (job-events.ts). */
  events(jobId: string): JobEventsWriter;
  /** `fleet.leaseMs`: bounds how long a job waits for a session held elsewhere. */
  leaseMs: number;
  /** Options of every session the host opens (its tools' worker module). */
  session: ServeSessionOptions;
}

/** Runs one prompt job; BullMQ's processor. See the file comment. */
export class PromptProcessor {
  readonly #parts: PromptProcessorParts;
  readonly #slots = new SessionSlots();

  constructor(parts: PromptProcessorParts) {
    this.#parts = parts;
  }

  /** Sessions this host holds open (jobs running or waiting for them). */
  get openSessions(): number {
    return this.#slots.size;
  }

  /**
   * Processes `job`. Resolves with its result; a session held elsewhere moves the job to delayed
   * (throws DelayedError, as BullMQ asks); a permanent error throws UnrecoverableError; any other
   * error throws, and the job is tried again (JOB_OPTIONS.attempts).
   */
  async process(job: Job<PromptJobData, PromptJobResult>, token: string | undefined): Promise<PromptJobResult> {
    const jobId = job.id;
    if (jobId === undefined) throw new UnrecoverableError("A prompt job without an id.");
    const events = this.#parts.events(jobId);
    try {
      return await this.#slots.run(job.data.sessionId, async (slot) => {
        let session: AgentSession;
        try {
          slot.session ??= await openSession(this.#parts.host, job.data, this.#parts.session);
          session = slot.session;
        } catch (error) {
          throw await this.#notOpened(error, job, token);
        }
        events.push({ type: "job_taken", jobId, host: HOST, delivery: job.attemptsStarted });
        const off = session.subscribe((event) => events.push(event));
        try {
          // B9: the prompt's span continues the submitting client's trace.
          this.#parts.host.continueTrace(session.id, job.data.traceparent);
          const { result, replayed } = await runOnce(session, jobId, job.data.text);
          // The prompt's end entry is stored before the queue hears: a redelivery then replays it.
          await session.flushSession();
          // Not all of it stored (Redis was away too long, or the session was taken over): the job
          // is tried again, and the next delivery finishes it from what the store holds.
          const lost = session.storeError;
          if (lost !== undefined) throw lost;
          return { ...result, jobId, sessionId: session.id, replayed };
        } catch (error) {
          // The session is no use now (closed, fenced, its store away): the next delivery reopens it.
          slot.session = undefined;
          await session.dispose().catch(() => {});
          throw permanentOr(error);
        } finally {
          off();
        }
      });
    } finally {
      await events.close();
    }
  }

  /** Closes the sessions of slots nobody uses (there are none once every job has ended). */
  async close(): Promise<void> {
    await this.#slots.drain();
  }

  /** A session that could not be opened: delayed when held elsewhere, else the error to throw. */
  async #notOpened(error: unknown, job: Job, token: string | undefined): Promise<Error> {
    if (error instanceof LifelineError && error.code === "ERR_SESSION_LOCKED") {
      const leaseMs = this.#parts.leaseMs;
      const wait = Math.max(50, Math.min(error.retryAfterMs ?? leaseMs, leaseMs / 4));
      await job.moveToDelayed(Date.now() + wait, token);
      return new DelayedError();
    }
    return permanentOr(error);
  }
}

/** The prompt's effect, once: see the file comment. */
async function runOnce(
  session: AgentSession,
  jobId: string,
  text: string,
): Promise<{ result: PromptResult; replayed: boolean }> {
  const record = session.promptRecord(jobId);
  if (record?.result !== undefined) return { result: record.result, replayed: true };
  // Another job's prompt left cut off at the transcript's end (its host died, or its entries could
  // not be stored and it is waiting for its next delivery): finished first, so that each prompt is
  // followed by its own answer; that job's next delivery then finds the result stored and replays it.
  const unfinished = session.unfinishedPromptId;
  if (unfinished !== undefined && unfinished !== jobId) await session.resumeRun(unfinished);
  if (record !== undefined) {
    if (session.unfinishedPromptId !== jobId) {
      throw new UnrecoverableError(
        `${jobId}: the session holds this prompt, unanswered, but not at its end; it cannot be finished in place.`,
      );
    }
    return { result: await session.resumeRun(jobId), replayed: false };
  }
  return { result: await session.prompt(text, { id: jobId }), replayed: false };
}

/**
 * The job's session from the fleet's store, or a new one with its id. A resume that finds a
 * longer id (the store resolves unique prefixes) is not this session; one created meanwhile by
 * another host is resumed instead.
 */
async function openSession(
  host: SessionHost,
  data: PromptJobData,
  options: ServeSessionOptions,
): Promise<AgentSession> {
  // The host's model and level are a new session's defaults; a stored one keeps its own unless the job names one.
  const { model, thinkingLevel, ...common } = options;
  const resume: ResumeOptions = {
    ...common,
    ...(data.model === undefined ? {} : { model: data.model }),
    ...(data.thinkingLevel === undefined ? {} : { thinkingLevel: data.thinkingLevel }),
  };
  const resumed = await resumeExact(host, data.sessionId, resume);
  if (resumed !== undefined) return resumed;
  try {
    return await host.createSession({
      ...(model === undefined ? {} : { model }),
      ...(thinkingLevel === undefined ? {} : { thinkingLevel }),
      ...resume,
      sessionId: data.sessionId,
      ...(data.systemPrompt === undefined ? {} : { systemPrompt: data.systemPrompt }),
    });
  } catch (error) {
    if (!(error instanceof LifelineError && error.code === "ERR_SESSION_FILE")) throw error;
    const again = await resumeExact(host, data.sessionId, resume);
    if (again === undefined) throw error;
    return again;
  }
}

async function resumeExact(
  host: SessionHost,
  sessionId: string,
  options: ResumeOptions,
): Promise<AgentSession | undefined> {
  try {
    const session = await host.resumeSession(sessionId, options);
    if (session.id === sessionId) return session;
    await session.dispose();
    return undefined;
  } catch (error) {
    if (error instanceof LifelineError && error.code === "ERR_SESSION_NOT_FOUND") return undefined;
    throw error;
  }
}

function permanentOr(error: unknown): Error {
  if (error instanceof LifelineError && PERMANENT.has(error.code)) {
    return new UnrecoverableError(`${error.code}: ${error.message}`);
  }
  return error instanceof Error ? error : new Error(errorText(error));
}

/** One session's place on this host: its open session, and the jobs of it running or waiting. */
interface SessionSlot {
  session: AgentSession | undefined;
  users: number;
  tail: Promise<void>;
}

/**
 * The sessions a host has open for its jobs: jobs of one session run one after the other, in the
 * order the host took them; the session is disposed (its lease released, so another host can
 * take it) when its last job ends.
 */
class SessionSlots {
  readonly #slots = new Map<string, SessionSlot>();
  /** Sessions being disposed, by id: a new slot of the same session waits for its release. */
  readonly #closing = new Map<string, Promise<void>>();

  get size(): number {
    return this.#slots.size;
  }

  async run<T>(sessionId: string, work: (slot: SessionSlot) => Promise<T>): Promise<T> {
    let slot = this.#slots.get(sessionId);
    if (slot === undefined) {
      slot = { session: undefined, users: 0, tail: this.#closing.get(sessionId) ?? Promise.resolve() };
      this.#slots.set(sessionId, slot);
    }
    const own = slot;
    own.users++;
    const before = own.tail;
    let done: () => void = () => {};
    own.tail = new Promise<void>((resolve) => {
      done = resolve;
    });
    await before;
    try {
      return await work(own);
    } finally {
      own.users--;
      if (own.users === 0) {
        this.#slots.delete(sessionId);
        const session = own.session;
        own.session = undefined;
        if (session !== undefined) {
          const closing = session.dispose().catch(() => {});
          this.#closing.set(sessionId, closing);
          void closing.finally(() => {
            if (this.#closing.get(sessionId) === closing) this.#closing.delete(sessionId);
          });
        }
      }
      done();
    }
  }

  /** Resolves once every session closed so far is released. */
  async drain(): Promise<void> {
    await Promise.all([...this.#closing.values()]);
  }
}
