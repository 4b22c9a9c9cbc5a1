/**
 * The fault-injecting model server: an HTTP/1.1 server on 127.0.0.1 that speaks OpenAI chat
 * completions and Anthropic messages, answers each request with the step its script resolves,
 * and counts what it did so tests and load runs can assert on it.
 *
 * Invariants: a client going away at any point (before, during or after the body, mid-stream)
 * never throws; every model record ends exactly once; `close()` destroys every socket.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createTlsServer } from "node:https";
import type { Socket } from "node:net";
import * as z from "zod";
import { errorText } from "../shared/failures/error-text.js";
import { anthropicWire } from "./anthropic-wire.js";
import { MockServerError } from "./errors.js";
import { isProblem, parseModelRequest } from "./model-request.js";
import { openAiWire } from "./openai-wire.js";
import {
  type MockRequestRecord,
  type MockStats,
  type MutableRecord,
  type RecordListener,
  RequestLog,
} from "./request-log.js";
import { type Exchange, respond, writeJson } from "./respond.js";
import { type MockScript, parseJsonc, parseMockScript, StepPicker } from "./script.js";
import type { AnswerContext, WireFormat } from "./wire.js";

/** Options of {@link startMockServer}. */
export interface MockServerOptions {
  /** TCP port; 0 picks a free one. @default 0 */
  port?: number;
  /** Interface to listen on. @default "127.0.0.1" */
  host?: string;
  /** A script (`MockScriptInput`, or any JSON value to validate); validated here. @default the empty script: every answer normal */
  script?: unknown;
  /**
   * Serve HTTPS with this PEM key and certificate chain (a client must trust its CA: tests of a
   * custom CA and of proxies that tunnel). @default plain HTTP
   */
  tls?: { key: string; cert: string };
}

/** A running server. Returned by {@link startMockServer}. */
export interface MockServer {
  /** `http://HOST:PORT` (`https://` with `tls`); OpenAI clients use `${url}/v1`, Anthropic clients use `url`. */
  readonly url: string;
  readonly port: number;
  /**
   * Validates and installs a script; resets step cursors and the fault PRNG, keeps counters.
   * @throws MockServerError `ERR_MOCK_SCRIPT` naming the bad field; the old script stays.
   */
  setScript(script: unknown): void;
  /** A snapshot of the counters. */
  stats(): MockStats;
  /** Well-formed model requests whose conversation key contains `match` (all when omitted). */
  requests(match?: string): number;
  /** The last 10 000 records, oldest first. Live: in-flight records change as they end. */
  readonly log: readonly MockRequestRecord[];
  /**
   * Resolves with the next record that ends and matches `predicate`. With `since`, an already
   * ended record with `seq > since` that matches resolves at once, which closes the race between
   * starting a request and starting to wait.
   * @throws MockServerError `ERR_MOCK_SERVER` (rejection) when nothing matches within `timeoutMs` (@default 10000).
   */
  waitForRequestEnd(
    predicate?: (record: MockRequestRecord) => boolean,
    timeoutMs?: number,
    since?: number,
  ): Promise<MockRequestRecord>;
  /** Adds a listener; returns its remover. A listener that throws is reported as a process warning. */
  on(event: "request_start" | "request_end", listener: (record: MockRequestRecord) => void): () => void;
  /** Clears counters, log, step cursors and the PRNG. Requests in flight end uncounted. */
  reset(): void;
  /** Stops listening and destroys every open socket, stalled streams included. Idempotent; never hangs. */
  close(): Promise<void>;
}

const DEFAULTS = { port: 0, host: "127.0.0.1", waitTimeoutMs: 10_000 } as const;
const MAX_BODY_BYTES = 16 * 1024 * 1024;

const MODEL_ROUTES: Readonly<Record<string, WireFormat>> = {
  "/v1/chat/completions": openAiWire,
  "/chat/completions": openAiWire,
  "/v1/messages": anthropicWire,
  "/messages": anthropicWire,
};
const CONTROL_ROUTES: Readonly<Record<string, string>> = {
  "/_mock/stats": "GET",
  "/_mock/reset": "POST",
  "/_mock/script": "PUT",
};
const ROUTE_LIST = [
  ...Object.keys(MODEL_ROUTES).map((path) => `POST ${path}`),
  ...Object.entries(CONTROL_ROUTES).map(([path, method]) => `${method} ${path}`),
].join(", ");

const optionsSchema = z.strictObject({
  port: z.number().int().min(0).max(65_535).optional(),
  host: z.string().min(1).optional(),
  script: z.unknown().optional(),
  tls: z.strictObject({ key: z.string().min(1), cert: z.string().min(1) }).optional(),
});

type Body = { kind: "ok"; text: string } | { kind: "too_large" } | { kind: "aborted" };
/**
 * Starts a server and resolves once it listens.
 * @throws MockServerError `ERR_MOCK_SCRIPT` for a bad script, `ERR_MOCK_SERVER` for bad options or
 *   when the port cannot be bound (the message names host and port).
 */
