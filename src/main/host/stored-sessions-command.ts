/**
 * The runs of `lifeline export <id>`, `lifeline sessions` and its `delete` and `prune`: the stored
 * sessions, where the CLI's other modes keep them: the fleet's Redis in fleet mode (`--fleet`, or the `fleet`
 * setting), else `--session-dir`, the `sessionDir` setting, or `$LIFELINE_DIR/sessions/<encoded
 * cwd>/`; an explicit directory means files, in fleet mode too.
 *
 *   export          pi's v3 JSONL on stdout (or `--out FILE`)
 *   sessions        this directory's sessions, newest first; in fleet mode every directory's,
 *                   each line naming its directory (`--here`: only this directory's)
 *   sessions delete one session, if it is open nowhere; its line on stdout
 *   sessions prune  every directory's sessions (`--here`: this one's) last written longer ago
 *                   than `--older-than`, except those open somewhere; a line per session deleted
 *
 * Export and listing open no session for writing, so both work on a session open elsewhere;
 * delete refuses one that is open (ERR_SESSION_LOCKED). Exit codes: 0 done; 2 a session that does
 * not exist, an ambiguous prefix, bad settings or credentials, a stored session that cannot be
 * read; 1 anything else (the session open somewhere, the fleet's Redis unreachable, `--out` not
 * writable).
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

/** What `lifeline sessions delete` runs. */
export interface DeleteCommandRequest {
  host: SessionHostOptions;
  /** The session's id, a unique prefix of it, or a session file's path. */
  ref: string;
}

/** What `lifeline sessions prune` runs. */
export interface PruneCommandRequest {
  host: SessionHostOptions;
  /** Delete the sessions last written longer ago than this. */
  olderThanMs: number;
  /** Every directory's sessions; else the host's cwd's. */
  allDirectories: boolean;
  /** Delete nothing; list what would be deleted. */
  dryRun: boolean;
}

/** Runs `lifeline sessions delete`: the deleted session's line on stdout. Resolves to the exit code. Never throws. */
export function runDeleteCommand(request: DeleteCommandRequest): Promise<number> {
  return withHost(request.host, async (host) => {
    const info = await host.deleteSession(request.ref);
    process.stdout.write(`${listLine(info, true)}\n`);
    process.stderr.write(`Deleted session ${info.id}.\n`);
    return 0;
  });
}

/**
 * Runs `lifeline sessions prune`: a line per deleted session on stdout (with `dryRun`, per session
 * it would delete), a line per session left (open somewhere) and a count on stderr. Resolves to
 * the exit code. Never throws.
 */
export function runPruneCommand(request: PruneCommandRequest): Promise<number> {
  return withHost(request.host, async (host) => {
    const { deleted, skipped } = await host.pruneSessions({
      olderThanMs: request.olderThanMs,
      dryRun: request.dryRun,
      ...(request.allDirectories ? { allDirectories: true } : {}),
    });
    for (const info of deleted) process.stdout.write(`${listLine(info, true)}\n`);
    for (const { session, reason } of skipped) process.stderr.write(`Left ${session.id}: ${reason}\n`);
    const verb = request.dryRun ? "Would delete" : "Deleted";
    const left = skipped.length === 0 ? "" : `; left ${skipped.length} open somewhere`;
    process.stderr.write(`${verb} ${deleted.length} session${deleted.length === 1 ? "" : "s"}${left}.\n`);
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
