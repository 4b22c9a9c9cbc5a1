/**
 * lifeline embedded in other apps, as a new user would meet it: the package as `npm pack` makes it,
 * installed from that tarball into a fresh project in a temporary directory (once for the file,
 * `--prefer-offline`), then real child processes of that project. Electron itself is not run (it
 * downloads a binary at install): a packaged Electron app is simulated by what matters to lifeline,
 * an app bundle that keeps node_modules external, the worker bundle copied to an "unpacked" folder
 * with no node_modules above it, and lifeline's own `dist/worker` gone.
 *
 * Also here: an idle host does not keep the process alive, and `lifelineDir: false` reads no user
 * file. Run `npm run build` first (`npm test` does).
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { cpSync, existsSync, mkdirSync, renameSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { build } from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSessionHost, DEFAULT_SETTINGS } from "../dist/main/index.js";
import { toModuleUrl } from "../src/main/config/module-url.js";
import { tempDir, within } from "./fixtures/bounded.js";

const REPO_ROOT = fileURLToPath(new URL("..", import.meta.url));
const TSC = join(REPO_ROOT, "node_modules", "typescript", "bin", "tsc");
const run = promisify(execFile);

const fileCleanups: (() => void)[] = [];
// Removing the scratch apps' node_modules trees takes seconds, more on a loaded machine.
afterAll(() => {
  for (const cleanup of fileCleanups.splice(0).reverse()) cleanup();
}, 120_000);

interface ChildRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `node <args>` and resolves when it exits by itself. A child still running after `ms` is
 * killed and the wait rejects: that is how a process kept alive by an idle host shows.
 */
