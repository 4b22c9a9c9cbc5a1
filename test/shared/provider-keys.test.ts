/**
 * The key variables an ERR_MISSING_API_KEY names (src/shared/settings/provider-keys.ts) are the ones pi-ai
 * reads: with every variable set to a value of its own, pi-ai's getEnvApiKey returns, for each of
 * its providers, the value of the variable lifeline names, and nothing for a provider lifeline
 * names none for.
 */
import { getEnvApiKey, getProviders } from "@mariozechner/pi-ai";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import {
  BUILT_IN_PROVIDERS,
  envApiKey,
  keyVariable,
  missingKeyMessages,
} from "../../src/shared/settings/provider-keys.js";

const saved = { ...process.env };
afterEach(() => {
  for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
  Object.assign(process.env, saved);
});

describe("provider key variables", () => {
  it("match pi-ai's, provider by provider", () => {
    const providers: readonly string[] = getProviders();
    for (const name of Object.keys(process.env)) if (/_(API_KEY|TOKEN)$/.test(name)) delete process.env[name];
    for (const provider of providers) {
      const variable = keyVariable(provider);
      if (variable !== undefined) process.env[variable] = `value-of-${variable}`;
    }
    const seen = providers.map((provider) => [provider, getEnvApiKey(provider) ?? null]);
    const named = providers.map((provider) => {
      const variable = keyVariable(provider);
      return [provider, variable === undefined ? null : `value-of-${variable}`];
    });
    expect(seen).toEqual(named);
    expect(named.filter(([, value]) => value !== null).length).toBeGreaterThan(20);
  });

  it("the built-in providers are pi-ai's", () => {
    expect(BUILT_IN_PROVIDERS).toEqual(getProviders());
  });

  it("envApiKey finds what pi-ai's getEnvApiKey finds, whichever of the variables are set", () => {
    const providers: readonly string[] = getProviders();
    // Every variable pi-ai reads a key from, the ones lifeline names and the ones read before or after them.
    const variables = [
      ...new Set([
        ...providers.map((provider) => keyVariable(provider)).filter((name) => name !== undefined),
        "ANTHROPIC_OAUTH_TOKEN",
        "GH_TOKEN",
        "GITHUB_TOKEN",
      ]),
    ];
    for (const name of Object.keys(process.env)) if (/_(API_KEY|TOKEN)$/.test(name)) delete process.env[name];
    fc.assert(
      fc.property(fc.subarray(variables), fc.boolean(), (set, empty) => {
        for (const name of variables) delete process.env[name];
        // An empty value counts as unset for both.
        for (const [index, name] of set.entries()) process.env[name] = empty && index === 0 ? "" : `value-of-${name}`;
        for (const provider of providers) {
          expect([provider, envApiKey(provider, process.env)]).toEqual([provider, getEnvApiKey(provider)]);
        }
      }),
      { numRuns: 300 },
    );
  });

  it("the missing-key messages name the variable, auth.json and `lifeline auth add`, each in its audience's words", () => {
    const { message, cliMessage } = missingKeyMessages("openai");
    expect(message).toContain("set OPENAI_API_KEY");
    expect(message).toContain("auth.json (`lifeline auth add openai`)");
    expect(message).toContain("pass apiKey to createSession");
    expect(cliMessage).toContain("set OPENAI_API_KEY");
    expect(cliMessage).toContain("run `lifeline auth add openai`");
    expect(cliMessage).toContain("pass --api-key");
    expect(cliMessage).not.toContain("createSession");
  });
});
