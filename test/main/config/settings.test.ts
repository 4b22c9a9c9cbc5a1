import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fauxAssistantMessage, type SimpleStreamOptions } from "@mariozechner/pi-ai";
import { describe, expect, it } from "vitest";
import { loadSettingsFiles, resolveLifelineDir, writeUserSettings } from "../../../src/main/config/settings-store.js";
import { DEFAULT_SETTINGS, mergeSettings, parseSettings } from "../../../src/shared/settings/settings.js";
import { registerScriptedFaux } from "../../../src/worker/scripted-faux.js";
import { inProcessHost } from "../../fixtures/in-process-host.js";

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), "lifeline-settings-"));
}

function errorOf(fn: () => unknown): Error & { code?: string } {
  try {
    fn();
  } catch (error) {
    return error as Error & { code?: string };
  }
  throw new Error("expected a throw");
}

describe("settings schema", () => {
  it("B8: retry.budget {} takes Finagle's defaults, a partial object fills the rest, false turns it off", () => {
    const parse = (retry: Record<string, unknown>) => parseSettings({ retry }, "settings.json").retry;
    expect(parse({ budget: {} }).budget).toEqual({ ratio: 0.2, minPerSecond: 10, windowMs: 10_000 });
    expect(parse({ budget: { ratio: 0.5 } }).budget).toEqual({ ratio: 0.5, minPerSecond: 10, windowMs: 10_000 });
    expect(parse({ budget: false }).budget).toBe(false);
    expect(parse({ coordinate: true, maxConcurrentRequests: 4, provider: { idleTimeoutMs: 0 } })).toMatchObject({
      coordinate: true,
      maxConcurrentRequests: 4,
      provider: { idleTimeoutMs: 0 },
    });
  });

  it.each([
    ["retry.budget", { budget: true }, "must be false or an object"],
    ["retry.budget", { budget: { ratoi: 1 } }, "allowed: ratio, minPerSecond, windowMs"],
    ["retry.budget.ratio", { budget: { ratio: -1 } }, ">=0"],
    ["retry.maxConcurrentRequests", { maxConcurrentRequests: 0 }, ">=1"],
    ["retry.coordinate", { coordinate: "yes" }, "boolean"],
  ])("B8: a bad %s is an error naming it", (key, retry, what) => {
    const error = errorOf(() => parseSettings({ retry }, "settings.json"));
    expect(error.code).toBe("ERR_INVALID_SETTINGS");
    expect(error.message).toContain(`${key}:`);
    expect(error.message).toContain(what);
  });

  it("R6: DEFAULT_SETTINGS, written out so that importing lifeline builds no schema, is what the schema's defaults give", () => {
    expect(DEFAULT_SETTINGS).toEqual(parseSettings({}, "nothing"));
    // Each group's own field defaults give the same: the group defaults are not a second truth.
    expect(DEFAULT_SETTINGS).toEqual(
      parseSettings({ retry: { provider: {} }, supervision: {}, compaction: {} }, "empty groups"),
    );
  });

  it("R6 B1 B6: defaults are the seed's, and every opt-in refinement is off", () => {
    expect(DEFAULT_SETTINGS.retry).toEqual({
      enabled: true,
      maxRetries: 3,
      baseDelayMs: 2000,
      respectRetryAfter: false,
      jitter: "none",
      provider: { maxRetries: 0, idleTimeoutMs: 300_000 },
      budget: false,
      coordinate: false,
    });
  });

  it("a bad value is an error naming the key, the value and what is allowed", () => {
    const error = errorOf(() => parseSettings({ retry: { maxRetries: -1 } }, "settings.json"));
    expect(error.code).toBe("ERR_INVALID_SETTINGS");
    expect(error.message).toContain("settings.json");
    expect(error.message).toContain("retry.maxRetries");
    expect(error.message).toContain("-1");
    expect(error.message).toMatch(/>=\s*0/);
  });

  it("an unknown jitter lists the allowed values", () => {
    const error = errorOf(() => parseSettings({ retry: { jitter: "wild" } }, "x"));
    expect(error.message).toContain('"none", "full", "equal"');
    expect(error.message).toContain('"wild"');
  });

  it("a typo inside retry is refused; unknown top-level keys (pi's other settings) are kept", () => {
    const error = errorOf(() => parseSettings({ retry: { maxRetry: 2 } }, "x"));
    expect(error.message).toContain("maxRetry");
    expect(parseSettings({ compaction: { enabled: false } }, "x")).toMatchObject({ compaction: { enabled: false } });
  });

  it("wrong types are refused", () => {
    expect(errorOf(() => parseSettings({ retry: { enabled: "yes" } }, "x")).message).toContain("retry.enabled");
    expect(errorOf(() => parseSettings({ retry: { baseDelayMs: 1.5 } }, "x")).message).toContain("retry.baseDelayMs");
  });

  it("regression: a pi settings file with every key pi documents in the retry group is accepted", () => {
    const pi = {
      retry: {
        enabled: true,
        maxRetries: 3,
        baseDelayMs: 2000,
        provider: { timeoutMs: 3_600_000, maxRetries: 0, maxRetryDelayMs: 60_000 },
      },
    };
    expect(parseSettings(pi, "pi's settings.json").retry.provider).toEqual({
      timeoutMs: 3_600_000,
      maxRetries: 0,
      maxRetryDelayMs: 60_000,
      idleTimeoutMs: 300_000,
    });
    expect(parseSettings({ retry: { provider: { maxRetryDelayMs: 0 } } }, "x").retry.provider.maxRetryDelayMs).toBe(0);
  });

  it("a typo inside retry.provider is refused, listing the provider keys", () => {
    const error = errorOf(() => parseSettings({ retry: { provider: { maxRetryDelay: 5 } } }, "x"));
    expect(error.code).toBe("ERR_INVALID_SETTINGS");
    expect(error.message).toContain("retry.provider");
    expect(error.message).toContain("maxRetryDelay");
    expect(error.message).toContain("maxRetries, timeoutMs, maxRetryDelayMs");
  });

  it.each([
    ["baseDelayMs", { baseDelayMs: 2 ** 31 }],
    ["maxDelayMs", { maxDelayMs: 2 ** 31 }],
    ["provider.timeoutMs", { provider: { timeoutMs: 2 ** 31 } }],
    ["provider.maxRetryDelayMs", { provider: { maxRetryDelayMs: 2 ** 31 } }],
  ])("regression: retry.%s above 2^31-1 ms (Node's longest timer) is refused, naming the maximum", (key, retry) => {
    const error = errorOf(() => parseSettings({ retry }, "x"));
    expect(error.code).toBe("ERR_INVALID_SETTINGS");
    expect(error.message).toContain(`retry.${key}`);
    expect(error.message).toContain("2147483647");
    expect(
      parseSettings({ retry: JSON.parse(JSON.stringify(retry).replace("2147483648", "2147483647")) }, "x"),
    ).toBeTruthy();
  });

  it.each(["proxy.example:3128", "socks5://127.0.0.1:1080", "http://proxy.example:3128/some/path", "http://:3128", ""])(
    "a proxy that is not an http(s) URL with a host and no path (%j) is refused, naming the key and the form",
    (proxy) => {
      const error = errorOf(() => parseSettings({ proxy }, "x"));
      expect(error.code).toBe("ERR_INVALID_SETTINGS");
      expect(error.message).toContain("proxy:");
      expect(error.message).toContain("http://proxy.example:3128");
    },
  );

  it("proxy, noProxy and caFile are accepted as given, and absent by default", () => {
    const given = {
      proxy: "https://user:pass@proxy.example:8443",
      noProxy: ".corp.example, localhost",
      caFile: "ca.pem",
    };
    expect(parseSettings(given, "x")).toMatchObject(given);
    expect(DEFAULT_SETTINGS).not.toHaveProperty("proxy");
    expect(errorOf(() => parseSettings({ caFile: "" }, "x")).code).toBe("ERR_INVALID_SETTINGS");
  });

  it("layers merge key by key, later winning", () => {
    expect(mergeSettings({ retry: { maxRetries: 1, baseDelayMs: 5 } }, { retry: { maxRetries: 2 } })).toEqual({
      retry: { maxRetries: 2, baseDelayMs: 5 },
    });
  });
});

