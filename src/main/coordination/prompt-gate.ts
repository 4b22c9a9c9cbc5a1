/**
 * B8 before a prompt's first model attempt: the attempt is counted toward the provider's retry
 * budget, and held first at the provider's gate while a rate limit closes it.
 */
import type { SessionCoordination } from "./session-coordination.js";

/** What becomes of a prompt held at the gate, decided when the gate opens or the wait is aborted. */
export interface GatePass {
  /** Whether the prompt is still the session's live one (checked once the wait is over). */
  live(): boolean;
  /** Posts the prompt's run. */
  start(): void;
  /** The wait was aborted: the prompt settles as aborted, with no request sent. */
  aborted(): void;
}

/** One session's gate for its prompts; at most one prompt waits at a time. */
export class PromptGate {
  readonly #coordination: SessionCoordination | undefined;
  #wait: AbortController | undefined;

  /** @param coordination the session's view of the host's coordination; undefined: no gate, no budget. */
  constructor(coordination: SessionCoordination | undefined) {
    this.#coordination = coordination;
  }

  /** A prompt is waiting at the gate (it has not settled, and sent nothing). */
  get waiting(): boolean {
    return this.#wait !== undefined;
  }

  /** Ends the wait in progress, if any (its prompt's `aborted`, if still live). */
  abort(): void {
    this.#wait?.abort();
  }

  /** Lets a prompt's first attempt through now, or once the gate opens (`pass` says what then). */
  admit(pass: GatePass): void {
    const coordination = this.#coordination;
    if (coordination === undefined || !coordination.gateClosed) {
      coordination?.depositFirstAttempt();
      pass.start();
      return;
    }
    const wait = new AbortController();
    this.#wait = wait;
    const done = () => {
      if (this.#wait === wait) this.#wait = undefined;
      return pass.live();
    };
    coordination.waitAtGate(wait.signal, "prompt").then(
      () => {
        if (!done()) return;
        coordination.depositFirstAttempt();
        pass.start();
      },
      () => {
        if (!done()) return;
        pass.aborted();
      },
    );
  }
}
