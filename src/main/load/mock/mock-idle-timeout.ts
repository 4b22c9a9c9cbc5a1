/**
 * The stream-idle timeout of a run against the built-in mock. The host's default
 * (`retry.provider.idleTimeoutMs`, 5 minutes) is sized for reasoning models that think in
 * silence; against the mock it would make every `stall` fault hold its session for 5 minutes. The
 * mock never pauses longer than its token delay between two chunks, so a silence of 50 token
 * delays, and never less than 5 s (room for a busy host's event-loop delay), is certainly a stall.
 * The user's own value wins: `--idle-timeout`, `settings`, or the settings files.
 */
import { mergeSettings, type SettingsInput } from "../../../shared/settings/settings.js";
import { MAX_TIMER_MS } from "../../../shared/timer-ms.js";
import { loadSettingsFiles } from "../../config/settings-store.js";

/** The floor of {@link mockIdleTimeoutMs}: 5 s. */
const MOCK_IDLE_TIMEOUT_FLOOR_MS = 5000;
/** How many of the mock's token delays of silence make a stall. */
const MOCK_IDLE_TIMEOUT_TOKEN_DELAYS = 50;

/** `max(5 s, 50 × tokenDelayMs)`, at most the longest timer Node accepts. */
export function mockIdleTimeoutMs(tokenDelayMs: number): number {
  return Math.min(MAX_TIMER_MS, Math.max(MOCK_IDLE_TIMEOUT_FLOOR_MS, MOCK_IDLE_TIMEOUT_TOKEN_DELAYS * tokenDelayMs));
}

/** True when `settings` sets `retry.provider.idleTimeoutMs`. */
function setsIdleTimeout(settings: SettingsInput | undefined): boolean {
  const retry = (settings as { retry?: { provider?: { idleTimeoutMs?: unknown } } } | undefined)?.retry;
  return retry?.provider?.idleTimeoutMs !== undefined;
}

/**
 * `settings` with `retry.provider.idleTimeoutMs` = {@link mockIdleTimeoutMs} added, unless
 * `settings` or the settings files (read as the host reads them; none with `lifelineDir: false`)
 * already set it.
 * @throws ERR_INVALID_SETTINGS for a settings file the host would refuse as well.
 */
export async function withMockIdleTimeout(
  settings: SettingsInput | undefined,
  tokenDelayMs: number,
  files: { lifelineDir: string | false; cwd: string },
): Promise<SettingsInput | undefined> {
  if (setsIdleTimeout(settings)) return settings;
  if (files.lifelineDir !== false && setsIdleTimeout(await loadSettingsFiles(files.lifelineDir, files.cwd))) {
    return settings;
  }
  const idle = { retry: { provider: { idleTimeoutMs: mockIdleTimeoutMs(tokenDelayMs) } } } as SettingsInput;
  return mergeSettings(settings, idle);
}
