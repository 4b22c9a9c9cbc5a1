/**
 * SPEC X7 for one session on the main thread: when its worker dies, the session is charged a
 * restart if it is blamed, the run in flight ends as a failed reply, the session is opened again
 * on a fresh worker from the main-side transcript and emits `session_restored`; over its restart
 * budget, or when it cannot be opened again, it is given up (ERR_SESSION_CRASHED).
 */
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import type { Api, AssistantMessage, Model } from "@mariozechner/pi-ai";
import { SessionCrashedError, type WorkerExitCause, type WorkerExitedError } from "../../shared/errors.js";
import type { SessionEvent } from "../../shared/events.js";
import { errorText } from "../../shared/failures/error-text.js";
import type { SupervisionSettings } from "../../shared/settings/settings.js";
import type { RunInput } from "../../shared/wire/protocol.js";
import type { TurnPacer } from "../workers/turn-pacer.js";
import type { WorkerLink } from "../workers/worker-link.js";
import { interruptedRun, workerFate } from "./interrupted-run.js";
import { RestartBudget } from "./restart-budget.js";

/** What the main thread knows of the run in flight, for restoring it if its worker dies. */
export interface ActiveRun {
  input: RunInput;
  /** `agent_start` arrived. */
  started: boolean;
  /** The prompt's user message arrived (`message_end`, role user). */
  userSeen: boolean;
  /** `abort()` was asked for it: if its worker dies it ends as aborted, never retried. */
  aborted: boolean;
  /**
   * A retried attempt whose model request has not yet been seen to go out: its first reply that
   * carries the worker's request timing counts it in the prompt's `retries` (and clears this).
   */
  retry?: boolean;
}

/**
 * What a restore drives of its session's prompt lifecycle, never the session itself. Declared
 * here, implemented by the session's prompt runner (a layer above, which this one may not import).
 * `D` is the session's decision for a run (carried from the dead worker's run to after the restore).
 */
export interface RestoreTarget<D> {
  isClosed(): boolean;
  /**
   * Ends, synchronously, what ran on the dead worker: a summary run fails, a run in flight ends
   * as a failed reply. Returns the run's decision, carried out once the session is restored.
   */
  interrupt(error: WorkerExitedError): D | undefined;
  /** After `session_restored`: carries out the dead run's decision, or settles the live prompt. */
  resume(decision: D | undefined): void;
  /** Ends any retry chain, non-retryable, with `message`. */
  endChain(message: string): void;
  /** Closes the session with `error`: the live and queued prompts reject, the host forgets it. */
  close(error: SessionCrashedError): void;
}

/** How a restore reaches its session's worker (the session's link, a layer above, implements it). */
export interface RestoreLink {
  readonly sessionId: string;
  /** Opens the session again on a fresh worker (its own if `isolate`) from the main-side transcript. */
  reopen(isolate: boolean): Promise<WorkerLink>;
  /** Makes `link` the session's worker: attached, and sent the steering not yet delivered, once. */
  adopt(link: WorkerLink): void;
}

/** What a restore reads of its session besides target and link: its settings, where its events go, the host's pacer. */
export interface RestoreHost {
  /**
   * The host's pacer: a dead worker's sessions (thousands, on a busy host) end their runs and
   * reopen each on a turn of it, so their restores do not hold the main thread in one task.
   * Undefined: at once.
   */
  readonly pacer?: TurnPacer | undefined;
  /** The session's settings, read at each charge (the restart budget reads `supervision`). */
  readonly settings: { readonly supervision: SupervisionSettings };
  /** Where `session_restored` and `worker_exited` go (the session's listeners). */
  readonly events: { emit(event: SessionEvent): void };
}

/** One session's restores after its worker's deaths, and its restart budget. */
export class SessionRestore<D> {
  readonly #target: RestoreTarget<D>;
  readonly #sessionLink: RestoreLink;
  readonly #settings: RestoreHost["settings"];
  readonly #events: RestoreHost["events"];
  /** Made by the first restart the session is charged for (P4: docs/performance.md). */
  #budget: RestartBudget | undefined;
  #restarts = 0;
  #restoring: Promise<void> | undefined;
  readonly #pacer: TurnPacer | undefined;

  constructor(target: RestoreTarget<D>, link: RestoreLink, { settings, events, pacer }: RestoreHost) {
    this.#pacer = pacer;
    this.#target = target;
    this.#sessionLink = link;
    this.#settings = settings;
    this.#events = events;
  }

  /**
   * Settles when the restore in progress is over; undefined when none is. Calls to the worker
   * wait for it, and the live prompt does not settle meanwhile.
   */
  get restoring(): Promise<void> | undefined {
    return this.#restoring;
  }

