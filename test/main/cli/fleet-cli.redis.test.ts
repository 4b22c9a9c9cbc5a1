/**
 * The fleet's commands as a user runs them, each flag reaching where it lands: real child
 * processes of the built CLI against a real redis-server. `sessions` and `export` follow
 * `--fleet` (before or after the command), list every directory's sessions with the directory
 * shown, `--here` keeps this directory's; `submit` takes `--timeout 1s` and `--wait-ms` as
 * durations, waits for a Redis that is down when it starts, and says a timeout in the command
 * line's words; a wrong Redis password is an authentication error (ERR_FLEET_AUTH), not an
 * unreachable Redis, and no output shows the password.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { tempDir, within } from "../../fixtures/bounded.js";
import { startServe } from "../../fixtures/fleet-hosts.js";
import { freePort, redisForFile, startRedis } from "../../fixtures/redis-server.js";

const CLI = fileURLToPath(new URL("../../../dist/main/cli.js", import.meta.url));
const file = redisForFile();
const { cleanups } = file;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A LIFELINE_DIR with fast retries and a short lease, and `settings` over them. */
function home(settings: object = {}): string {
  const dir = tempDir(cleanups, "lifeline-fleet-cli-");
  writeFileSync(join(dir, "settings.json"), JSON.stringify({ retry: { baseDelayMs: 5 }, ...settings }));
  return dir;
}

/** Starts `lifeline …args` in `cwd` with `lifelineDir`; `result` resolves once it has exited. */
function start(
  args: readonly string[],
  at: { cwd: string; lifelineDir: string },
): { child: ChildProcess; result: Promise<Run> } {
  const child = spawn(process.execPath, [CLI, ...args], {
    cwd: at.cwd,
    env: { ...process.env, LIFELINE_DIR: at.lifelineDir, NO_COLOR: "1" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  cleanups.push(() => void child.kill("SIGKILL"));
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const result = new Promise<Run>((resolve) => child.on("close", (code) => resolve({ code, stdout, stderr })));
  return { child, result };
}

function lifeline(args: readonly string[], at: { cwd: string; lifelineDir: string }, ms = 30_000): Promise<Run> {
  return within(start(args, at).result, ms, `lifeline ${args.join(" ")}`);
}

describe("sessions and export in fleet mode", () => {
  it("regression: follow --fleet before or after the command, list every directory's sessions with the directory, and --here keeps this one's", async () => {
    const fleet = file.fleetName("listing");
    // The settings file names the fleet and leaves its Redis to --fleet (a layer --fleet completes).
    const lifelineDir = home({ fleet: { name: fleet } });
    const here = { cwd: tempDir(cleanups, "lifeline-fleet-cli-a-"), lifelineDir };
    const elsewhere = { cwd: tempDir(cleanups, "lifeline-fleet-cli-b-"), lifelineDir };
    const made = await lifeline(
      ["--fleet", file.redis.url, "-p", "stored in the fleet", "--model", "demo/demo-fast"],
      here,
    );
    expect(made.code, made.stderr).toBe(0);

    const listed = await lifeline(["--fleet", file.redis.url, "sessions"], elsewhere);
    expect(listed.code, listed.stderr).toBe(0);
    const lines = listed.stdout.trim().split("\n");
    expect(lines).toHaveLength(1);
    const [id, , messages, directory, title] = (lines[0] ?? "").split("\t");
    expect({ messages, directory, title }).toEqual({
      messages: "2 messages",
      directory: here.cwd,
      title: "stored in the fleet",
    });

    const after = await lifeline(["sessions", "--fleet", file.redis.url], elsewhere);
    expect(after.stdout).toBe(listed.stdout);
    const notHere = await lifeline(["sessions", "--fleet", file.redis.url, "--here"], elsewhere);
    expect({ code: notHere.code, stdout: notHere.stdout }).toEqual({ code: 0, stdout: "" });
    const onlyHere = await lifeline(["sessions", "--fleet", file.redis.url, "--here"], here);
    expect(onlyHere.stdout.split("\t")[0]).toBe(id);

    const exported = await lifeline(["--fleet", file.redis.url, "export", (id ?? "").slice(0, 8)], elsewhere);
    expect(exported.code, exported.stderr).toBe(0);
    expect(JSON.parse(exported.stdout.split("\n")[0] ?? "")).toMatchObject({ type: "session", id, cwd: here.cwd });
  }, 60_000);
});

describe("submit", () => {
  it("regression: --timeout 1s is a duration, and a timeout says what to do with the command's flags", async () => {
    const at = { cwd: tempDir(cleanups), lifelineDir: home() };
    const run = await lifeline(
      [
        "submit",
        "--fleet",
        file.redis.url,
        "--fleet-name",
        file.fleetName("timeout"),
        "--timeout",
        "1s",
        "nobody serves this",
      ],
      at,
    );
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr).toContain("[ERR_FLEET_TIMEOUT]");
    expect(run.stderr).toContain("within 1000 ms");
    expect(run.stderr).toContain("--timeout");
    expect(run.stderr).not.toMatch(/NaN|timeoutMs|result\(\)/);
  });

  it("regression: --wait-ms waits for a Redis that is down when it starts", async () => {
    const port = await freePort();
    // Stands in for a Redis that is not up yet: it drops every connection. The real Redis starts
    // on that port only once the command has been refused for longer than a connection's own
    // default timeout (3 s): 7 tries, ioredis backing off 50, 100, …, 1000 ms between them.
    const down = dropConnections(port);
    const lifelineDir = home();
    const at = { cwd: tempDir(cleanups), lifelineDir };
    const url = `redis://127.0.0.1:${port}`;
    const fleet = file.fleetName("late");
    const submitted = start(
      [
        "submit",
        "--fleet",
        url,
        "--fleet-name",
        fleet,
        "--wait-ms",
        "30s",
        "--model",
        "demo/demo-fast",
        "--no-follow",
        "late hello",
      ],
      at,
    );
    const refused = await within(
      Promise.race([down.dropped(7).then(() => "tried"), submitted.result.then((run) => `exited: ${run.stderr}`)]),
      20_000,
      "the submit's seventh try",
    );
    expect(refused).toBe("tried");
    await down.close();
    const redis = await startRedis([], { port });
    cleanups.push(() => redis.dispose());
    const host = startServe({ redisUrl: redis.url, name: fleet, lifelineDir, cwd: at.cwd });
    cleanups.push(async () => {
      host.child.kill("SIGKILL");
      await host.exited;
    });
    const run = await within(submitted.result, 40_000, "the submit");
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout.trim().split("\n").at(-1) ?? "")).toMatchObject({
      type: "result",
      stopReason: "stop",
    });
  }, 60_000);
});

