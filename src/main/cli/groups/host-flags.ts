/**
 * The host groups: the worker script the host's workers run (`--worker-entry`, every command
 * that starts workers) and the extensions its sessions load (`-e`, `--no-extensions`, every
 * command that opens sessions a user talks to). With the fleet group they become the
 * `createSessionHost` options of the modes, `demo` and `serve`.
 */
import { resolveExtensions } from "../../extensions/resolve-extensions.js";
import type { SessionHostOptions } from "../../host/host-options.js";
import type { CliContext } from "../cli-context.js";
import { listFlag, switchFlag, textFlag } from "../flag.js";
import { nonBlank } from "../flag-values.js";
import { type FleetFlagValues, fleetFlags, fleetOverride } from "./fleet-flags.js";

/** The worker group. */
export const workerFlags = {
  workerEntry: textFlag(
    "--worker-entry <file>",
    "worker script to run the sessions in, such as an unpacked lifeline-worker.mjs",
    { env: "LIFELINE_WORKER_ENTRY", defaultText: "the package's own" },
  ),
} as const;

/** The extensions group. */
const extensionFlags = {
  extension: listFlag(
    "-e, --extension <path>",
    "load an extension (.ts/.js file or directory, as pi's); repeatable",
    nonBlank,
  ),
  noExtensions: switchFlag("--no-extensions", "ignore the extensions listed in settings files (-e still loads)"),
} as const;

/** The worker flag's value as a host option (an empty LIFELINE_WORKER_ENTRY counts as unset). */
export function workerOptions(values: { workerEntry?: string | undefined }): Pick<SessionHostOptions, "workerEntry"> {
  return values.workerEntry === undefined || values.workerEntry === "" ? {} : { workerEntry: values.workerEntry };
}

/**
 * The extension flags as the host's `extensions`: `-e` paths, then the settings files' lists
 * unless `--no-extensions`, each checked to exist, so a bad path is a usage error (exit 2).
 * @throws ExtensionLoadError (ERR_EXTENSION_LOAD) for an extension path that does not exist.
 */
async function extensionOptions(
  values: { extension?: string[] | undefined; noExtensions?: boolean | undefined },
  context: CliContext,
): Promise<Pick<SessionHostOptions, "extensions">> {
  // Imported here, not at the top: it reads the settings files, whose schema (zod) --help need not load.
  const { cliExtensionPaths } = await import("../../extensions/extensions-cli.js");
  const extensions = await cliExtensionPaths({
    flags: values.extension ?? [],
    noExtensions: values.noExtensions === true,
    lifelineDir: context.lifelineDir,
    cwd: context.cwd,
  });
  if (extensions.length === 0) return {};
  resolveExtensions(extensions, context.cwd);
  return { extensions };
}

/** The flags of a host that serves sessions a user talks to: its worker script, extensions and fleet. */
export const sessionHostFlags = { ...extensionFlags, ...workerFlags, ...fleetFlags } as const;

/**
 * The `createSessionHost` options of {@link sessionHostFlags} (its `sessions` left to the caller).
 * @throws ERR_EXTENSION_LOAD for an extension path that does not exist; ERR_INVALID_SETTINGS for
 *   a bad fleet group.
 */
export async function sessionHostOptions(
  values: {
    workerEntry?: string | undefined;
    extension?: string[] | undefined;
    noExtensions?: boolean | undefined;
  } & FleetFlagValues,
  context: CliContext,
): Promise<SessionHostOptions> {
  const fleet = await fleetOverride(values, context);
  return {
    ...workerOptions(values),
    ...(await extensionOptions(values, context)),
    ...(fleet === undefined ? {} : { settings: { fleet } }),
  };
}
