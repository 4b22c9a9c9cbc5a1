/**
 * A host behind a forward proxy (docs/network.md): real worker threads of the built package, pi-ai's
 * real OpenAI and Anthropic providers (their SDKs call the global fetch), a forward proxy on
 * 127.0.0.1 that counts what it forwards (test/fixtures/forward-proxy.ts), and the mock model
 * server, over plain HTTP and over TLS with a certificate of a CA this file makes.
 *
 * Worker threads copy the environment when they start, so each test sets the proxy variables
 * before its host's first session (and puts them back after).
 */
import { copyFileSync, writeFileSync } from "node:fs";
import { type AddressInfo, createServer } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createSessionHost,
  LifelineError,
  type PromptResult,
  requestFailureOf,
  type SessionHost,
  type SessionHostOptions,
  type SettingsInput,
} from "../../../dist/main/index.js";
import { type MockServer, startMockServer } from "../../../dist/mock-server/index.js";
import { tempDir, within } from "../../fixtures/bounded.js";
import { type ForwardProxy, startForwardProxy } from "../../fixtures/forward-proxy.js";
import { mockServerSuite } from "../../fixtures/mock-server-suite.js";
import { makeTestCa, type TestCa } from "../../fixtures/test-ca.js";

const suite = mockServerSuite({ script: { reply: "The mock answers." } });
const { cleanups } = suite;
const PROXY_VARIABLES = ["HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "NO_PROXY", "no_proxy"];
const APIS = ["openai-completions", "anthropic-messages"] as const;

/** Clears every proxy variable of this process, sets `vars`, and restores the old values after the test. */
function proxyEnv(vars: Record<string, string> = {}): void {
  const saved = PROXY_VARIABLES.map((name) => [name, process.env[name]] as const);
  cleanups.push(() => {
    for (const [name, value] of saved) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });
  for (const name of PROXY_VARIABLES) delete process.env[name];
  Object.assign(process.env, vars);
}

async function proxy(): Promise<ForwardProxy> {
  const started = await startForwardProxy();
  cleanups.push(() => started.close());
  return started;
}

const compat = { supportsDeveloperRole: false, supportsReasoningEffort: false };

/**
 * A host on the real pool whose models.json (in `dir`, also its cwd) points both APIs at
 * `serverUrl`, and the provider `mock-other` (OpenAI's API) at `otherUrl`.
 */
function hostFor(
  serverUrl: string,
  settings: SettingsInput = {},
  dir = tempDir(cleanups, "lifeline-proxy-"),
  otherUrl?: string,
  hostOptions: SessionHostOptions = {},
): SessionHost {
  const providers: Record<string, unknown> = {
    "mock-openai-completions": {
      baseUrl: `${serverUrl}/v1`,
      api: "openai-completions",
      apiKey: "sk-test",
      compat,
      models: [{ id: "mock-1" }],
    },
    "mock-anthropic-messages": {
      baseUrl: serverUrl,
      api: "anthropic-messages",
      apiKey: "sk-test",
      models: [{ id: "mock-1" }],
    },
  };
  if (otherUrl !== undefined) {
    providers["mock-other"] = {
      baseUrl: `${otherUrl}/v1`,
      api: "openai-completions",
      apiKey: "sk-test",
      compat,
      models: [{ id: "mock-1" }],
    };
  }
  writeFileSync(join(dir, "models.json"), JSON.stringify({ providers }));
  const host = createSessionHost({
    lifelineDir: dir,
    cwd: dir,
    threads: 1,
    settings: { retry: { baseDelayMs: 1 }, ...settings },
    ...hostOptions,
  });
  cleanups.push(() => host.close());
  return host;
}

async function prompt(host: SessionHost, api: string, text: string): Promise<PromptResult> {
  const session = await host.createSession({ model: `mock-${api}/mock-1` });
  return within(session.prompt(text), 15_000, `the prompt "${text}"`);
}

function answerOf(result: PromptResult): string {
  return (result.message?.content ?? []).map((block) => (block.type === "text" ? block.text : "")).join("");
}

async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise;
    return undefined;
  } catch (error) {
    return error instanceof LifelineError ? error.code : String(error);
  }
}

