/**
 * Clients of `lifeline --mode host` for the process tests: the built CLI as a child process (its
 * stdio is one connection), and a connection to its Unix socket or TCP address. Every stdout or
 * socket line must be a JSON object with a string `type` (a line that is not goes to `problems`);
 * every wait is bounded; every child and socket is ended by the pushed cleanup.
 */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import type { Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import { attachJsonlReader } from "../../../../dist/main/rpc/jsonl.js";
import { tempDir, within } from "../../../fixtures/bounded.js";

export const CLI = fileURLToPath(new URL("../../../../dist/main/cli.js", import.meta.url));

export type Cleanups = (() => Promise<void> | void)[];

export type HostRecord = Record<string, unknown> & { type: string };

/** One connection's records and the means to send commands on it. */
export interface HostLines {
  /** Every record so far, in order. */
  readonly records: HostRecord[];
  /** Lines that were not JSON objects with a string `type`. */
  readonly problems: string[];
  /** Writes one command (an object is serialised; a string is written as is). */
  send(command: object | string): void;
  /** Resolves with the first record at index ≥ `from` matching `predicate`. */
  waitFor(predicate: (record: HostRecord) => boolean, what: string, from?: number, ms?: number): Promise<HostRecord>;
  /** Sends `command` with a fresh `id` and resolves with its response. */
  request(command: Record<string, unknown> & { type: string }, ms?: number): Promise<HostRecord>;
  /** As {@link request}, and fails naming the error unless the response is a success; resolves with its data. */
  ok<T = Record<string, unknown>>(command: Record<string, unknown> & { type: string }, ms?: number): Promise<T>;
  /** Resolves once the connection is gone (the socket closed, or the child exited). */
  readonly ended: Promise<void>;
}

let nextId = 0;

/** A fresh command id, unique in the test process. */
function freshId(): string {
  return `h${++nextId}`;
}

/** Reads records from `input`, writes commands with `write`; `ended` says the peer is gone. */
function lines(input: Readable, write: (text: string) => void, ended: Promise<void>, context: () => string): HostLines {
  const records: HostRecord[] = [];
  const problems: string[] = [];
  const waiters = new Set<() => void>();
  let gone = false;
  attachJsonlReader(input, {
    line: (text) => {
      try {
        const value = JSON.parse(text) as unknown;
        if (value !== null && typeof value === "object" && typeof (value as HostRecord).type === "string") {
          records.push(value as HostRecord);
        } else problems.push(text);
      } catch {
        problems.push(text);
      }
      for (const waiter of [...waiters]) waiter();
    },
  });
  void ended.then(() => {
    gone = true;
    for (const waiter of [...waiters]) waiter();
  });
  const waitFor: HostLines["waitFor"] = (predicate, what, from = 0, ms = 15_000) => {
    const found = () => records.slice(from).find(predicate);
    const first = found();
    if (first !== undefined) return Promise.resolve(first);
    let check: () => void = () => {};
    const promise = new Promise<HostRecord>((resolve, reject) => {
      check = () => {
        const record = found();
        if (record !== undefined) resolve(record);
        else if (gone) reject(new Error(`the connection ended before ${what}; ${context()}`));
      };
      waiters.add(check);
      check();
    });
    return within(promise, ms, what).finally(() => waiters.delete(check));
  };
  const request: HostLines["request"] = (command, ms) => {
    const id = freshId();
    const from = records.length;
    write(`${JSON.stringify({ ...command, id })}\n`);
    return waitFor(
      (record) => record.type === "response" && record.id === id,
      `the response to ${JSON.stringify(command)}`,
      from,
      ms,
    );
  };
  return {
    records,
    problems,
    send: (command) => write(typeof command === "string" ? command : `${JSON.stringify(command)}\n`),
    waitFor,
    request,
    ok: async <T>(command: Record<string, unknown> & { type: string }, ms?: number) => {
      const response = await request(command, ms);
      if (response.success !== true) {
        throw new Error(`${command.type} failed: ${String(response.error)} (${JSON.stringify(command)})`);
      }
      return response.data as T;
    },
    ended,
  };
}

/** A `--mode host` child: its stdio is one connection. */
export interface HostChild extends HostLines {
  readonly child: ChildProcessWithoutNullStreams;
  /** Its working directory and LIFELINE_DIR. */
  readonly dir: string;
  stderr(): string;
  stdout(): string;
  /** The exit code, once it has exited (null after a signal it did not handle). */
  readonly exited: Promise<number | null>;
}

export interface HostChildOptions {
  /** Arguments after `--mode host`. */
  args?: string[];
  /** `models.json` of its LIFELINE_DIR. */
  models?: string;
  /** Its LIFELINE_DIR and cwd. @default a fresh temporary directory */
  dir?: string;
}

/** Spawns `lifeline --mode host …` with fast retries; killed by the pushed cleanup. */
export function spawnHost(cleanups: Cleanups, options: HostChildOptions = {}): HostChild {
  const dir = options.dir ?? tempDir(cleanups, "lifeline-host-");
  writeFileSync(`${dir}/settings.json`, JSON.stringify({ retry: { baseDelayMs: 5 } }));
  if (options.models !== undefined) writeFileSync(`${dir}/models.json`, options.models);
  const child = spawn(process.execPath, [CLI, "--mode", "host", ...(options.args ?? [])], {
    cwd: dir,
    env: { ...process.env, LIFELINE_DIR: dir, NO_COLOR: "1" },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stderr = "";
  let stdout = "";
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stdin.on("error", () => {});
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGKILL");
      await exited;
    }
  });
  const connection = lines(
    child.stdout,
    (text) => child.stdin.write(text),
    exited.then(() => {}),
    () => `stderr: ${stderr}`,
  );
  return { ...connection, child, dir, stderr: () => stderr, stdout: () => stdout, exited };
}

