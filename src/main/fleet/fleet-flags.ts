/**
 * The CLI's `--fleet <redis-url>` and `--fleet-name <name>` (every mode that makes a host): they
 * become the `fleet` settings group of the host's `settings` override. The flags are merged over
 * the settings files' own `fleet` group first, so `--fleet-name` alone works with a `fleet.redis`
 * from a file, and the whole group is validated as the settings schema validates it: a bad value
 * is refused with ERR_INVALID_SETTINGS naming the key (`fleet.redis`, `fleet.name`).
 */
import { parseSettings, type SettingsInput } from "../../shared/settings.js";
import { loadSettingsFiles } from "../config/settings-store.js";

/** The fleet flags as commander parses them. */
export interface FleetFlags {
  /** `--fleet <redis-url>` → `fleet.redis`. */
  fleet?: string;
  /** `--fleet-name <name>` → `fleet.name`. */
  fleetName?: string;
}

/** Where the settings files are read from (as the host would read them). */
export interface FleetFlagsSource {
  lifelineDir: string | false;
  cwd: string;
}

/**
 * The `fleet` group the flags ask for, merged over the files' group; undefined when neither flag is
 * given (the host then reads the files itself, as without the flags).
 * @throws InvalidSettingsError (ERR_INVALID_SETTINGS) naming the key of a bad value, or a settings
 *   file that cannot be read.
 */
export async function fleetFromFlags(
  flags: FleetFlags,
  source: FleetFlagsSource,
): Promise<NonNullable<SettingsInput["fleet"]> | undefined> {
  if (flags.fleet === undefined && flags.fleetName === undefined) return undefined;
  const files = source.lifelineDir === false ? {} : await loadSettingsFiles(source.lifelineDir, source.cwd);
  const fleet: NonNullable<SettingsInput["fleet"]> = { ...(files.fleet ?? {}) };
  if (flags.fleet !== undefined) fleet.redis = flags.fleet;
  if (flags.fleetName !== undefined) fleet.name = flags.fleetName;
  parseSettings({ fleet }, "the command line (--fleet, --fleet-name)");
  return fleet;
}