let counter = 0;
const unique = (name: string) => `case ${++counter} ${name}`;

describe("plain HTTP through a forward proxy", () => {
  for (const api of APIS) {
    it(`HTTP_PROXY sends ${api}'s model request through the proxy, which forwards it to the server`, async () => {
      const forward = await proxy();
      proxyEnv({ HTTP_PROXY: forward.url });
      const text = unique(`${api} via HTTP_PROXY`);
      const result = await prompt(hostFor(suite.server.url), api, text);
      expect(answerOf(result)).toBe("The mock answers.");
      expect(suite.server.requests(text)).toBe(1);
      expect(forward.forwarded).toEqual([
        expect.stringMatching(new RegExp(`^${suite.server.url}/(v1/chat/completions|v1/messages)`)),
      ]);
      expect(forward.tunnels).toEqual([]);
    });
  }

  it("the lower-case http_proxy is honoured as well", async () => {
    const forward = await proxy();
    proxyEnv({ http_proxy: forward.url });
    const text = unique("via http_proxy");
    expect(answerOf(await prompt(hostFor(suite.server.url), "openai-completions", text))).toBe("The mock answers.");
    expect(forward.forwarded).toHaveLength(1);
  });

  it("NO_PROXY naming the server's host and port sends its requests straight to it, and others through the proxy", async () => {
    const forward = await proxy();
    const other = await startMockServer({ script: { reply: "The other mock answers." } });
    cleanups.push(() => other.close());
    proxyEnv({ HTTP_PROXY: forward.url, NO_PROXY: `localhost, 127.0.0.1:${suite.server.port}` });
    const host = hostFor(suite.server.url, {}, undefined, other.url);
    const text = unique("NO_PROXY");
    expect(answerOf(await prompt(host, "openai-completions", text))).toBe("The mock answers.");
    expect(suite.server.requests(text)).toBe(1);
    expect(forward.forwarded).toEqual([]);
    // The same host name on another port is not named: proxied.
    const session = await host.createSession({ model: "mock-other/mock-1" });
    const result = await within(session.prompt(unique("not in NO_PROXY")), 15_000, "the other prompt");
    expect(answerOf(result)).toBe("The other mock answers.");
    expect(forward.forwarded).toEqual([`${other.url}/v1/chat/completions`]);
  });

  it("the proxy setting sends model requests through the proxy with no variable set", async () => {
    const forward = await proxy();
    proxyEnv();
    const text = unique("proxy setting");
    const host = hostFor(suite.server.url, { proxy: forward.url });
    expect(answerOf(await prompt(host, "anthropic-messages", text))).toBe("The mock answers.");
    expect(forward.forwarded).toHaveLength(1);
  });

  it("the proxy setting wins over HTTP_PROXY", async () => {
    const forward = await proxy();
    const other = await proxy();
    proxyEnv({ HTTP_PROXY: other.url });
    const text = unique("setting over variable");
    expect(answerOf(await prompt(hostFor(suite.server.url, { proxy: forward.url }), "openai-completions", text))).toBe(
      "The mock answers.",
    );
    expect(forward.forwarded).toHaveLength(1);
    expect(other.forwarded).toEqual([]);
  });

  it("after reloadSettings() a changed proxy in the settings file serves the worker's next session, and its older ones", async () => {
    const first = await proxy();
    const second = await proxy();
    proxyEnv();
    const dir = tempDir(cleanups, "lifeline-proxy-reload-");
    writeFileSync(join(dir, "settings.json"), JSON.stringify({ proxy: first.url }));
    const host = hostFor(suite.server.url, {}, dir);
    const older = await host.createSession({ model: "mock-openai-completions/mock-1" });
    await within(older.prompt(unique("before the reload")), 15_000, "the first prompt");
    expect(first.forwarded).toHaveLength(1);

    writeFileSync(join(dir, "settings.json"), JSON.stringify({ proxy: second.url }));
    host.reloadSettings();
    await prompt(host, "openai-completions", unique("after the reload"));
    // One worker (threads: 1): the older session's requests now take the new proxy too.
    await within(older.prompt(unique("older session after the reload")), 15_000, "the older session's prompt");
    expect(first.forwarded).toHaveLength(1);
    expect(second.forwarded).toHaveLength(2);
  });

  it("the noProxy setting bypasses the proxy setting for the hosts it names", async () => {
    const forward = await proxy();
    proxyEnv();
    const other = await startMockServer({ script: { reply: "The other mock answers." } });
    cleanups.push(() => other.close());
    const text = unique("noProxy setting");
    const settings = { proxy: forward.url, noProxy: `127.0.0.1:${suite.server.port}` };
    const host = hostFor(suite.server.url, settings, undefined, other.url);
    expect(answerOf(await prompt(host, "openai-completions", text))).toBe("The mock answers.");
    expect(suite.server.requests(text)).toBe(1);
    expect(forward.forwarded).toEqual([]);
    const session = await host.createSession({ model: "mock-other/mock-1" });
    await within(session.prompt(unique("not in noProxy")), 15_000, "the other prompt");
    expect(forward.forwarded).toEqual([`${other.url}/v1/chat/completions`]);
  });
});

