/**
 * NODE_EXTRA_CA_CERTS behind a proxy (docs/network.md): Node reads the variable once, when the
 * process starts, so this runs the built `lifeline -p` as a child process with it set, and checks
 * that the workers' model requests trust the CA it names, through the proxy's CONNECT tunnel to
 * a TLS mock server whose certificate that CA signed. Without the variable the same run fails.
 */
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type MockServer, startMockServer } from "../../../dist/mock-server/index.js";
import { tempDir } from "../../fixtures/bounded.js";
import { type ForwardProxy, startForwardProxy } from "../../fixtures/forward-proxy.js";
import { makeTestCa, type TestCa } from "../../fixtures/test-ca.js";

const CLI = fileURLToPath(new URL("../../../dist/main/cli.js", import.meta.url));
const PROXY_VARIABLES = ["HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "NO_PROXY", "no_proxy"];

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
const fileCleanups: (() => Promise<void> | void)[] = [];
let ca: TestCa;
let server: MockServer;
beforeAll(async () => {
  ca = makeTestCa(tempDir(fileCleanups, "lifeline-ca-"), "process");
  server = await startMockServer({
    script: { reply: "The TLS mock answers." },
    tls: { key: ca.serverKey, cert: ca.serverCert },
  });
});
afterAll(async () => {
  await server.close();
  for (const cleanup of fileCleanups) await cleanup();
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `lifeline -p <text>` on the TLS mock, with `env` over this process's environment less its proxy variables. */
function runCli(text: string, env: Record<string, string>): Promise<Run> {
  const dir = tempDir(cleanups, "lifeline-extra-ca-");
  const compat = { supportsDeveloperRole: false, supportsReasoningEffort: false };
  const models = {
    "mock-tls": {
      baseUrl: `${server.url}/v1`,
      api: "openai-completions",
      apiKey: "sk-test",
      compat,
      models: [{ id: "mock-1" }],
    },
  };
  writeFileSync(join(dir, "models.json"), JSON.stringify({ providers: models }));
  writeFileSync(join(dir, "settings.json"), JSON.stringify({ retry: { enabled: false } }));
  const base = { ...process.env };
  for (const name of [...PROXY_VARIABLES, "NODE_EXTRA_CA_CERTS"]) delete base[name];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, "-p", text, "--model", "mock-tls/mock-1"], {
      cwd: dir,
      env: { ...base, LIFELINE_DIR: dir, NO_COLOR: "1", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

async function proxy(): Promise<ForwardProxy> {
  const started = await startForwardProxy();
  cleanups.push(() => started.close());
  return started;
}

describe("NODE_EXTRA_CA_CERTS", () => {
  it("reaches the worker threads: a model request through HTTPS_PROXY's tunnel trusts the CA it names", async () => {
    const forward = await proxy();
    const run = await runCli("extra CA trusted", { HTTPS_PROXY: forward.url, NODE_EXTRA_CA_CERTS: ca.caFile });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain("The TLS mock answers.");
    expect(forward.tunnels).toEqual([`127.0.0.1:${server.port}`]);
    expect(server.requests("extra CA trusted")).toBe(1);
  });

  it("without it the same run fails, naming the certificate problem, and the server answers nothing", async () => {
    const forward = await proxy();
    const run = await runCli("no extra CA", { HTTPS_PROXY: forward.url });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`https://127.0.0.1:${server.port}`);
    expect(run.stderr).toContain("UNABLE_TO_VERIFY_LEAF_SIGNATURE");
    expect(forward.tunnels).toEqual([`127.0.0.1:${server.port}`]);
    expect(server.requests("no extra CA")).toBe(0);
  });
});
