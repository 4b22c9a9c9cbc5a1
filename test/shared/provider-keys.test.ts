/**
 * The key variables an ERR_MISSING_API_KEY names (src/shared/provider-keys.ts) are the ones pi-ai
 * reads: with every variable set to a value of its own, pi-ai's getEnvApiKey returns, for each of
 * its providers, the value of the variable lifeline names, and nothing for a provider lifeline
 * names none for.
 */
import { getEnvApiKey, getProviders } from "@mariozechner/pi-ai";
import { afterEach, describe, expect, it } from "vitest";
import { keyVariable, missingKeyMessages } from "../../src/shared/provider-keys.js";

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
