/**
 * The runs of `lifeline export <id>` and `lifeline sessions`: the stored sessions, read where the
 * CLI's other modes keep them: the fleet's Redis in fleet mode (`--fleet`, or the `fleet`
 * setting), else `--session-dir`, the `sessionDir` setting, or `$LIFELINE_DIR/sessions/<encoded
 * cwd>/`; an explicit directory means files, in fleet mode too.
 *
 *   export   pi's v3 JSONL on stdout (or `--out FILE`)
 *   sessions this directory's sessions, newest first; in fleet mode every directory's, each
 *            line naming its directory (`--here`: only this directory's)
 *
 * Neither opens a session for writing, so both work on a session open elsewhere. Exit codes: 0
 * done; 2 a session that does not exist, an ambiguous prefix, bad settings or credentials, a
 * stored session that cannot be read; 1 anything else (the fleet's Redis unreachable, `--out`
 * not writable).
 */
import { writeFile } from "node:fs/promises";
import type { ErrorCode } from "../../shared/errors.js";
import { reportCliError } from "../config/cli-errors.js";
import type { SessionInfo } from "../session-files/session-store.js";
import type { SessionHostOptions } from "./host-options.js";
import { createSessionHost, type SessionHost } from "./session-host.js";

/** Codes that mean "fix the command or the configuration": exit 2. */
const USAGE_CODES: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  "ERR_INVALID_OPTIONS",
  "ERR_INVALID_SETTINGS",
  "ERR_SESSION_NOT_FOUND",
  "ERR_SESSION_FILE",
  "ERR_FLEET_AUTH",
]);

/** What `lifeline export` runs. */
export interface ExportCommandRequest {
  /** The host whose store is read: its `sessions` and, in fleet mode, `settings.fleet`. */
  host: SessionHostOptions;
  /** The session's id, a unique prefix of it, or a session file's path. */
  ref: string;
  /** Write to this file instead of stdout. */
  out?: string;
}

/** What `lifeline sessions` runs. */
export interface SessionsCommandRequest {
  host: SessionHostOptions;
  /** Every directory's sessions (fleet mode's listing), each line naming its directory; else the host's cwd's. */
  allDirectories: boolean;
}

/** Runs `lifeline export`; resolves to the exit code. Never throws. */
export function runExportCommand(request: ExportCommandRequest): Promise<number> {
  return withHost(request.host, async (host) => {
    const { text, warnings } = await host.exportSession(request.ref);
    for (const warning of warnings) process.stderr.write(`Warning: ${warning}\n`);
    if (request.out === undefined) process.stdout.write(text);
    else await writeFile(request.out, text);
    return 0;
  });
}

/** Runs `lifeline sessions`; resolves to the exit code. Never throws. */
export function runSessionsCommand(request: SessionsCommandRequest): Promise<number> {
  return withHost(request.host, async (host) => {
    const sessions = await host.listSessions(request.allDirectories ? { allDirectories: true } : {});
    if (sessions.length === 0) {
      process.stderr.write(
        request.allDirectories
          ? "No sessions stored in the fleet.\n"
          : `No sessions stored for ${request.host.cwd ?? process.cwd()}.\n`,
      );
    }
    for (const info of sessions) process.stdout.write(`${listLine(info, request.allDirectories)}\n`);
    return 0;
  });
}

/** `id  modified  messages  [directory]  name or first message`, tab-separated. */
function listLine(info: SessionInfo, withDirectory: boolean): string {
  const title = (info.name ?? info.firstMessage).replace(/\s+/g, " ").slice(0, 80);
  const fields = [info.id, info.modified.toISOString(), `${info.messageCount} messages`];
  if (withDirectory) fields.push(info.cwd);
  return [...fields, title].join("\t");
}

/** Runs `body` on a host made from `options`; closes it after. Errors go to stderr and become the exit code. */
async function withHost(options: SessionHostOptions, body: (host: SessionHost) => Promise<number>): Promise<number> {
  let host: SessionHost | undefined;
  try {
    host = createSessionHost({ threads: 1, ...options });
    return await body(host);
  } catch (error) {
    return reportCliError(error, USAGE_CODES);
  } finally {
    await host?.close();
  }
}
