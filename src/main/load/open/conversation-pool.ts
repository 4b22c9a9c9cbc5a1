/**
 * The open model's conversations: each arrival opens a fresh session, sends its prompts one after
 * another (each sees the answers before it), and closes the session. A cap bounds how many are open
 * at once; an arrival that finds it reached is dropped or queued (`onCap`), and counted either way,
 * so no arrival is lost without a trace. Main thread; the clock is injected.
 *
 * Why a fresh session per arrival rather than an idle one from a pool: a session keeps its
 * conversation, and a reused one would send every earlier answer again with each new
 * conversation (input tokens, and cost on a real model, growing with the run); opening a session
 * costs the host about 75 µs of main-thread time (docs/performance.md, (d)), little beside a
 * model request.
 */
import type { AgentSession } from "../../session/agent-session.js";
import type { RunMeter } from "../metrics/run-meter.js";
import type { OnCap } from "../options/open-options.js";
import type { ArrivalCounts } from "./arrival-report.js";

/** Counts of one step (or of a whole open run): what happened to its arrivals. */
export function emptyCounts(): ArrivalCounts {
  return { offered: 0, started: 0, dropped: 0, delayed: 0, unstarted: 0, completed: 0, failed: 0, cancelled: 0 };
}

/** What a {@link ConversationPool} needs from the run. */
export interface PoolSetup {
  /** Opens conversation `n`'s fresh session (the host's `createSession`, with the run's model and key). */
  open: (conversation: number) => Promise<AgentSession>;
  meter: RunMeter;
  /** ms since the run began. */
  now: () => number;
  /** Prompts per conversation. */
  prompts: number;
  /** Pause between a conversation's prompts; sleeps until then or `false` when the step ends. */
  think: (signal: AbortSignal) => Promise<boolean>;
  /** The text of a conversation's prompt. */
  text: (conversation: number, prompt: number) => string;
  /** Most conversations open at once. */
  cap: number;
  onCap: OnCap;
}

interface Queued {
  dueMs: number;
  counts: ArrivalCounts;
}

/** Runs conversations under a cap; see the file comment. */
export class ConversationPool {
  readonly #setup: PoolSetup;
  readonly #open = new Set<AgentSession>();
  readonly #queue: Queued[] = [];
  /** Start − scheduled time of arrivals that did not wait for the cap. */
  readonly scheduleLagMs: number[] = [];
  /** Start − scheduled time of arrivals that waited for the cap. */
  readonly capWaitMs: number[] = [];
  #inFlight = 0;
  #next = 0;
  #step = new AbortController();
  #accepting = false;
  #idle: (() => void) | undefined;

  constructor(setup: PoolSetup) {
    this.#setup = setup;
  }

  /** Conversations open now (a session being opened included). */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** A new step begins: conversations it starts are cut by the next {@link endStep}. */
  beginStep(): void {
    this.#step = new AbortController();
    this.#accepting = true;
  }

  /**
   * No new arrival or lane conversation starts; those open go on (and queued arrivals still take
   * the places they free) until {@link endStep}. A sweep drains its steps this way.
   */
  stopArrivals(): void {
    this.#accepting = false;
  }

