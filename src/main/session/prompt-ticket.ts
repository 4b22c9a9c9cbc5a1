/**
 * A prompt being admitted (prompt-admission.ts), as one object per prompt: what the admission reads
 * of it and tells it, each answered by its session's runner (prompt-runner.ts). Main thread only.
 */
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import type { LifelineError } from "../../shared/errors.js";
import type { PendingPrompt } from "./pending-prompt.js";
import type { AdmissionPrompt } from "./prompt-admission.js";
import type { PromptRunner } from "./prompt-runner.js";

/**
 * A prompt being admitted (prompt-admission.ts): what the admission reads of it and tells it, as
 * one object per prompt with its methods on the shared prototype. `prompt()` makes one inside the
 * caller's task, and a burst of them (10,000 in one loop) survives there until each prompt's turn:
 * a closure per callback, each with its context, made that loop allocate several times as much
 * (P1, docs/performance.md "(m)").
 */
export class PromptTicket implements AdmissionPrompt {
  readonly #runner: PromptRunner;
  readonly #pending: PendingPrompt;
  readonly #text: string;

  constructor(runner: PromptRunner, pending: PendingPrompt, text: string) {
    this.#runner = runner;
    this.#pending = pending;
    this.#text = text;
  }

  get promptId(): string | undefined {
    return this.#pending.id;
  }

  // On the prompt's turn: deferred bash messages go in first, then the user message, built here
  // rather than in the worker so the same object can be stored first (write-ahead).
  message(): AgentMessage {
    this.#runner.beforePrompt();
    return { role: "user", content: [{ type: "text", text: this.#text }], timestamp: Date.now() };
  }

  live(): boolean {
    return this.#runner.livePrompt() === this.#pending && !this.#runner.isClosed();
  }

  start(message: AgentMessage): void {
    this.#runner.records.stored(this.#pending.id);
    this.#runner.startPrompt(message);
  }

  aborted(failure: string): void {
    this.#pending.abortedEarly = true;
    this.#pending.failure = failure;
    this.#runner.maybeSettle();
  }

  failed(error: LifelineError): void {
    this.#runner.rejectPrompt(error);
  }
}
