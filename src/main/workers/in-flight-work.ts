/**
 * The work one worker has in flight, as its link counts it for keep-alive.ts: each pending call,
 * and each run from its `startRun` to its `run_end` (or until its session detaches, or the start is
 * refused, since no `run_end` comes then). Only this work keeps the process alive for the worker.
 */
import { KeepAlive } from "./keep-alive.js";

/** One link's calls and runs in flight. */
export class InFlightWork {
  readonly #keepAlive: KeepAlive;
  /**
   * Runs started and not yet ended, by session: their ids in start order, each run counted once in
   * #keepAlive. By session because an abort asks for its session's run: a host that aborts
   * thousands of prompts at once must not scan every open run for each (it did, and stopping
   * 10,000 prompts held the main thread for seconds).
   */
  readonly #openRuns = new Map<string, Set<number>>();
  /** What waits for an open run to be over ({@link whenOver}), by run (`sessionId#runId`). */
  readonly #overWaiters = new Map<string, (() => void)[]>();

  /** @param setReferenced refs or unrefs the worker's handles (see `KeepAlive`). */
  constructor(setReferenced: (referenced: boolean) => void) {
    this.#keepAlive = new KeepAlive(setReferenced);
  }

  /** Pending calls plus open runs. */
  get count(): number {
    return this.#keepAlive.inFlight;
  }

  /**
   * Counts `call` while it is pending; a `startRun` (its `args` are the session and run ids) also
   * counts its run until {@link runEnded}. Returns the call.
   */
  track<T>(method: string, args: unknown[], call: Promise<T>): Promise<T> {
    const run = method === "startRun" ? { sessionId: String(args[0]), runId: Number(args[1]) } : undefined;
    if (run !== undefined && this.#open(run.sessionId, run.runId)) this.#keepAlive.begin();
    this.#keepAlive.begin();
    call.then(
      () => this.#keepAlive.end(),
      () => {
        this.#keepAlive.end();
        // A refused start opens no run, so no run_end will come for it.
        if (run !== undefined) this.#end(run.sessionId, run.runId);
      },
    );
    return call;
  }

  /** A `run_end` arrived. */
  runEnded(sessionId: string, runId: number): void {
    this.#end(sessionId, runId);
  }

  /** The id of the session's run in flight (started, no `run_end` yet; the newest if several), if it has one. */
  openRun(sessionId: string): number | undefined {
    const runs = this.#openRuns.get(sessionId);
    if (runs === undefined) return undefined;
    let newest: number | undefined;
    for (const runId of runs) if (newest === undefined || runId > newest) newest = runId;
    return newest;
  }

  /** Whether run `runId` of the session is open: started, and not over (see {@link whenOver}). */
  isOpen(sessionId: string, runId: number): boolean {
    return this.#openRuns.get(sessionId)?.has(runId) === true;
  }

  /**
   * Resolves once run `runId` of the session is over for this link: its `run_end` arrived, its
   * start was refused, or its session detached; at once if it is not open. Never resolves if the
   * worker dies first (the link's calls reject then).
   */
  whenOver(sessionId: string, runId: number): Promise<void> {
    if (!this.isOpen(sessionId, runId)) return Promise.resolve();
    const run = runKey(sessionId, runId);
    return new Promise((resolve) => {
      const waiters = this.#overWaiters.get(run);
      if (waiters === undefined) this.#overWaiters.set(run, [resolve]);
      else waiters.push(resolve);
    });
  }

  /** The session detached: its runs will send nothing more to this link. */
  sessionDetached(sessionId: string): void {
    const runs = this.#openRuns.get(sessionId);
    if (runs !== undefined) for (const runId of [...runs]) this.#end(sessionId, runId);
  }

  /** Closing the link is work too: the wait for the pool must hold the process (never ended; see {@link stop}). */
  beginClosing(): void {
    this.#keepAlive.begin();
  }

  /** The worker is gone: nothing more to count. */
  stop(): void {
    this.#overWaiters.clear();
    this.#keepAlive.stop();
  }

  /** Opens the run; false if it already was. */
  #open(sessionId: string, runId: number): boolean {
    const runs = this.#openRuns.get(sessionId);
    if (runs === undefined) {
      this.#openRuns.set(sessionId, new Set([runId]));
      return true;
    }
    if (runs.has(runId)) return false;
    runs.add(runId);
    return true;
  }

  #end(sessionId: string, runId: number): void {
    const runs = this.#openRuns.get(sessionId);
    if (runs?.delete(runId) === true) {
      if (runs.size === 0) this.#openRuns.delete(sessionId);
      this.#keepAlive.end();
    }
    if (this.#overWaiters.size === 0) return;
    const run = runKey(sessionId, runId);
    const waiters = this.#overWaiters.get(run);
    if (waiters === undefined) return;
    this.#overWaiters.delete(run);
    for (const resolve of waiters) resolve();
  }
}

function runKey(sessionId: string, runId: number): string {
  return `${sessionId}#${runId}`;
}
