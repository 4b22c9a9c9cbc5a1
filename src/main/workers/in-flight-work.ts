/**
 * The work one worker has in flight, as its link counts it for keep-alive.ts: each pending call,
 * and each run from its `startRun` to its `run_end` (or until its session detaches, or the start is
 * refused, since no `run_end` comes then). Only this work keeps the process alive for the worker.
 */
import { KeepAlive } from "./keep-alive.js";

/** One link's calls and runs in flight. */
export class InFlightWork {
  readonly #keepAlive: KeepAlive;
  /** Runs started and not yet ended (`sessionId#runId`), each counted once in #keepAlive. */
  readonly #openRuns = new Set<string>();
  /** What waits for an open run to be over ({@link whenOver}), by run. */
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
   * Counts the call `invoke()` makes while it is pending; a `startRun` (its `args` are the session
   * and run ids) also counts its run until {@link runEnded}. Returns the call.
   */
  track<T>(method: string, args: unknown[], invoke: () => Promise<T>): Promise<T> {
    const run = method === "startRun" ? `${String(args[0])}#${String(args[1])}` : undefined;
    if (run !== undefined && !this.#openRuns.has(run)) {
      this.#openRuns.add(run);
      this.#keepAlive.begin();
    }
    this.#keepAlive.begin();
    const call = invoke();
    call.then(
      () => this.#keepAlive.end(),
      () => {
        this.#keepAlive.end();
        // A refused start opens no run, so no run_end will come for it.
        if (run !== undefined) this.#end(run);
      },
    );
    return call;
  }

  /** A `run_end` arrived. */
  runEnded(sessionId: string, runId: number): void {
    this.#end(`${sessionId}#${runId}`);
  }

  /** The id of the session's run in flight (started, no `run_end` yet), if it has one. */
  openRun(sessionId: string): number | undefined {
    const prefix = `${sessionId}#`;
    for (const run of this.#openRuns) if (run.startsWith(prefix)) return Number(run.slice(prefix.length));
    return undefined;
  }

  /**
   * Resolves once run `runId` of the session is over for this link: its `run_end` arrived, its
   * start was refused, or its session detached; at once if it is not open. Never resolves if the
   * worker dies first (the link's calls reject then).
   */
  whenOver(sessionId: string, runId: number): Promise<void> {
    const run = `${sessionId}#${runId}`;
    if (!this.#openRuns.has(run)) return Promise.resolve();
    return new Promise((resolve) => {
      const waiters = this.#overWaiters.get(run);
      if (waiters === undefined) this.#overWaiters.set(run, [resolve]);
      else waiters.push(resolve);
    });
  }

  /** The session detached: its runs will send nothing more to this link. */
  sessionDetached(sessionId: string): void {
    for (const run of this.#openRuns) if (run.startsWith(`${sessionId}#`)) this.#end(run);
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

  #end(run: string): void {
    if (this.#openRuns.delete(run)) this.#keepAlive.end();
    const waiters = this.#overWaiters.get(run);
    this.#overWaiters.delete(run);
    for (const resolve of waiters ?? []) resolve();
  }
}
