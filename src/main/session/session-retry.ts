/**
 * A session's retry setup: its retry controller and B8 view of the host's coordination, bound to
 * the session's retry settings (read at each decision, so toggles apply to the next failure), its
 * model (the context window says what counts as an overflow, R1; provider, endpoint and key pick
 * the budget and gate), the host's auth storage (R4) and the test seam for sleep; and the actions
 * its chains take on the session.
 */
import { type AssistantMessage, isContextOverflow } from "@mariozechner/pi-ai";
import type { ClassifiableMessage } from "../../shared/classify.js";
import type { RetryEvent } from "../../shared/events.js";
import { switchToFallback } from "../auth/session-credentials.js";
import { SessionCoordination } from "../coordination/session-coordination.js";
import { type RetryActions, RetryController, type RetryControllerOptions } from "../retry/retry-controller.js";
import { abortableSleep } from "../retry/sleep.js";
import type { SessionListeners } from "./session-listeners.js";
import type { SessionModel } from "./session-model.js";
import type { SessionSetup } from "./session-setup.js";
import type { TranscriptMirror } from "./transcript-mirror.js";

/** The retry controller of the session `setup` describes; its events go to `emit`. Called once per session. */
export function sessionRetryController(
  setup: SessionSetup,
  model: SessionModel,
  coordination: SessionCoordination | undefined,
  emit: (event: RetryEvent) => void,
): RetryController<AssistantMessage> {
  const settings = setup.start.settings;
  const pacer = setup.host.pacer;
  const options: RetryControllerOptions = {
    sessionId: setup.start.sessionId,
    settings: () => settings.retry,
    // The retried run is posted on a turn of the host's pacer: sleeps that end together (a burst
    // of 503s) then do not post their runs in one long task. Aborting the chain ends either wait.
    sleep:
      setup.host.sleep ??
      (pacer === undefined
        ? abortableSleep
        : async (ms, signal) => {
            await abortableSleep(ms, signal);
            await pacer.turn(signal);
          }),
    now: Date.now,
    random: Math.random,
    isOverflow: (message: ClassifiableMessage) => {
      const contextWindow = model.current.contextWindow;
      return isContextOverflow(message as AssistantMessage, contextWindow > 0 ? contextWindow : undefined);
    },
    emit,
    baseUrl: () => model.current.baseUrl,
  };
  if (setup.host.credentials.authStorage !== undefined) options.authStorage = setup.host.credentials.authStorage;
  if (coordination !== undefined) options.coordination = coordination;
  return new RetryController<AssistantMessage>(options);
}

/** B8: the session's view of the host's budgets, gates and permits; undefined without the host's. Called once per session. */
export function sessionCoordination(
  setup: SessionSetup,
  model: SessionModel,
  events: SessionListeners,
): SessionCoordination | undefined {
  if (setup.host.coordination === undefined) return undefined;
  return new SessionCoordination(setup.host.coordination, {
    provider: () => model.current.provider,
    baseUrl: () => model.current.baseUrl,
    apiKey: () => model.change.apiKey,
    settings: () => setup.start.settings.retry,
    emit: (event) => events.emit(event),
  });
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
  return {
    removeFailedMessage: () => transcript.removeFailed(),
    restoreFailedMessage: (message) => transcript.restoreFailed(message),
    continueRun,
    switchToFallback: () =>
      switchToFallback(
        setup.start.settings.retry.fallbackModels ?? [],
        `${model.current.provider}/${model.current.id}`,
        setup.host.credentials.isProviderExhausted,
        setModel,
      ),
  };
}
