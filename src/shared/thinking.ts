/**
 * Thinking levels, as pi has them: the six levels of pi-agent-core's `ThinkingLevel`, pi's
 * default, and the check both threads and every boundary (options, settings, RPC, CLI) use. What
 * a model supports, and how a level is clamped to it, is pi-ai's (`getSupportedThinkingLevels`,
 * `clampThinkingLevel`): a model without `reasoning` supports only `off`, and `xhigh` only where
 * the model's `thinkingLevelMap` names it.
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