describe("a Redis that refuses the credentials", () => {
  it("regression: is an authentication error with its own code, exit 2, and the password appears nowhere", async () => {
    const redis = await startRedis(["--requirepass", "right-secret-4a1f"]);
    cleanups.push(() => redis.dispose());
    const at = { cwd: tempDir(cleanups), lifelineDir: home() };
    const wrong = `redis://:wrong-secret-9c2e@127.0.0.1:${redis.port}`;
    for (const args of [
      ["sessions", "--fleet", wrong],
      ["submit", "--fleet", wrong, "hi"],
    ]) {
      const run = await lifeline(args, at);
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr).toContain("[ERR_FLEET_AUTH]");
      expect(run.stderr).toContain("authentication failed");
      expect(run.stderr).not.toContain("Cannot reach");
      expect(run.stdout + run.stderr).not.toContain("wrong-secret-9c2e");
    }
    const none = await lifeline(["sessions", "--fleet", redis.url], at);
    expect(none.code, none.stderr).toBe(2);
    expect(none.stderr).toContain("[ERR_FLEET_AUTH]");
  }, 60_000);
});

/** A listener on `port` that accepts connections and closes them at once, until closed. */
function dropConnections(port: number): { dropped: (count: number) => Promise<void>; close: () => Promise<void> } {
  let count = 0;
  const waiters: { count: number; resolve: () => void }[] = [];
  const server: Server = createServer((socket: Socket) => {
    socket.destroy();
    count += 1;
    for (const waiter of waiters.filter((each) => each.count <= count)) waiter.resolve();
  });
  server.listen(port, "127.0.0.1");
  return {
    dropped: (wanted) =>
      new Promise<void>((resolve) => {
        if (count >= wanted) resolve();
        else waiters.push({ count: wanted, resolve });
      }),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
