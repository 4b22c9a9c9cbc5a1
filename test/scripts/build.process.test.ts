/**
 * The real build (scripts/build.mjs, `npm run build`) in a copy of the repository: a process
 * running from dist/ keeps working while it runs, the package it leaves lists what it should,
 * `npm start` a second time does not build, and `npx lifeline` in a clone does not rebuild.
 * Run `npm run build` first: the copy starts from this build's dist/.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { cpSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TEMP_PREFIXES } from "../../scripts/build.mjs";
import { readStamp } from "../../scripts/dist-freshness.mjs";
import { tempDir, within } from "../fixtures/bounded.js";
import { driveRpcChild, type RpcRecord } from "../fixtures/rpc-child.js";

const REPO = resolve(import.meta.dirname, "../..");
const PAUSED_BUILD = fileURLToPath(new URL("../fixtures/paused-build.mjs", import.meta.url));
/** A real build on a busy two-core machine takes about a minute. */
const BUILD_MS = 240_000;

const cleanups: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

let copy: string;
beforeAll(() => {
  copy = tempDir(cleanups, "lifeline-build-copy-");
  const files = [
    "src",
    "scripts",
    "docs",
    "schema",
    "tsconfig.json",
    "tsconfig.build.json",
    "package.json",
    "package-lock.json",
  ];
  for (const file of [...files, "LICENSE", "README.md", "dist"])
    cpSync(join(REPO, file), join(copy, file), { recursive: true, preserveTimestamps: true });
  symlinkSync(join(REPO, "node_modules"), join(copy, "node_modules"));
});

const run = promisify(execFile);

function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => child.once("exit", (code) => resolve(code)));
}

function lines(child: ChildProcess): { next(what: string): Promise<string> } {
  let buffer = "";
  const waiting: ((line: string) => void)[] = [];
  const ready: string[] = [];
  child.stdout?.on("data", (chunk: Buffer) => {
    buffer += chunk.toString();
    for (let at = buffer.indexOf("\n"); at >= 0; at = buffer.indexOf("\n")) {
      const line = buffer.slice(0, at);
      buffer = buffer.slice(at + 1);
      const waiter = waiting.shift();
      if (waiter) waiter(line);
      else ready.push(line);
    }
  });
  return {
    next: (what) => {
      const line = ready.shift();
      return within(
        line !== undefined ? Promise.resolve(line) : new Promise((resolve) => waiting.push(resolve)),
        BUILD_MS,
        what,
      );
    },
  };
}

const distIdentity = () => ({ ino: statSync(join(copy, "dist")).ino, stamp: readStamp(join(copy, "dist")) });

