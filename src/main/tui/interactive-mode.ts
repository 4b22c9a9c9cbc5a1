/**
 * `lifeline` on a terminal: one interactive session drawn with pi-tui (docs/tui.md).
 *
 * Layout, top to bottom: a header, the transcript (prompts, streamed answers, tool activity, error
 * lines), the loader (R10's retry countdown, or "Working…"), the input line, and a status line with
 * the model and the session state. The session's events drive a {@link SessionUiController}, which
 * decides what the loader and status show and what Esc does; this file only wires it to pi-tui and
 * owns the terminal's lifecycle.
 *
 * The terminal is restored on every way out: Ctrl+D on an empty line, Ctrl+C twice, SIGTERM,
 * SIGHUP, SIGINT from outside (in raw mode Ctrl+C is a key, not a signal), and, through a
 * process `exit` hook, an exception that ends the process.
 */
import {
  type Component,
  Container,
  Input,
  isKeyRelease,
  Loader,
  matchesKey,
  ProcessTerminal,
  Text,
  TUI,
  truncateToWidth,
} from "@mariozechner/pi-tui";
import { isFailedStop } from "../../shared/classify.js";
import { errorText } from "../../shared/error-text.js";
import type { PromptResult } from "../../shared/events.js";
import type { ModelRef } from "../../shared/protocol.js";
import type { SessionHostOptions, SessionOptions } from "../host/host-options.js";
import { createSessionHost, type SessionHost } from "../host/session-host.js";
import { type CliSessionFlags, openCliSession } from "../host/sessions-cli.js";
import type { AgentSession } from "../session/agent-session.js";
import type { SessionInfo } from "../session-files/session-store.js";
import { SessionPicker } from "./session-picker.js";
import { type LoaderView, SessionUiController } from "./session-ui-controller.js";
import { style } from "./theme.js";
import { TranscriptView } from "./transcript-view.js";

/** Options of {@link runInteractive}. The session reads stdin and draws on stdout, both TTYs. */
export interface InteractiveOptions {
  /** The model: `"provider/id"` (the CLI passes "demo/demo-1" by default) or a `ModelRef`. */
  model: string | ModelRef;
  /** API key for the model's provider. @default models.json, then the provider's environment variable */
  apiKey?: string;
  /** Options of the session host. @default `{ threads: 1 }`: one session needs one worker */
  host?: SessionHostOptions;
  /** More session options, for example a `workerModule` that gives the agent tools. */
  session?: Omit<SessionOptions, "model" | "apiKey">;
  /**
   * The CLI's -c / --session: resume a stored session instead of creating one (see
   * host/sessions-cli.ts); with `resume: true`, pick one of the cwd's sessions first (session-picker.ts).
   */
  sessionFlags?: CliSessionFlags;
  /**
   * Prompts to send once the session is on screen, one after another as if typed (pi's
   * `pi "first" "second"`); a prompt that fails or is stopped ends the list.
   */
  initialMessages?: readonly string[];
}

/**
 * pi-tui's ProcessTerminal enables xterm modifyOtherKeys 150 ms after start when the terminal did
 * not answer its Kitty keyboard query; stopping before that timer fires would let it switch the
 * mode on after the terminal was handed back. Exit waits at least this long after start.
 */
const KEY_PROBE_MS = 200;

/** Exit codes for termination signals: 128 + the signal number, as shells report them. */
const SIGNAL_EXIT_CODES: [NodeJS.Signals, number][] = [
  ["SIGINT", 130],
  ["SIGHUP", 129],
  ["SIGTERM", 143],
];

/**
 * Runs an interactive session until the user exits; resolves with the exit code: 0 after Ctrl+D
 * on an empty line or Ctrl+C twice, 128 + n after signal n, 2 when stdin or stdout is not a
 * terminal or the session cannot be created (bad model, missing key, bad settings; the reason is
 * on stderr, and the terminal was never put in raw mode). With `sessionFlags.resume`: 0 when the
 * user leaves the picker or there is nothing to pick, 2 when the picked session cannot be opened.
 * Never rejects for those. The session
 * host is closed before it resolves; the terminal is restored on every exit path.
 */
