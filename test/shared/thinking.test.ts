/**
 * The main thread's rule for the levels a model supports (src/shared/thinking.ts) is pi-ai's: the
 * same answer as `getSupportedThinkingLevels` for every model of pi-ai's catalogue, and for models
 * with any reasoning flag and any level map.
 */
import { type Api, getModels, getProviders, getSupportedThinkingLevels, type Model } from "@mariozechner/pi-ai";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { supportedThinkingLevels, THINKING_LEVELS, type ThinkingLevel } from "../../src/shared/thinking.js";

describe("supportedThinkingLevels", () => {
  it("matches pi-ai on every catalogue model", () => {
    const models = getProviders().flatMap((provider) => getModels(provider) as Model<Api>[]);
    expect(models.length).toBeGreaterThan(100);
    expect(models.some((model) => supportedThinkingLevels(model).includes("xhigh"))).toBe(true);
    for (const model of models) {
      expect([model.provider, model.id, supportedThinkingLevels(model)]).toEqual([
        model.provider,
        model.id,
        getSupportedThinkingLevels(model),
      ]);
    }
  });

  it("matches pi-ai for any reasoning flag and level map", () => {
    // A level is absent from the map, mapped to null (the model lacks it) or to the provider's value.
    const mapped = fc.oneof(fc.constant(null), fc.string({ minLength: 1 }));
    const levelMap = fc.option(
      fc.record(
        Object.fromEntries(THINKING_LEVELS.map((level) => [level, mapped])) as Record<ThinkingLevel, typeof mapped>,
        {
          requiredKeys: [],
        },
      ),
      { nil: undefined },
    );
    fc.assert(
      fc.property(fc.boolean(), levelMap, (reasoning, thinkingLevelMap) => {
        const model = { reasoning, ...(thinkingLevelMap === undefined ? {} : { thinkingLevelMap }) };
        expect(supportedThinkingLevels(model)).toEqual(getSupportedThinkingLevels(model as unknown as Model<Api>));
      }),
      { numRuns: 500 },
    );
  });
});
