/**
 * `lifeline sessions` and `lifeline export <id>`: the stored sessions, where the modes keep them:
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
import { nonBlank } from "../flag-values.js";
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

/** `lifeline sessions`. */
export const sessionsCommand = command<CliContext, typeof sessionsFlags>({
  name: "sessions",
  description: "list the stored sessions, most recent first: this directory's, or in fleet mode every directory's",
  flags: sessionsFlags,
  run: async ({ flags, context }) => {
    const store = await storeHost(flags, context);
    return context.runtime.listSessions({ host: store.host, allDirectories: store.fleet && flags.here !== true });
  },
});

const exportFlags = {
  ...storeFlags,
  out: valueFlag("--out <file>", "write to this file instead of stdout", nonBlank),
} as const;

/** `lifeline export`. */
export const exportCommand = command<CliContext, typeof exportFlags>({
  name: "export",
  description: "write a stored session as a pi session file (version 3 JSONL) to stdout, or to --out",
  args: [
    { spelling: "<id>", description: "the session's id, or a unique prefix of it (a path works for session files)" },
  ],
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
