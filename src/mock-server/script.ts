/**
 * The fault script: its schema (one place for keys, defaults and validation), shorthand
 * normalisation, JSONC file loading, and the picker that turns a conversation key into a step.
 */
import { readFile } from "node:fs/promises";
import { type ParseError, parse, printParseErrorCode } from "jsonc-parser";
import * as z from "zod";
import { errorText } from "../shared/failures/error-text.js";
import { mulberry32, streamSeed } from "../shared/prng.js";
import { MockServerError } from "./errors.js";

/** The answer text of a script that sets no `reply`. */
export const DEFAULT_REPLY = "Hello from the mock model server.";

const ms = z.number().int().min(0);
const seconds = z.number().min(0);

/** A strict object whose unknown-key error lists the keys it allows. */
function strict<Shape extends z.core.$ZodLooseShape>(shape: Shape) {
  const allowed = Object.keys(shape).join(", ");
  return z.strictObject(shape, {
    error: (issue) =>
      issue.code === "unrecognized_keys" ? `unknown key(s) ${issue.keys.join(", ")}; allowed: ${allowed}` : undefined,
  });
}

const okStep = strict({
  type: z.literal("ok"),
  /** Answer text. @default the script's `reply` */
  text: z.string().optional(),
  /** Repeat or trim the text to this many word tokens. @default the text's own count */
  tokens: z.number().int().min(1).optional(),
  /** Delay between streamed tokens. @default the script's `tokenDelayMs` */
  tokenDelayMs: ms.optional(),
  delayMs: ms.optional(),
});

const errorStep = strict({
  type: z.literal("error"),
  status: z.number().int().min(400).max(599),
  /** Replaces the realistic message of the status. */
  message: z.string().optional(),
  /** Sent as the `retry-after` header, in seconds. */
  retryAfter: seconds.optional(),
  /** Sent as the `retry-after-ms` header. */
  retryAfterMs: seconds.optional(),
  headers: z.record(z.string(), z.string()).optional(),
  /** Send the status with no body at all. @default false */
  emptyBody: z.boolean().optional(),
  delayMs: ms.optional(),
});

const contextOverflowStep = strict({ type: z.literal("context_overflow"), delayMs: ms.optional() });

const usageLimitStep = strict({
  type: z.literal("usage_limit"),
  /**
   * Quote the whole key the request carried in the error text, as a careless proxy would: for
   * tests that keys never leak into events, errors, logs or files. @default false
   */
  echoKey: z.boolean().optional(),
  retryAfter: seconds.optional(),
  retryAfterMs: seconds.optional(),
  delayMs: ms.optional(),
});

const resetStep = strict({ type: z.literal("reset"), delayMs: ms.optional() });

const cutStep = strict({
  type: z.literal("cut"),
  /** Tokens sent before the socket is destroyed. @default 3 */
  afterTokens: z.number().int().min(0).default(3),
  tokenDelayMs: ms.optional(),
  delayMs: ms.optional(),
});

const stallStep = strict({
  type: z.literal("stall"),
  /** Tokens sent before the response goes silent. @default 0 */
  afterTokens: z.number().int().min(0).default(0),
  tokenDelayMs: ms.optional(),
  delayMs: ms.optional(),
});

const streamErrorStep = strict({
  type: z.literal("stream_error"),
  /** The error's `type`. @default the API's overloaded type: OpenAI "server_error", Anthropic "overloaded_error" */
  errorType: z.string().min(1).optional(),
  /** The error's `code` (OpenAI only: Anthropic errors have none). @default null */
  code: z.string().min(1).optional(),
  /** The error's text. @default a realistic text for the default type, else one naming the type */
  message: z.string().optional(),
  /** Tokens streamed before the error event. @default 0 */
  afterTokens: z.number().int().min(0).default(0),
  tokenDelayMs: ms.optional(),
  delayMs: ms.optional(),
});

/** The tool name of a `tool_calls` step or `toolCalls` roll that names none: the load runs' tool. */
export const DEFAULT_TOOL_NAME = "load_tool";

const toolCallsStep = strict({
  type: z.literal("tool_calls"),
  /** The tool every call names. @default DEFAULT_TOOL_NAME */
  name: z.string().min(1).default(DEFAULT_TOOL_NAME),
  /** Calls in the answer, in one assistant message. @default 1 */
  calls: z.number().int().min(1).max(64).default(1),
  /** Each call's arguments; the server adds `call` (0-based index of the call in the answer). @default {} */
  arguments: z.record(z.string(), z.unknown()).default({}),
  tokenDelayMs: ms.optional(),
  delayMs: ms.optional(),
});

const stepOptions = [
  okStep,
  errorStep,
  contextOverflowStep,
  usageLimitStep,
  resetStep,
  cutStep,
  stallStep,
  streamErrorStep,
  toolCallsStep,
] as const;

