/**
 * `lifeline --mode host`: one process, one `SessionHost`, any number of sessions for any number of
 * clients (docs/rpc.md, "Many sessions in one process"). Each client is a {@link HostConnection}:
 * the process's stdin/stdout by default (one client, ended by EOF as `--mode rpc`), or each
 * connection to a Unix socket (`socket`) or a TCP address (`listen`, with a token), which serve
 * until SIGTERM, SIGHUP or SIGINT.
 *
 * A client that disconnects takes only its own sessions with it: they are closed (a live prompt is
 * aborted, the transcript up to then stays in its file) and can be resumed by id at once, by it
 * or another client. Other clients' sessions go on untouched.
 */

import { unlink } from "node:fs/promises";
import type { Server, Socket } from "node:net";
import { errorText } from "../../../shared/failures/error-text.js";
import { createSessionHost, type SessionHostOptions } from "../../host/session-host.js";
import { attachJsonlReader } from "../jsonl.js";
import { takeOverStdout } from "../rpc-mode.js";
import type { OutputLimits, OutputSink } from "./connection-output.js";
import { HostConnection } from "./host-connection.js";
import { listenTcp, listenUnix } from "./host-listen.js";
import { HostSessionRegistry } from "./host-sessions.js";
import type { TcpAddress } from "./tcp-address.js";

/** Options of {@link runHostMode}. */
export interface HostModeOptions {
  /** `"provider/id"` of sessions opened without a model. @default "demo/demo-1" */
  model?: string;
  /** The provider's key for the sessions clients open. */
  apiKey?: string;
  /** Options of the session host (one for the process). */
  host?: SessionHostOptions;
  /** Serve each connection to this Unix socket (mode 0600) instead of stdio. */
  socket?: string;
  /** Serve each TCP connection to this address instead of stdio; needs `tokenFile`. */
  listen?: TcpAddress;
  /** Where the TCP token is written (mode 0600), with the port bound. */
  tokenFile?: string;
  /** Accept a non-loopback `listen` address. @default false */
  allowRemote?: boolean;
  /** Each connection's output bound (see connection-output.ts). */
  limits?: OutputLimits;
  /** Longest accepted command line in bytes. @default 8 MiB */
  maxLineBytes?: number;
  /** Stdio only: where commands come from. @default process.stdin */
  input?: NodeJS.ReadableStream;
  /** Stdio only: where records go. @default process.stdout, taken over as in `--mode rpc` */
  output?: OutputSink;
  /** Diagnostics. @default process.stderr */
  errors?: (text: string) => void;
}

const SIGNALS: [NodeJS.Signals, number][] = [
  ["SIGTERM", 143],
  ["SIGHUP", 129],
  ["SIGINT", 130],
];

/**
 * Runs host mode until stdin ends (stdio) or a termination signal arrives; resolves with the exit
 * code: 0 after EOF, 143/129/130 after SIGTERM/SIGHUP/SIGINT, 2 when it cannot listen (a socket in
 * use, a refused address, an unwritable token file; the reason is on stderr). A session that cannot
 * be opened (a missing key) fails the command that opens it, not the mode.
 */
