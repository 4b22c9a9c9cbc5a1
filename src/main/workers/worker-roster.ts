/**
 * The host's workers as links: the pool behind them, the watchdog over them, where a session goes
 * (the least-loaded shared worker, or a worker of its own for a crash suspect), and opening a
 * session on one (SPEC X5, X7, X8). Main thread only; `SessionHost` owns one.
 */
import { setImmediate as nextTurn } from "node:timers/promises";
import type { ResourceLimits, Worker } from "node:worker_threads";
import { LifelineError, WorkerExitedError } from "../../shared/errors.js";
import type { UiTransport } from "../../shared/extensions/extension-ui.js";
import type { LoopDelay, SessionInit, SessionOpened } from "../../shared/wire/protocol.js";
import { signOfLifeMs } from "./hang-judgement.js";
import type { LinkEndpoint, LinkTimeouts, PermitHandler } from "./link-options.js";
import type { TurnPacer } from "./turn-pacer.js";
import { tickIntervalMs, Watchdog } from "./watchdog.js";
import { WorkerLink } from "./worker-link.js";
import { WorkerPool } from "./worker-pool.js";

/** What {@link WorkerRoster} needs from the host's options, resolved. */
export interface WorkerRosterOptions extends LinkTimeouts {
  /** Shared workers; crash suspects get up to {@link isolatedCapacity} more. */
  threads: number;
  hangTimeoutMs: number;
  /** URL of the worker entry the pool runs. */
  workerEntry: string;
  resourceLimits?: ResourceLimits | undefined;
  batchIntervalMs?: number | undefined;
  /** Nice value of the worker threads (host option `workerPriority`); 0 leaves them as they are. */
  workerPriority?: number | undefined;
  /** Replaces the pool as the source of endpoints (in-process tests). */
  connect?: (() => LinkEndpoint) | undefined;
  /** True once the host is closed: an open in progress is then closed again and refused. */
  isClosed: () => boolean;
  /** B8: the host's answer to its workers' request permits. */
  permits?: PermitHandler | undefined;
  /** B9: a worker died or was terminated (`start`: it never started); not called for workers the host closed. */
  onWorkerExit?: ((cause: string) => void) | undefined;
  /** B9: a worker's loop report (see {@link WorkerRoster.watchEventLoops}), with its thread id. */
  onLoopDelay?: ((threadId: number, delay: LoopDelay) => void) | undefined;
  /** Where extension tools' `ctx.ui` requests go (the host's `extensionUi`). */
  ui?: UiTransport | undefined;
  /** The host's pacer: each link settles the answers of a burst of run ops through it (run-op-queue.ts). */
  pacer?: TurnPacer | undefined;
}

type Reserved = { link: WorkerLink; release: () => void };

/** The links of one host; see the file comment. */
export class WorkerRoster {
  readonly #options: WorkerRosterOptions;
  readonly #links: WorkerLink[] = [];
  readonly #pool: WorkerPool;
  readonly #watchdog: Watchdog<WorkerLink>;
  #watchdogTerminations = 0;
  /** B9: whether every worker, present and future, samples and reports its event-loop delay. */
  #watchingLoops = false;