describe("the build", () => {
  it(
    "keeps dist/ whole for a process running from it, whose later imports still resolve",
    async () => {
      const home = tempDir(cleanups, "lifeline-build-home-");
      const env = { ...process.env, LIFELINE_DIR: home, NO_COLOR: "1" };
      const cli = join(copy, "dist", "main", "cli.js");
      const rpcChild = spawn(process.execPath, [cli, "--mode", "rpc", "--model", "demo/demo-fast"], {
        cwd: home,
        env,
        stdio: ["pipe", "pipe", "pipe"],
      });
      const rpc = driveRpcChild(cleanups, rpcChild, home);
      expect(await rpc.request({ type: "get_state" })).toMatchObject({ success: true });
      const before = distIdentity();

      const building = spawn(process.execPath, [PAUSED_BUILD, copy], {
        cwd: copy,
        stdio: ["pipe", "pipe", "inherit"],
      });
      cleanups.push(() => {
        building.kill();
      });
      const buildExit = exited(building);
      expect(await lines(building).next("the build's pause")).toBe("paused");

      // The build has begun: the running process opens a session (its worker thread and the modes'
      // modules load now), and a new process starts from dist/ and imports a command lazily.
      const first = rpc.records.length;
      expect(await rpc.request({ type: "prompt", message: "during the build" })).toMatchObject({ success: true });
      const settled = await rpc.waitFor((r: RpcRecord) => r.type === "agent_settled", "agent_settled", first);
      expect(settled).toMatchObject({ stopReason: "stop" });
      const during = await run(process.execPath, [cli, "sessions"], { cwd: home, env });
      expect(during.stderr).toBe("");

      building.stdin?.end("go\n");
      expect(await within(buildExit, BUILD_MS, "the build")).toBe(0);
      const after = distIdentity();
      expect(after.ino).not.toBe(before.ino);
      expect(after.stamp).not.toBe(before.stamp);

      // After the swap, the same process still answers, and its new session loads from the new dist/.
      const second = rpc.records.length;
      expect(await rpc.request({ type: "new_session" })).toMatchObject({ success: true });
      expect(await rpc.request({ type: "prompt", message: "after the build" })).toMatchObject({ success: true });
      await rpc.waitFor((r: RpcRecord) => r.type === "agent_settled", "agent_settled after the build", second);
      rpcChild.stdin.end();
      expect(await within(rpc.exited, 20_000, "the RPC process's exit")).toBe(0);
      expect(rpc.problems).toEqual([]);
    },
    BUILD_MS,
  );

  it("packs dist/'s entries, the bin, the docs and the host protocol's schema, and no temporary folder or stamp", async () => {
    // A folder a killed build left behind, which must stay out of the package.
    mkdirSync(join(copy, `${TEMP_PREFIXES[0]}12345`, "main"), { recursive: true });
    writeFileSync(join(copy, `${TEMP_PREFIXES[0]}12345`, "main", "index.js"), "");
    const { stdout } = await run("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], { cwd: copy });
    const files = new Set((JSON.parse(stdout) as [{ files: { path: string }[] }])[0].files.map((f) => f.path));

    const manifest = JSON.parse(readFileSync(join(copy, "package.json"), "utf8")) as {
      bin: Record<string, string>;
      exports: Record<string, string | Record<string, string>>;
    };
    const targets = Object.values(manifest.exports).flatMap((target) =>
      typeof target === "string" ? [target] : Object.values(target),
    );
    for (const path of [...Object.values(manifest.bin), ...targets]) expect(files).toContain(path.replace(/^\.\//, ""));
    const shipped = ["dist/main/index.js", "dist/lifeline-worker.mjs", "dist/piscina-worker.cjs", "docs/cli.md"];
    for (const path of [...shipped, "schema/host-protocol.schema.json"]) expect(files).toContain(path);
    expect(files).toContain("LICENSE");
    expect(files).toContain("README.md");
    const outside = [...files].filter(
      (path) => !/^(dist\/|docs\/|schema\/|LICENSE$|README\.md$|package\.json$)/.test(path),
    );
    expect(outside).toEqual([]);
    expect([...files].filter((path) => path.includes(".build-stamp") || path.startsWith(".dist-"))).toEqual([]);
  });

  it(
    "does not build when npm start runs a second time",
    async () => {
      const home = tempDir(cleanups, "lifeline-build-home-");
      const start = () => run("npm", ["start", "--silent"], { cwd: copy, env: { ...process.env, LIFELINE_DIR: home } });
      await start();
      const before = distIdentity();
      const { stderr } = await start();
      expect(stderr).toContain("build: skipped");
      expect(distIdentity()).toEqual(before);
    },
    BUILD_MS,
  );

  it(
    "does not rebuild when npx lifeline runs in the clone",
    async () => {
      const before = distIdentity();
      const cache = tempDir(cleanups, "lifeline-build-npm-cache-");
      const { stdout } = await run("npx", ["--yes", "lifeline", "--version"], {
        cwd: copy,
        env: { ...process.env, npm_config_cache: cache },
      });
      expect(stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
      expect(distIdentity()).toEqual(before);
    },
    BUILD_MS,
  );
});
