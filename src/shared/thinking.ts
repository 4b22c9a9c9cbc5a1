/**
 * Thinking levels, as pi has them: the six levels of pi-agent-core's `ThinkingLevel`, pi's
 * default, and the check both threads and every boundary (options, settings, RPC, CLI) use. What
 * a model supports follows pi-ai's rule (`getSupportedThinkingLevels`): a model without
 * `reasoning` supports only `off`, and `xhigh` only where the model's `thinkingLevelMap` names it.
 * Clamping a level to a model is the worker's, with pi-ai's `clampThinkingLevel`.
 */
import type { ThinkingLevel } from "@mariozechner/pi-agent-core";

export type { ThinkingLevel } from "@mariozechner/pi-agent-core";

/** Every level, lowest first (pi's order, which clamping and cycling follow). */
export const THINKING_LEVELS = [
  "off",
  "minimal",
  "low",
  "medium",
  "high",
  "xhigh",
] as const satisfies readonly ThinkingLevel[];

/** pi's default when neither the session nor the settings name a level (clamped to the model). */
export const DEFAULT_THINKING_LEVEL: ThinkingLevel = "medium";

/** Whether `value` is one of {@link THINKING_LEVELS}. */
export function isThinkingLevel(value: unknown): value is ThinkingLevel {
  return typeof value === "string" && (THINKING_LEVELS as readonly string[]).includes(value);
}

/** The slice of a model the supported levels depend on. */
export interface ThinkingModel {
  reasoning?: boolean;
  thinkingLevelMap?: Partial<Record<ThinkingLevel, string | null>>;
}

/**
 * The levels `model` supports, lowest first, by pi-ai's rule (module comment): written here so the
 * main thread cycles levels without loading pi-ai. A level mapped to `null` is one the model
 * lacks. test/shared/thinking.test.ts checks it against pi-ai's `getSupportedThinkingLevels`.
 */
export function supportedThinkingLevels(model: ThinkingModel): ThinkingLevel[] {
  if (model.reasoning !== true) return ["off"];
  return THINKING_LEVELS.filter((level) => {
    const mapped = model.thinkingLevelMap?.[level];
    return mapped !== null && (level !== "xhigh" || mapped !== undefined);
  });
}