  /**
   * An arrival scheduled at `dueMs` (ms since the run began), taken now: started at once if
   * under the cap, else dropped or queued per `onCap`. Counted in `counts`.
   */
  arrive(dueMs: number, counts: ArrivalCounts): void {
    if (!this.#accepting) return;
    counts.offered++;
    if (this.#inFlight < this.#setup.cap) {
      this.scheduleLagMs.push(Math.max(0, this.#setup.now() - dueMs));
      this.#start(counts);
    } else if (this.#setup.onCap === "drop") {
      counts.dropped++;
    } else {
      // Counted as delayed once it starts (#ended), as unstarted if the step ends first.
      this.#queue.push({ dueMs, counts });
    }
  }

  /**
   * Runs conversations back to back, one at a time, until the step ends: a lane of the closed
   * baseline and probe. Each counts as offered and started.
   */
  async lane(counts: ArrivalCounts): Promise<void> {
    const step = this.#step.signal;
    while (this.#accepting && !step.aborted) {
      counts.offered++;
      await this.#converse(counts, step);
    }
  }

  /** Resolves once no conversation is open (now, or when the last one ends). */
  idle(): Promise<void> {
    if (this.#inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => {
      this.#idle = resolve;
    });
  }

  /**
   * The step ends: queued arrivals are counted unstarted, no conversation starts, and those open
   * are aborted (their prompts count as cancelled). Resolves once all have ended.
   */
  async endStep(): Promise<void> {
    this.#accepting = false;
    this.#step.abort();
    for (const queued of this.#queue.splice(0)) queued.counts.unstarted++;
    for (const session of this.#open) void session.abort().catch(() => {});
    await this.idle();
  }

  #start(counts: ArrivalCounts): void {
    this.#inFlight++;
    void this.#converse(counts, this.#step.signal, true);
  }

  /**
   * One conversation; `counted` when {@link #start} already counted it in flight. Every started
   * conversation leaves at least one prompt record, so that records.jsonl accounts for each: when
   * its session cannot be opened, or the step ends before its first prompt goes out, that prompt
   * is recorded as failed (with the opening's error) or cancelled, with no request.
   */
  async #converse(counts: ArrivalCounts, step: AbortSignal, counted = false): Promise<void> {
    if (!counted) this.#inFlight++;
    counts.started++;
    const index = this.#next++;
    const { meter, now } = this.#setup;
    const begunMs = now();
    let failed = false;
    let succeeded = 0;
    let recorded = false;
    let openError: unknown;
    let session: AgentSession | undefined;
    try {
      session = await this.#setup.open(index);
      this.#open.add(session);
      const own = session;
      const unsubscribe = own.subscribe((event) => meter.onEvent(index, event));
      try {
        for (let sent = 0; sent < this.#setup.prompts && !step.aborted; sent++) {
          if (sent > 0 && !(await this.#setup.think(step))) break;
          const start = now();
          meter.promptStarted(index);
          let record: ReturnType<RunMeter["promptEnded"]>;
          try {
            record = meter.promptEnded(
              index,
              start,
              { result: await own.prompt(this.#setup.text(index, sent)) },
              step.aborted,
            );
          } catch (error) {
            record = meter.promptEnded(index, start, { error }, step.aborted);
          }
          recorded = true;
          if (record.outcome === "failed") failed = true;
          if (record.outcome === "succeeded") succeeded++;
          if (record.outcome !== "succeeded" || own.isClosed) break;
        }
      } finally {
        unsubscribe();
      }
    } catch (error) {
      // The session could not be opened (a worker gone; the host closing at the run's end).
      openError = error;
      failed = !step.aborted;
    } finally {
      if (!recorded) {
        meter.promptStarted(index);
        const cause = openError ?? new Error("The step ended before the conversation's first prompt was sent.");
        meter.promptEnded(index, begunMs, { error: cause }, step.aborted);
      }
      if (session !== undefined) {
        this.#open.delete(session);
        void session.dispose().catch(() => {});
      }
      if (succeeded === this.#setup.prompts) counts.completed++;
      else if (failed) counts.failed++;
      else counts.cancelled++;
      this.#ended();
    }
  }

  /** A conversation ended: the longest-waiting arrival takes its place, or the pool may be idle. */
  #ended(): void {
    this.#inFlight--;
    const queued = this.#step.signal.aborted ? undefined : this.#queue.shift();
    if (queued !== undefined) {
      this.capWaitMs.push(Math.max(0, this.#setup.now() - queued.dueMs));
      queued.counts.delayed++;
      this.#start(queued.counts);
      return;
    }
    if (this.#inFlight === 0) {
      const idle = this.#idle;
      this.#idle = undefined;
      idle?.();
    }
  }
}
