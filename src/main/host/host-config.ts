/**
 * What a session host reads from its options and user directory: the settings files, models.json
 * and the auth storage, each read once and kept, and how a model reference resolves with its key.
 * Called by `SessionHost` only; every read is lazy, so a host that opens no session reads nothing.
 */

import { InvalidSettingsError, LifelineError } from "../../shared/errors.js";
import { errorText } from "../../shared/failures/error-text.js";
import {
  HOST_WIDE_SETTINGS,
  mergeSettings,
  parseSettings,
  parseSettingsLayer,
  type Settings,
  type SettingsInput,
} from "../../shared/settings/settings.js";
import type { ModelChange, ModelRef } from "../../shared/wire/protocol.js";
import type { AuthStorage } from "../auth/auth-storage.js";
import { FileAuthStorage } from "../auth/file-auth-storage.js";
import { loadModelsConfig, type ModelsConfig, modelsPath, resolveModelRef } from "../config/models-config.js";
import { loadSettingsFiles, resolveLifelineDir, writeUserSettings } from "../config/settings-store.js";

/** The host options this reads (see `SessionHostOptions` for each). */
export interface HostConfigOptions {
  cwd?: string;
  lifelineDir?: string | false;
  settings?: SettingsInput;
  authStorage?: AuthStorage;
}

/** What a host with `lifelineDir: false` uses instead of models.json: no custom models. */
const NO_MODELS_FILE: ModelsConfig = { path: "models.json (not read: the host has lifelineDir: false)", providers: {} };

/** One host's configuration sources. */
export class HostConfig {
  readonly #options: HostConfigOptions;
  #fileSettings: Promise<SettingsInput> | undefined;
  #modelsConfig: Promise<ModelsConfig> | undefined;
  #defaultAuth: FileAuthStorage | undefined;

  constructor(options: HostConfigOptions) {
    this.#options = options;
  }

  /** The user directory, or false when the host reads no user files. */
  lifelineDir(): string | false {
    return this.#options.lifelineDir ?? resolveLifelineDir();
  }

  /** The one base for relative paths given to the host. */
  cwd(): string {
    return this.#options.cwd ?? process.cwd();
  }

  /**
   * The storage serving keys and told about limits: the host's `authStorage`, else the
   * `auth.json` of the lifeline directory (none with `lifelineDir: false`).
   */
  get authStorage(): AuthStorage | undefined {
    if (this.#options.authStorage !== undefined) return this.#options.authStorage;
    const dir = this.lifelineDir();
    if (dir === false) return undefined;
    this.#defaultAuth ??= FileAuthStorage.inDir(dir);
    return this.#defaultAuth;
  }

  /** Forgets the cached settings and models files; the next read reads them again. */
  reload(): void {
    this.#fileSettings = undefined;
    this.#modelsConfig = undefined;
  }

  /**
   * B5: merges `patch` into the user's `settings.json`, then forgets the cached files.
   * @throws ERR_INVALID_OPTIONS when the host has `lifelineDir: false` (no file to write), and what
   *   writing the file throws.
   */
  async writeUserSettings(patch: SettingsInput): Promise<void> {
    const dir = this.lifelineDir();
    if (dir === false) {
      throw new LifelineError(
        "ERR_INVALID_OPTIONS",
        "This host was created with lifelineDir: false, so it has no settings file to write; pass a directory as lifelineDir, or pass settings to createSessionHost instead.",
      );
    }
    await writeUserSettings(patch, dir);
    this.reload();
  }

  /**
   * A model reference, resolved with its key. Key precedence: `apiKey` (the session's option),
   * then the auth storage (auth.json), then models.json, then the provider's environment variable.
   * @throws what `resolveModelRef` and {@link models} throw (ERR_UNKNOWN_MODEL, ERR_MISSING_API_KEY, ERR_INVALID_MODELS).
   */
  async resolveModel(ref: ModelRef, apiKey: string | undefined, sessionId: string): Promise<ModelChange> {
    return resolveModelRef(ref, await this.models(), apiKey ?? this.storedKey(ref.provider, sessionId));
  }

  /** The auth storage's key for a session; a storage that throws has none (the next source is used). */
  storedKey(provider: string, sessionId: string): string | undefined {
    try {
      return this.authStorage?.apiKeyFor?.(provider, sessionId);
    } catch (error) {
      process.emitWarning(`lifeline: the auth storage failed to give a key for ${provider}: ${errorText(error)}`, {
        code: "LIFELINE_AUTH_FILE",
      });
      return undefined;
    }
  }

  /** The user's models.json, read once and kept until {@link reload}; a failed read is retried. */
  async models(): Promise<ModelsConfig> {
    const dir = this.lifelineDir();
    this.#modelsConfig ??= dir === false ? Promise.resolve(NO_MODELS_FILE) : loadModelsConfig(modelsPath(dir));
    try {
      return await this.#modelsConfig;
    } catch (error) {
      this.#modelsConfig = undefined;
      throw error;
    }
  }

  /**
   * A session's settings: both files (read once and kept until {@link reload}; a failed read is
   * retried), the host's settings, then `overrides`.
   * @throws ERR_INVALID_SETTINGS (or the files' read errors), naming the field.
   */
  async sessionSettings(overrides: SettingsInput | undefined): Promise<Settings> {
    const dir = this.lifelineDir();
    this.#fileSettings ??= dir === false ? Promise.resolve({}) : loadSettingsFiles(dir, this.cwd());
    let files: SettingsInput;
    try {
      files = await this.#fileSettings;
    } catch (error) {
      this.#fileSettings = undefined;
      throw error;
    }
    if (overrides !== undefined) {
      parseSettingsLayer(overrides, "createSession({ settings })");
      refuseHostWide(overrides);
    }
    return parseSettings(mergeSettings(files, this.#options.settings, overrides), "the merged settings");
  }
}

/**
 * A session's `settings` may not set a host-wide key: one worker thread serves many sessions, and
 * its proxy and trusted CAs are the thread's (docs/network.md).
 * @throws InvalidSettingsError naming the key and where to set it instead.
 */
function refuseHostWide(overrides: SettingsInput): void {
  const keys = HOST_WIDE_SETTINGS.filter((key) => overrides[key] !== undefined);
  if (keys.length === 0) return;
  throw new InvalidSettingsError(
    `Invalid settings in createSession({ settings }): ${keys.join(", ")} ${keys.length === 1 ? "is a host-wide setting" : "are host-wide settings"} (a worker's network serves all its sessions); set ${keys.length === 1 ? "it" : "them"} in a settings file or in createSessionHost({ settings }).`,
  );
}
