/**
 * A host in a fleet connects to the fleet's Redis with its first session, and an unreachable
 * Redis fails that session's open with ERR_FLEET_UNAVAILABLE at once instead of hanging; a host
 * with no fleet settings never connects. The built package on a real worker pool.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSessionHost } from "../../../dist/main/index.js";
import { tempDir, within } from "../../fixtures/bounded.js";
import { freePort, startRedis, type TestRedis } from "../../fixtures/redis-server.js";

const cleanups: (() => Promise<void> | void)[] = [];
let redis: TestRedis;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  await redis?.dispose();
});

function fleetHost(url: string) {
  const dir = tempDir(cleanups, "lifeline-host-fleet-");
  const host = createSessionHost({
    lifelineDir: dir,
    cwd: dir,
    settings: { fleet: { redis: url, name: "hostfleet" } },
  });
  cleanups.push(() => host.close());
  return host;
}

describe("a host in a fleet", () => {
  it("opens sessions once its Redis answers, and runs them", async () => {
    const host = fleetHost(redis.url);
    const session = await within(host.createSession(), 10_000, "the session");
    const result = await within(session.prompt("hello"), 10_000, "the prompt");
    expect(result.message?.stopReason).toBe("stop");
  });

  it("fails the first session with ERR_FLEET_UNAVAILABLE when Redis does not answer, and stays usable", async () => {
    const host = fleetHost(`redis://127.0.0.1:${await freePort()}`);
    const error = await within(
      host.createSession().catch((e: unknown) => e),
      10_000,
      "the refusal",
    );
    expect(error).toMatchObject({ code: "ERR_FLEET_UNAVAILABLE" });
    await expect(within(host.createSession(), 10_000, "the second refusal")).rejects.toMatchObject({
      code: "ERR_FLEET_UNAVAILABLE",
    });
  });
});
