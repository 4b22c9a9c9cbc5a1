/**
 * How every `lifeline` command ends on an error: one line on stderr, `Error [ERR_CODE]: message`
 * (the code docs/errors.md lists; `Error: message` for an error without one), the message in the
 * CLI's words (an error's `cliMessage` where its advice names a flag rather than an option), and
 * the exit code the CLI documents: 2 for what the user must fix (a bad flag, settings, a model or
 * key that is not there: the command's own `usageCodes`), 1 for anything else. Each command names
 * its own usage codes, since what counts as the user's to fix depends on what the command does.
 */

import { type ErrorCode, LifelineError } from "../../shared/errors.js";
import { errorText } from "../../shared/failures/error-text.js";

/** The text of `error` for a CLI user: its `cliMessage` when it has one, else its message. */
export function cliErrorText(error: unknown): string {
  return error instanceof LifelineError && error.cliMessage !== undefined ? error.cliMessage : errorText(error);
}

/** The line {@link reportCliError} writes, without its newline. */
export function cliErrorLine(error: unknown): string {
  const code = error instanceof LifelineError ? ` [${error.code}]` : "";
  return `Error${code}: ${cliErrorText(error)}`;
}

/** Writes {@link cliErrorLine} to stderr; returns 2 when the error's code is in `usageCodes`, else 1. */
export function reportCliError(error: unknown, usageCodes: ReadonlySet<ErrorCode>): number {
  process.stderr.write(`${cliErrorLine(error)}\n`);
  return error instanceof LifelineError && usageCodes.has(error.code) ? 2 : 1;
}

/**
 * Errors of a command that opens a session (print, demo, rpc, interactive) that mean "fix your
 * command or configuration": exit 2. Also what a command line that cannot be resolved into a
 * request fails with (a bad flag, settings, models.json, an unknown model).
 */
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
  "ERR_FLEET_AUTH",
]);