describe("settings files", () => {
  it("LIFELINE_DIR relocates the user directory", () => {
    expect(resolveLifelineDir({ LIFELINE_DIR: "/x/y" })).toBe("/x/y");
    expect(resolveLifelineDir({})).toMatch(/\.lifeline$/);
  });

  it("the project file overrides the user file", async () => {
    const user = tempDir();
    const project = tempDir();
    writeFileSync(join(user, "settings.json"), JSON.stringify({ retry: { maxRetries: 5, baseDelayMs: 10 } }));
    mkdirSync(join(project, ".lifeline"));
    writeFileSync(join(project, ".lifeline", "settings.json"), JSON.stringify({ retry: { maxRetries: 1 } }));
    expect(await loadSettingsFiles(user, project)).toEqual({ retry: { maxRetries: 1, baseDelayMs: 10 } });
  });

  it("missing files are fine", async () => {
    expect(await loadSettingsFiles(tempDir(), tempDir())).toEqual({});
  });

  it("malformed JSON is an error naming the file", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, "settings.json"), "{ retry: ");
    await expect(loadSettingsFiles(dir, tempDir())).rejects.toMatchObject({
      code: "ERR_INVALID_SETTINGS",
      message: expect.stringContaining(join(dir, "settings.json")),
    });
  });

  it("regression: a settings.json syntax error names the line and column, as models.json's do", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, "settings.json"), '{\n  "retry": {\n    "maxRetries": 3\n    "baseDelayMs": 5\n  }\n}\n');
    const error = await loadSettingsFiles(dir, tempDir()).catch((e: Error & { code?: string }) => e);
    expect(error).toMatchObject({ code: "ERR_INVALID_SETTINGS" });
    expect(error.message).toContain(`${join(dir, "settings.json")} is not valid JSON at line 4, column 5`);
  });

  it("an invalid value in a file names the file and the key", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, "settings.json"), JSON.stringify({ retry: { baseDelayMs: "fast" } }));
    const error = await loadSettingsFiles(dir, tempDir()).catch((e: Error) => e);
    expect(error.message).toContain(join(dir, "settings.json"));
    expect(error.message).toContain("retry.baseDelayMs");
  });

  it("regression: a file's fleet group without redis is one layer; --fleet (the host's settings) completes it", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, "settings.json"), JSON.stringify({ fleet: { name: "team-a", leaseMs: 4000 } }));
    expect(await loadSettingsFiles(dir, tempDir())).toEqual({ fleet: { name: "team-a", leaseMs: 4000 } });
    const { host } = inProcessHost({ lifelineDir: dir, settings: { fleet: { redis: "redis://127.0.0.1:6390" } } });
    try {
      expect((await host.settings()).fleet).toEqual({
        redis: "redis://127.0.0.1:6390",
        name: "team-a",
        leaseMs: 4000,
        sessionTtlMs: 30 * 86_400_000,
      });
    } finally {
      await host.close();
    }
  });

  it("a fleet group that no layer gives a redis is refused once merged, naming fleet.redis", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, "settings.json"), JSON.stringify({ fleet: { name: "team-a" } }));
    const { host } = inProcessHost({ lifelineDir: dir });
    try {
      await expect(host.settings()).rejects.toMatchObject({
        code: "ERR_INVALID_SETTINGS",
        message: expect.stringContaining("fleet.redis"),
      });
    } finally {
      await host.close();
    }
  });

  it("B5: writeUserSettings merges into the user file and keeps unknown keys", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, "settings.json"), JSON.stringify({ theme: "dark", retry: { maxRetries: 2 } }));
    await writeUserSettings({ retry: { enabled: false } }, dir);
    expect(JSON.parse(readFileSync(join(dir, "settings.json"), "utf8"))).toEqual({
      theme: "dark",
      retry: { maxRetries: 2, enabled: false },
    });
  });

  it("B5: writeUserSettings refuses an invalid patch and leaves the file unchanged", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, "settings.json"), JSON.stringify({ retry: { maxRetries: 2 } }));
    await expect(writeUserSettings({ retry: { maxRetries: -3 } }, dir)).rejects.toMatchObject({
      code: "ERR_INVALID_SETTINGS",
    });
    expect(JSON.parse(readFileSync(join(dir, "settings.json"), "utf8"))).toEqual({ retry: { maxRetries: 2 } });
  });
});

