/**
 * The CLI's one-shot mode (`lifeline -p`, and `lifeline demo` behind `npm start`): open a session
 * as the CLI's session flags say, send one prompt, print the answer, show the session's progress
 * events on stderr as one line each, and close the host (which flushes the session file) however
 * the prompt ends, Ctrl+C and SIGTERM included.
 */
import type { AssistantMessage } from "@mariozechner/pi-ai";
import { isFailedStop } from "../../shared/classify.js";
import type { ErrorCode } from "../../shared/errors.js";
import type { PromptResult, SessionEvent } from "../../shared/events.js";
import { compactionNotice } from "../compaction/compaction-notice.js";
import { reportCliError } from "../config/cli-errors.js";
import type { SessionsOptions } from "../session-files/session-persistence.js";
import { workerFate } from "../supervision/interrupted-run.js";
import type { SessionHostOptions } from "./host-options.js";
import { createSessionHost } from "./session-host.js";
import { type CliSessionFlags, openCliSession } from "./sessions-cli.js";

/** What `runPrintMode` runs. */
export interface PrintModeOptions {
  text: string;
  model: string;
  apiKey?: string | undefined;
  banner?: string;
  sessions: SessionsOptions | false;
  flags: CliSessionFlags;
  host: SessionHostOptions;
}

/** Errors of a command that opens a session (print, demo, rpc, interactive) that mean "fix your command or configuration": exit 2. */
export const SESSION_USAGE_ERRORS: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  "ERR_INVALID_SETTINGS",
  "ERR_INVALID_OPTIONS",
  "ERR_INVALID_MODELS",
  "ERR_UNKNOWN_MODEL",
  "ERR_MISSING_API_KEY",
  "ERR_AUTH_FILE",
  "ERR_SESSION_NOT_FOUND",
  "ERR_SESSION_LOCKED",
  "ERR_SESSION_FILE",
  "ERR_EXTENSION_LOAD",
]);

/** Whole seconds, rounded up as pi's loader counts them; short delays in ms so they don't read as 1s. */
function formatDelay(ms: number): string {
  return ms < 1000 ? `${ms}ms` : `${Math.ceil(ms / 1000)}s`;
}

/** One line of stderr progress for an event, or undefined for events the CLI does not show. */
function progressLine(event: SessionEvent): string | undefined {
  switch (event.type) {
    case "auto_retry_start":
      return `Retrying (${event.attempt}/${event.maxAttempts})${event.model === undefined ? "" : ` on ${event.model}`} in ${formatDelay(event.delayMs)}… after: ${event.errorMessage}`;
    case "auto_retry_end":
      if (event.success) return `Recovered after ${event.attempt} ${event.attempt === 1 ? "retry" : "retries"}.`;
      return `Retry failed after ${event.attempt} attempts: ${event.finalError ?? "Unknown error"}`;
    case "compaction_start":
    case "compaction_end":
      return compactionNotice(event);
    case "worker_exited":
      return `Worker exited: ${event.error.message}`;
    case "provider_gate_wait":
      return `Provider ${event.provider} is rate limited: waiting ${formatDelay(event.waitMs)} before the ${event.before === "retry" ? "retry" : "prompt"} (retry.coordinate).`;
    case "coordination_fallback_start":
      return `Lost the Redis of fleet ${event.fleet} (${event.reason}); retry budget, gates and permits are this host's own until it returns.`;
    case "coordination_fallback_end":
      return `Rejoined fleet ${event.fleet} after ${formatDelay(event.fallbackMs)}; retry budget, gates and permits are fleet-wide again.`;
    case "session_restored":
      return `The session's worker ${workerFate(event.reason)}; the session was restored on a fresh worker (restart ${event.restarts}).`;
    case "extension_error":
      return `Extension ${event.extensionPath} failed on ${event.event}: ${event.error}`;
    default:
      return undefined;
  }
}

function answerText(message: AssistantMessage | undefined): string {
  if (message === undefined) return "";
  return message.content.map((block) => (block.type === "text" ? block.text : "")).join("");
}

/**
 * `lifeline -p TEXT` and `lifeline demo`: one prompt on a session of its own; the answer on
 * stdout, retry and other progress on stderr. Resolves to the exit code (see cli.ts).
 */
export async function runPrintMode(options: PrintModeOptions): Promise<number> {
  let host: ReturnType<typeof createSessionHost>;
  try {
    host = createSessionHost({ threads: 1, ...options.host, sessions: options.sessions });
  } catch (error) {
    return reportCliError(error, SESSION_USAGE_ERRORS);
  }
  let interrupted: number | undefined;
  try {
    if (options.banner !== undefined) process.stderr.write(`${options.banner}\n`);
    const session = await openCliSession(host, options.flags, {
      model: options.model,
      ...(options.apiKey === undefined ? {} : { apiKey: options.apiKey }),
    });
    session.subscribe((event) => {
      const line = progressLine(event);
      if (line !== undefined) process.stderr.write(`${line}\n`);
    });
    // Both end the prompt and let the finally below close the host, which flushes the session file.
    const onInterrupt = () => {
      interrupted = 130;
      void session.abort();
    };
    const onTerminate = () => {
      interrupted = 143;
      void session.abort();
    };
    process.once("SIGINT", onInterrupt);
    process.once("SIGTERM", onTerminate);
    let result: PromptResult;
    try {
      result = await session.prompt(options.text);
    } finally {
      process.off("SIGINT", onInterrupt);
      process.off("SIGTERM", onTerminate);
    }
    if (interrupted !== undefined) return interrupted;
    if (isFailedStop(result.stopReason)) {
      process.stderr.write(`Error: ${result.errorMessage ?? result.stopReason}\n`);
      return 1;
    }
    process.stdout.write(`${answerText(result.message)}\n`);
    return 0;
  } catch (error) {
    return reportCliError(error, SESSION_USAGE_ERRORS);
  } finally {
    await host.close();
  }
}