/** Resolves once `child`'s stderr says it listens (or rejects when it exits first). */
export function listening(child: HostChild, ms = 15_000): Promise<void> {
  const ready = new Promise<void>((resolve, reject) => {
    const check = () => {
      if (child.stderr().includes("lifeline host: listening on")) resolve();
    };
    child.child.stderr.on("data", check);
    check();
    void child.exited.then((code) =>
      reject(new Error(`the host exited (${code}) before listening: ${child.stderr()}`)),
    );
  });
  return within(ready, ms, "the host to listen");
}

/** A client connection to the host's socket. */
export interface HostSocket extends HostLines {
  readonly socket: Socket;
}

/** Connects to a Unix socket path or a TCP address; destroyed by the pushed cleanup. */
export async function connectHost(
  cleanups: Cleanups,
  where: string | { host: string; port: number },
): Promise<HostSocket> {
  const socket = typeof where === "string" ? connect(where) : connect(where.port, where.host);
  cleanups.push(() => {
    socket.destroy();
  });
  const ended = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  await within(
    new Promise<void>((resolve, reject) => {
      socket.once("connect", resolve);
      socket.once("error", reject);
    }),
    10_000,
    `a connection to ${JSON.stringify(where)}`,
  );
  socket.on("error", () => {});
  return {
    ...lines(
      socket,
      (text) => socket.write(text),
      ended,
      () => "socket closed",
    ),
    socket,
  };
}

/** The events of session `sessionId` in `records`, in order. */
export function eventsOf(records: HostRecord[], sessionId: string): HostRecord[] {
  return records.filter((record) => record.type !== "response" && record.sessionId === sessionId);
}

/** Resolves once session `sessionId` has reported `agent_settled` at or after record `from`. */
export function settled(lines: HostLines, sessionId: string, from = 0, ms = 15_000): Promise<HostRecord> {
  return lines.waitFor(
    (record) => record.type === "agent_settled" && record.sessionId === sessionId,
    `agent_settled of ${sessionId}`,
    from,
    ms,
  );
}
