/**
 * What one `AgentSession` is made of: its collaborators, built from the host's `SessionSetup` and
 * wired to each other in the order they need one another. The facade (agent-session.ts) holds one
 * `SessionParts` and hands each public member to one part. The wiring decided here:
 * - the retry path's move to a fallback model goes through the facade's own `setModel` (its
 *   checks and the host's resolution of the reference);
 * - bash results deferred while the session was busy enter the transcript just before the next
 *   prompt's user message (session-bash.ts);
 * - the session's extensions are an ordinary listener that only enqueues, so handlers never delay
 *   delivery or the retry path, and are bound to the facade;
 * - the extensions are bound and the link connects last ({@link SessionParts.connect}): nothing
 *   from the worker or an extension reaches the session before the facade holds every part.
 */
import type { SessionCoordination } from "../coordination/session-coordination.js";
import type { SessionView } from "../extensions/session-extensions.js";
import { QueuedMessages } from "./commands/queued-messages.js";
import { SessionBash } from "./commands/session-bash.js";
import { SessionSteering } from "./commands/session-steering.js";
import { PromptRunner } from "./prompt/prompt-runner.js";
import { sessionCoordination } from "./runs/session-retry.js";
import type { SessionSetup } from "./session-setup.js";
import { SessionListeners } from "./state/session-listeners.js";
import { SessionModel } from "./state/session-model.js";
import { SessionName } from "./state/session-name.js";
import { SessionThinking } from "./state/session-thinking.js";

/** What the parts call back on the facade: the public calls that keep their own checks. */
interface SessionFacade extends SessionView {
  setModel(model: string): Promise<unknown>;
}

/** The collaborators of one session; see the module comment. Built once, by `AgentSession`. */
export class SessionParts {
  readonly model: SessionModel;
  readonly events: SessionListeners;
  readonly thinking: SessionThinking;
  /** B8: this session's view of the host's budget, gate and permits; undefined without a host's. */
  readonly coordination: SessionCoordination | undefined;
  /** The prompt lifecycle, and through it the transcript, the retry controller and the link. */
  readonly runner: PromptRunner;
  readonly steering: SessionSteering;
  readonly name: SessionName;
  readonly bash: SessionBash;
  readonly #setup: SessionSetup;
  readonly #facade: SessionFacade;

  constructor(setup: SessionSetup, facade: SessionFacade) {
    const start = setup.start;
    const model = new SessionModel(start.model, start.modelChange);
    const events = new SessionListeners(setup.host.onListenerError);
    const thinking = new SessionThinking(start.thinkingLevel, { model, events, setup });
    const coordination = sessionCoordination(setup, model, events);
    const queued = new QueuedMessages(events);
    const runner = new PromptRunner({
      setup,
      model,
      thinking,
      events,
      queued,
      coordination,
      setModel: (name) => facade.setModel(name),
      beforePrompt: () => this.bash.flush(),
    });
    this.model = model;
    this.events = events;
    this.thinking = thinking;
    this.coordination = coordination;
    this.runner = runner;
    this.steering = new SessionSteering(runner, queued);
    this.name = new SessionName(start.name, setup.host.recorder, events);
    this.bash = new SessionBash(runner.link, runner.transcript, facade);
    this.#setup = setup;
    this.#facade = facade;
  }

  /**
   * Binds the extensions to the facade and attaches the session to its worker. Called once, by the
   * facade's constructor once it holds its parts (binding reads the facade's state).
   */
  connect(): void {
    const extensions = this.#setup.host.extensions;
    if (extensions !== undefined) {
      this.events.subscribe((event) => extensions.deliver(event));
      extensions.bind(this.#facade, (event) => this.events.emit(event));
    }
    this.runner.link.connect();
  }
}
