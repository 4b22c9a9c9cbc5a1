/**
 * `lifeline --mode host --listen host:port --token-file f` (docs/rpc.md, "On a socket"),
 * against real child processes of the built CLI and real TCP clients on 127.0.0.1: the token file
 * (mode 0600, JSON host/port/token/pid), the token never on stdout or stderr, a connection whose
 * first line lacks the token refused and closed, commands with it; a non-loopback address only
 * with `--allow-remote`. Uses the demo model (no network). Run `npm run build` first.
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { tempDir, within } from "../../../fixtures/bounded.js";
import { connectHost, type HostChild, listening, settled, spawnHost } from "./host-lines.js";

const cleanups: (() => Promise<void> | void)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface TokenFile {
  host: string;
  port: number;
  token: string;
  pid: number;
}

/** A host listening on `address` with its token file in a fresh directory. */
function tcpHost(address: string, extra: string[] = []): { child: HostChild; tokenFile: string } {
  const dir = tempDir(cleanups, "lifeline-host-tcp-");
  const tokenFile = join(dir, "token.json");
  const child = spawnHost(cleanups, { dir, args: ["--listen", address, "--token-file", tokenFile, ...extra] });
  return { child, tokenFile };
}

describe("--listen", () => {
  it("writes host, port, token and pid to a 0600 token file, refuses and closes a connection whose first line lacks the token, and serves one that sends it", async () => {
    const { child, tokenFile } = tcpHost("127.0.0.1:0");
    await listening(child);
    expect((statSync(tokenFile).mode & 0o777).toString(8)).toBe("600");
    const written = JSON.parse(readFileSync(tokenFile, "utf8")) as TokenFile;
    expect(Object.keys(written).sort()).toEqual(["host", "pid", "port", "token"]);
    expect(written).toMatchObject({ host: "127.0.0.1", pid: child.child.pid });
    expect(written.port).toBeGreaterThan(0);
    expect(written.token.length).toBeGreaterThanOrEqual(32);
    expect(child.stderr()).toContain(`listening on 127.0.0.1:${written.port}`);
    const address = { host: "127.0.0.1", port: written.port };

    // A command first: refused, and the connection is closed without running it.
    const bare = await connectHost(cleanups, address);
    const refused = await bare.request({ type: "open_session" });
    expect(refused).toMatchObject({ success: false, command: "authenticate" });
    expect(refused.error).toMatch(/token/);
    await within(bare.ended, 5_000, "the server to close an unauthenticated connection");

    // A wrong token (of the right length too): the same.
    const wrong = await connectHost(cleanups, address);
    const bad = await wrong.request({ type: "authenticate", token: "x".repeat(written.token.length) });
    expect(bad).toMatchObject({ success: false, command: "authenticate" });
    await within(wrong.ended, 5_000, "the server to close a connection with a wrong token");

    const client = await connectHost(cleanups, address);
    expect(await client.request({ type: "authenticate", token: written.token })).toMatchObject({ success: true });
    const opened = await client.ok<{ sessionId: string }>({ type: "open_session" });
    const from = client.records.length;
    await client.ok({ type: "prompt", sessionId: opened.sessionId, message: "hello over tcp" });
    const end = await settled(client, opened.sessionId, from);
    expect(end.stopReason).toBe("stop");
    const messages = await client.ok<{ messages: { role: string }[] }>({
      type: "get_messages",
      sessionId: opened.sessionId,
    });
    expect(messages.messages.map((m) => m.role)).toEqual(["user", "assistant"]);

    child.child.kill("SIGTERM");
    expect(await within(child.exited, 15_000, "exit after SIGTERM")).toBe(143);
    expect(child.stdout()).toBe("");
    expect(child.stderr()).not.toContain(written.token);
    expect(client.problems).toEqual([]);
  }, 30_000);

  it("refuses a non-loopback address without --allow-remote (exit 2, saying why) and listens on it with the flag", async () => {
    const refused = tcpHost("0.0.0.0:0");
    expect(await within(refused.child.exited, 15_000, "exit for a remote address")).toBe(2);
    expect(refused.child.stderr()).toMatch(/0\.0\.0\.0 is not a loopback address/);
    expect(refused.child.stderr()).toMatch(/--allow-remote/);
    expect(existsSync(refused.tokenFile)).toBe(false);

    const allowed = tcpHost("0.0.0.0:0", ["--allow-remote"]);
    await listening(allowed.child);
    const written = JSON.parse(readFileSync(allowed.tokenFile, "utf8")) as TokenFile;
    expect(written.host).toBe("0.0.0.0");
    const client = await connectHost(cleanups, { host: "127.0.0.1", port: written.port });
    expect(await client.request({ type: "authenticate", token: written.token })).toMatchObject({ success: true });
    expect(await client.ok({ type: "list_sessions" })).toEqual({ sessions: [] });
    expect(allowed.child.stderr()).not.toContain(written.token);
  }, 30_000);
});
