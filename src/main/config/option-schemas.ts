/**
 * The pieces the public calls check their arguments with, so that a bad value is refused at the
 * call that took it instead of failing later somewhere else: zod schemas of values several options
 * take (a function, timer milliseconds, a settings object, `resourceLimits`, an auth storage, a
 * model reference, a transcript message, `sessions`, a thinking level), the schemas of `AgentSession.prompt`'s and
 * `SessionHost.listSessions`'s options and of `setQueueMode`'s arguments, the argument checks of
 * `prompt`, `subscribe`, `queueMessage`, `resumeRun` and `compact`, and
 * `validate` / `invalidOptions`, which turn a failed check into one ERR_INVALID_OPTIONS naming every
 * bad field (STYLE 9). The schema of each call's whole options object lives with its options type
 * (host/host-options.ts, load/options/load-options.ts).
 */
import * as z from "zod";
import { LifelineError } from "../../shared/errors.js";
import { THINKING_LEVELS } from "../../shared/thinking.js";
import { MAX_TIMER_MESSAGE, MAX_TIMER_MS } from "../../shared/timer-ms.js";

/*
 * Schemas that would be built at import (everything `import "lifeline"` loads) are `z.lazy`: a
 * zod schema is costly to build, and a host that never passes a bad option should not pay for it
 * at start-up (docs/embedding.md, "What an embedding app pays"). Each is built on its first use.
 */

/** A function (zod 4 has no function schema that is also a value check). */
export const fn = z.custom<(...args: never[]) => unknown>((value) => typeof value === "function", {
  message: "must be a function",
});

/** Milliseconds that feed a Node timer: an integer from `min` to {@link MAX_TIMER_MS}. */
export function timerMs(min: number) {
  return z.number().int().min(min).max(MAX_TIMER_MS, MAX_TIMER_MESSAGE);
}

/** A settings object; its content is checked by parseSettings (ERR_INVALID_SETTINGS). */
export const settingsObject = z.custom<Record<string, unknown>>(
  (value) => value !== null && typeof value === "object" && !Array.isArray(value),
  { message: "must be a settings object, for example { retry: { maxRetries: 5 } }" },
);

/** Node's `ResourceLimits`: the four fields it knows, each a positive number. */
export const resourceLimitsSchema = z.lazy(() =>
  z.strictObject(
    {
      maxOldGenerationSizeMb: z.number().positive().optional(),
      maxYoungGenerationSizeMb: z.number().positive().optional(),
      codeRangeSizeMb: z.number().positive().optional(),
      stackSizeMb: z.number().positive().optional(),
    },
    {
      error: (issue) =>
        issue.code === "invalid_type"
          ? "must be an object of maxOldGenerationSizeMb, maxYoungGenerationSizeMb, codeRangeSizeMb, stackSizeMb (positive numbers)"
          : undefined,
    },
  ),
);

/** What the retry controller calls on a usage-limit error (SPEC R4). */
export const authStorageSchema = z.custom<object>(
  (value) =>
    value !== null &&
    typeof value === "object" &&
    typeof (value as { markUsageLimitReached?: unknown }).markUsageLimitReached === "function",
  { message: "must be an object with a markUsageLimitReached(provider, sessionId, info) function" },
);

/** `"provider/id"`, `{ provider, id }` (with models.json overrides) or a pi-ai `Model` object. */
export const modelRefSchema = z.lazy(() =>
  z.union(
    [
      z.string().regex(/^[^/\s]+\/\S+$/, 'use "provider/id", for example "demo/demo-1"'),
      z.looseObject({ provider: z.string().min(1), id: z.string().min(1), api: z.string().min(1).optional() }),
    ],
    { error: 'must be "provider/id" (for example "demo/demo-1"), { provider, id } or a pi-ai Model object' },
  ),
);

/** Content blocks, built with the first schema that needs them. */
let blocks: { text: z.ZodType; thinking: z.ZodType; toolCall: z.ZodType; userContent: z.ZodType } | undefined;

function contentBlocks(): NonNullable<typeof blocks> {
  if (blocks !== undefined) return blocks;
  const text = z.looseObject({ type: z.literal("text"), text: z.string() });
  const image = z.looseObject({ type: z.literal("image"), data: z.string(), mimeType: z.string() });
  const thinking = z.looseObject({ type: z.literal("thinking"), thinking: z.string() });
  const toolCall = z.looseObject({
    type: z.literal("toolCall"),
    id: z.string(),
    name: z.string(),
    arguments: z.record(z.string(), z.unknown()),
  });
  blocks = { text, thinking, toolCall, userContent: blocksOf([text, image], "text or image") };
  return blocks;
}

const blocksOf = (list: [z.ZodType, ...z.ZodType[]], what: string) =>
  z.array(z.discriminatedUnion("type", list as never, { error: `each block must be ${what}` }), {
    error: `must be an array of ${what} blocks`,
  });