export async function startMockServer(options: MockServerOptions = {}): Promise<MockServer> {
  const parsed = optionsSchema.safeParse(options);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.map(String).join(".") || "(root)"}: ${i.message}`);
    throw new MockServerError("ERR_MOCK_SERVER", `Invalid mock server options: ${problems.join("; ")}.`);
  }
  const script = parseMockScript(options.script, "options.script");
  const host = options.host ?? DEFAULTS.host;
  const server = new MockModelServer(script, host, options.tls);
  await server.listen(options.port ?? DEFAULTS.port);
  return server;
}

class MockModelServer implements MockServer {
  readonly #server: Server;
  readonly #host: string;
  readonly #sockets = new Set<Socket>();
  readonly #requests = new RequestLog();
  #picker: StepPicker;
  #port = 0;
  #closed = false;
  #closing: Promise<void> | undefined;

  readonly #scheme: "http" | "https";

  constructor(script: MockScript, host: string, tls: { key: string; cert: string } | undefined) {
    this.#picker = new StepPicker(script);
    this.#host = host;
    this.#scheme = tls === undefined ? "http" : "https";
    const handle = (req: IncomingMessage, res: ServerResponse) => this.#handle(req, res);
    // "connection" is the TCP socket either way: destroying it in close() ends a TLS session too.
    this.#server = tls === undefined ? createServer(handle) : createTlsServer(tls, handle);
    this.#server.on("connection", (socket) => {
      this.#sockets.add(socket);
      // Resets from clients must not become uncaught errors; the http layer reports them too.
      socket.on("error", () => {});
      socket.on("close", () => this.#sockets.delete(socket));
    });
  }

  listen(port: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const onError = (error: Error) =>
        reject(
          new MockServerError(
            "ERR_MOCK_SERVER",
            `Cannot listen on ${this.#host}:${port}: ${error.message}. Choose another port, or 0 for a free one.`,
            { cause: error },
          ),
        );
      this.#server.once("error", onError);
      this.#server.listen(port, this.#host, () => {
        this.#server.off("error", onError);
        const address = this.#server.address();
        this.#port = typeof address === "object" && address !== null ? address.port : port;
        resolve();
      });
    });
  }

  get url(): string {
    return `${this.#scheme}://${this.#host.includes(":") ? `[${this.#host}]` : this.#host}:${this.#port}`;
  }

  get port(): number {
    return this.#port;
  }

  get log(): readonly MockRequestRecord[] {
    return this.#requests.records;
  }

  setScript(script: unknown): void {
    this.#picker = new StepPicker(parseMockScript(script, "setScript"));
  }

  stats(): MockStats {
    return this.#requests.stats();
  }

  requests(match?: string): number {
    return this.#requests.requests(match);
  }

  waitForRequestEnd(
    predicate: (record: MockRequestRecord) => boolean = () => true,
    timeoutMs: number = DEFAULTS.waitTimeoutMs,
    since?: number,
  ): Promise<MockRequestRecord> {
    return this.#requests.waitForRequestEnd(predicate, timeoutMs, since, this.url);
  }

  on(event: "request_start" | "request_end", listener: RecordListener): () => void {
    return this.#requests.on(event, listener);
  }

  reset(): void {
    this.#requests.reset();
    this.#picker = new StepPicker(this.#picker.script);
  }

  close(): Promise<void> {
    this.#closed = true;
    this.#closing ??= new Promise((resolve) => {
      this.#server.close(() => resolve());
      for (const socket of this.#sockets) socket.destroy();
      this.#server.closeAllConnections();
    });
    return this.#closing;
  }

  #handle(req: IncomingMessage, res: ServerResponse): void {
    req.on("error", () => {});
    res.on("error", () => {});
    const path = new URL(req.url ?? "/", "http://mock").pathname;
    const wire = MODEL_ROUTES[path];
    const controlMethod = CONTROL_ROUTES[path];
    const refusal = `${req.method} ${path} is not supported; use`;
    if (controlMethod !== undefined && req.method === controlMethod) {
      void this.#control(path, req, res);
    } else if (controlMethod !== undefined) {
      this.#refuseRoute(res, 405, `${refusal} ${controlMethod}.`, controlMethod);
    } else if (wire === undefined) {
      this.#refuseRoute(res, 404, `Invalid URL (${req.method} ${path}). Routes: ${ROUTE_LIST}.`);
    } else if (req.method !== "POST") {
      const ctx = contextFor(this.#requests.nextSeq(), "", undefined, req);
      this.#refuseModel(res, wire, ctx, 405, `${refusal} POST.`, null);
    } else {
      void this.#serveModel(req, res, wire);
    }
  }

  async #serveModel(req: IncomingMessage, res: ServerResponse, wire: WireFormat): Promise<void> {
    const body = await readBody(req, res);
    if (body.kind === "aborted") return;
    const seq = this.#requests.nextSeq();
    if (body.kind === "too_large") {
      res.setHeader("connection", "close");
      const message = `The request body is larger than ${MAX_BODY_BYTES} bytes. Send a smaller request.`;
      return this.#refuseModel(res, wire, contextFor(seq, "", undefined, req), 413, message, null);
    }
    const request = parseModelRequest(body.text, req.headers);
    if (isProblem(request)) {
      return this.#refuseModel(res, wire, contextFor(seq, "", undefined, req), 400, request.problem, request.param);
    }
    const step = this.#picker.next(request.conversation, request.promptTokens, Date.now(), request.toolTurns);
    const ctx = contextFor(seq, request.model, request, req);
    const record: MutableRecord = {
      seq,
      conversation: request.conversation,
      api: wire.api,
      stream: request.stream,
      model: request.model,
      step: step.type,
      promptTokens: request.promptTokens,
      startedAt: Date.now(),
    };
    if (ctx.apiKey !== undefined) record.apiKey = ctx.apiKey;
    if (request.reasoning !== undefined) record.reasoning = request.reasoning;
    this.#requests.countRequest(request.conversation);
    const abort = new AbortController();
    const exchange: Exchange = {
      res,
      wire,
      ctx,
      record,
      stream: request.stream,
      script: this.#picker.script,
      signal: abort.signal,
      finishAs: "completed",
      end: (outcome) => this.#requests.end(record, outcome),
    };
    res.on("finish", () => this.#requests.end(record, exchange.finishAs));
    res.on("close", () => {
      abort.abort();
      // A response that closes unfinished was cut by the client, unless the server is closing.
      if (!res.writableFinished) this.#requests.end(record, this.#closed ? "fault" : "client_closed");
    });
    this.#requests.begin(record);
    if (res.destroyed) {
      // The client left between the end of its body and here: `close` has already fired.
      abort.abort();
      return this.#requests.end(record, "client_closed");
    }
    await respond(exchange, step);
  }

  /** A malformed request on a model route: a 4xx in the route's wire format, and an `invalid` record. */
  #refuseModel(
    res: ServerResponse,
    wire: WireFormat,
    ctx: AnswerContext,
    status: number,
    message: string,
    param: string | null,
  ): void {
    const record: MutableRecord = {
      seq: ctx.seq,
      conversation: "",
      api: wire.api,
      stream: false,
      step: "none",
      promptTokens: 0,
      status,
      startedAt: Date.now(),
    };
    this.#requests.begin(record);
    this.#requests.end(record, "invalid");
    const rendered = wire.error({ reason: "malformed", status, message, param }, ctx);
    const allow = status === 405 ? { allow: "POST" } : {};
    writeJson(res, status, rendered.body, { ...rendered.headers, ...allow });
  }

  /** Unknown route or wrong method on a control route: counted as invalid, not logged (no wire format). */
  #refuseRoute(res: ServerResponse, status: 404 | 405, message: string, allow?: string): void {
    this.#requests.countRefusal();
    const body = { error: { message, type: "invalid_request_error", param: null, code: null } };
    writeJson(res, status, body, allow === undefined ? {} : { allow });
  }

  async #control(path: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (path === "/_mock/stats") return writeJson(res, 200, this.stats());
    if (path === "/_mock/reset") {
      req.resume();
      this.reset();
      return writeJson(res, 200, { ok: true });
    }
    const body = await readBody(req, res);
    if (body.kind !== "ok") return writeJson(res, 413, { error: { message: "The script is too large." } });
    try {
      const source = "PUT /_mock/script";
      this.#picker = new StepPicker(parseMockScript(parseJsonc(body.text, source), source));
      writeJson(res, 200, { ok: true });
    } catch (error) {
      const message = errorText(error);
      writeJson(res, 400, { error: { message, code: error instanceof MockServerError ? error.code : null } });
    }
  }
}

