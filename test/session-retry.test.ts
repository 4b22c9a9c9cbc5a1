import { afterEach, describe, expect, it } from "vitest";
import { inProcessHost, outline, record } from "./fixtures/in-process-host.js";
import { scriptedModel } from "./fixtures/scripted-provider.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

function setup(steps: Parameters<typeof scriptedModel>[0]) {
  const scripted = scriptedModel(steps);
  const env = inProcessHost();
  cleanups.push(() => env.host.close(), () => scripted.unregister());
  return { ...env, scripted };
}

describe("retry chains through a session (in-process worker)", () => {
  it("R4 R5 R7: succeeds after two failures with exact events", async () => {
    const { host, clock, scripted } = setup([{ error: "503 Service Unavailable" }, { error: "429 Too Many Requests" }, { text: "hello" }]);
    const session = await host.createSession({ model: scripted.model });
    const events = record(session);
    const done = session.prompt("hi");
    await clock.release();
    await clock.release();
    const result = await done;
    expect(outline(events)).toEqual([
      "agent_start",
      "agent_end willRetry=true",
      "auto_retry_start 1/3 delay=2000 error=503 Service Unavailable",
      "agent_start",
      "agent_end willRetry=true",
      "auto_retry_start 2/3 delay=4000 error=429 Too Many Requests",
      "agent_start",
      "auto_retry_end success=true attempt=2",
      "agent_end willRetry=false",
      "agent_settled stop retries=2",
    ]);
    expect(result.stopReason).toBe("stop");
    expect(scripted.calls()).toBe(3);
  });
});