async function runNode(
  args: string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv; ms?: number },
): Promise<ChildRun> {
  const child: ChildProcess = spawn(process.execPath, args, {
    cwd: options.cwd,
    env: { ...process.env, ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout?.setEncoding("utf8").on("data", (text: string) => {
    stdout += text;
  });
  child.stderr?.setEncoding("utf8").on("data", (text: string) => {
    stderr += text;
  });
  const exited = new Promise<ChildRun>((resolve) => {
    child.once("close", (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
  try {
    return await within(exited, options.ms ?? 60_000, `node ${args.join(" ")} to exit by itself`);
  } catch (error) {
    child.kill("SIGKILL");
    await exited;
    throw new Error(`${(error as Error).message}\nstdout: ${stdout}\nstderr: ${stderr}`);
  }
}

/** The last stdout line as JSON: what the child reports. */
function report(result: ChildRun): Record<string, unknown> {
  const lines = result.stdout.trim().split("\n");
  try {
    return JSON.parse(lines.at(-1) ?? "") as Record<string, unknown>;
  } catch {
    throw new Error(`no JSON report (exit ${result.code})\nstdout: ${result.stdout}\nstderr: ${result.stderr}`);
  }
}

describe("lifeline installed from its tarball", () => {
  let root = "";
  let app = "";

  beforeAll(async () => {
    root = tempDir(fileCleanups, "lifeline-embed-");
    const packed = await run("npm", ["pack", "--ignore-scripts", "--silent", "--pack-destination", root], {
      cwd: REPO_ROOT,
    });
    const tarball = join(root, packed.stdout.trim().split("\n").at(-1) ?? "");
    app = join(root, "app");
    mkdirSync(join(app, "src"), { recursive: true });
    writeFileSync(join(app, "package.json"), JSON.stringify({ name: "embedding-app", private: true, type: "module" }));
    await run(
      "npm",
      ["install", "--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts", "--no-package-lock", tarball],
      { cwd: app, maxBuffer: 16 * 1024 * 1024 },
    );
  }, 240_000);

  it("require('lifeline') works from a .cjs file: a demo prompt is answered and the process exits by itself; the subpaths' names are theirs alone", async () => {
    writeFileSync(
      join(app, "src", "require.cjs"),
      `const lifeline = require("lifeline");
const { existsSync } = require("node:fs");
(async () => {
  const host = lifeline.createSessionHost({ threads: 1, lifelineDir: false });
  const session = await host.createSession({ settings: { retry: { baseDelayMs: 1 } } });
  const result = await session.prompt("from CommonJS");
  console.log(JSON.stringify({
    stopReason: result.stopReason,
    text: result.message.content[0].text,
    elsewhere: ["runInteractive", "RpcClient", "runLoad", "startMockServer"].filter((name) => name in lifeline),
    subpaths: [
      typeof require("lifeline/rpc").RpcClient,
      typeof require("lifeline/load").runLoad,
      typeof require("lifeline/mock-server").startMockServer,
    ],
    workerBundle: existsSync(require.resolve("lifeline/worker")),
  }));
})();
`,
    );
    const result = await runNode([join(app, "src", "require.cjs")], { cwd: app });
    expect(result.code, result.stderr).toBe(0);
    expect(report(result)).toEqual({
      stopReason: "stop",
      text: expect.stringContaining("from CommonJS"),
      elsewhere: [],
      subpaths: ["function", "function", "function"],
      workerBundle: true,
    });
  }, 60_000);

  it("a packaged app (its code bundled with node_modules external, the worker bundle unpacked outside node_modules, the package's dist/worker gone) answers a demo prompt from another cwd and exits by itself", async () => {
    // The unpacked folder's name has a space and a `#`: paths become file URLs with pathToFileURL.
    const resources = join(root, "resources");
    const unpacked = join(resources, "app unpacked#1");
    mkdirSync(unpacked, { recursive: true });
    cpSync(join(app, "node_modules", "lifeline", "dist", "lifeline-worker.mjs"), join(unpacked, "lifeline-worker.mjs"));
    writeFileSync(
      join(app, "src", "main.js"),
      `import { createSessionHost } from "lifeline";
// As an Electron main process would name its unpacked folder (process.resourcesPath there); the
// relative workerEntry is taken from the host's cwd option, not from the process's cwd.
const host = createSessionHost({
  threads: 1,
  lifelineDir: false,
  cwd: process.env.APP_RESOURCES,
  workerEntry: "app unpacked#1/lifeline-worker.mjs",
});
const session = await host.createSession({ settings: { retry: { baseDelayMs: 1 } } });
const result = await session.prompt("from a packaged app");
console.log(JSON.stringify({ stopReason: result.stopReason, text: result.message.content[0].text }));
`,
    );
    await build({
      entryPoints: [join(app, "src", "main.js")],
      outfile: join(app, "out", "main.mjs"),
      bundle: true,
      platform: "node",
      format: "esm",
      packages: "external",
      logLevel: "error",
    });
    const ownWorker = join(app, "node_modules", "lifeline", "dist", "worker");
    renameSync(ownWorker, `${ownWorker}.removed`);
    const elsewhere = tempDir(fileCleanups, "lifeline-embed-cwd-");
    try {
      const result = await runNode([join(app, "out", "main.mjs")], {
        cwd: elsewhere,
        env: { APP_RESOURCES: resources },
      });
      expect(result.code, result.stderr).toBe(0);
      expect(report(result)).toEqual({ stopReason: "stop", text: expect.stringContaining("from a packaged app") });
      expect(existsSync(ownWorker)).toBe(false);
    } finally {
      renameSync(`${ownWorker}.removed`, ownWorker);
    }
  }, 60_000);

  it("a fully inlined CommonJS bundle runs with piscina's worker script beside it and the worker bundle elsewhere", async () => {
    const out = join(root, "inlined");
    const unpacked = join(root, "inlined-unpacked");
    mkdirSync(unpacked, { recursive: true });
    cpSync(join(app, "node_modules", "lifeline", "dist", "lifeline-worker.mjs"), join(unpacked, "lifeline-worker.mjs"));
    writeFileSync(
      join(app, "src", "inlined.cjs"),
      `const { createSessionHost } = require("lifeline");
const { pathToFileURL } = require("node:url");
(async () => {
  const workerEntry = pathToFileURL(process.env.APP_WORKER);
  const host = createSessionHost({ threads: 1, lifelineDir: false, workerEntry });
  const session = await host.createSession({ settings: { retry: { baseDelayMs: 1 } } });
  const result = await session.prompt("fully inlined");
  console.log(JSON.stringify({ stopReason: result.stopReason, text: result.message.content[0].text }));
})();
`,
    );
    const bundled = await build({
      entryPoints: [join(app, "src", "inlined.cjs")],
      outfile: join(out, "app.cjs"),
      bundle: true,
      platform: "node",
      format: "cjs",
      mainFields: ["module", "main"],
      external: ["@opentelemetry/api"],
      metafile: true,
      logLevel: "error",
    });
    // piscina starts each thread with the `worker.js` next to its own code: here, the bundle.
    cpSync(join(app, "node_modules", "lifeline", "dist", "piscina-worker.cjs"), join(out, "worker.js"));
    const inputs = Object.keys(bundled.metafile.inputs);
    expect(inputs.some((input) => input.includes("node_modules/lifeline/dist/main/bundle/lifeline.js"))).toBe(true);
    expect(inputs.filter((input) => input.includes("pi-tui"))).toEqual([]);
    const result = await runNode([join(out, "app.cjs")], {
      cwd: tempDir(fileCleanups, "lifeline-embed-cwd-"),
      env: { APP_WORKER: join(unpacked, "lifeline-worker.mjs") },
    });
    expect(result.code, result.stderr).toBe(0);
    expect(report(result)).toEqual({ stopReason: "stop", text: expect.stringContaining("fully inlined") });
  }, 60_000);

  it("a minimal embedder's bundle (esbuild --bundle --platform=node --format=esm --minify) is at most 1,000 KB and carries no provider SDK, pi package, Redis client, extension compiler, CLI or OTel SDK; fleet mode there says what to do", async () => {
    // The smallest embedder (docs/embedding.md, "What an embedding app pays"): three lines, bundled with exactly these flags.
    writeFileSync(
      join(app, "src", "minimal.mjs"),
      `import { SessionHost } from "lifeline";
const host = new SessionHost({ threads: 1, lifelineDir: false, settings: { fleet: { redis: "redis://127.0.0.1:9" } } });
await host.createSession().then(() => console.log("{}"), (error) => console.log(JSON.stringify({ code: error.code, message: error.message })));
`,
    );
    const outfile = join(app, "out", "minimal.mjs");
    const { metafile } = await build({
      entryPoints: [join(app, "src", "minimal.mjs")],
      outfile,
      bundle: true,
      platform: "node",
      format: "esm",
      minify: true,
      metafile: true,
      logLevel: "error",
    });
    const packages = new Set(
      Object.keys(metafile.inputs).flatMap((path) => /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path)?.[1] ?? []),
    );
    const forbidden = [...packages].filter((name) =>
      /^(@mariozechner\/|typebox$|ioredis$|@ioredis\/|bullmq$|jiti$|chart\.js$|commander$|@anthropic-ai\/|openai$|@google\/|google-auth-library$|@mistralai\/|@aws-sdk\/|@opentelemetry\/(?!api$))/.test(
        name,
      ),
    );
    expect(forbidden).toEqual([]);
    expect(packages).toContain("lifeline");
    const bytes = statSync(outfile).size;
    expect(bytes).toBeLessThanOrEqual(1_000 * 1024);
    // Fleet mode's code is not in such a bundle: the host says so, typed, instead of failing obscurely.
    // To run, the bundle needs what esbuild's docs give an ESM bundle with CommonJS inside: a require.
    const runnable = join(app, "out", "minimal-run.mjs");
    await build({
      entryPoints: [join(app, "src", "minimal.mjs")],
      outfile: runnable,
      bundle: true,
      platform: "node",
      format: "esm",
      minify: true,
      banner: { js: 'import { createRequire } from "node:module"; const require = createRequire(import.meta.url);' },
      logLevel: "error",
    });
    const result = await runNode([runnable], { cwd: app });
    expect(result.code, result.stderr).toBe(0);
    expect(report(result)).toEqual({
      code: "ERR_FLEET_UNAVAILABLE",
      message: expect.stringContaining("keep the lifeline package external to its bundle"),
    });
  }, 60_000);

  it("TypeScript consumers type-check against lifeline's declarations: nodenext from ESM and CommonJS, node16 from ESM", async () => {
    const ts = join(app, "ts");
    mkdirSync(ts, { recursive: true });
    writeFileSync(
      join(ts, "esm.mts"),
      `import { createSessionHost, LifelineError, type SessionHostOptions } from "lifeline";
import { type LoadOptions, type LoadResult, runLoad } from "lifeline/load";
import { type MockScriptInput, startMockServer } from "lifeline/mock-server";
import { type RpcSessionState, RpcClient } from "lifeline/rpc";
import { type InteractiveOptions, runInteractive } from "lifeline/tui";
const options: SessionHostOptions = { lifelineDir: false, workerEntry: new URL("file:///app/lifeline-worker.mjs") };
export const closed: Promise<void> = createSessionHost(options).close();
export const isLifelineError = (error: unknown): boolean => error instanceof LifelineError;
export const tui: (options: InteractiveOptions) => Promise<number> = runInteractive;
export const load: (options: LoadOptions) => Promise<LoadResult> = runLoad;
export const script: MockScriptInput = { conversations: [{ match: "x", steps: [503, "ok"] }] };
export const mock = startMockServer({ script });
export const state = (client: RpcClient): Promise<RpcSessionState> => client.getState();
`,
    );
    writeFileSync(
      join(ts, "cjs.cts"),
      `import { createSessionHost, SessionCrashedError, type SessionHostOptions, WorkerStartError } from "lifeline";
import { RpcClient } from "lifeline/rpc";
const options: SessionHostOptions = { lifelineDir: false, workerEntry: "resources/lifeline-worker.mjs" };
export const host = createSessionHost(options);
export const client = new RpcClient({ execPath: process.execPath, env: { ELECTRON_RUN_AS_NODE: "1" } });
export const crashed = (error: unknown): boolean => error instanceof SessionCrashedError || error instanceof WorkerStartError;
`,
    );
    const typeRoots = [join(REPO_ROOT, "node_modules", "@types")];
    const configs = {
      nodenext: ["ts/esm.mts", "ts/cjs.cts"],
      node16: ["ts/esm.mts"],
    };
    const checks = Object.entries(configs).map(async ([module, files]) => {
      const config = join(app, `tsconfig.${module}.json`);
      writeFileSync(
        config,
        JSON.stringify({
          compilerOptions: {
            module,
            moduleResolution: module,
            target: "ES2022",
            strict: true,
            noEmit: true,
            skipLibCheck: false,
            types: ["node"],
            typeRoots,
          },
          files,
        }),
      );
      const output = await run(process.execPath, [TSC, "-p", config], { cwd: app, maxBuffer: 16 * 1024 * 1024 }).then(
        (done) => done.stdout,
        (failed: { stdout?: string }) => failed.stdout ?? String(failed),
      );
      // Errors inside other packages' declarations (an SDK's optional peer) are theirs, not ours.
      const ours = output
        .split("\n")
        .filter((line) => /error TS/.test(line))
        .filter((line) => !line.startsWith("node_modules/") || line.startsWith("node_modules/lifeline/"));
      return { module, errors: ours };
    });
    expect(await Promise.all(checks)).toEqual([
      { module: "nodenext", errors: [] },
      { module: "node16", errors: [] },
    ]);
  }, 240_000);
});

describe("what the main entry loads", () => {
  const ENTRY = pathToFileURL(join(REPO_ROOT, "dist", "main", "bundle", "lifeline.js")).href;
  /** Packages no embedding app's main thread should load (the worker's, the CLI's, fleet mode's, the OTel SDK). */
  const LISTED =
    /^(@mariozechner\/|typebox$|ioredis$|bullmq$|jiti$|chart\.js$|commander$|@anthropic-ai\/|openai$|@google\/|google-auth-library$|@mistralai\/|@aws-sdk\/|@opentelemetry\/(?!api$))/;

  /** Runs `code` (an ES module that prints one JSON line) with a resolve hook recording every package loaded. */
  async function loadedBy(code: string): Promise<{ report: Record<string, unknown>; packages: string[] }> {
    const dir = tempDir(fileCleanups, "lifeline-loads-");
    writeFileSync(
      join(dir, "hooks.mjs"),
      "export async function resolve(s, c, next) { const r = await next(s, c); process.stderr.write('LOADED ' + r.url + '\\n'); return r; }\n",
    );
    writeFileSync(
      join(dir, "register.mjs"),
      `import { register } from "node:module"; register(${JSON.stringify(pathToFileURL(join(dir, "hooks.mjs")).href)});\n`,
    );
    writeFileSync(
      join(dir, "main.mjs"),
      `import { createRequire } from "node:module";\n${code}\nfor (const key of Object.keys(createRequire(import.meta.url).cache)) process.stderr.write("LOADED " + key + "\\n");\n`,
    );
    const result = await runNode(["--import", join(dir, "register.mjs"), join(dir, "main.mjs")], { cwd: dir });
    expect(result.code, result.stderr).toBe(0);
    const packages = new Set(
      [...result.stderr.matchAll(/^LOADED (.*)$/gm)].flatMap(
        (match) => /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(match[1] ?? "")?.[1] ?? [],
      ),
    );
    return { report: report(result), packages: [...packages].sort() };
  }

  it('import "lifeline" loads no provider SDK, pi package, typebox, Redis client, extension compiler, CLI or OTel SDK', async () => {
    const { packages } = await loadedBy(`await import(${JSON.stringify(ENTRY)});\nconsole.log("{}");`);
    expect(packages).toContain("piscina");
    expect(packages.filter((name) => LISTED.test(name))).toEqual([]);
  });

  it("a host with no telemetry option and no provider registered globally never loads @opentelemetry/api; one registered does", async () => {
    const session = (register: string) => `${register}
const { createSessionHost } = await import(${JSON.stringify(ENTRY)});
const host = createSessionHost({ threads: 1, lifelineDir: false });
const session = await host.createSession();
const result = await session.prompt("hello");
await host.close();
console.log(JSON.stringify({ stopReason: result.stopReason }));`;
    const plain = await loadedBy(session(""));
    expect(plain.report).toEqual({ stopReason: "stop" });
    expect(plain.packages.filter((name) => name.startsWith("@opentelemetry/"))).toEqual([]);
    // The positive control: an app that registered a tracer provider has lifeline load the API to record into it.
    const modules = join(REPO_ROOT, "node_modules", "@opentelemetry");
    const api = pathToFileURL(join(modules, "api", "build", "src", "index.js")).href;
    const sdk = pathToFileURL(join(modules, "sdk-trace-base", "build", "src", "index-shim.js")).href;
    const registered = await loadedBy(
      session(`const otel = await import(${JSON.stringify(api)});
const { BasicTracerProvider } = await import(${JSON.stringify(sdk)});
otel.trace.setGlobalTracerProvider(new BasicTracerProvider());`),
    );
    expect(registered.report).toEqual({ stopReason: "stop" });
    expect(registered.packages).toContain("@opentelemetry/api");
  });
});

describe("only in-flight work keeps the process alive", () => {
  it("a process with an idle host (open session, worker started) exits by itself after its prompt, retry sleeps included", async () => {
    const dir = tempDir(fileCleanups, "lifeline-idle-");
    const script = join(dir, "idle.mjs");
    writeFileSync(
      script,
      `import { createSessionHost } from ${JSON.stringify(pathToFileURL(join(REPO_ROOT, "dist", "main", "index.js")).href)};
const listing = createSessionHost({ threads: 1, lifelineDir: false });
const models = await listing.availableModels();
const host = createSessionHost({ threads: 1, lifelineDir: false });
const session = await host.createSession({ settings: { retry: { baseDelayMs: 100 } } });
const retries = [];
session.subscribe((event) => { if (event.type === "auto_retry_start") retries.push(event.attempt); });
const result = await session.prompt("then idle");
console.log(JSON.stringify({ models: models.length > 0, stopReason: result.stopReason, retries, open: host.sessionCount }));
`,
    );
    const result = await runNode([script], { cwd: dir, ms: 30_000 });
    expect(result.code, result.stderr).toBe(0);
    // The demo model fails twice: both retry sleeps kept the process alive, then nothing did.
    expect(report(result)).toEqual({ models: true, stopReason: "stop", retries: [1, 2], open: 1 });
  }, 40_000);
});

describe("lifelineDir: false", () => {
  it("reads no user file: invalid settings and models files in $LIFELINE_DIR and the project are never opened", async () => {
    const userDir = tempDir(fileCleanups, "lifeline-userdir-");
    const project = tempDir(fileCleanups, "lifeline-project-");
    writeFileSync(join(userDir, "settings.json"), "{ not json");
    writeFileSync(join(userDir, "models.json"), "{ not json either");
    mkdirSync(join(project, ".lifeline"));
    writeFileSync(join(project, ".lifeline", "settings.json"), '{"retry": {"maxRetries": "many"}}');
    const saved = process.env.LIFELINE_DIR;
    process.env.LIFELINE_DIR = userDir;
    const host = createSessionHost({ threads: 1, lifelineDir: false, cwd: project });
    try {
      expect(await host.settings()).toEqual(DEFAULT_SETTINGS);
      const models = await host.availableModels();
      expect(models.map((model) => `${model.provider}/${model.id}`)).toContain("demo/demo-1");
      await expect(host.writeUserSettings({ retry: { enabled: false } })).rejects.toMatchObject({
        code: "ERR_INVALID_OPTIONS",
      });
    } finally {
      if (saved === undefined) delete process.env.LIFELINE_DIR;
      else process.env.LIFELINE_DIR = saved;
      await host.close();
    }
    // The same files break a host that reads them: the test sees the files a default host would.
    const reading = createSessionHost({ threads: 1, lifelineDir: userDir, cwd: project });
    await expect(reading.settings()).rejects.toMatchObject({ code: "ERR_INVALID_SETTINGS" });
    await reading.close();
  }, 30_000);
});

describe("toModuleUrl: one base for relative worker paths", () => {
  it("resolves a relative path against the host's cwd, not the process's", () => {
    expect(toModuleUrl("tools/mod.mjs", "/srv/app")).toBe("file:///srv/app/tools/mod.mjs");
  });

  it("keeps a # and spaces in a path as part of the file name", () => {
    expect(toModuleUrl("/opt/my app/#1/worker.mjs", "/elsewhere")).toBe("file:///opt/my%20app/%231/worker.mjs");
    expect(toModuleUrl("dir#2/w.mjs", "/base dir")).toBe("file:///base%20dir/dir%232/w.mjs");
  });

  it("takes a file: URL string or a URL as given", () => {
    expect(toModuleUrl("file:///a/b%23c.mjs", "/x")).toBe("file:///a/b%23c.mjs");
    expect(toModuleUrl(new URL("file:///a/b.mjs"), "/x")).toBe("file:///a/b.mjs");
  });

  it("turns an absolute path into a file URL with pathToFileURL (a Windows drive letter on Windows)", () => {
    const absolute = join(REPO_ROOT, "x.mjs");
    expect(toModuleUrl(absolute, "/elsewhere")).toBe(pathToFileURL(absolute).href);
  });
});