function contextFor(
  seq: number,
  model: string,
  request: { promptTokens: number; includeUsage: boolean } | undefined,
  req: IncomingMessage,
): AnswerContext {
  const bearer = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? "")?.[1];
  const header = req.headers["x-api-key"];
  return {
    seq,
    model,
    promptTokens: request?.promptTokens ?? 0,
    includeUsage: request?.includeUsage ?? false,
    apiKey: bearer ?? (typeof header === "string" ? header : undefined),
    created: Math.floor(Date.now() / 1000),
  };
}

/**
 * Reads a body up to {@link MAX_BODY_BYTES}. Past the limit it stops buffering and lets the rest
 * drain unread, so that the 413 reaches a client still writing instead of being lost to a reset.
 */
function readBody(req: IncomingMessage, res: ServerResponse): Promise<Body> {
  return new Promise((resolve) => {
    const declared = Number(req.headers["content-length"]);
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (body: Body) => {
      if (done) return;
      done = true;
      req.off("data", onData);
      if (body.kind === "too_large") req.resume();
      resolve(body);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) finish({ kind: "too_large" });
      else chunks.push(chunk);
    };
    if (declared > MAX_BODY_BYTES) return finish({ kind: "too_large" });
    req.on("data", onData);
    req.on("end", () => finish({ kind: "ok", text: Buffer.concat(chunks).toString("utf8") }));
    res.on("close", () => finish({ kind: "aborted" }));
  });
}
