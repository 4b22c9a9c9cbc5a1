/**
 * A session's retry setup: its retry controller and B8 view of the host's coordination, bound to
 * the session's retry settings (read at each decision, so toggles apply to the next failure), its
 * model (provider, endpoint and key pick the budget and gate; an overflow, R1, is marked by the
 * worker, which knows the context window), the host's auth storage (R4) and the test seam for sleep; and the actions
 * its chains take on the session.
 *
 * Each is a small class whose methods read the session's parts at each call, rather than an
 * object of closures: the methods live once on the shared prototype, so a session keeps one
 * instance of a few fields where it kept a closure and a context per callback (P4, main heap per
 * session; docs/performance.md).
 */
import type { AssistantMessage } from "@mariozechner/pi-ai";
import type { ProviderGateWaitEvent, RetryEvent } from "../../../shared/events.js";
import type { RetrySettings, Settings } from "../../../shared/settings/settings.js";
import type { AuthStorage } from "../../auth/auth-storage.js";
import { switchToFallback } from "../../auth/session-credentials.js";
import { SessionCoordination, type SessionCoordinationView } from "../../coordination/session-coordination.js";
import {
  type RetryActions,
  RetryController,
  type RetryControllerOptions,
  type RetryCoordination,
} from "../../retry/retry-controller.js";
import { abortableSleep } from "../../retry/sleep.js";
import type { TurnPacer } from "../../workers/turn-pacer.js";
import type { SessionSetup } from "../session-setup.js";
import type { SessionListeners } from "../state/session-listeners.js";
import type { SessionModel } from "../state/session-model.js";
import type { TranscriptMirror } from "./transcript-mirror.js";

/** The retry controller of the session `setup` describes; its events go to `emit`. Called once per session. */
export function sessionRetryController(
  setup: SessionSetup,
  model: SessionModel,
  coordination: SessionCoordination | undefined,
  emit: (event: RetryEvent) => void,
): RetryController<AssistantMessage> {
  return new RetryController<AssistantMessage>(new SessionRetryOptions(setup, model, coordination, emit));
}

/** The controller's options for one session; see the module comment. */
class SessionRetryOptions implements RetryControllerOptions {
  readonly sessionId: string;
  readonly emit: (event: RetryEvent) => void;
  readonly authStorage: AuthStorage | undefined;
  readonly coordination: RetryCoordination | undefined;
  readonly #settings: Settings;
  readonly #model: SessionModel;
  /** The host's test seam for sleep, if it set one. */
  readonly #hostSleep: ((ms: number, signal: AbortSignal) => Promise<void>) | undefined;
  readonly #pacer: TurnPacer | undefined;

  constructor(
    setup: SessionSetup,
    model: SessionModel,
    coordination: RetryCoordination | undefined,
    emit: (event: RetryEvent) => void,
  ) {
    this.sessionId = setup.start.sessionId;
    this.emit = emit;
    this.authStorage = setup.host.credentials.authStorage;
    this.coordination = coordination;
    this.#settings = setup.start.settings;
    this.#model = model;
    this.#hostSleep = setup.host.sleep;
    this.#pacer = setup.host.pacer;
  }

  settings(): RetrySettings {
    return this.#settings.retry;
  }

  /**
   * The retried run is posted on a turn of the host's pacer, once the sleep is over: sleeps that
   * end together (a burst of 503s) then do not post their runs in one long task. Aborting the
   * chain ends the wait, timer or turn.
   */
  sleep(ms: number, signal: AbortSignal): Promise<void> {
    if (this.#hostSleep !== undefined) return this.#hostSleep(ms, signal);
    return this.#pacer === undefined ? abortableSleep(ms, signal) : this.#pacer.sleep(ms, signal);
  }

  now(): number {
    return Date.now();
  }

  random(): number {
    return Math.random();
  }

  baseUrl(): string | undefined {
    return this.#model.current.baseUrl;
  }
}

/** B8: the session's view of the host's budgets, gates and permits; undefined without the host's. Called once per session. */
export function sessionCoordination(
  setup: SessionSetup,
  model: SessionModel,
  events: SessionListeners,
): SessionCoordination | undefined {
  if (setup.host.coordination === undefined) return undefined;
  return new SessionCoordination(setup.host.coordination, new CoordinationView(setup.start.settings, model, events));
}

/** What a session tells its coordination about itself, read at each call. */
class CoordinationView implements SessionCoordinationView {
  readonly #settings: Settings;
  readonly #model: SessionModel;
  readonly #events: SessionListeners;

  constructor(settings: Settings, model: SessionModel, events: SessionListeners) {
    this.#settings = settings;
    this.#model = model;
    this.#events = events;
  }

  provider(): string {
    return this.#model.current.provider;
  }

  baseUrl(): string | undefined {
    return this.#model.current.baseUrl;
  }

  apiKey(): string | undefined {
    return this.#model.change.apiKey;
  }

  settings(): RetrySettings {
    return this.#settings.retry;
  }

  emit(event: ProviderGateWaitEvent): void {
    this.#events.emit(event);
  }
}

/**
 * What the session's retry chains do to it: R4's removal of a failed reply from the transcript
 * (B3: put back when a chain is cancelled first), the retried run (`continueRun`), and the move to
 * the next usable fallback model through the session's own `setModel`, when every key of its
 * provider is blocked.
 */
export function sessionRetryActions(
  setup: SessionSetup,
  model: SessionModel,
  transcript: TranscriptMirror,
  setModel: (name: string) => Promise<unknown>,
  continueRun: () => Promise<void>,
): RetryActions<AssistantMessage> {
  return new SessionRetryActions(setup, model, transcript, setModel, continueRun);
}

/** See {@link sessionRetryActions}. */
class SessionRetryActions implements RetryActions<AssistantMessage> {
  readonly continueRun: () => Promise<void>;
  readonly #setup: SessionSetup;
  readonly #model: SessionModel;
  readonly #transcript: TranscriptMirror;
  readonly #setModel: (name: string) => Promise<unknown>;

  constructor(
    setup: SessionSetup,
    model: SessionModel,
    transcript: TranscriptMirror,
    setModel: (name: string) => Promise<unknown>,
    continueRun: () => Promise<void>,
  ) {
    this.continueRun = continueRun;
    this.#setup = setup;
    this.#model = model;
    this.#transcript = transcript;
    this.#setModel = setModel;
  }

  removeFailedMessage(): Promise<void> {
    return this.#transcript.removeFailed();
  }

  restoreFailedMessage(message: AssistantMessage): Promise<void> {
    return this.#transcript.restoreFailed(message);
  }

  switchToFallback(): Promise<string | undefined> {
    const current = this.#model.current;
    return switchToFallback(
      this.#setup.start.settings.retry.fallbackModels ?? [],
      `${current.provider}/${current.id}`,
      this.#setup.host.credentials.isProviderExhausted,
      this.#setModel,
    );
  }
}