/**
 * docs/network.md's table of providers: pi-ai's other APIs, each through a built-in provider whose
 * baseUrl models.json points at the mock server. The mock speaks only OpenAI chat completions and
 * Anthropic messages, so these requests are answered 404 or fail to parse; what is checked is
 * where each went.
 */
describe("every pi-ai API's model request, through the proxy setting or the variables", () => {
  const base64url = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url");
  /** openai-codex-responses reads the account id from its key, a JWT. */
  const codexKey = `${base64url({ alg: "none" })}.${base64url({ "https://api.openai.com/auth": { chatgpt_account_id: "acct" } })}.sig`;
  const OTHER_APIS: { api: string; model: string; apiKey?: string }[] = [
    { api: "openai-responses", model: "openai/gpt-4" },
    { api: "azure-openai-responses", model: "azure-openai-responses/gpt-4" },
    { api: "openai-codex-responses", model: "openai-codex/gpt-5.1", apiKey: codexKey },
    { api: "mistral-conversations", model: "mistral/codestral-latest" },
    { api: "google-generative-ai", model: "google/gemini-1.5-flash" },
    { api: "google-vertex", model: "google-vertex/gemini-1.5-flash" },
  ];

  /** A host whose models.json points the built-in provider of `model` at the mock server. */
  function hostWithBuiltIn(model: string, apiKey: string, settings: SettingsInput): SessionHost {
    const dir = tempDir(cleanups, "lifeline-proxy-api-");
    const provider = model.slice(0, model.indexOf("/"));
    writeFileSync(
      join(dir, "models.json"),
      JSON.stringify({ providers: { [provider]: { baseUrl: suite.server.url, apiKey } } }),
    );
    const host = createSessionHost({
      lifelineDir: dir,
      cwd: dir,
      threads: 1,
      settings: { retry: { enabled: false }, ...settings },
    });
    cleanups.push(() => host.close());
    return host;
  }

  async function promptOnce(host: SessionHost, model: string, text: string): Promise<void> {
    const session = await host.createSession({ model });
    await within(session.prompt(text), 15_000, `the prompt "${text}"`);
  }

  for (const { api, model, apiKey } of OTHER_APIS) {
    it(`${api} sends its model request through the proxy setting`, async () => {
      const forward = await proxy();
      proxyEnv();
      await promptOnce(hostWithBuiltIn(model, apiKey ?? "sk-test", { proxy: forward.url }), model, unique(api));
      // At least one: openai-codex-responses retries a 404 on its own, whatever retry settings say.
      expect(forward.forwarded.length).toBeGreaterThan(0);
      for (const url of forward.forwarded) expect(url.startsWith(`${suite.server.url}/`)).toBe(true);
    });
  }

  it("bedrock-converse-stream goes through HTTP_PROXY (pi-ai's own support), and not through the proxy setting", async () => {
    const model = "amazon-bedrock/amazon.nova-2-lite-v1:0";
    const saved = { AWS_BEDROCK_SKIP_AUTH: process.env.AWS_BEDROCK_SKIP_AUTH };
    cleanups.push(() => {
      if (saved.AWS_BEDROCK_SKIP_AUTH === undefined) delete process.env.AWS_BEDROCK_SKIP_AUTH;
      else process.env.AWS_BEDROCK_SKIP_AUTH = saved.AWS_BEDROCK_SKIP_AUTH;
    });
    process.env.AWS_BEDROCK_SKIP_AUTH = "1";
    const forward = await proxy();
    proxyEnv({ HTTP_PROXY: forward.url });
    await promptOnce(hostWithBuiltIn(model, "unused", {}), model, unique("bedrock via HTTP_PROXY"));
    expect(forward.forwarded).toEqual([expect.stringMatching(new RegExp(`^${suite.server.url}/`))]);

    const other = await proxy();
    proxyEnv();
    await promptOnce(hostWithBuiltIn(model, "unused", { proxy: other.url }), model, unique("bedrock, proxy setting"));
    expect(other.forwarded).toEqual([]);
    expect(other.tunnels).toEqual([]);
  });
});

