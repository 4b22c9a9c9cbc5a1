/**
 * `lifeline sessions` (with `delete <id>` and `prune --older-than <age>`) and `lifeline export
 * <id>`: the stored sessions, where the modes keep them:
 * the fleet's Redis in fleet mode (`--fleet`, or the `fleet` setting), else `--session-dir`, the
 * `sessionDir` setting, or `$LIFELINE_DIR/sessions/<encoded cwd>/`. In fleet mode `sessions`
 * lists every directory's sessions, each line naming its directory (a session served by a fleet
 * records the serving host's), and `--here` keeps this directory's.
 */
import { resolve } from "node:path";
import type { SessionHostOptions } from "../../host/host-options.js";
import type { CliContext } from "../cli-context.js";
import { command } from "../command-tree.js";
import { switchFlag, valueFlag } from "../flag.js";
import { age, nonBlank, usage } from "../flag-values.js";
import { type FleetFlagValues, fleetFlags, fleetOverride } from "../groups/fleet-flags.js";
import { sessionsOption, storedSessionFlags } from "../groups/session-flags.js";

const storeFlags = { ...fleetFlags, ...storedSessionFlags } as const;

/** The host whose store the commands read: sessions where the modes keep them, in fleet mode the fleet's. */
async function storeHost(
  values: FleetFlagValues & { sessionDir?: string | undefined },
  context: CliContext,
): Promise<{ host: SessionHostOptions; fleet: boolean }> {
  const fleet = await fleetOverride(values, context);
  // No --no-session here: the store is always on.
  const sessions = (await sessionsOption(values, context)) || {};
  const host: SessionHostOptions = {
    cwd: context.cwd,
    lifelineDir: context.lifelineDir,
    sessions,
    ...(fleet === undefined ? {} : { settings: { fleet } }),
  };
  // Imported here, not at the top: the settings files' schema (zod) loads for a command that runs, not for --help.
  const { loadSettingsFiles } = await import("../../config/settings-store.js");
  // Fleet mode stores sessions in Redis unless a directory is named (by the flag or the setting).
  const fleetGroup = fleet ?? (await loadSettingsFiles(context.lifelineDir, context.cwd)).fleet;
  return { host, fleet: fleetGroup !== undefined && sessions.dir === undefined };
}

const sessionsFlags = {
  ...storeFlags,
  here: switchFlag("--here", "in fleet mode, only the sessions of this directory"),
} as const;

/** The stored session a command names. */
const ID_ARG = {
  spelling: "<id>",
  description: "the session's id, or a unique prefix of it (a path works for session files)",
} as const;

/** `lifeline sessions delete`. */
const deleteCommand = command<CliContext, typeof storeFlags>({
  name: "delete",
  description: "delete a stored session that is open nowhere (in fleet mode, from the fleet's Redis)",
  args: [ID_ARG],
  flags: storeFlags,
  run: async ({ flags, args, context }) => {
    const store = await storeHost(flags, context);
    return context.runtime.deleteSession({ host: store.host, ref: args[0] as string });
  },
});

const pruneFlags = {
  ...storeFlags,
  olderThan: valueFlag("--older-than <age>", "delete the sessions last written longer ago than this (12h, 30d)", age),
  here: switchFlag("--here", "only the sessions of this directory (default: every directory's)"),
  dryRun: switchFlag("--dry-run", "delete nothing; list what would be deleted"),
} as const;

/** `lifeline sessions prune`. */
const pruneCommand = command<CliContext, typeof pruneFlags>({
  name: "prune",
  description:
    "delete the stored sessions of every directory last written longer ago than --older-than, except those open somewhere",
  flags: pruneFlags,
  run: async ({ flags, context }) => {
    if (flags.olderThan === undefined) usage("lifeline sessions prune needs --older-than <age> (for example 30d).");
    const store = await storeHost(flags, context);
    return context.runtime.pruneSessions({
      host: store.host,
      olderThanMs: flags.olderThan,
      allDirectories: flags.here !== true,
      dryRun: flags.dryRun === true,
    });
  },
});

/** `lifeline sessions`, and `delete` and `prune` under it. */
export const sessionsCommand = command<CliContext, typeof sessionsFlags>({
  name: "sessions",
  description: "list the stored sessions, most recent first: this directory's, or in fleet mode every directory's",
  flags: sessionsFlags,
  run: async ({ flags, context }) => {
    const store = await storeHost(flags, context);
    return context.runtime.listSessions({ host: store.host, allDirectories: store.fleet && flags.here !== true });
  },
  subcommands: [deleteCommand, pruneCommand],
});

const exportFlags = {
  ...storeFlags,
  out: valueFlag("--out <file>", "write to this file instead of stdout", nonBlank),
} as const;

/** `lifeline export`. */
export const exportCommand = command<CliContext, typeof exportFlags>({
  name: "export",
  description: "write a stored session as a pi session file (version 3 JSONL) to stdout, or to --out",
  args: [ID_ARG],
  flags: exportFlags,
  run: async ({ flags, args, context }) => {
    const store = await storeHost(flags, context);
    return context.runtime.exportSession({
      host: store.host,
      ref: args[0] as string,
      ...(flags.out === undefined ? {} : { out: resolve(context.cwd, flags.out) }),
    });
  },
});
