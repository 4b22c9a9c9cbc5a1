/**
 * `lifeline` on a terminal: one interactive session drawn with pi-tui (docs/tui.md).
 *
 * The session's screen is session-screen.ts's (its events drive a SessionUiController, which
 * decides what the loader and status show and what Esc does); this file opens the session (or
 * the picker first) and owns the terminal's lifecycle.
 *
 * The terminal is restored on every way out: Ctrl+D on an empty line, Ctrl+C twice, SIGTERM,
 * SIGHUP, SIGINT from outside (in raw mode Ctrl+C is a key, not a signal), and, through a
 * process `exit` hook, an exception that ends the process.
 */
import { ProcessTerminal, Text, TUI } from "@mariozechner/pi-tui";
import { errorText } from "../../shared/failures/error-text.js";
import type { ModelRef } from "../../shared/wire/protocol.js";
import type { SessionHostOptions, SessionOptions } from "../host/host-options.js";
import { createSessionHost, type SessionHost } from "../host/session-host.js";
import { type CliSessionFlags, openCliSession } from "../host/sessions-cli.js";
import type { AgentSession } from "../session/agent-session.js";
import type { SessionInfo } from "../session-files/session-store.js";
import { SessionPicker } from "./session-picker.js";
import { mountSession } from "./session-screen.js";
import { style } from "./theme.js";

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