  /** The session's restart budget, made at its first charge and kept (it remembers the charges). */
  #restartBudget(): RestartBudget {
    const settings = this.#settings;
    this.#budget ??= new RestartBudget(() => settings.supervision);
    return this.#budget;
  }

  /**
   * The session's worker died (its link's `handleWorkerExit`). A session blamed for it
   * (`suspect`) is charged a restart and, over its budget, given up. Otherwise what ran ends
   * (see {@link RestoreTarget.interrupt}) and the session is opened again on a fresh worker (its
   * own, if suspect); the run's decision is then carried out: a retry, like any transient failure.
   */
  onWorkerExit(error: WorkerExitedError, suspect: boolean): void {
    const target = this.#target;
    if (target.isClosed()) return;
    this.#restarts++;
    if (suspect && !this.#restartBudget().charge()) {
      const { maxRestarts, windowMs } = this.#settings.supervision;
      this.#giveUp(
        new SessionCrashedError(
          `Session ${this.#sessionLink.sessionId} was given up: its worker ${workerFate(error.exitCause)} again, more than ${maxRestarts} restarts within ${windowMs} ms (supervision.maxRestarts, supervision.windowMs). Last: ${error.message}`,
          error.exitCause,
          { cause: error },
        ),
      );
      return;
    }
    let restored: () => void = () => {};
    this.#restoring = new Promise<void>((resolve) => {
      restored = resolve;
    });
    // Restoring from now on (calls wait, the prompt does not settle); the work runs on its turn.
    const restore = () => {
      if (target.isClosed()) {
        restored();
        return;
      }
      const decision = target.interrupt(error);
      void this.#restore(error, suspect, decision).finally(restored);
    };
    if (this.#pacer === undefined) restore();
    else this.#pacer.run(restore);
  }

  async #restore(error: WorkerExitedError, suspect: boolean, decision: D | undefined): Promise<void> {
    const target = this.#target;
    let link: WorkerLink;
    try {
      link = await this.#sessionLink.reopen(suspect);
    } catch (reopenError) {
      if (target.isClosed()) return;
      const why = errorText(reopenError);
      this.#giveUp(
        new SessionCrashedError(
          `Session ${this.#sessionLink.sessionId} could not be restored after its worker ${workerFate(error.exitCause)}: ${why}`,
          error.exitCause,
          { cause: reopenError },
        ),
      );
      return;
    }
    // Disposed meanwhile: dispose() left closing the session on its new worker to the restore.
    if (target.isClosed()) {
      void link.control("closeSession", this.#sessionLink.sessionId).catch(() => {});
      return;
    }
    this.#sessionLink.adopt(link);
    this.#restoring = undefined;
    this.#events.emit({ type: "session_restored", reason: error.exitCause, restarts: this.#restarts });
    target.resume(decision);
  }

  /** X7: the session is given up: any chain ends, `worker_exited`, and everything waiting rejects. */
  #giveUp(error: SessionCrashedError): void {
    this.#target.endChain(error.message);
    this.#events.emit({
      type: "worker_exited",
      error: { code: error.code, message: error.message, exitCause: error.exitCause },
    });
    this.#restoring = undefined;
    this.#target.close(error);
  }
}

/** What {@link endInterruptedRun} writes to: the session's transcript and events. */
export interface InterruptedRunSink {
  /** The session's runtime transcript, the live array (it grows through `append`). */
  messages: readonly AgentMessage[];
  model: Model<Api>;
  cause: WorkerExitCause;
  /** Adds a message to the transcript and the history. */
  append(message: AgentMessage): void;
  emit(event: SessionEvent): void;
}

/**
 * Ends a run in flight whose worker died, as the worker would have: `agent_start` if it never
 * came, the prompt's user message if the worker never reported it, an "interrupted" result for
 * each tool call still running and a failed reply (see {@link interruptedRun}), each with its
 * `message_start`/`message_end`. The caller then makes the run's decision from `produced`.
 * @param streaming the reply being streamed when the worker died, if any (its start was emitted).
 */
export function endInterruptedRun(
  run: ActiveRun | undefined,
  streaming: AssistantMessage | undefined,
  sink: InterruptedRunSink,
): { produced: AgentMessage[]; reply: AssistantMessage } {
  const produced: AgentMessage[] = [];
  const add = (message: AgentMessage, started: boolean) => {
    if (!started) sink.emit({ type: "message_start", message });
    sink.append(message);
    produced.push(message);
    sink.emit({ type: "message_end", message });
  };
  if (run?.started !== true) sink.emit({ type: "agent_start" });
  // The worker never reported the prompt's user message: add the one main sent, so the retried
  // run continues from it (no turn is lost, no two user turns in a row; a stored session has it
  // already, written ahead, and does not store it twice).
  if (run?.input.kind === "prompt" && !run.userSeen) add(run.input.message, false);
  const { toolResults, reply } = interruptedRun({
    messages: sink.messages,
    partial: streaming,
    model: sink.model,
    cause: sink.cause,
    aborted: run?.aborted === true,
    now: Date.now(),
  });
  for (const result of toolResults) add(result, false);
  add(reply, streaming !== undefined);
  return { produced, reply };
}