describe("settings in a host", () => {
  it("session overrides win over host settings and files; a session's toggle writes no file (B5)", async () => {
    const { host } = inProcessHost({ settings: { retry: { maxRetries: 7 } } });
    try {
      const session = await host.createSession({ settings: { retry: { baseDelayMs: 11 } } });
      expect(session.settings.retry).toMatchObject({ maxRetries: 7, baseDelayMs: 11 });
      session.setAutoRetryEnabled(false);
      const other = await host.createSession();
      expect(other.autoRetryEnabled).toBe(true);
    } finally {
      await host.close();
    }
  });

  it("invalid host settings are refused when the host is created", () => {
    expect(() => inProcessHost({ settings: { retry: { jitter: "sometimes" as "full" } } })).toThrow(
      expect.objectContaining({ code: "ERR_INVALID_SETTINGS", message: expect.stringContaining("createSessionHost") }),
    );
  });

  it("an invalid session override rejects createSession with ERR_INVALID_SETTINGS", async () => {
    const { host } = inProcessHost();
    try {
      await expect(host.createSession({ settings: { retry: { maxRetries: -1 } } })).rejects.toMatchObject({
        code: "ERR_INVALID_SETTINGS",
      });
    } finally {
      await host.close();
    }
  });

  it.each(["proxy", "noProxy", "caFile"])(
    "a session override of the host-wide %s rejects createSession with ERR_INVALID_SETTINGS",
    async (key) => {
      const { host } = inProcessHost();
      try {
        const value = key === "proxy" ? "http://127.0.0.1:9" : "x";
        await expect(host.createSession({ settings: { [key]: value } })).rejects.toMatchObject({
          code: "ERR_INVALID_SETTINGS",
          message: expect.stringContaining(key),
        });
      } finally {
        await host.close();
      }
    },
  );

  it("retry.provider.maxRetryDelayMs reaches the provider call in the worker, like timeoutMs", async () => {
    const seen: (SimpleStreamOptions | undefined)[] = [];
    const faux = registerScriptedFaux({
      api: "lifeline-test-settings-pass",
      provider: "test",
      model: { id: "pass-1" },
      script: (_context, options) => {
        seen.push(options);
        return fauxAssistantMessage("ok");
      },
    });
    const { host } = inProcessHost({ settings: { retry: { provider: { maxRetryDelayMs: 1234, timeoutMs: 5678 } } } });
    try {
      const session = await host.createSession({ model: faux.model });
      await session.prompt("hi");
      expect(seen[0]).toMatchObject({ maxRetryDelayMs: 1234, timeoutMs: 5678 });
    } finally {
      await host.close();
      faux.unregister();
    }
  });

  it("B5: host.writeUserSettings persists and new sessions read it", async () => {
    const dir = tempDir();
    const { host } = inProcessHost({ lifelineDir: dir });
    try {
      await host.writeUserSettings({ retry: { enabled: false } });
      expect((await host.createSession()).autoRetryEnabled).toBe(false);
    } finally {
      await host.close();
    }
  });
});