export async function runHostMode(options: HostModeOptions = {}): Promise<number> {
  const errors = options.errors ?? ((text: string) => process.stderr.write(text));
  const host = createSessionHost(options.host);
  const registry = new HostSessionRegistry();
  const connections = new Set<HostConnection>();
  /** The clients' sockets: ended at shutdown, or an idle client would keep the process alive. */
  const sockets = new Set<Socket>();
  const base = {
    host,
    registry,
    model: options.model ?? "demo/demo-1",
    apiKey: options.apiKey,
    errors,
    ...(options.limits === undefined ? {} : { limits: options.limits }),
  };
  const reader = options.maxLineBytes === undefined ? {} : { maxLineBytes: options.maxLineBytes };

  /** Serves one socket until it closes; its sessions are closed then. */
  const serveSocket = (socket: Socket, token: string | undefined): void => {
    const sink: OutputSink = { write: (chunk) => socket.write(chunk), onceDrain: (go) => socket.once("drain", go) };
    // A refused token is answered, then the socket ended after it; an overflowing client is cut off.
    const end = (reason: string) => (reason === "not authenticated" ? socket.end() : socket.destroy());
    const connection = new HostConnection(sink, { ...base, token, end });
    connections.add(connection);
    sockets.add(socket);
    socket.on("error", () => {});
    socket.once("close", () => {
      sockets.delete(socket);
      connections.delete(connection);
      void connection.close();
    });
    attachJsonlReader(
      socket,
      {
        line: (text) => connection.receive(text),
        oversize: ({ bytes, head }) =>
          connection.refuse(head, `Line of ${bytes} bytes exceeds the limit; send smaller commands.`),
        end: () => void connection.drained().then(() => socket.end()),
      },
      reader,
    );
  };

  let server: Server | undefined;
  try {
    if (options.socket !== undefined) {
      server = await listenUnix(options.socket, (socket) => serveSocket(socket, undefined));
      errors(`lifeline host: listening on ${options.socket}\n`);
    } else if (options.listen !== undefined) {
      const listening = await listenTcp(
        options.listen,
        options.tokenFile ?? "",
        options.allowRemote === true,
        (socket) => serveSocket(socket, listening.token),
      );
      server = listening.server;
      errors(`lifeline host: listening on ${options.listen.host}:${listening.port} (token in ${options.tokenFile})\n`);
    }
  } catch (error) {
    errors(`Error: ${errorText(error)}\n`);
    await host.close();
    return 2;
  }

  const code = await new Promise<number>((resolve) => {
    let finished = false;
    const handlers = SIGNALS.map(([signal, exitCode]): [NodeJS.Signals, () => void] => {
      const handler = () => finish(exitCode);
      process.once(signal, handler);
      return [signal, handler];
    });
    const finish = (exitCode: number) => {
      if (finished) return;
      finished = true;
      for (const [signal, handler] of handlers) process.off(signal, handler);
      resolve(exitCode);
    };
    if (server !== undefined) return;
    const output = options.output ?? stdoutSink();
    const connection = new HostConnection(output, { ...base, end: () => finish(0) });
    connections.add(connection);
    attachJsonlReader(
      options.input ?? process.stdin,
      {
        line: (text) => connection.receive(text),
        oversize: ({ bytes, head }) =>
          connection.refuse(head, `Line of ${bytes} bytes exceeds the limit; send smaller commands.`),
        end: (partial) => {
          if (partial !== undefined && partial.trim() !== "") {
            connection.refuse(
              partial,
              "The input ended inside a line: every command must end with a newline (LF). It was not run.",
            );
          }
          void connection.drained().then(() => finish(0));
        },
      },
      reader,
    );
  });
  server?.close();
  await Promise.all(
    [...connections].map(async (connection) => {
      await connection.drained();
      await connection.close();
    }),
  );
  for (const socket of sockets) endSocket(socket);
  if (options.socket !== undefined) await unlink(options.socket).catch(() => {});
  await host.close();
  if (options.input === undefined && "unref" in process.stdin) process.stdin.unref?.();
  return code;
}

/** How long a client has at shutdown to take what was written to it before its socket is destroyed. */
const SHUTDOWN_FLUSH_MS = 1000;

/** Ends `socket` after what was written to it, destroying it if the client does not take it in time. */
function endSocket(socket: Socket): void {
  const timer = setTimeout(() => socket.destroy(), SHUTDOWN_FLUSH_MS);
  timer.unref();
  socket.end(() => {
    clearTimeout(timer);
    socket.destroy();
  });
}

/** The process's stdout as a sink, taken over as in `--mode rpc`. */
function stdoutSink(): OutputSink {
  const write = takeOverStdout();
  return { write, onceDrain: (go) => process.stdout.once("drain", go) };
}
