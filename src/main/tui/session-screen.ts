/**
 * One session's screen in the interactive UI (interactive-mode.ts owns the terminal around it):
 * a header, the transcript (prompts, streamed answers, tool activity, error lines), the loader
 * (R10's retry countdown, or "Working…"), the input line, and a status line with the model and
 * the session state, wired to the session's events and the keys.
 */
import {
  type Component,
  Container,
  Input,
  isKeyRelease,
  Loader,
  matchesKey,
  Text,
  type TUI,
  truncateToWidth,
} from "@mariozechner/pi-tui";
import type { PromptResult } from "../../shared/events.js";
import { isFailedStop } from "../../shared/failures/classify.js";
import { errorText } from "../../shared/failures/error-text.js";
import type { AgentSession } from "../session/agent-session.js";
import { type LoaderView, SessionUiController } from "./session-ui-controller.js";
import { style } from "./theme.js";
import { TranscriptView } from "./transcript-view.js";

/**
 * Puts `session`'s screen into `tui` (header, transcript with its history, loader, input, status)
 * and wires its keys; returns what undoes the wiring when the UI exits.
 */
export function mountSession(
  tui: TUI,
  session: AgentSession,
  setListenerErrorSink: (sink: (error: unknown) => void) => void,
  isClosed: () => boolean,
  finish: (code: number) => Promise<void>,
  initialMessages: readonly string[],
): () => void {
  const model = `${session.model.provider}/${session.model.id}`;
  const transcript = new TranscriptView();
  transcript.showHistory(session.messages);
  const loaderSlot = new Container();
  const input = new Input();
  let loader: { component: Loader; kind: LoaderView["kind"] } | undefined;

  const controller = new SessionUiController({
    actions: session,
    escape: input,
    onChange: () => {
      if (isClosed()) return;
      syncLoader();
      tui.requestRender();
    },
    onNotice: (notice) => {
      if (isClosed()) return;
      transcript.addNotice(notice);
      tui.requestRender();
    },
  });
  // A listener error here is a bug in this UI; showing it beats writing over the screen on stderr.
  setListenerErrorSink((error) => {
    if (isClosed()) return;
    transcript.addNotice({ level: "error", text: `Internal error: ${errorText(error)}` });
    tui.requestRender();
  });

  /** Shows the controller's loader: a new Loader when its kind changes, else a new message. */
  function syncLoader(): void {
    const view = controller.loader;
    if (loader !== undefined && loader.kind === view?.kind) {
      loader.component.setMessage(view.text);
      return;
    }
    loader?.component.stop();
    loaderSlot.clear();
    loader = undefined;
    if (view === undefined) return;
    const spinner = view.kind === "retry" ? style.yellow : style.cyan;
    const component = new Loader(tui, spinner, style.gray, view.text);
    loader = { component, kind: view.kind };
    loaderSlot.addChild(component);
  }

  tui.addChild(new Text(`${style.bold("lifeline")} ${style.gray(`· ${model}`)}`, 1, 0));
  tui.addChild(
    new Text(
      style.gray("Enter sends · Esc stops the answer · Shift+Tab thinking · Ctrl+C twice or Ctrl+D exits"),
      1,
      0,
    ),
  );
  tui.addChild(transcript);
  tui.addChild(loaderSlot);
  tui.addChild(new Rule());
  tui.addChild(input);
  tui.addChild(new StatusLine(() => `${modelLabel(session)} · ${controller.status}`));
  tui.setFocus(input);

  input.onSubmit = (value) => {
    const text = value.trim();
    if (text === "") return;
    if (controller.busy) {
      // Kept in the input line rather than queued: a queued prompt would run after an answer the
      // user may be about to stop, and sending it again later is one key.
      transcript.addNotice({ level: "info", text: "Still answering: press Esc to stop it, or wait for the answer." });
      tui.requestRender();
      return;
    }
    input.setValue("");
    void send(text);
  };

  /** Sends `text` as the user's prompt; resolves with its result, or undefined when it could not be served. */
  function send(text: string): Promise<PromptResult | undefined> {
    transcript.addUser(text);
    controller.promptStarted();
    return session.prompt(text).catch((error: unknown) => {
      controller.promptFailed(errorText(error));
      return undefined;
    });
  }

  const unsubscribe = session.subscribe((event) => {
    transcript.handle(event);
    controller.handle(event);
    tui.requestRender();
  });

  // The command line's prompts, once the screen is up; one that fails or is stopped ends the list.
  void (async () => {
    for (const text of initialMessages) {
      if (isClosed()) return;
      const result = await send(text);
      if (result === undefined || isFailedStop(result.stopReason)) return;
    }
  })();

  const removeKeys = tui.addInputListener((data) => {
    if (isKeyRelease(data)) return undefined;
    if (matchesKey(data, "ctrl+c")) {
      const outcome = controller.pressCtrlC();
      // The first press on an idle session also clears the line, as in pi.
      if (outcome === "confirm_exit") input.setValue("");
      if (outcome === "exit") void finish(0);
      return { consume: true };
    }
    if (matchesKey(data, "shift+tab")) {
      // pi's key and words. The level applies from the next request; the status line shows it.
      const notice = (level: "info" | "error", text: string) => {
        if (isClosed()) return;
        transcript.addNotice({ level, text });
        tui.requestRender();
      };
      session.cycleThinkingLevel().then(
        (level) =>
          notice("info", level === undefined ? "Current model does not support thinking" : `Thinking level: ${level}`),
        (error: unknown) => notice("error", `Error: ${errorText(error)}`),
      );
      return { consume: true };
    }
    if (matchesKey(data, "ctrl+d") && input.getValue() === "") {
      void finish(0);
      return { consume: true };
    }
    return undefined;
  });

  return () => {
    removeKeys();
    unsubscribe();
    controller.dispose();
    loader?.component.stop();
  };
}

/**
 * The status line's model: `provider/id`, and for a reasoning model its thinking level as pi's
 * footer shows it (`• high`, or `• thinking off`).
 */
function modelLabel(session: AgentSession): string {
  const model = `${session.model.provider}/${session.model.id}`;
  if (!session.model.reasoning) return model;
  const level = session.thinkingLevel;
  return level === "off" ? `${model} • thinking off` : `${model} • ${level}`;
}

/** A dim rule across the full width, above the input line. */
class Rule implements Component {
  render(width: number): string[] {
    return [style.gray("─".repeat(Math.max(0, width)))];
  }
  invalidate(): void {}
}

/** One line of state under the input, cut to the width (it never wraps, so it never moves). */
class StatusLine implements Component {
  readonly #text: () => string;
  constructor(text: () => string) {
    this.#text = text;
  }
  render(width: number): string[] {
    return [truncateToWidth(style.gray(` ${this.#text()}`), width)];
  }
  invalidate(): void {}
}