/**
 * A transcript message, per pi-ai's `Message`: user (content a string or text/image blocks),
 * assistant (content blocks, stopReason) or toolResult; or a compaction summary (pi's
 * `compactionSummary`, the one custom role lifeline declares and shows to the model). Other roles
 * are refused: lifeline's model context would drop them silently.
 */
export const messageSchema = z.lazy(() =>
  z.discriminatedUnion(
    "role",
    [
      z.looseObject({
        role: z.literal("user"),
        content: z.union([z.string(), contentBlocks().userContent], {
          error: "must be a string or an array of text or image blocks",
        }),
        timestamp: z.number().optional(),
      }),
      z.looseObject({
        role: z.literal("assistant"),
        content: blocksOf(
          [contentBlocks().text, contentBlocks().thinking, contentBlocks().toolCall],
          "text, thinking or toolCall",
        ),
        stopReason: z.enum(["stop", "length", "toolUse", "error", "aborted"]),
        api: z.string().optional(),
        provider: z.string().optional(),
        model: z.string().optional(),
        errorMessage: z.string().optional(),
        timestamp: z.number().optional(),
      }),
      z.looseObject({
        role: z.literal("toolResult"),
        toolCallId: z.string(),
        toolName: z.string(),
        content: contentBlocks().userContent,
        isError: z.boolean(),
        timestamp: z.number().optional(),
      }),
      z.looseObject({
        role: z.literal("compactionSummary"),
        summary: z.string(),
        tokensBefore: z.number(),
        timestamp: z.number().optional(),
      }),
    ],
    {
      error:
        'must be a message with role "user", "assistant" or "toolResult" (pi-ai\'s Message), or "compactionSummary"',
    },
  ),
);

/** A thinking level (`createSession`'s option, `setThinkingLevel`, RPC `set_thinking_level`); the refusal lists them. */
export const thinkingLevelSchema = z.lazy(() =>
  z.enum(THINKING_LEVELS, {
    error: `must be one of ${THINKING_LEVELS.join(", ")}`,
  }),
);

/** Options of `AgentSession.prompt`. */
const promptOptionsSchema = z.lazy(() =>
  z.strictObject(
    { queue: z.boolean().optional(), id: z.string().min(1).max(200).optional() },
    { error: (issue) => (issue.code === "invalid_type" ? "must be an object such as { queue: true }" : undefined) },
  ),
);

/** `forkSession(session, entryId, { position })`. */
export const forkArgumentsSchema = z.lazy(() =>
  z.strictObject({
    entryId: z.string().min(1, "must be an entry id (get_fork_messages lists them)"),
    position: z.enum(["before", "at"]).optional(),
  }),
);

/** `exportHtml(session, outputPath?)`. */
export const htmlPathSchema = z.lazy(() => z.string().min(1, "must be a file path").optional());

/** `setQueueMode(kind, mode)`: pi's steering and follow-up modes. */
export const queueModeSchema = z.lazy(() =>
  z.strictObject({
    kind: z.enum(["steer", "followUp"]),
    mode: z.enum(["all", "one-at-a-time"]),
  }),
);

/**
 * Checks `value` against `schema`.
 * @param root the name of the value itself, for a problem with the value as a whole.
 * @throws ERR_INVALID_OPTIONS naming every bad field of `what` and why.
 */
export function validate(schema: z.ZodType, value: unknown, what: string, root = "(root)"): void {
  const error = invalidOptions(schema, value, what, root);
  if (error !== undefined) throw error;
}

/** {@link validate} for callers that return a rejected promise: the error, or undefined when valid. */
export function invalidOptions(
  schema: z.ZodType,
  value: unknown,
  what: string,
  root = "(root)",
): LifelineError | undefined {
  const result = schema.safeParse(value);
  if (result.success) return undefined;
  const problems = result.error.issues.map((issue) => {
    const field = [root, ...issue.path.map(String)].filter((part) => part !== "(root)").join(".") || root;
    const detail = issue.code === "unrecognized_keys" ? `unknown option(s) ${issue.keys.join(", ")}` : issue.message;
    return `${field}: ${detail}`;
  });
  return new LifelineError("ERR_INVALID_OPTIONS", `Invalid ${what}: ${problems.join("; ")}.`);
}

/** @throws ERR_INVALID_OPTIONS unless `listener` is a function (`subscribe`). */
export function assertListener(listener: unknown): void {
  if (typeof listener === "function") return;
  throw new LifelineError(
    "ERR_INVALID_OPTIONS",
    `subscribe() takes a listener function (event) => void, got ${describeValue(listener)}.`,
  );
}

/** @throws ERR_INVALID_OPTIONS unless `kind` is "steer" or "followUp" (`queueMessage`). */
export function assertQueueKind(kind: unknown): void {
  if (kind === "steer" || kind === "followUp") return;
  throw new LifelineError(
    "ERR_INVALID_OPTIONS",
    `queueMessage() kind must be "steer" or "followUp", got ${describeValue(kind)}.`,
  );
}

/** @throws ERR_INVALID_OPTIONS unless `enabled` is true or false (the session's `set…Enabled` toggles, named by `method`). */
export function assertToggle(method: string, enabled: unknown): void {
  if (typeof enabled === "boolean") return;
  throw new LifelineError("ERR_INVALID_OPTIONS", `${method}() takes true or false, got ${JSON.stringify(enabled)}.`);
}

