/**
 * A shell command a client ran in a session (`bash` in RPC mode, `AgentSession.executeBash`), as
 * pi 0.73.1 records it: the result the caller gets ({@link BashResult}) and the message that puts
 * the command and its output into the session's transcript and file (pi's `bashExecution` role),
 * so the model sees it with the next prompt and pi reads the file the same way.
 */
import type { UserMessage } from "@mariozechner/pi-ai";

/** pi's `BashResult`: what a command left, as the caller gets it. Plain data (it crosses a thread). */
export interface BashResult {
  /** stdout and stderr interleaved as they came, ANSI escapes and control characters removed; the tail when truncated. */
  output: string;
  /** The exit code; undefined when the command was cancelled or killed by a signal. */
  exitCode: number | undefined;
  /** True when `abortBash()` (or the caller's signal) killed the command. */
  cancelled: boolean;
  /** True when `output` is only the tail (over 2000 lines or 50 KiB). */
  truncated: boolean;
  /** A temporary file with the whole output, when it exceeded 50 KiB or was truncated. */
  fullOutputPath?: string;
}

/** pi's `BashExecutionMessage`: a command and its result in the transcript. */
export interface BashExecutionMessage {
  role: "bashExecution";
  command: string;
  output: string;
  exitCode: number | undefined;
  cancelled: boolean;
  truncated: boolean;
  fullOutputPath?: string;
  timestamp: number;
  /** When true the model never sees it (pi's `!!` commands); it stays in the file. */
  excludeFromContext?: boolean;
}

declare module "@mariozechner/pi-agent-core" {
  interface CustomAgentMessages {
    bashExecution: BashExecutionMessage;
  }
}

/** The transcript message for `command`'s `result`, as pi builds it. */
export function bashExecutionMessage(
  command: string,
  result: BashResult,
  timestamp: number,
  excludeFromContext: boolean,
): BashExecutionMessage {
  const message: BashExecutionMessage = {
    role: "bashExecution",
    command,
    output: result.output,
    exitCode: result.exitCode,
    cancelled: result.cancelled,
    truncated: result.truncated,
    timestamp,
  };
  if (result.fullOutputPath !== undefined) message.fullOutputPath = result.fullOutputPath;
  if (excludeFromContext) message.excludeFromContext = true;
  return message;
}

/**
 * What the model sees of a command: a user turn in the wording pi's context uses ("Ran `cmd`",
 * the output fenced, then cancellation, a non-zero exit code or where the full output is), so a
 * session continued in pi or in lifeline shows the model the same text.
 */
export function bashAsUser(message: BashExecutionMessage): UserMessage {
  const parts = [`Ran \`${message.command}\`\n${message.output ? `\`\`\`\n${message.output}\n\`\`\`` : "(no output)"}`];
  if (message.cancelled) parts.push("(command cancelled)");
  else if (typeof message.exitCode === "number" && message.exitCode !== 0) {
    parts.push(`Command exited with code ${message.exitCode}`);
  }
  if (message.truncated && message.fullOutputPath)
    parts.push(`[Output truncated. Full output: ${message.fullOutputPath}]`);
  return { role: "user", content: [{ type: "text", text: parts.join("\n\n") }], timestamp: message.timestamp };
}