/** Every step kind, in the order the docs list them. */
export const STEP_KINDS = stepOptions.map((option) => option.shape.type.value);

const stepObject = z.discriminatedUnion("type", [...stepOptions], {
  error: (issue) =>
    issue.code === "invalid_union"
      ? `unknown step kind; expected one of ${quoteAll(STEP_KINDS)}`
      : issue.code === "invalid_type"
        ? `expected a status number (400-599), one of ${quoteAll(STEP_KINDS)}, or an object with "type"`
        : undefined,
});

// Shorthands: 503 → {type:"error",status:503}; "cut" → {type:"cut"}. Anything else is left for
// the union to reject, so that the error names the field.
const step = z.preprocess(
  (value) =>
    typeof value === "number" ? { type: "error", status: value } : typeof value === "string" ? { type: value } : value,
  stepObject,
);

const conversation = strict({
  /** Substring of the conversation key; the first entry that matches wins. */
  match: z.string(),
  steps: z.array(step),
});

const fault = strict({ probability: z.number().min(0).max(1), step });

const toolCalls = strict({
  /** Chance that an answer which would be normal calls tools instead. */
  probability: z.number().min(0).max(1),
  /** Calls in such an answer. @default 1 */
  calls: z.number().int().min(1).max(64).default(1),
  /** The tool they name. @default DEFAULT_TOOL_NAME */
  name: z.string().min(1).default(DEFAULT_TOOL_NAME),
  /**
   * Most tool-call answers in a row for one prompt: a request whose messages already end in this
   * many assistant turns since the last user prompt gets a normal answer, so no run loops forever.
   * @default 1
   */
  maxTurns: z.number().int().min(1).max(1000).default(1),
});

const scriptSchema = strict({
  /** Answer text of `ok` steps without `text`, and the words of `cut`/`stall` tokens. @default DEFAULT_REPLY */
  reply: z.string().default(DEFAULT_REPLY),
  /** Default delay between streamed tokens. @default 0 */
  tokenDelayMs: ms.default(0),
  /** Scripted steps per conversation. @default [] */
  conversations: z.array(conversation).default([]),
  /** Faults rolled for requests with no scripted step left; probabilities sum to at most 1. @default [] */
  faults: z
    .array(fault)
    .default([])
    .refine((faults) => faults.reduce((sum, f) => sum + f.probability, 0) <= 1 + 1e-9, {
      message: "the probabilities add up to more than 1; lower them so their sum is at most 1",
    }),
  /** Seed of the fault PRNG. @default 0 */
  seed: z.number().int().default(0),
  /**
   * A provider-wide rate limit, checked before any step: at most `requests` model requests per
   * fixed window of `windowMs` (a window starts with its first request); the others get a 429
   * whose `retry-after-ms` is the time left in the window. @default none
   */
  rateLimit: strict({ requests: z.number().int().min(0), windowMs: z.number().int().min(1).max(3_600_000) }).optional(),
  /**
   * A model's context window, in the server's rough prompt tokens (4 characters of the
   * `messages` JSON a token): a larger request gets `context_overflow` without using a scripted
   * step. @default no limit
   */
  contextWindow: z.number().int().min(1).optional(),
  /**
   * Tool calls rolled like faults (from their own stream of the seed): a request with no scripted
   * step left, no fault and fewer than `maxTurns` tool turns since its last user prompt gets a
   * `tool_calls` step with this probability. @default none
   */
  toolCalls: toolCalls.optional(),
});

/** A script as written: shorthands allowed, every key optional. */
export type MockScriptInput = z.input<typeof scriptSchema>;
/** A validated script: shorthands expanded to objects, defaults applied. */
export type MockScript = z.output<typeof scriptSchema>;
/** One validated step. */
export type MockStep = z.output<typeof stepObject>;
/** One step as written: the object form with optional fields (shorthands are `number | string`). */
export type MockStepInput = z.input<typeof stepObject>;
/**
 * The kind of a step: `ok`, `error`, `context_overflow`, `usage_limit`, `reset`, `cut`, `stall`,
 * `stream_error` or `tool_calls`.
 */
export type StepKind = MockStep["type"];

/**
 * Validates a script and applies defaults. Accepts its own output, so a validated script can be
 * passed again.
 * @param source names where the value came from (a file path, "setScript"), for the message.
 * @throws MockServerError `ERR_MOCK_SCRIPT` naming each bad field path, the value given and what is allowed.
 */
export function parseMockScript(value: unknown, source = "script"): MockScript {
  const result = scriptSchema.safeParse(value ?? {}, { reportInput: true });
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => {
    const path = issue.path.map(String).join(".") || "(root)";
    return `${path}: ${issue.message}${given(issue)}`;
  });
  throw new MockServerError(
    "ERR_MOCK_SCRIPT",
    `Invalid mock script in ${source}: ${problems.join("; ")}. Fix these fields.`,
  );
}

