/**
 * X9, times taken where they happen: `lifeline load --model` (a real child process of the built
 * CLI, run `npm run build` first) against an OpenAI chat-completions server this test runs on
 * 127.0.0.1, which streams one token per chunk at a known pacing (2 ms and 5 ms, below the worker's
 * 8 ms batch spacing) after a known wait for the first token, and notes when it really wrote each
 * part. The run's figures must match the server's to the millisecond: were they still taken when
 * batched events reach the host's main thread, the gaps between tokens would read as 0 or ~8 ms and
 * the first token could read as 0 ms.
 *
 * Robust on a loaded machine (measured at a load average of 15 on 2 cores): timers there fire
 * late, so the server's own write times, not its nominal pacing, are the reference; one session,
 * so that the worker reads one stream; and figures are compared as means and medians over a run,
 * never as minimums or single values, except for bounds that causality guarantees (no first token
 * before the server waited for it). Individual gaps are not compared one by one: when the process
 * is not scheduled, bytes queue in the socket and the reader sees several deltas at once (their
 * gaps read short, the one before them long), which moves the median of single gaps but not sums.
 */
import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { LoadReport } from "../../../dist/main/load/index.js";
import { runLoadChild } from "../../fixtures/load-child.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Tokens per answer: 19 gaps each. */
const TOKENS = 40;
/** The server's wait between the response's headers and the first token, in ms. */
const FIRST_TOKEN_WAIT_MS = 4;
const PROMPTS = 10;

/** What the server did for one request, in ms on its own clock. */
interface Served {
  headersAt: number;
  tokenAt: number[];
}

interface PacedServer {
  url: string;
  served: Served[];
}

/** An OpenAI chat-completions endpoint that streams {@link TOKENS} tokens `pacingMs` apart. */
async function startPacedServer(pacingMs: number): Promise<PacedServer> {
  const served: Served[] = [];
  const server: Server = createServer((req, res) => {
    void answer(req, res, pacingMs).then((record) => {
      if (record !== undefined) served.push(record);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, served };
}

function chunk(delta: object, finishReason: string | null, usage?: object): string {
  const body = {
    id: "chatcmpl-paced",
    object: "chat.completion.chunk",
    created: 0,
    model: "paced",
    choices: [{ index: 0, delta, finish_reason: finishReason }],
    ...(usage === undefined ? {} : { usage }),
  };
  return `data: ${JSON.stringify(body)}\n\n`;
}

/** Sleeps until `deadline` (performance.now() ms): scheduled on deadlines, so lateness does not accumulate. */
function until(deadline: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, deadline - performance.now())));
}

async function answer(req: IncomingMessage, res: ServerResponse, pacingMs: number): Promise<Served | undefined> {
  for await (const _ of req) {
    // The request body is not needed; reading it lets the request end.
  }
  if (req.method !== "POST" || req.url !== "/v1/chat/completions") {
    res.writeHead(404).end();
    return undefined;
  }
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  res.flushHeaders();
  const headersAt = performance.now();
  const tokenAt: number[] = [];
  const first = headersAt + FIRST_TOKEN_WAIT_MS;
  for (let i = 0; i < TOKENS; i++) {
    await until(first + i * pacingMs);
    if (res.destroyed) return undefined;
    res.write(chunk({ content: `t${i} ` }, null));
    tokenAt.push(performance.now());
  }
  res.end(
    `${chunk({}, "stop")}${chunk({}, null, { prompt_tokens: 10, completion_tokens: TOKENS, total_tokens: 10 + TOKENS })}data: [DONE]\n\n`,
  );
  return { headersAt, tokenAt };
}

function mean(values: readonly number[]): number {
  return values.reduce((sum, value) => sum + value, 0) / values.length;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

interface RequestLine {
  type: "request";
  ttftMs: number | null;
  ttfbMs: number | null;
  e2eMs: number;
  outputTokens: number;
  failure?: unknown;
}

describe("lifeline load times requests at the source, whatever the batching", () => {
  it.each([2, 5])(
    "X9: against %i ms per token, every gap between tokens is reported and ITL and the mean gap match the server's within 1 ms",
    async (pacingMs) => {
      const server = await startPacedServer(pacingMs);
      const models = JSON.stringify({
        providers: {
          paced: {
            baseUrl: `${server.url}/v1`,
            api: "openai-completions",
            apiKey: "dummy",
            models: [{ id: "paced-1" }],
          },
        },
      });
      const args = ["--model", "paced/paced-1", "--sessions", "1", "--prompts", String(PROMPTS), "--out", "out"];
      const run = await runLoadChild(cleanups, args, { models, timeoutMs: 60_000 });
      expect(run.code, run.stderr).toBe(0);
      const out = join(run.cwd, "out");
      const report = JSON.parse(readFileSync(join(out, "report.json"), "utf8")) as LoadReport;
      const requests = readFileSync(join(out, "records.jsonl"), "utf8")
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line) as RequestLine | { type: "prompt" })
        .filter((line): line is RequestLine => line.type === "request");
      expect(requests).toHaveLength(PROMPTS);
      expect(server.served).toHaveLength(PROMPTS);
      for (const request of requests) {
        expect(request.failure).toBeUndefined();
        expect(request.outputTokens).toBe(TOKENS);
      }

      // What the server really did: the gaps between its token writes, and per request the mean gap (its ITL).
      const serverGaps = server.served.flatMap((s) => s.tokenAt.slice(1).map((at, i) => at - (s.tokenAt[i] as number)));
      const serverItl = server.served.map(
        (s) => ((s.tokenAt[TOKENS - 1] as number) - (s.tokenAt[0] as number)) / (TOKENS - 1),
      );

      // Causality: no first token before the server waited for it (1 ms for a timer firing early),
      // and never a TTFT of 0, which batched arrival times gave.
      expect(report.latency.ttftMs.min).toBeGreaterThan(0);
      for (const request of requests) {
        expect(request.ttftMs).toBeGreaterThanOrEqual(FIRST_TOKEN_WAIT_MS - 1);
        expect(request.ttfbMs).toBeGreaterThan(0);
        expect(request.ttfbMs).toBeLessThanOrEqual(request.ttftMs as number);
      }
      // Every gap between tokens is there (batched arrival shows none), and they add up to the
      // server's: a delta read late shortens the next gap by as much, so sums and means are exact
      // within the reader's lateness at a request's first and last token, spread over its 39 gaps.
      expect(report.latency.chunkGapMs.count).toBe(PROMPTS * (TOKENS - 1));
      expect(Math.abs((report.latency.chunkGapMs.mean as number) - mean(serverGaps))).toBeLessThanOrEqual(1);
      // ITL per request, (e2e − TTFT) / (tokens − 1): the server's mean gap.
      expect(Math.abs((report.latency.itlMs.mean as number) - mean(serverItl))).toBeLessThanOrEqual(1);
      expect(Math.abs((report.latency.itlMs.p50 as number) - median(serverItl))).toBeLessThanOrEqual(1);
    },
    90_000,
  );
});
