/**
 * The built-in `demo` provider: a scripted model (scripted-faux.ts) with scripted answers, so the whole stack,
 * the retry path included, runs with no key and no network.
 *
 * Models:
 * - `demo-1` fails twice per prompt with transient errors (503, then 429), then answers.
 * - `demo-stream` always answers, streaming about 50 tokens per second (for load and benchmarks).
 * - `demo-fast` always answers, streaming with no delay between chunks.
 *
 * A prompt can steer the script with directives in square brackets:
 * `[fail=N]` (N transient failures before answering, on any demo model), `[words=N]` (answer length),
 * `[overflow]` (a context-overflow error), `[fatal]` (a non-retryable 400 error).
 * The answer echoes the prompt without its directives, in time linear in its length, and streams
 * without blocking the worker (scripted-stream.ts), so `abort()` stops even a long echo.
 */
import {
  type Api,
  type AssistantMessage,
  type Context,
  fauxAssistantMessage,
  type Model,
  type SimpleStreamOptions,
} from "@mariozechner/pi-ai";
import { DEMO_PROVIDER, type DemoModelId } from "../shared/demo-models.js";
import { messageText } from "../shared/message-text.js";
import { registerScriptedFaux } from "./scripted-faux.js";

export { DEMO_PROVIDER } from "../shared/demo-models.js";

/** Each demo model's script: failures per prompt before it answers, and its pace (undefined: no delay). */
const DEMO_SCRIPTS: Record<DemoModelId, { failures: number; tokensPerSecond: number | undefined }> = {
  "demo-1": { failures: 2, tokensPerSecond: 60 },
  "demo-stream": { failures: 0, tokensPerSecond: 50 },
  "demo-fast": { failures: 0, tokensPerSecond: undefined },
};

const TRANSIENT_ERRORS = [
  "503 Service Unavailable: the demo model is overloaded (simulated)",
  "429 Too Many Requests: rate limit reached (simulated)",
];

/**
 * Fixed-length alternatives: matching stays linear in the prompt (an open-ended bracket pattern
 * rescans to the end from every "[", quadratic on a long prompt full of brackets).
 */
const DIRECTIVE = /\[(fail|words)=(\d{1,6})\]|\[(overflow|fatal)\]/g;

interface Directives {
  fail?: number;
  words?: number;
  overflow: boolean;
  fatal: boolean;
}

/** Reads `[key=value]` and `[flag]` directives from a prompt. */
function parseDirectives(text: string): Directives {
  const directives: Directives = { overflow: false, fatal: false };
  for (const match of text.matchAll(DIRECTIVE)) {
    if (match[1] === "fail") directives.fail = Number(match[2]);
    else if (match[1] === "words") directives.words = Number(match[2]);
    else if (match[3] === "overflow") directives.overflow = true;
    else if (match[3] === "fatal") directives.fatal = true;
  }
  return directives;
}

let models: Map<string, Model<Api>> | undefined;

/**
 * Per-session script state of each demo model, so {@link forgetDemoSession} can release it.
 * An entry lives while a session's prompt is between failures (a cancelled chain leaves one).
 */
const sessionStates: Map<string, unknown>[] = [];

/** Drops what the demo models keep for a session; called when the session closes in its worker. */
export function forgetDemoSession(sessionId: string): void {
  for (const states of sessionStates) states.delete(sessionId);
}

/** Registers the demo models with pi-ai (once per thread) and returns them by id. */
export function demoModels(): Map<string, Model<Api>> {
  if (models === undefined) {
    models = new Map(
      Object.entries(DEMO_SCRIPTS).map(([id, script]) =>
        registerDemoModel(id, script.failures, script.tokensPerSecond),
      ),
    );
  }
  return models;
}

function registerDemoModel(
  id: string,
  defaultFailures: number,
  tokensPerSecond: number | undefined,
): [string, Model<Api>] {
  // Failed attempts of each session's current prompt. A retry sees the same transcript length, a new
  // prompt a longer one; one entry per session keeps this bounded even when chains are cancelled.
  const attempts = new Map<string, { length: number; count: number }>();
  sessionStates.push(attempts);
  const script = (context: Context, options: SimpleStreamOptions | undefined): AssistantMessage => {
    const prompt = lastUserText(context);
    const directives = parseDirectives(prompt);
    if (directives.overflow) {
      return errorMessage("prompt is too long: 213462 tokens > 128000 maximum (simulated)");
    }
    if (directives.fatal) return errorMessage("400 Bad Request: invalid request (simulated)");
    const key = options?.sessionId ?? "";
    const length = context.messages.length;
    const seen = attempts.get(key);
    const attempt = seen !== undefined && seen.length === length ? seen.count : 0;
    const failures = directives.fail ?? defaultFailures;
    if (attempt < failures) {
      attempts.set(key, { length, count: attempt + 1 });
      return errorMessage(TRANSIENT_ERRORS[attempt % TRANSIENT_ERRORS.length] ?? "503 Service Unavailable");
    }
    attempts.delete(key);
    return fauxAssistantMessage(answerText(prompt, directives.words));
  };
  const { model } = registerScriptedFaux({
    api: `lifeline-demo-${id}`,
    provider: DEMO_PROVIDER,
    model: { id, name: `lifeline demo (${id})`, reasoning: false, contextWindow: 128_000, maxTokens: 4096 },
    ...(tokensPerSecond === undefined ? {} : { tokensPerSecond }),
    script,
  });
  return [id, model];
}

function errorMessage(text: string): AssistantMessage {
  return fauxAssistantMessage([], { stopReason: "error", errorMessage: text });
}

function lastUserText(context: Context): string {
  for (let i = context.messages.length - 1; i >= 0; i--) {
    const message = context.messages[i];
    if (message?.role === "user") return messageText(message.content);
  }
  return "";
}

const FILLER = "lifeline runs each agent loop in a worker thread while the host thread stays free to serve".split(" ");

function answerText(prompt: string, words: number | undefined): string {
  const cleaned = prompt.replace(DIRECTIVE, "").trim();
  if (words === undefined) {
    return `Demo answer: you said "${cleaned}". This reply streamed from the demo model in a worker thread; no key, no network.`;
  }
  const out: string[] = [];
  for (let i = 0; i < words; i++) out.push(FILLER[i % FILLER.length] ?? "word");
  return out.join(" ");
}
