/**
 * The built-in mock server as a load target: started in a worker thread of its own
 * (mock-thread.ts), with the run's faults and seed, and its own counters read back at the end so
 * the report can set requests received beside requests sent.
 */
import { Worker } from "node:worker_threads";
import type { Api, Model } from "@mariozechner/pi-ai";
import type { MockStats } from "../../../mock-server/index.js";
import { LifelineError } from "../../../shared/errors.js";
import { errorText } from "../../../shared/failures/error-text.js";
import type { LoadFault } from "../options/load-options.js";
import { type MockTools, mockToolCalls } from "../options/load-tools.js";

/**
 * The mock's own counters (report.json `mock`): the server's {@link MockStats} without the
 * per-conversation counts (one per prompt in a load run), plus ended requests by the step served:
 * `ok`, `reset`, `stall`, … and error steps by status (`503`).
 */
export interface MockTargetStats extends Omit<MockStats, "conversations"> {
  steps: Record<string, number>;
  /** Tool calls in the tool-call answers the mock sent in full (`steps.tool_calls` counts the answers). */
  toolCalls: number;
}

/** What the mock is told to do. */
export interface MockTargetConfig {
  faults: readonly LoadFault[];
  seed: number;
  /** Word tokens of every normal answer. */
  tokens: number;
  tokenDelayMs: number;
  /** A provider at its limit: at most `requests` per `windowMs`; the others get a 429 with the time left. */
  rateLimit?: { requests: number; windowMs: number };
  /** Tool calls instead of answers, rolled per request from their own stream of `seed` (load-tools.ts). */
  tools?: MockTools;
}

/** A running mock in its thread. */
export interface MockTarget {
  readonly url: string;
  /** The pi-ai model that points at it (OpenAI chat completions; free, so cost stays 0). */
  readonly model: Model<Api>;
  /** Its counters now. */
  stats(): Promise<MockTargetStats>;
  /** Stops the server (cutting streams still open) and the thread; resolves with the final counters. */
  close(): Promise<MockTargetStats>;
}

const WORDS = "lifeline measures how a host of agent sessions behaves under load and faults".split(" ");

/** The mock's script for `config`: one answer text of exactly `tokens` words, and the faults. */
export function mockScript(config: MockTargetConfig): Record<string, unknown> {
  const reply = Array.from({ length: config.tokens }, (_, i) => WORDS[i % WORDS.length]).join(" ");
  return {
    reply,
    tokenDelayMs: config.tokenDelayMs,
    faults: config.faults.map((fault) => ({
      probability: fault.probability,
      step:
        fault.retryAfterMs === undefined
          ? fault.step
          : { type: "error", status: fault.step, retryAfterMs: fault.retryAfterMs },
    })),
    seed: config.seed,
    ...(config.rateLimit === undefined ? {} : { rateLimit: config.rateLimit }),
    ...(config.tools === undefined ? {} : { toolCalls: mockToolCalls(config.tools) }),
  };
}

/**
 * Starts the mock in a worker thread and resolves once it listens.
 * @throws ERR_LOAD_FAILED when the thread or the server cannot start.
 */
export async function startMockTarget(config: MockTargetConfig): Promise<MockTarget> {
  const worker = new Worker(new URL("./mock-thread.js", import.meta.url), {
    workerData: { script: mockScript(config) },
  });
  // Answers come in the order of the requests (one port, FIFO).
  const waiting: { resolve: (stats: MockTargetStats) => void; reject: (error: Error) => void }[] = [];
  let exited: Error | undefined;
  const failAll = (error: Error) => {
    exited ??= error;
    for (const waiter of waiting.splice(0)) waiter.reject(gone(error));
  };
  const url = await new Promise<string>((resolve, reject) => {
    worker.once("error", reject);
    worker.once("exit", (code) => reject(new Error(`the mock server's thread exited with code ${code}`)));
    worker.on("message", (message: { type: string; url?: string; message?: string; stats?: MockTargetStats }) => {
      if (message.type === "ready" && message.url !== undefined) resolve(message.url);
      else if (message.type === "failed") reject(new Error(message.message));
      else if (message.type === "stats" && message.stats !== undefined) waiting.shift()?.resolve(message.stats);
    });
  }).catch((error: unknown) => {
    void worker.terminate();
    throw new LifelineError("ERR_LOAD_FAILED", `The built-in mock server could not start: ${errorText(error)}.`, {
      cause: error,
    });
  });
  worker.removeAllListeners("error");
  worker.removeAllListeners("exit");
  worker.on("error", (error) => failAll(error));
  worker.on("exit", (code) => failAll(new Error(`the mock server's thread exited with code ${code}`)));

  const ask = (type: "stats" | "close") =>
    new Promise<MockTargetStats>((resolve, reject) => {
      if (exited !== undefined) {
        reject(gone(exited));
        return;
      }
      waiting.push({ resolve, reject });
      worker.postMessage({ type });
    });

  return {
    url,
    model: mockModel(url),
    stats: () => ask("stats"),
    close: async () => {
      const stats = await ask("close");
      await new Promise<void>((resolve) => {
        if (exited !== undefined) resolve();
        else worker.once("exit", () => resolve());
      });
      return stats;
    },
  };
}

function gone(error: Error): LifelineError {
  return new LifelineError("ERR_LOAD_FAILED", `The mock server's thread is gone: ${error.message}.`, { cause: error });
}

/** The pi-ai model of the mock: OpenAI chat completions at `url`/v1, no price. */
function mockModel(url: string): Model<Api> {
  return {
    id: "mock-1",
    name: "lifeline load mock",
    api: "openai-completions",
    provider: "lifeline-mock",
    baseUrl: `${url}/v1`,
    reasoning: false,
    input: ["text"],
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    contextWindow: 1_000_000,
    maxTokens: 4096,
    compat: { supportsDeveloperRole: false, supportsReasoningEffort: false },
  } as Model<Api>;
}
