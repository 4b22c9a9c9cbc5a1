/**
 * The CLI's fleet group: --fleet and --fleet-name become the host's `fleet` settings: merged over the settings
 * files' fleet group, and refused as the settings schema refuses a bad value (ERR_INVALID_SETTINGS
 * naming the key).
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { CliContext } from "../../../../src/main/cli/cli-context.js";
import { fleetOverride, requiredFleet } from "../../../../src/main/cli/groups/fleet-flags.js";
import { tempDir } from "../../../fixtures/bounded.js";
import { recordingRuntime } from "../../../fixtures/cli-runtime.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function dirs(userSettings?: object): CliContext {
  const lifelineDir = tempDir(cleanups, "lifeline-fleet-flags-");
  const cwd = tempDir(cleanups, "lifeline-fleet-flags-cwd-");
  if (userSettings !== undefined) writeFileSync(join(lifelineDir, "settings.json"), JSON.stringify(userSettings));
  mkdirSync(join(cwd, ".lifeline"));
  return { lifelineDir, cwd, terminal: false, version: "0.0.0", runtime: recordingRuntime().runtime };
}

describe("the --fleet and --fleet-name flags", () => {
  it("give no fleet group when neither flag is given", async () => {
    expect(await fleetOverride({}, dirs({ fleet: { redis: "redis://10.0.0.1:6379" } }))).toBeUndefined();
  });

  it("make the fleet group from --fleet and --fleet-name", async () => {
    expect(await fleetOverride({ fleet: "redis://127.0.0.1:6390", fleetName: "blue" }, dirs())).toEqual({
      redis: "redis://127.0.0.1:6390",
      name: "blue",
    });
  });

  it("override the settings files' fleet group key by key, keeping the others", async () => {
    const source = dirs({ fleet: { redis: "redis://10.0.0.1:6379", name: "red", leaseMs: 2000 } });
    expect(await fleetOverride({ fleetName: "blue" }, source)).toEqual({
      redis: "redis://10.0.0.1:6379",
      name: "blue",
      leaseMs: 2000,
    });
  });

  it("refuse a URL that is not a Redis URL with ERR_INVALID_SETTINGS naming fleet.redis", async () => {
    const error = await fleetOverride({ fleet: "http://127.0.0.1:6379" }, dirs()).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "ERR_INVALID_SETTINGS" });
    expect((error as Error).message).toContain("fleet.redis");
  });

  it("refuse a bad fleet name with ERR_INVALID_SETTINGS naming fleet.name", async () => {
    const error = await fleetOverride({ fleet: "redis://127.0.0.1:6379", fleetName: "a:b" }, dirs()).catch(
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ code: "ERR_INVALID_SETTINGS" });
    expect((error as Error).message).toContain("fleet.name");
  });

  it("refuse --fleet-name without a Redis from the flag or a file, naming fleet.redis", async () => {
    const error = await fleetOverride({ fleetName: "blue" }, dirs()).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "ERR_INVALID_SETTINGS" });
    expect((error as Error).message).toContain("fleet.redis");
  });

  it("complete a file's fleet group that names only the fleet", async () => {
    expect(await fleetOverride({ fleet: "redis://127.0.0.1:6390" }, dirs({ fleet: { name: "red" } }))).toEqual({
      redis: "redis://127.0.0.1:6390",
      name: "red",
    });
  });
});

describe("a command that needs a fleet", () => {
  it("takes it from the files when no flag is given, defaults applied", async () => {
    expect(await requiredFleet({}, dirs({ fleet: { redis: "redis://10.0.0.1:6379" } }), "lifeline serve")).toEqual({
      redis: "redis://10.0.0.1:6379",
      name: "default",
      leaseMs: 10_000,
      sessionTtlMs: 30 * 86_400_000,
    });
  });

  it("is refused with ERR_INVALID_SETTINGS naming fleet.redis and the command when there is none", async () => {
    const error = await requiredFleet({}, dirs(), "lifeline submit").catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "ERR_INVALID_SETTINGS" });
    expect((error as Error).message).toContain("fleet.redis");
    expect((error as Error).message).toContain("lifeline submit");
  });
});
