/**
 * models.json: pi's format read as JSONC, validated with errors that name the file and
 * the field, and turned into what a worker needs without the key ever leaving the main thread
 * except towards that worker.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  loadModelsConfig,
  type ModelsConfig,
  parseModelsConfig,
  resolveModelRef,
} from "../../../src/main/config/models-config.js";
import { LifelineError } from "../../../src/shared/errors.js";

const PATH = "/home/user/.lifeline/models.json";
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function errorOf(fn: () => unknown): LifelineError {
  try {
    fn();
  } catch (error) {
    if (error instanceof LifelineError) return error;
    throw error;
  }
  throw new Error("expected a LifelineError");
}

async function rejectionOf(promise: Promise<unknown>): Promise<LifelineError> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  if (error instanceof LifelineError) return error;
  throw new Error(`expected a LifelineError, got ${String(error)}`);
}

const MOCK = `{
  // a local mock server
  "providers": {
    "mock": {
      "baseUrl": "http://127.0.0.1:8080/v1",
      "api": "openai-completions",
      "apiKey": "MOCK_KEY_VAR",
      "compat": { "supportsDeveloperRole": false },
      "models": [
        { "id": "mock-1" },
        { "id": "mock-big", "name": "Big", "contextWindow": 200000, "api": "anthropic-messages", },
      ],
    },
  },
}`;

describe("models.json", () => {
  it("accepts comments and trailing commas and builds full models with pi's defaults", async () => {
    const config = parseModelsConfig(MOCK, PATH);
    expect(config.providers.mock?.models?.map((model) => model.id)).toEqual(["mock-1", "mock-big"]);
    const resolved = await resolveModelRef({ provider: "mock", id: "mock-1" }, config, undefined, {
      MOCK_KEY_VAR: "key-from-env",
    });
    expect(resolved.apiKey).toBe("key-from-env");
    expect(resolved.model).toEqual({
      id: "mock-1",
      name: "mock-1",
      api: "openai-completions",
      provider: "mock",
      baseUrl: "http://127.0.0.1:8080/v1",
      reasoning: false,
      input: ["text"],
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
      contextWindow: 128_000,
      maxTokens: 16_384,
      compat: { supportsDeveloperRole: false },
    });
    const big = await resolveModelRef({ provider: "mock", id: "mock-big" }, config, undefined, {});
    expect(big.model).toMatchObject({ api: "anthropic-messages", name: "Big", contextWindow: 200_000 });
  });

  it("resolves apiKey as pi does: a set environment variable, a literal, or a !command; the session's key wins", async () => {
    const config = parseModelsConfig(MOCK, PATH);
    const ref = { provider: "mock", id: "mock-1" };
    expect((await resolveModelRef(ref, config, undefined, {})).apiKey).toBe("MOCK_KEY_VAR");
    expect((await resolveModelRef(ref, config, "from-session", { MOCK_KEY_VAR: "env" })).apiKey).toBe("from-session");
    const command = parseModelsConfig(MOCK.replace('"MOCK_KEY_VAR"', '"!printf key-from-command"'), PATH);
    expect((await resolveModelRef(ref, command, undefined, {})).apiKey).toBe("key-from-command");
  });

  it("a failing !command is an error that names the field but never prints the command's output", async () => {
    const config = parseModelsConfig(MOCK.replace('"MOCK_KEY_VAR"', '"!printf %s lea\\"\\"ked; exit 3"'), PATH);
    const error = await rejectionOf(resolveModelRef({ provider: "mock", id: "mock-1" }, config, undefined, {}));
    expect(error.code).toBe("ERR_INVALID_MODELS");
    expect(error.message).toContain("providers.mock.apiKey");
    // The shell prints "leaked"; the command text only has lea""ked.
    expect(error.message).not.toContain("leaked");
  });

  it("a provider without models overrides a built-in provider's baseUrl, headers and compat", async () => {
    const config = parseModelsConfig(
      '{"providers":{"openai":{"baseUrl":"http://127.0.0.1:9/v1","headers":{"x-team":"blue"},"apiKey":"sk-test-0123"}}}',
      PATH,
    );
    const resolved = await resolveModelRef({ provider: "openai", id: "gpt-4o-mini" }, config, undefined, {});
    expect(resolved).toEqual({
      apiKey: "sk-test-0123",
      model: {
        provider: "openai",
        id: "gpt-4o-mini",
        overrides: { baseUrl: "http://127.0.0.1:9/v1", headers: { "x-team": "blue" } },
      },
    });
  });

  it("an unknown model of a custom provider lists that provider's models", async () => {
    const error = await rejectionOf(
      resolveModelRef({ provider: "mock", id: "nope" }, parseModelsConfig(MOCK, PATH), undefined, {}),
    );
    expect(error.code).toBe("ERR_UNKNOWN_MODEL");
    expect(error.message).toContain("mock-1, mock-big");
  });

  it("an unknown provider lists the demo, custom and built-in providers", async () => {
    const error = await rejectionOf(
      resolveModelRef({ provider: "nope", id: "x" }, parseModelsConfig(MOCK, PATH), undefined, {}),
    );
    expect(error.code).toBe("ERR_UNKNOWN_MODEL");
    expect(error.message).toMatch(/demo, mock, .*openai/);
  });

  it("a custom provider with no key anywhere is ERR_MISSING_API_KEY naming the provider and the file", async () => {
    const config = parseModelsConfig(MOCK.replace('"apiKey": "MOCK_KEY_VAR",', ""), PATH);
    const error = await rejectionOf(resolveModelRef({ provider: "mock", id: "mock-1" }, config, undefined, {}));
    expect(error.code).toBe("ERR_MISSING_API_KEY");
    expect(error.message).toContain('"mock"');
    expect(error.message).toContain(PATH);
  });

  it.each([
    ["invalid JSON", '{"providers": {', "line 1, column"],
    ["a non-object", "[1, 2]", "must hold an object"],
    ["an unknown api", MOCK.replace('"api": "openai-completions"', '"api": "openai-chat"'), "providers.mock.api"],
    ["a missing baseUrl", MOCK.replace('"baseUrl": "http://127.0.0.1:8080/v1",', ""), "providers.mock.baseUrl"],
    ["a bad baseUrl", MOCK.replace("http://127.0.0.1:8080/v1", "127.0.0.1:8080"), "providers.mock.baseUrl"],
    ["a model without id", MOCK.replace('{ "id": "mock-1" }', '{ "name": "x" }'), "providers.mock.models.0.id"],
    ["a typo", MOCK.replace('"compat"', '"compatt"'), "compatt"],
    ["a provider with neither models nor a built-in name", '{"providers":{"local":{"baseUrl":"http://x"}}}', "local"],
    ["a missing api", MOCK.replace('"api": "openai-completions",', ""), "providers.mock.api is missing"],
  ])("rejects %s with ERR_INVALID_MODELS naming the file and the problem", (_what, text, detail) => {
    const error = errorOf(() => parseModelsConfig(text, PATH));
    expect(error.code).toBe("ERR_INVALID_MODELS");
    expect(error.message).toContain(PATH);
    expect(error.message).toContain(detail);
  });

  it("reports the line and column of a syntax error on a later line", () => {
    const error = errorOf(() => parseModelsConfig('{\n  "providers": {\n    "a": { "baseUrl" "x" }\n  }\n}', PATH));
    expect(error.message).toContain("line 3, column");
  });

  it("a missing file is no custom models; an unreadable one is an error naming it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "lifeline-models-"));
    dirs.push(dir);
    const empty: ModelsConfig = await loadModelsConfig(join(dir, "models.json"));
    expect(empty.providers).toEqual({});
    writeFileSync(join(dir, "models.json"), MOCK);
    expect((await loadModelsConfig(join(dir, "models.json"))).providers.mock?.models).toHaveLength(2);
    const error = await rejectionOf(loadModelsConfig(dir));
    expect(error.code).toBe("ERR_INVALID_MODELS");
    expect(error.message).toContain(dir);
  });
});
