/**
 * How every `lifeline` command ends on an error: the message on stderr, and the exit code the
 * CLI documents: 2 for what the user must fix (a bad flag, settings, a model or key that is not
 * there: the command's own `usageCodes`), 1 for anything else. Each command names its own usage
 * codes, since what counts as the user's to fix depends on what the command does.
 */
import { errorText } from "../../shared/error-text.js";
import { type ErrorCode, LifelineError } from "../../shared/errors.js";

/** Writes `Error: <message>` to stderr; returns 2 when the error's code is in `usageCodes`, else 1. */
export function reportCliError(error: unknown, usageCodes: ReadonlySet<ErrorCode>): number {
  process.stderr.write(`Error: ${errorText(error)}\n`);
  return error instanceof LifelineError && usageCodes.has(error.code) ? 2 : 1;
}