  constructor(options: WorkerRosterOptions) {
    this.#options = options;
    const heartbeatMs = tickIntervalMs(options.hangTimeoutMs);
    const task: { heartbeatMs: number; signOfLifeMs: number; batchIntervalMs?: number; priority?: number } = {
      heartbeatMs,
      signOfLifeMs: signOfLifeMs(heartbeatMs, options.controlTimeoutMs),
    };
    if (options.batchIntervalMs !== undefined) task.batchIntervalMs = options.batchIntervalMs;
    if (options.workerPriority !== undefined && options.workerPriority > 0) task.priority = options.workerPriority;
    this.#pool = new WorkerPool({
      filename: options.workerEntry,
      // Room for the isolated workers of crash suspects beside the shared ones (SPEC X7).
      maxThreads: options.threads + isolatedCapacity(options.threads),
      task,
      ...(options.resourceLimits === undefined ? {} : { resourceLimits: options.resourceLimits }),
      // A worker failed before serving: fail the links still waiting for theirs (ERR_WORKER_START).
      onStartFailure: (error) => {
        for (const link of this.#links) link.failStart(error);
      },
    });
    this.#watchdog = new Watchdog<WorkerLink>({
      hangTimeoutMs: options.hangTimeoutMs,
      links: () => this.#links,
      onHung: (link, silentMs) => {
        this.#watchdogTerminations++;
        link.terminateHung(
          link.isStarted
            ? `its event loop sent nothing for ${Math.round(silentMs)} ms, over hangTimeoutMs (${options.hangTimeoutMs} ms)`
            : `it did not start within ${Math.round(silentMs)} ms`,
        );
      },
    });
  }

  /** Workers the watchdog has terminated as hung (SPEC X8), for `lifeline load`'s report. */
  get watchdogTerminations(): number {
    return this.#watchdogTerminations;
  }

  /** B9: the pool's live worker threads, for their event-loop utilization. */
  get threads(): readonly Worker[] {
    return this.#pool.threads;
  }

  /**
   * B9: from now on every worker, present and future, samples its event-loop delay and reports it
   * to `onLoopDelay` every few seconds (protocol.ts, `heartbeat`). Idempotent. The host's telemetry
   * calls it once it records metrics, so a host that records none has no sampler running.
   */
  watchEventLoops(): void {
    if (this.#watchingLoops) return;
    this.#watchingLoops = true;
    for (const link of this.#links) if (!link.isDead) watchLoop(link);
  }

  /** Live links (one per worker thread in use). */
  get workerCount(): number {
    return this.#links.filter((link) => !link.isDead).length;
  }

  /**
   * Opens a session on the least-loaded shared worker, or on a worker of its own (`isolate`, a crash
   * suspect). A worker that dies while it opens the session (another session's crash, say) is not
   * this session's failure: it is opened again on a fresh worker, twice at most (SPEC X7).
   * @throws ERR_HOST_CLOSED, or what opening throws (ERR_WORKER_START, ERR_WORKER_MODULE, …).
   */
  async open(init: SessionInit, isolate = false): Promise<{ link: WorkerLink; opened: SessionOpened }> {
    for (let attempt = 1; ; attempt++) {
      const { link, release } = isolate ? this.#isolatedLink() : await this.#pickLink();
      try {
        this.#assertOpen();
        const opened = await link.openSession(init);
        if (this.#options.isClosed()) {
          void link.control("closeSession", init.sessionId).catch(() => {});
          this.#assertOpen();
        }
        return { link, opened };
      } catch (error) {
        if (!(error instanceof WorkerExitedError) || this.#options.isClosed() || attempt >= 3) throw error;
      } finally {
        release();
      }
    }
  }

  /** A link for a call that needs any worker (the built-in models, say). */
  pick(): Promise<Reserved> {
    return this.#pickLink();
  }

  /** Shuts down isolated workers no session uses any more. */
  releaseIsolated(): void {
    for (const link of this.#links) {
      if (link.isolated && !link.isDead && link.clientCount === 0) void link.close();
    }
  }

  /** Stops the watchdog and asks every worker to stop (bounded: see WorkerLink.close). */
  async closeLinks(): Promise<void> {
    this.#watchdog.stop();
    await Promise.all(this.#links.map((link) => link.close()));
    this.#links.length = 0;
  }

  /** Terminates what is left of the pool. */
  destroy(): Promise<void> {
    return this.#pool.destroy();
  }

  #assertOpen(): void {
    if (this.#options.isClosed()) {
      throw new LifelineError("ERR_HOST_CLOSED", "This session host is closed; create a new host.");
    }
  }

  /**
   * A worker for sessions suspected of killing theirs, so they stop taking neighbours down. These
   * are threads beyond `threads`: a new one per suspect while there are fewer than
   * {@link isolatedCapacity} of them, else the least-loaded one is shared. One is shut down when
   * its last session closes; new sessions never go to one.
   */
  #isolatedLink(): Reserved {
    const isolated = this.#links.filter((link) => link.isolated && !link.isDead);
    if (isolated.length >= isolatedCapacity(this.#options.threads)) {
      const least = isolated.reduce((best, link) => (link.clientCount < best.clientCount ? link : best));
      return { link: least, release: least.reserve() };
    }
    const link = this.#newLink(true);
    return { link, release: link.reserve() };
  }

  /** Chooses the least-loaded shared link (starting one if under `threads`) and reserves a place on it. */
  async #pickLink(turned = false): Promise<Reserved> {
    const dead = this.#links.filter((link) => link.isDead);
    if (dead.length > 0) {
      // See WorkerLink.released: let the pool drop dead workers before asking it for a new one.
      // Ref'd: a session being restored (X7) waits here, and that is work in flight.
      await within(Promise.all(dead.map((link) => link.released)), 5000);
      for (const link of dead) {
        // A concurrent open may have pruned it already.
        const index = this.#links.indexOf(link);
        if (index >= 0) this.#links.splice(index, 1);
      }
    }
    let best: WorkerLink | undefined;
    const shared = this.#links.filter((link) => !link.isolated);
    for (const link of shared) {
      if (link.isDead) continue;
      if (best === undefined || link.clientCount < best.clientCount) best = link;
    }
    if (best !== undefined && (best.clientCount === 0 || shared.length >= this.#options.threads)) {
      return { link: best, release: best.reserve() };
    }
    // Starting a thread blocks for a few ms (new Worker); on a turn of its own, that does not add
    // to whatever ran before in this task (bench (s)). The choice is made again after it.
    if (!turned && this.#options.connect === undefined) {
      await nextTurn();
      return this.#pickLink(true);
    }
    const link = this.#newLink(false);
    return { link, release: link.reserve() };
  }

  #newLink(isolated: boolean): WorkerLink {
    const link = new WorkerLink(this.#options.connect?.() ?? this.#pool.connect(), {
      callTimeoutMs: this.#options.callTimeoutMs,
      hangTimeoutMs: this.#options.hangTimeoutMs,
      setupTimeoutMs: this.#options.setupTimeoutMs,
      controlTimeoutMs: this.#options.controlTimeoutMs,
      isolated,
      permits: this.#options.permits,
      onExit: this.#options.onWorkerExit,
      onLoopDelay: this.#options.onLoopDelay,
      ui: this.#options.ui,
      pacer: this.#options.pacer,
      onProtocolError: (reason) => process.emitWarning(`lifeline: ignored an invalid worker message (${reason})`),
    });
    this.#links.push(link);
    this.#watchdog.start();
    if (this.#watchingLoops) watchLoop(link);
    return link;
  }
}

/**
 * How many workers of their own crash suspects may have at once, beyond `threads`: each costs about
 * 8 MB and a 20 ms start, and a burst of suspects past this shares them.
 */
function isolatedCapacity(threads: number): number {
  return Math.max(4, threads);
}

/** Asks `link`'s worker to report its loop; a worker gone meanwhile reports nothing, which is fine. */
function watchLoop(link: WorkerLink): void {
  void link.call("watchEventLoop").catch(() => {});
}

/** Waits for `promise`, or `ms` at most; the timer is cleared as soon as either is done. */
async function within(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([promise, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}
