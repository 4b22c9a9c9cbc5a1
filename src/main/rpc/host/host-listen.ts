/**
 * Where `lifeline --mode host` listens besides stdio (docs/rpc.md, "On a socket"): a Unix socket
 * that only its owner can connect to (created with mode 0600, under a umask that leaves no moment
 * it is wider), or TCP, on a loopback address unless `allowRemote` says otherwise, whose clients
 * must first send the token the mode writes to a file of mode 0600 (never to stdout).
 */
import { randomBytes } from "node:crypto";
import { chmod, lstat, unlink, writeFile } from "node:fs/promises";
import { connect, createServer, isIP, type Server, type Socket } from "node:net";
import { LifelineError } from "../../../shared/errors.js";
import type { TcpAddress } from "./tcp-address.js";

/** Whether `host` is a loopback address (127.0.0.0/8, ::1) or `localhost`. */
function isLoopback(host: string): boolean {
  if (host === "localhost" || host === "::1") return true;
  return isIP(host) === 4 && host.startsWith("127.");
}

/**
 * Listens on the Unix socket `path` with mode 0600. A stale socket file (nothing answers on it)
 * is replaced; a live one, or any other file, is refused.
 * @throws LifelineError ERR_INVALID_OPTIONS when the path is in use or cannot be bound.
 */
export async function listenUnix(path: string, onSocket: (socket: Socket) => void): Promise<Server> {
  await clearStale(path);
  const server = createServer(onSocket);
  // The socket file takes the process's umask at bind; 0177 leaves it 0600 from its first moment.
  const umask = process.umask(0o177);
  try {
    await listen(server, () => server.listen(path), `the socket ${path}`);
  } finally {
    process.umask(umask);
  }
  await chmod(path, 0o600);
  return server;
}

/**
 * Listens on TCP `address` and writes a fresh token, with the address and port bound, to
 * `tokenFile` (mode 0600) as JSON `{"host", "port", "token", "pid"}`.
 * @throws LifelineError ERR_INVALID_OPTIONS for a non-loopback address without `allowRemote`,
 *   or an address that cannot be bound.
 */
export async function listenTcp(
  address: TcpAddress,
  tokenFile: string,
  allowRemote: boolean,
  onSocket: (socket: Socket) => void,
): Promise<{ server: Server; port: number; token: string }> {
  if (!allowRemote && !isLoopback(address.host)) {
    throw new LifelineError(
      "ERR_INVALID_OPTIONS",
      `--listen ${address.host} is not a loopback address: anyone who can reach it could try the token. Use 127.0.0.1, or pass --allow-remote to mean it.`,
    );
  }
  const server = createServer(onSocket);
  await listen(server, () => server.listen(address.port, address.host), `${address.host}:${address.port}`);
  const bound = server.address();
  const port = typeof bound === "object" && bound !== null ? bound.port : address.port;
  const token = randomBytes(32).toString("base64url");
  const text = `${JSON.stringify({ host: address.host, port, token, pid: process.pid })}\n`;
  try {
    await writeFile(tokenFile, text, { mode: 0o600 });
    // An existing file keeps its mode through writeFile.
    await chmod(tokenFile, 0o600);
  } catch (error) {
    server.close();
    throw new LifelineError(
      "ERR_INVALID_OPTIONS",
      `Cannot write the token file ${tokenFile}: ${(error as Error).message}`,
      {
        cause: error,
      },
    );
  }
  return { server, port, token };
}

function listen(server: Server, start: () => void, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const failed = (error: Error) => {
      reject(new LifelineError("ERR_INVALID_OPTIONS", `Cannot listen on ${what}: ${error.message}`, { cause: error }));
    };
    server.once("error", failed);
    server.once("listening", () => {
      server.off("error", failed);
      resolve();
    });
    start();
  });
}

/** Removes `path` when it is a socket nothing listens on; refuses a live socket or another file. */
async function clearStale(path: string): Promise<void> {
  let isSocket: boolean;
  try {
    isSocket = (await lstat(path)).isSocket();
  } catch {
    return;
  }
  if (!isSocket) {
    throw new LifelineError("ERR_INVALID_OPTIONS", `--socket ${path} exists and is not a socket; choose another path.`);
  }
  const live = await new Promise<boolean>((resolve) => {
    const probe = connect(path);
    probe.once("connect", () => {
      probe.destroy();
      resolve(true);
    });
    probe.once("error", () => resolve(false));
  });
  if (live) {
    throw new LifelineError(
      "ERR_INVALID_OPTIONS",
      `--socket ${path} is in use by a running process; choose another path.`,
    );
  }
  await unlink(path);
}