export async function runInteractive(options: InteractiveOptions): Promise<number> {
  if (!process.stdin.isTTY || !process.stdout.isTTY) {
    process.stderr.write('Error: interactive mode needs a terminal on stdin and stdout; use -p "text" instead.\n');
    return 2;
  }
  // Listener errors go to the transcript once the UI is up; before that, to stderr.
  let reportListenerError = (error: unknown): void => {
    process.stderr.write(`Error in a session listener: ${errorText(error)}\n`);
  };
  let host: SessionHost;
  try {
    host = createSessionHost({ threads: 1, onListenerError: (error) => reportListenerError(error), ...options.host });
  } catch (error) {
    process.stderr.write(`Error: ${errorText(error)}\n`);
    return 2;
  }
  const flags = options.sessionFlags ?? {};
  const openOptions = {
    ...options.session,
    model: options.model,
    ...(options.apiKey === undefined ? {} : { apiKey: options.apiKey }),
  };
  const setSink = (sink: (error: unknown) => void) => {
    reportListenerError = sink;
  };
  try {
    if (flags.resume === true) {
      let sessions: SessionInfo[];
      try {
        sessions = await host.listSessions();
      } catch (error) {
        process.stderr.write(`Error: ${errorText(error)}\n`);
        return 2;
      }
      if (sessions.length === 0) {
        // Nothing failed and nothing was left undone: as leaving the picker with Esc, exit 0.
        process.stderr.write(
          `No sessions to resume in ${process.cwd()}. Run lifeline without -r to start one here, or use --session <path|id> to open one from elsewhere.\n`,
        );
        return 0;
      }
      const open = (chosen: SessionInfo) =>
        openCliSession(host, { ...flags, resume: false, continue: false, session: chosen.path }, openOptions);
      return await runSessionUi({ pick: sessions, open }, setSink, options.initialMessages ?? []);
    }
    let session: AgentSession;
    try {
      session = await openCliSession(host, flags, openOptions);
    } catch (error) {
      process.stderr.write(`Error: ${errorText(error)}\n`);
      return 2;
    }
    return await runSessionUi(session, setSink, options.initialMessages ?? []);
  } finally {
    await host.close();
  }
}

/** What the UI shows: a session opened already, or a picker over `pick` that opens the chosen one. */
type SessionSource =
  | AgentSession
  | { pick: readonly SessionInfo[]; open: (chosen: SessionInfo) => Promise<AgentSession> };

/**
 * Draws the session until the user exits; resolves with the exit code after the terminal is
 * restored. With a picker: Esc or Ctrl+C there exits 0; a chosen session that cannot be opened
 * (locked by another process, unreadable) exits 2 with the reason on stderr after the terminal is back.
 */
function runSessionUi(
  source: SessionSource,
  setListenerErrorSink: (sink: (error: unknown) => void) => void,
  initialMessages: readonly string[],
): Promise<number> {
  const tui = new TUI(new ProcessTerminal());
  // Set once exit begins. The prompt still in flight then fails (the host disposes the session)
  // and its callbacks must not draw, nor start a Loader whose interval would keep the process up.
  let closed = false;
  let unmount: (() => void) | undefined;

  return new Promise<number>((resolve) => {
    const startedAt = Date.now();
    const finish = async (code: number): Promise<void> => {
      if (closed) return;
      closed = true;
      unmount?.();
      for (const [signal, handler] of signalHandlers) process.off(signal, handler);
      const probeLeft = startedAt + KEY_PROBE_MS - Date.now();
      if (probeLeft > 0) await new Promise((done) => setTimeout(done, probeLeft));
      try {
        tui.stop();
      } catch {
        restoreTerminal();
      }
      process.off("exit", restoreTerminal);
      resolve(code);
    };
    const signalHandlers = SIGNAL_EXIT_CODES.map(([signal, code]) => {
      const handler = () => void finish(code);
      process.on(signal, handler);
      return [signal, handler] as const;
    });
    process.once("exit", restoreTerminal);

    const show = (session: AgentSession) => {
      unmount = mountSession(tui, session, setListenerErrorSink, () => closed, finish, initialMessages);
    };
    if ("pick" in source) {
      const picker = new SessionPicker(source.pick, (chosen) => {
        if (chosen === undefined) {
          void finish(0);
          return;
        }
        tui.removeChild(picker);
        tui.addChild(new Text(style.gray(`Opening ${chosen.path}…`), 1, 0));
        tui.requestRender();
        source.open(chosen).then(
          (session) => {
            if (closed) return;
            tui.clear();
            show(session);
            tui.requestRender(true);
          },
          (error: unknown) => void finish(2).then(() => process.stderr.write(`Error: ${errorText(error)}\n`)),
        );
      });
      tui.addChild(picker);
      tui.setFocus(picker);
    } else show(source);
    try {
      tui.start();
    } catch (error) {
      void finish(1).then(() => process.stderr.write(`Error: cannot start the terminal UI: ${errorText(error)}\n`));
    }
  });
}

/**
 * Puts `session`'s screen into `tui` (header, transcript with its history, loader, input, status)
 * and wires its keys; returns what undoes the wiring when the UI exits.
 */
function mountSession(
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

/**
 * Last resort when the process exits with the UI still up (an uncaught exception): leave raw
 * mode, bracketed paste and extended keys, and show the cursor. Synchronous, as `exit` requires.
 */
function restoreTerminal(): void {
  try {
    process.stdout.write("\x1b[?2004l\x1b[>4;0m\x1b[?25h\r\n");
    process.stdin.setRawMode?.(false);
  } catch {
    // The terminal is gone; there is nothing left to restore.
  }
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
