/**
 * The CLI's one-shot mode (`lifeline -p`, and `lifeline demo` behind `npm start`): open a session
 * as the CLI's session flags say, send its prompts, print the last answer, show the session's progress
 * events on stderr as one line each, and close the host (which flushes the session file) however
 * the prompt ends, Ctrl+C and SIGTERM included.
 */
import type { AssistantMessage } from "@mariozechner/pi-ai";
import type { PromptResult, SessionEvent } from "../../shared/events.js";
import { isFailedStop } from "../../shared/failures/classify.js";
import { messageText } from "../../shared/message-text.js";
import { compactionNotice } from "../compaction/compaction-notice.js";
import { reportCliError, SESSION_USAGE_ERRORS } from "../config/cli-errors.js";
import { workerFate } from "../supervision/interrupted-run.js";
import type { SessionHostOptions } from "./host-options.js";
import { createSessionHost } from "./session-host.js";
import { type CliSessionFlags, openCliSession } from "./sessions-cli.js";

/** What `runPrintMode` runs. */
export interface PrintModeOptions {
  /**
   * The prompts, sent one after another as pi's print mode sends them; only the last answer is
   * printed. Empty: the prompt is read from stdin when it is not a terminal (`echo hi | lifeline -p`).
   */
  messages: readonly string[];
  model: string;
  apiKey?: string | undefined;
  banner?: string;
  /** The session flags' choice of session (-c, --session) and thinking level. */
  flags: CliSessionFlags;
  /** The host's options, its `sessions` included (false: no session file). */
  host: SessionHostOptions;
}

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

/**
 * The prompt piped to stdin, as pi's `-p` takes it; undefined (after saying what to do) when
 * stdin is a terminal or holds nothing but blanks.
 */
async function promptFromStdin(): Promise<string[] | undefined> {
  if (process.stdin.isTTY !== true) {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString("utf8").trim();
    if (text !== "") return [text];
  }
  process.stderr.write('Error: -p needs a prompt: lifeline -p "text", or pipe it in (echo "text" | lifeline -p).\n');
  return undefined;
}

function answerText(message: AssistantMessage | undefined): string {
  return message === undefined ? "" : messageText(message.content);
}

/**
 * `lifeline -p TEXT` and `lifeline demo`: the prompts, in order, on a session of its own; the last
 * answer on stdout, retry and other progress on stderr. Resolves to the exit code: 0 answered, 1
 * a prompt failed (the ones after it are not sent), 2 bad usage (see docs/cli.md), 130 / 143
 * interrupted.
 */
export async function runPrintMode(options: PrintModeOptions): Promise<number> {
  const messages = options.messages.length > 0 ? options.messages : await promptFromStdin();
  if (messages === undefined) return 2;
  let host: ReturnType<typeof createSessionHost>;
  try {
    host = createSessionHost({ threads: 1, ...options.host });
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
    let result: PromptResult | undefined;
    try {
      for (const text of messages) {
        result = await session.prompt(text);
        // A failed prompt ends the run: the ones after it would answer a conversation that lacks its answer.
        if (interrupted !== undefined || isFailedStop(result.stopReason)) break;
      }
    } finally {
      process.off("SIGINT", onInterrupt);
      process.off("SIGTERM", onTerminate);
    }
    if (interrupted !== undefined || result === undefined) return interrupted ?? 0;
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
