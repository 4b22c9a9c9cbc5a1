/**
 * `lifeline export <id>` and `lifeline sessions`: the stored sessions, read where the CLI's other
 * modes keep them (host/sessions-cli.ts): the fleet's Redis in fleet mode (the `fleet` setting),
 * else `--session-dir`, the `sessionDir` setting, or `$LIFELINE_DIR/sessions/<encoded cwd>/`; an
 * explicit directory means files, in fleet mode too.
 *
 *   lifeline export <id-or-prefix> [--out FILE]   pi's v3 JSONL on stdout (or FILE)
 *   lifeline sessions                             this directory's sessions, newest first
 *
 * `--session-dir DIR` (the program's flag) reads session files from DIR instead.
 *
 * Neither opens a session for writing, so both work on a session open elsewhere. Exit codes: 0
 * done; 2 a session that does not exist, an ambiguous prefix, bad settings, a stored session that
 * cannot be read; 1 anything else (the fleet's Redis unreachable, `--out` not writable).
 */
import { writeFile } from "node:fs/promises";
import type { Command } from "commander";
import type { ErrorCode } from "../../shared/errors.js";
import { reportCliError } from "../config/cli-errors.js";
import type { SessionInfo } from "../session-files/session-store.js";
import { createSessionHost, type SessionHost } from "./session-host.js";
import { cliSessionsOption } from "./sessions-cli.js";

/** Codes that mean "fix the command or the configuration": exit 2. */
const USAGE_CODES: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  "ERR_INVALID_OPTIONS",
  "ERR_INVALID_SETTINGS",
  "ERR_SESSION_NOT_FOUND",
  "ERR_SESSION_FILE",
]);

/**
 * Adds `export` and `sessions` to `program` (through `program.command`, so they inherit its exit
 * and output settings); `setExit` receives each one's exit code.
 */
export function addStoredSessionsCommands(program: Command, setExit: (code: number) => void): void {
  program
    .command("export")
    .description("write a stored session as a pi session file (version 3 JSONL) to stdout, or to --out")
    .argument("<id>", "the session's id, or a unique prefix of it (a path works for session files)")
    .option("--out <file>", "write to this file instead of stdout")
    .action(async (ref: string, opts: { out?: string }) => {
      setExit(
        await withHost(sessionDir(program), async (host) => {
          const { text, warnings } = await host.exportSession(ref);
          for (const warning of warnings) process.stderr.write(`Warning: ${warning}\n`);
          if (opts.out === undefined) process.stdout.write(text);
          else await writeFile(opts.out, text);
          return 0;
        }),
      );
    });
  program
    .command("sessions")
    .description("list this directory's stored sessions, most recent first (the fleet's in fleet mode)")
    .action(async () => {
      setExit(
        await withHost(sessionDir(program), async (host) => {
          const sessions = await host.listSessions();
          if (sessions.length === 0) process.stderr.write(`No sessions stored for ${process.cwd()}.\n`);
          for (const info of sessions) process.stdout.write(`${listLine(info)}\n`);
          return 0;
        }),
      );
    });
}

/** The program's `--session-dir` (commander gives the program its options wherever they stand). */
function sessionDir(program: Command): string | undefined {
  return program.opts<{ sessionDir?: string }>().sessionDir;
}

/** `id  modified  messages  name or first message`, tab-separated. */
function listLine(info: SessionInfo): string {
  const title = (info.name ?? info.firstMessage).replace(/\s+/g, " ").slice(0, 80);
  return [info.id, info.modified.toISOString(), `${info.messageCount} messages`, title].join("\t");
}

/**
 * Runs `body` on a host whose sessions are where the CLI keeps them; closes it after. Errors go to
 * stderr and become the exit code.
 */
async function withHost(sessionDir: string | undefined, body: (host: SessionHost) => Promise<number>): Promise<number> {
  let host: SessionHost | undefined;
  try {
    host = createSessionHost({ threads: 1, sessions: await cliSessionsOption({ sessionDir }) });
    return await body(host);
  } catch (error) {
    return reportCliError(error, USAGE_CODES);
  } finally {
    await host?.close();
  }
}
