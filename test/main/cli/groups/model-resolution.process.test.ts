/**
 * `--model` resolved side by side with pi 0.73.1: for each command line, lifeline's model flags
 * (src/main/cli/groups/model-flags.ts) and pi's own `resolveCliModel` (loaded from the pi the
 * suite installs, LIFELINE_PI_PACKAGE; this file is in the process tier because that is where the
 * suite provides pi) pick the same provider and model, and the same thinking level from a suffix,
 * with the same models.json. An id several providers have goes to the first in pi-ai's order.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { resolveModelFlags } from "../../../../src/main/cli/groups/model-flags.js";
import { cliPlace, recordingRuntime } from "../../../fixtures/cli-runtime.js";
import { piPackage } from "../../../fixtures/pi-package.js";

const place = cliPlace();
afterAll(() => place.remove());
const MODELS = {
  providers: {
    local: {
      baseUrl: "http://127.0.0.1:9/v1",
      api: "openai-completions",
      apiKey: "x",
      models: [{ id: "local-1" }, { id: "gpt-4o" }],
    },
  },
};

interface PiResolution {
  model?: { provider: string; id: string };
  thinkingLevel?: string;
  error?: string;
}

/** pi's resolution of `--provider`/`--model`, with the same models.json in its agent dir. */
async function piResolver(): Promise<(provider: string | undefined, model: string) => PiResolution> {
  const core = join(piPackage(), "dist", "core");
  const load = async (file: string) => import(pathToFileURL(join(core, file)).href);
  const { resolveCliModel } = (await load("model-resolver.js")) as {
    resolveCliModel(options: { cliProvider?: string; cliModel: string; modelRegistry: unknown }): PiResolution;
  };
  const { ModelRegistry } = (await load("model-registry.js")) as {
    ModelRegistry: { create(auth: unknown, path: string): unknown };
  };
  const { AuthStorage } = (await load("auth-storage.js")) as { AuthStorage: { create(path: string): unknown } };
  const registry = ModelRegistry.create(
    AuthStorage.create(join(place.lifelineDir, "pi-auth.json")),
    join(place.lifelineDir, "models.json"),
  );
  return (provider, model) =>
    resolveCliModel({
      ...(provider === undefined ? {} : { cliProvider: provider }),
      cliModel: model,
      modelRegistry: registry,
    });
}

const context = () => ({
  cwd: place.cwd,
  lifelineDir: place.lifelineDir,
  terminal: false,
  version: "0",
  runtime: recordingRuntime().runtime,
});

describe("--model, resolved as pi resolves it", () => {
  it.each<[string | undefined, string]>([
    [undefined, "claude-sonnet-4-5"],
    [undefined, "gpt-4o"],
    [undefined, "gpt-4o-mini"],
    [undefined, "GPT-4O"],
    [undefined, "openai/gpt-4o"],
    [undefined, "OpenAI/gpt-4o"],
    [undefined, "openai/gpt-4o:high"],
    [undefined, "anthropic/claude-sonnet-4-5:low"],
    [undefined, "gpt-4o:high"],
    [undefined, "sonnet"],
    [undefined, "opus"],
    [undefined, "openrouter/openai/gpt-4o"],
    [undefined, "local-1"],
    [undefined, "local/gpt-4o"],
    ["openai", "gpt-4o"],
    ["openai", "openai/gpt-4o"],
    ["anthropic", "sonnet:high"],
    ["local", "local-1"],
  ])("--provider %s --model %s", async (provider, model) => {
    writeFileSync(join(place.lifelineDir, "models.json"), JSON.stringify(MODELS));
    const pi = (await piResolver())(provider, model);
    expect(pi.model, pi.error).toBeDefined();
    const ours = await resolveModelFlags({ provider, model }, context());
    expect({ model: ours.model, thinkingLevel: ours.thinkingLevel }).toEqual({
      model: `${pi.model?.provider}/${pi.model?.id}`,
      thinkingLevel: pi.thinkingLevel,
    });
  });

  it("an id several providers have goes to the first in pi-ai's provider order, as in pi; a unique id to its one provider", async () => {
    writeFileSync(join(place.lifelineDir, "models.json"), JSON.stringify(MODELS));
    expect((await resolveModelFlags({ model: "gpt-4o" }, context())).model).toBe("azure-openai-responses/gpt-4o");
    expect((await resolveModelFlags({ model: "local-1" }, context())).model).toBe("local/local-1");
  });

  it("a model no provider has is refused, where pi refuses it too", async () => {
    writeFileSync(join(place.lifelineDir, "models.json"), JSON.stringify(MODELS));
    for (const model of ["no-such-model-zz9", "nosuchprovider/x-1"]) {
      expect((await piResolver())(undefined, model).error).toBeDefined();
      await expect(resolveModelFlags({ model }, context())).rejects.toMatchObject({ code: "ERR_UNKNOWN_MODEL" });
    }
  });
});
