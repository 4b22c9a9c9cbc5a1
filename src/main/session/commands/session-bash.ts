/**
 * A session's shell commands (`AgentSession.executeBash`, RPC `bash`), as pi 0.73.1 runs them: the
 * command runs in the session's worker, never on the host's main thread (SPEC X1: main only posts
 * `startBash` and gets the bounded result back), and its result enters the transcript as pi's
 * `bashExecution` message, which the model sees as a user turn with the next prompt and the
 * session file stores as a message entry.
 *
 * When the command ends while the session is busy (a prompt live or a compaction running), its
 * message waits and goes in just before the next prompt's user message, as pi defers it while
 * streaming: never between a reply's tool call and its result, nor between a failed attempt and
 * its retry.
 */
import * as z from "zod";
import { type BashExecutionMessage, type BashResult, bashExecutionMessage } from "../../../shared/bash/bash-message.js";
import { SessionBusyError } from "../../../shared/errors.js";
import { invalidOptions } from "../../config/option-schemas.js";
import { isWorkerGone } from "../../workers/worker-exit.js";
import type { SessionLink } from "../runs/session-link.js";
import type { TranscriptMirror } from "../runs/transcript-mirror.js";

/** Options of `AgentSession.executeBash`. */
export interface BashOptions {
  /** Keep the command out of the model's context (pi's `!!` commands); it is still stored. @default false */
  excludeFromContext?: boolean;
}

const bashCallSchema = z.lazy(() =>
  z.strictObject({
    command: z.string().refine((text) => text.trim() !== "", "must be a non-empty command line"),
    options: z.strictObject({ excludeFromContext: z.boolean().optional() }),
  }),
);

/** The running command: its process group once the worker started it, and whether abort was asked. */
interface Running {
  pid: number | undefined;
  aborted: boolean;
}

/** See the module comment. One per session, built by `AgentSession`. */
export class SessionBash {
  readonly #link: SessionLink;
  readonly #transcript: TranscriptMirror;
  /** The session, read for `isBusy` (held as the object rather than a closure per session, P4). */
  readonly #session: { readonly isBusy: boolean };
  #running: Running | undefined;
  /**
   * Messages of commands that ended while the session was busy, oldest first; made by the first
   * (P4: docs/performance.md).
   */
  #pending: BashExecutionMessage[] | undefined;

  constructor(link: SessionLink, transcript: TranscriptMirror, session: { readonly isBusy: boolean }) {
    this.#link = link;
    this.#transcript = transcript;
    this.#session = session;
  }

  /** True from `execute()` until its command's result is back. */
  get isRunning(): boolean {
    return this.#running !== undefined;
  }

  /**
   * Runs `command` (see `AgentSession.executeBash`).
   * @throws ERR_INVALID_OPTIONS for an empty command or bad options; SessionBusyError while another
   *   command runs; WorkerExitedError when the worker died meanwhile (its process group is killed);
   *   the session's close error.
   */
  async execute(command: unknown, options: unknown): Promise<BashResult> {
    const bad = invalidOptions(bashCallSchema, { command, options }, "executeBash() arguments");
    if (bad !== undefined) throw bad;
    const { excludeFromContext } = options as BashOptions;
    if (this.#running !== undefined) {
      throw new SessionBusyError("A bash command is already running in this session; wait for it or abortBash().");
    }
    const running: Running = { pid: undefined, aborted: false };
    this.#running = running;
    try {
      const link = await this.#link.worker();
      const { pid } = await link.call("startBash", this.#link.sessionId, command as string);
      running.pid = pid;
      if (running.aborted) void this.#kill(running);
      let result: BashResult;
      try {
        result = await link.awaitBash(this.#link.sessionId);
      } catch (error) {
        // The worker died with the command running: nobody else will ever kill its process group.
        if (isWorkerGone(error)) killGroup(pid);
        throw error;
      }
      this.#record(bashExecutionMessage(command as string, result, Date.now(), excludeFromContext === true));
      return result;
    } finally {
      if (this.#running === running) this.#running = undefined;
    }
  }

  /**
   * Kills the running command's process group; its `execute()` then resolves with `cancelled: true`.
   * Resolves once the kill is sent. No-op when nothing runs. Never rejects.
   */
  async abort(): Promise<void> {
    const running = this.#running;
    if (running === undefined) return;
    running.aborted = true;
    if (running.pid !== undefined) await this.#kill(running);
  }

  /** The deferred messages go into the transcript (a prompt is about to begin); called by the prompt runner. */
  flush(): void {
    const pending = this.#pending;
    if (pending === undefined) return;
    this.#pending = undefined;
    for (const message of pending) this.#append(message);
  }

  async #kill(running: Running): Promise<void> {
    try {
      await (await this.#link.worker()).call("abortBash", this.#link.sessionId);
    } catch {
      // The worker is gone or does not answer: kill the group from here (the result then has no
      // `cancelled` flag, only a missing exit code, if the worker is alive to report it at all).
      if (running.pid !== undefined) killGroup(running.pid);
    }
  }

  #record(message: BashExecutionMessage): void {
    if (this.#link.isClosed()) return;
    if (!this.#session.isBusy) {
      this.#append(message);
      return;
    }
    this.#pending ??= [];
    this.#pending.push(message);
  }

  #append(message: BashExecutionMessage): void {
    this.#transcript.append(message);
    void this.#transcript.appendInWorker([message]).catch(() => {
      // Only a closed session fails here; a dead worker's restore reopens from the mirror.
    });
  }
}

/** SIGKILL to the process group `pid` leads (the command's shell). Never throws. */
function killGroup(pid: number): void {
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // Gone already.
  }
}
