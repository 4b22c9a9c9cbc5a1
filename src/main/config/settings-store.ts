/**
 * Settings files in pi's format: `settings.json` in the user directory (`LIFELINE_DIR`, default
 * `~/.lifeline`), overridden by `.lifeline/settings.json` in the working directory.
 */
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { InvalidSettingsError } from "../../shared/errors.js";
import { mergeSettings, parseSettingsLayer, type SettingsInput } from "../../shared/settings/settings.js";
import { parseJsonText } from "./json-text.js";
import { resolveLifelineDir } from "./lifeline-dir.js";

// The user directory's rule lives in lifeline-dir.ts, which the CLI loads without the settings' schema (zod).
export { resolveLifelineDir } from "./lifeline-dir.js";

/** Where the two settings files live. */
export function settingsPaths(lifelineDir: string, cwd: string): { user: string; project: string } {
  return { user: join(lifelineDir, "settings.json"), project: join(cwd, ".lifeline", "settings.json") };
}

/**
 * Reads and validates both files (each may be absent) and returns them merged, project winning.
 * @throws InvalidSettingsError naming the file, the key, the value and what is allowed.
 */
export async function loadSettingsFiles(lifelineDir: string, cwd: string): Promise<SettingsInput> {
  const paths = settingsPaths(lifelineDir, cwd);
  const user = await readSettingsFile(paths.user);
  const project = await readSettingsFile(paths.project);
  return mergeSettings(user, project);
}

async function readSettingsFile(path: string): Promise<SettingsInput | undefined> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new InvalidSettingsError(`Cannot read settings file ${path}: ${(error as Error).message}.`, { cause: error });
  }
  // Strict JSON, as pi reads it; the error points at the line and column, as models.json's does.
  const { value: parsed, problem } = parseJsonText(text, { jsonc: false });
  if (problem !== undefined) {
    throw new InvalidSettingsError(`Settings file ${path} is not valid JSON at ${problem}. Fix it or remove it.`);
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    throw new InvalidSettingsError(`Settings file ${path} must hold a JSON object, like {"retry": {"maxRetries": 3}}.`);
  }
  // One layer: a group another file or the command line completes may be partial here.
  parseSettingsLayer(parsed, path);
  return parsed as SettingsInput;
}

/**
 * B5: the explicit way to persist a setting. Merges `patch` into the user's `settings.json`
 * (creating it if needed), validates the result, and replaces the file atomically.
 * Keys lifeline does not know (pi's other settings) are kept.
 * @throws InvalidSettingsError if the patch or the existing file is invalid; the file is unchanged then.
 */
export async function writeUserSettings(
  patch: SettingsInput,
  lifelineDir: string = resolveLifelineDir(),
): Promise<void> {
  const path = settingsPaths(lifelineDir, lifelineDir).user;
  const existing = (await readSettingsFile(path)) ?? {};
  const next = mergeSettings(existing, patch);
  parseSettingsLayer(next, `${path} (after applying the patch)`);
  await mkdir(dirname(path), { recursive: true });
  const temp = `${path}.${process.pid}.tmp`;
  await writeFile(temp, `${JSON.stringify(next, null, 2)}\n`, "utf8");
  await rename(temp, path);
}
