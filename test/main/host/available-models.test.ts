/**
 * `availableModels()`: the worker's demo models, then models.json's, then pi-ai's catalogue for the
 * providers with a key. The catalogue lives in the worker (the main thread loads no pi-ai): main
 * says which providers have a key (environment or models.json), which ones models.json redefines
 * and which `baseUrl` it overrides, and the worker lists. In-process tier: the worker's code runs
 * in this thread over a MessageChannel, with this process's environment.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Api, getModels, type Model } from "@mariozechner/pi-ai";
import { afterEach, describe, expect, it } from "vitest";
import { tempDir } from "../../fixtures/bounded.js";
import { inProcessHost } from "../../fixtures/in-process-host.js";

const cleanups: (() => Promise<void> | void)[] = [];
const saved = { ...process.env };
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
  Object.assign(process.env, saved);
});

/** A host whose user directory holds `models` as models.json, with `env`'s keys and no other. */
function hostWith(env: Record<string, string>, models?: object) {
  for (const name of Object.keys(process.env)) if (/_(API_KEY|TOKEN)$/.test(name)) delete process.env[name];
  Object.assign(process.env, env);
  const dir = tempDir(cleanups, "lifeline-models-");
  if (models !== undefined) writeFileSync(join(dir, "models.json"), JSON.stringify(models));
  const { host } = inProcessHost({ lifelineDir: dir });
  cleanups.push(() => host.close());
  return host;
}

const names = (models: Model<Api>[]) => models.map((model) => `${model.provider}/${model.id}`);
const catalogue = (provider: "openai" | "anthropic") =>
  (getModels(provider) as Model<Api>[]).map((m) => `${provider}/${m.id}`);

describe("availableModels", () => {
  it("lists the demo models alone when no provider has a key", async () => {
    const listed = names(await hostWith({}).availableModels());
    expect(listed.length).toBeGreaterThan(0);
    expect(listed.every((name) => name.startsWith("demo/"))).toBe(true);
  });

  it("lists a provider's catalogue when its key is in the environment, after the demo and models.json's own models", async () => {
    const host = hostWith(
      { OPENAI_API_KEY: "sk-test" },
      {
        providers: { local: { baseUrl: "http://127.0.0.1:9/v1", api: "openai-completions", models: [{ id: "l-1" }] } },
      },
    );
    const listed = names(await host.availableModels());
    const firstOther = listed.findIndex((name) => !name.startsWith("demo/"));
    expect(listed.slice(firstOther)).toEqual(["local/l-1", ...catalogue("openai")]);
  });

  it("takes a key and a baseUrl override from models.json, and leaves out a provider models.json redefines", async () => {
    const host = hostWith(
      { OPENAI_API_KEY: "sk-test" },
      {
        providers: {
          anthropic: { apiKey: "from-file", baseUrl: "http://127.0.0.1:9/anthropic" },
          openai: { baseUrl: "http://127.0.0.1:9/v1", api: "openai-completions", models: [{ id: "mine" }] },
        },
      },
    );
    const listed = await host.availableModels();
    const others = listed.filter((model) => model.provider !== "demo");
    expect(names(others)).toEqual(["openai/mine", ...catalogue("anthropic")]);
    expect(new Set(others.filter((m) => m.provider === "anthropic").map((m) => m.baseUrl))).toEqual(
      new Set(["http://127.0.0.1:9/anthropic"]),
    );
  });
});
