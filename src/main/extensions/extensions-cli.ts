/**
 * The CLI's extension list: `--extension/-e` paths, then the `extensions` arrays of the project
 * settings file (`.lifeline/settings.json`) and of the user's (`$LIFELINE_DIR/settings.json`).
 * `--no-extensions` drops the settings' lists; `-e` paths still load, as in pi. Every path is
 * taken from the current directory (`~/` is the home directory).
 *
 * Only the CLI reads the settings' `extensions`: the library loads only what its host option
 * names, so an embedding app never runs code from the user's files.
 */
import { readFile } from "node:fs/promises";
import { settingsPaths } from "../config/settings-store.js";

/** Options of {@link cliExtensionPaths}. */
export interface CliExtensionOptions {
  /** `-e` paths, in order. */
  flags: readonly string[];
  /** `--no-extensions`. */
  noExtensions: boolean;
  lifelineDir: string;
  cwd: string;
}

/**
 * The paths to pass as the host's `extensions`, in load order. A settings file that is missing,
 * unreadable or malformed contributes nothing here: the host reports it when it reads the file.
 */
export async function cliExtensionPaths(options: CliExtensionOptions): Promise<string[]> {
  if (options.noExtensions) return [...options.flags];
  const files = settingsPaths(options.lifelineDir, options.cwd);
  const project = await extensionsIn(files.project);
  const user = await extensionsIn(files.user);
  return [...options.flags, ...project, ...user];
}

async function extensionsIn(file: string): Promise<string[]> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(file, "utf8"));
  } catch {
    return [];
  }
  const list = (parsed as { extensions?: unknown } | null)?.extensions;
  return Array.isArray(list) ? list.filter((entry): entry is string => typeof entry === "string" && entry !== "") : [];
}