/**
 * Reads a JSON or JSONC file (comments and trailing commas allowed) and validates it.
 * @throws MockServerError `ERR_MOCK_SCRIPT` naming the file and, for syntax errors, line:column.
 */
export async function loadMockScript(path: string): Promise<MockScript> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    const reason = errorText(error);
    throw new MockServerError("ERR_MOCK_SCRIPT", `Cannot read mock script ${path}: ${reason}. Check the path.`, {
      cause: error,
    });
  }
  return parseMockScript(parseJsonc(text, path), path);
}

/**
 * Parses JSON with comments and trailing commas.
 * @throws MockServerError `ERR_MOCK_SCRIPT` naming `source`, line:column and the syntax error.
 */
export function parseJsonc(text: string, source: string): unknown {
  const errors: ParseError[] = [];
  const value: unknown = parse(text, errors, { allowTrailingComma: true });
  const first = errors[0];
  if (first === undefined) return value;
  const { line, column } = lineColumn(text, first.offset);
  throw new MockServerError(
    "ERR_MOCK_SCRIPT",
    `Invalid JSONC in mock script ${source}:${line}:${column}: ${printParseErrorCode(first.error)}. Fix the syntax there.`,
  );
}

/**
 * Resolves the step of each request: scripted steps in order per conversation key, then a
 * seeded fault roll, else a normal answer. Owned by one server; `setScript`/`reset` make a new one.
 */
export class StepPicker {
  /** The validated script this picker reads; the server also takes `reply` and `tokenDelayMs` from it. */
  readonly script: MockScript;
  readonly #cursors = new Map<string, number>();
  readonly #random: () => number;
  /** The tool-call rolls: a stream of their own, so turning them on leaves the fault sequence as it was. */
  readonly #toolRandom: () => number;
  /** The rate limit's current window: its start (epoch ms) and the requests it has let through. */
  #window = { start: Number.NEGATIVE_INFINITY, used: 0 };

  constructor(script: MockScript) {
    this.script = script;
    this.#random = mulberry32(script.seed);
    this.#toolRandom = mulberry32(streamSeed(script.seed, 0));
  }

  /**
   * The step for the next request of `conversation`. Advances that key's cursor or the PRNG. A
   * request over the script's `contextWindow` overflows, and one over its `rateLimit` gets a 429;
   * neither advances anything.
   * @param promptTokens the request's size, for the context window.
   * @param now epoch ms, for the rate limit's window.
   * @param toolTurns assistant turns since the request's last user prompt, for `toolCalls.maxTurns`.
   */
  next(conversation: string, promptTokens = 0, now = Date.now(), toolTurns = 0): MockStep {
    const window = this.script.contextWindow;
    if (window !== undefined && promptTokens > window) return { type: "context_overflow" };
    const limit = this.script.rateLimit;
    if (limit !== undefined) {
      if (now >= this.#window.start + limit.windowMs) this.#window = { start: now, used: 0 };
      if (this.#window.used >= limit.requests) {
        const left = Math.max(1, Math.ceil(this.#window.start + limit.windowMs - now));
        return { type: "error", status: 429, retryAfterMs: left, retryAfter: Math.ceil(left / 1000) };
      }
      this.#window.used++;
    }
    const entry = this.script.conversations.find((c) => conversation.includes(c.match));
    if (entry !== undefined) {
      const cursor = this.#cursors.get(conversation) ?? 0;
      const scripted = entry.steps[cursor];
      if (scripted !== undefined) {
        this.#cursors.set(conversation, cursor + 1);
        return scripted;
      }
    }
    if (this.script.faults.length > 0) {
      const roll = this.#random();
      let threshold = 0;
      for (const candidate of this.script.faults) {
        threshold += candidate.probability;
        if (roll < threshold) return candidate.step;
      }
    }
    const tools = this.script.toolCalls;
    if (tools !== undefined && toolTurns < tools.maxTurns && this.#toolRandom() < tools.probability) {
      return { type: "tool_calls", name: tools.name, calls: tools.calls, arguments: {} };
    }
    return { type: "ok" };
  }
}

function lineColumn(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset);
  const lastBreak = before.lastIndexOf("\n");
  return { line: before.split("\n").length, column: offset - lastBreak };
}

/** The offending value, when it is short enough to be worth repeating. */
function given(issue: z.core.$ZodIssue): string {
  let input: unknown = issue.input;
  // The discriminator issue carries the whole step object; the kind is what was wrong.
  if (issue.code === "invalid_union" && input !== null && typeof input === "object" && "type" in input) {
    input = input.type;
  }
  if (input === undefined || typeof input === "object") return "";
  return ` (got ${JSON.stringify(input)})`;
}

function quoteAll(values: readonly string[]): string {
  return values.map((v) => JSON.stringify(v)).join(", ");
}