describe("TLS through a CONNECT tunnel, with a custom CA", () => {
  let ca: TestCa;
  let tlsServer: MockServer;
  const fileCleanups: (() => Promise<void> | void)[] = [];
  beforeAll(async () => {
    ca = makeTestCa(tempDir(fileCleanups, "lifeline-ca-"), "thread");
    tlsServer = await startMockServer({
      script: { reply: "The TLS mock answers." },
      tls: { key: ca.serverKey, cert: ca.serverCert },
    });
  });
  afterAll(async () => {
    await tlsServer.close();
    for (const cleanup of fileCleanups) await cleanup();
  });

  for (const api of APIS) {
    it(`caFile makes ${api}'s request through HTTPS_PROXY's tunnel trust the server the CA signed`, async () => {
      const forward = await proxy();
      proxyEnv({ HTTPS_PROXY: forward.url });
      const text = unique(`${api} TLS via HTTPS_PROXY`);
      const result = await prompt(hostFor(tlsServer.url, { caFile: ca.caFile }), api, text);
      expect(answerOf(result)).toBe("The TLS mock answers.");
      expect(tlsServer.requests(text)).toBe(1);
      expect(forward.tunnels).toEqual([`127.0.0.1:${tlsServer.port}`]);
      expect(forward.forwarded).toEqual([]);
    });
  }

  it("the self-contained worker bundle, copied where there is no node_modules, tunnels and trusts caFile alike", async () => {
    const forward = await proxy();
    proxyEnv({ HTTPS_PROXY: forward.url });
    const dir = tempDir(cleanups, "lifeline-proxy-bundle-");
    const bundle = join(dir, "lifeline-worker.mjs");
    copyFileSync(new URL("../../../dist/lifeline-worker.mjs", import.meta.url), bundle);
    const text = unique("TLS via the bundle");
    const host = hostFor(tlsServer.url, { caFile: ca.caFile }, undefined, undefined, { workerEntry: bundle });
    expect(answerOf(await prompt(host, "anthropic-messages", text))).toBe("The TLS mock answers.");
    expect(forward.tunnels).toEqual([`127.0.0.1:${tlsServer.port}`]);
  });

  it("caFile is trusted on a direct connection too, and a relative caFile is taken from the host's cwd", async () => {
    proxyEnv();
    const dir = tempDir(cleanups, "lifeline-ca-cwd-");
    writeFileSync(join(dir, "corporate-ca.pem"), ca.caCert);
    const text = unique("TLS direct");
    const host = hostFor(tlsServer.url, { caFile: "corporate-ca.pem" }, dir);
    expect(answerOf(await prompt(host, "openai-completions", text))).toBe("The TLS mock answers.");
  });

  it("without the CA the request through the tunnel fails with the TLS error's code, and is not answered", async () => {
    const forward = await proxy();
    proxyEnv();
    const text = unique("TLS without CA");
    const host = hostFor(tlsServer.url, { proxy: forward.url, retry: { enabled: false } });
    const result = await prompt(host, "openai-completions", text);
    expect(result.stopReason).toBe("error");
    expect(result.message === undefined ? undefined : requestFailureOf(result.message)?.network).toMatchObject({
      phase: "request",
      code: "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
    });
    expect(forward.tunnels).toEqual([`127.0.0.1:${tlsServer.port}`]);
    expect(tlsServer.requests(text)).toBe(0);
  });
});

