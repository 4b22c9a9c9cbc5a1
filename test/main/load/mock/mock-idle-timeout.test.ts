/**
 * The stream-idle timeout of a load run against the built-in mock
 * (src/main/load/mock/mock-idle-timeout.ts): max(5 s, 50 × the mock's token delay), unless the run's
 * settings or the settings files already set `retry.provider.idleTimeoutMs`.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { mockIdleTimeoutMs, withMockIdleTimeout } from "../../../../src/main/load/mock/mock-idle-timeout.js";
import { tempDir } from "../../../fixtures/bounded.js";

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

describe("the mock's idle timeout", () => {
  it("is 5 s for short token delays and 50 token delays for long ones", () => {
    expect(mockIdleTimeoutMs(0)).toBe(5000);
    expect(mockIdleTimeoutMs(5)).toBe(5000);
    expect(mockIdleTimeoutMs(100)).toBe(5000);
    expect(mockIdleTimeoutMs(200)).toBe(10_000);
    expect(mockIdleTimeoutMs(10 ** 9)).toBe(2_147_483_647);
  });

  it("is added to the run's settings when neither they nor the settings files set one", async () => {
    const dirs = { lifelineDir: tempDir(cleanups), cwd: tempDir(cleanups) };
    expect(await withMockIdleTimeout(undefined, 5, dirs)).toEqual({ retry: { provider: { idleTimeoutMs: 5000 } } });
    expect(await withMockIdleTimeout({ retry: { coordinate: true } }, 200, dirs)).toEqual({
      retry: { coordinate: true, provider: { idleTimeoutMs: 10_000 } },
    });
    expect(await withMockIdleTimeout(undefined, 5, { lifelineDir: false, cwd: dirs.cwd })).toEqual({
      retry: { provider: { idleTimeoutMs: 5000 } },
    });
  });

  it("gives way to retry.provider.idleTimeoutMs in the run's settings (--idle-timeout)", async () => {
    const dirs = { lifelineDir: tempDir(cleanups), cwd: tempDir(cleanups) };
    const settings = { retry: { provider: { idleTimeoutMs: 300 } } };
    expect(await withMockIdleTimeout(settings, 5, dirs)).toBe(settings);
  });

  it("gives way to retry.provider.idleTimeoutMs in the user's or the project's settings file", async () => {
    const user = { lifelineDir: tempDir(cleanups), cwd: tempDir(cleanups) };
    writeFileSync(join(user.lifelineDir, "settings.json"), '{"retry":{"provider":{"idleTimeoutMs":60000}}}');
    expect(await withMockIdleTimeout(undefined, 5, user)).toBeUndefined();
    const project = { lifelineDir: tempDir(cleanups), cwd: tempDir(cleanups) };
    mkdirSync(join(project.cwd, ".lifeline"));
    writeFileSync(join(project.cwd, ".lifeline", "settings.json"), '{"retry":{"provider":{"idleTimeoutMs":60000}}}');
    expect(await withMockIdleTimeout({ retry: { coordinate: true } }, 5, project)).toEqual({
      retry: { coordinate: true },
    });
  });
});
