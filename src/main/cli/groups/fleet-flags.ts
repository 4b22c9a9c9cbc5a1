/**
 * The fleet group: `--fleet <redis-url>` and `--fleet-name <name>`, the `fleet.redis` and
 * `fleet.name` settings (docs/fleet.md). Taken by every command that can be a fleet's member or
 * client: the modes and `demo` (the host joins the fleet), `load` (its host joins; with
 * `--generators` it coordinates), `load-agent`, `serve`, `submit`, `sessions` and `export` (the
 * fleet's stored sessions).
 *
 * The flags are merged over the settings files' own `fleet` group, so `--fleet-name` alone works
 * with a `fleet.redis` from a file and `--fleet` completes a file that names only the fleet; the
 * merged group is validated as the settings schema validates it: a bad value is refused with
 * ERR_INVALID_SETTINGS naming the key (`fleet.redis`, `fleet.name`).
 */
import { InvalidSettingsError } from "../../../shared/errors.js";
import type { FleetSettings, SettingsInput } from "../../../shared/settings/settings.js";
import type { CliContext } from "../cli-context.js";
import { textFlag } from "../flag.js";

/** The fleet group's flags. */
export const fleetFlags = {
  fleet: textFlag(
    "--fleet <redis-url>",
    "join the fleet on this Redis (fleet.redis): shared retry budget, gates, sessions and queue; see docs/fleet.md",
  ),
  fleetName: textFlag("--fleet-name <name>", "the fleet's name on that Redis (fleet.name)", { defaultText: "default" }),
} as const;

/** The fleet flags' values. */
export interface FleetFlagValues {
  fleet?: string | undefined;
  fleetName?: string | undefined;
}

/**
 * The settings files' reader and schema, imported when a command reads them: the schema library
 * they need (zod) and the JSONC parser then load only for a command that runs, not for `--help`.
 */
async function settingsModules() {
  const [{ parseSettings }, { loadSettingsFiles }] = await Promise.all([
    import("../../../shared/settings/settings.js"),
    import("../../config/settings-store.js"),
  ]);
  return { parseSettings, loadSettingsFiles };
}

/**
 * The `fleet` settings group the flags ask for, merged over the files' group; undefined when
 * neither flag is given (a host then reads the files itself, as without the flags).
 * @throws InvalidSettingsError (ERR_INVALID_SETTINGS) naming the key of a bad value, or a settings
 *   file that cannot be read.
 */
export async function fleetOverride(
  values: FleetFlagValues,
  context: CliContext,
): Promise<NonNullable<SettingsInput["fleet"]> | undefined> {
  if (values.fleet === undefined && values.fleetName === undefined) return undefined;
  const { parseSettings, loadSettingsFiles } = await settingsModules();
  const files = await loadSettingsFiles(context.lifelineDir, context.cwd);
  const fleet: NonNullable<SettingsInput["fleet"]> = { ...(files.fleet ?? {}) };
  if (values.fleet !== undefined) fleet.redis = values.fleet;
  if (values.fleetName !== undefined) fleet.name = values.fleetName;
  parseSettings({ fleet }, "the command line (--fleet, --fleet-name) over the settings files");
  return fleet;
}

/**
 * The fleet a command cannot run without (`serve`, `submit`, `load-agent`, `load --generators`):
 * the flags over the settings files, defaults applied.
 * @throws ERR_INVALID_SETTINGS naming `fleet.redis` when neither gives one, or a bad value.
 */
export async function requiredFleet(
  values: FleetFlagValues,
  context: CliContext,
  command: string,
): Promise<FleetSettings> {
  const { parseSettings, loadSettingsFiles } = await settingsModules();
  const given =
    (await fleetOverride(values, context)) ?? (await loadSettingsFiles(context.lifelineDir, context.cwd)).fleet;
  const fleet = given === undefined ? undefined : parseSettings({ fleet: given }, "the settings files").fleet;
  if (fleet === undefined) {
    throw new InvalidSettingsError(
      `fleet.redis: \`${command}\` needs a fleet; give --fleet redis://… or set fleet.redis in a settings file.`,
    );
  }
  return fleet;
}