describe("a proxy that cannot be reached", () => {
  it("fails the request with the socket's code and names the proxy, without its password", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    proxyEnv();
    const host = hostFor(suite.server.url, {
      proxy: `http://lifeline:hunter2-secret@127.0.0.1:${port}`,
      retry: { enabled: false },
    });
    const text = unique("proxy down");
    const result = await prompt(host, "openai-completions", text);
    expect(result.stopReason).toBe("error");
    expect(result.message === undefined ? undefined : requestFailureOf(result.message)?.network?.code).toBe(
      "ECONNREFUSED",
    );
    expect(result.message?.errorMessage).toContain(`through the proxy http://127.0.0.1:${port}`);
    expect(JSON.stringify(result)).not.toContain("hunter2-secret");
    expect(suite.server.requests(text)).toBe(0);
  });
});

describe("refusals", () => {
  it("a proxy setting that is not an http(s) URL is ERR_INVALID_SETTINGS when the host is made", () => {
    expect(() => createSessionHost({ lifelineDir: false, settings: { proxy: "socks5://127.0.0.1:1080" } })).toThrow(
      expect.objectContaining({ code: "ERR_INVALID_SETTINGS" }),
    );
  });

  it("a session's settings may not set proxy: ERR_INVALID_SETTINGS", async () => {
    proxyEnv();
    const host = hostFor(suite.server.url);
    expect(
      await codeOf(
        host.createSession({ model: "mock-openai-completions/mock-1", settings: { proxy: "http://127.0.0.1:9" } }),
      ),
    ).toBe("ERR_INVALID_SETTINGS");
  });

  it("a caFile that does not exist fails the session's open with ERR_INVALID_SETTINGS", async () => {
    proxyEnv();
    const host = hostFor(suite.server.url, { caFile: "/nonexistent/lifeline-ca.pem" });
    expect(await codeOf(host.createSession({ model: "mock-openai-completions/mock-1" }))).toBe("ERR_INVALID_SETTINGS");
  });

  it("a caFile with no certificate in it fails the session's open with ERR_INVALID_SETTINGS", async () => {
    proxyEnv();
    const file = join(tempDir(cleanups, "lifeline-ca-bad-"), "ca.pem");
    writeFileSync(file, "not a certificate\n");
    const host = hostFor(suite.server.url, { caFile: file });
    expect(await codeOf(host.createSession({ model: "mock-openai-completions/mock-1" }))).toBe("ERR_INVALID_SETTINGS");
  });

  it("an HTTPS_PROXY that is not a proxy URL fails the session's open with ERR_INVALID_SETTINGS", async () => {
    proxyEnv({ HTTPS_PROXY: "http://proxy.example:3128/some/path" });
    const host = hostFor(suite.server.url);
    expect(await codeOf(host.createSession({ model: "mock-openai-completions/mock-1" }))).toBe("ERR_INVALID_SETTINGS");
  });
});