/**
 * ERR_INVALID_OPTIONS unless `text` is a user message's text, a string that is not blank (for
 * `prompt` and `queueMessage`, named by `method`); undefined when it is.
 */
export function invalidMessageText(method: string, text: unknown): LifelineError | undefined {
  if (typeof text === "string" && text.trim() !== "") return undefined;
  return new LifelineError(
    "ERR_INVALID_OPTIONS",
    `${method}() needs a non-empty string; pass the user's message text.`,
  );
}

/** ERR_INVALID_OPTIONS for `prompt(text, options)`: malformed options first, then a blank text; undefined when valid. */
export function invalidPrompt(text: unknown, options: unknown): LifelineError | undefined {
  return (
    (validPromptOptions(options)
      ? undefined
      : invalidOptions(promptOptionsSchema, options, "prompt() options", "options")) ??
    invalidMessageText("prompt", text)
  );
}

/**
 * True for options the schema accepts, checked by hand: `prompt()` is called in bursts (thousands
 * in one loop) and the schema's parse costs several microseconds. False sends the options to the
 * schema, which then names what is wrong.
 */
function validPromptOptions(options: unknown): boolean {
  if (typeof options !== "object" || options === null || Object.getPrototypeOf(options) !== Object.prototype) {
    return false;
  }
  for (const key in options) if (key !== "queue" && key !== "id") return false;
  const { queue, id } = options as { queue?: unknown; id?: unknown };
  return (
    (queue === undefined || typeof queue === "boolean") &&
    (id === undefined || (typeof id === "string" && id.length >= 1 && id.length <= 200))
  );
}

/** ERR_INVALID_OPTIONS unless `id` is undefined or 1 to 200 characters (`resumeRun`); undefined when it is. */
export function invalidResumeId(id: unknown): LifelineError | undefined {
  if (id === undefined || (typeof id === "string" && id !== "" && id.length <= 200)) return undefined;
  return new LifelineError("ERR_INVALID_OPTIONS", "resumeRun() takes an id of 1 to 200 characters, or none.");
}

/** ERR_INVALID_OPTIONS unless `instructions` are undefined or a string (`compact`); undefined when they are. */
export function invalidInstructions(instructions: unknown): LifelineError | undefined {
  if (instructions === undefined || typeof instructions === "string") return undefined;
  return new LifelineError(
    "ERR_INVALID_OPTIONS",
    `compact() takes instructions as a string, got ${JSON.stringify(instructions)}.`,
  );
}

/** A short, never-throwing description of a bad argument for an error message. */
function describeValue(value: unknown): string {
  if (typeof value === "function") return "a function";
  if (typeof value === "string") return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (value === null || typeof value !== "object") return String(value);
  return Array.isArray(value) ? "an array" : "an object";
}

/**
 * `sessions` of `createSessionHost` and `createSession` (B7): `false` turns persistence off, an
 * object turns it on (every field optional).
 */
export const sessionsOptionsSchema = z.lazy(() =>
  z.union(
    [
      z.literal(false),
      z.strictObject({
        dir: z.string().min(1).optional(),
        fsync: z.enum(["never", "batch", "always"]).optional(),
        store: z
          .custom<object>(
            (value) =>
              value !== null &&
              typeof value === "object" &&
              ["create", "open", "list"].every(
                (name) => typeof (value as Record<string, unknown>)[name] === "function",
              ),
            { message: "must be a SessionStore: an object with create, open and list functions" },
          )
          .optional(),
      }),
    ],
    { error: 'must be false or an object such as { dir: "/path/to/sessions", fsync: "batch" }' },
  ),
);

/** Options of `SessionHost.pruneSessions`. */
export const pruneSessionsOptionsSchema = z.lazy(() =>
  z
    .strictObject(
      {
        olderThanMs: z.number().int().min(0),
        cwd: z.string().min(1).optional(),
        allDirectories: z.boolean().optional(),
        dryRun: z.boolean().optional(),
      },
      {
        error: (issue) =>
          issue.code === "invalid_type" ? "must be an object such as { olderThanMs: 30 * 86_400_000 }" : undefined,
      },
    )
    .refine((options) => options.cwd === undefined || options.allDirectories !== true, {
      message: "give cwd (one directory's sessions) or allDirectories: true (every directory's), not both",
    }),
);

/** Options of `SessionHost.listSessions`. */
export const listSessionsOptionsSchema = z.lazy(() =>
  z
    .strictObject(
      { cwd: z.string().min(1).optional(), allDirectories: z.boolean().optional() },
      {
        error: (issue) =>
          issue.code === "invalid_type" ? "must be an object such as { cwd: process.cwd() }" : undefined,
      },
    )
    .refine((options) => options.cwd === undefined || options.allDirectories !== true, {
      message: "give cwd (one directory's sessions) or allDirectories: true (every directory's), not both",
    }),
);
