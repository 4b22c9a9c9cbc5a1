/**
 * The child process behind one `RpcClient` or `RpcHostClient`: spawning `node <cliPath> --mode rpc …`
 * (or `--mode host …`), reading its stdout as JSONL, keeping its stderr tail, noticing once that
 * it is gone, and stopping it.
 */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { LifelineError } from "../../shared/errors.js";
import { attachJsonlReader } from "./jsonl.js";

const DEFAULTS = {
  /** After closing the child's stdin (RPC mode's shutdown signal), wait this long before SIGTERM. */
  eofGraceMs: 2_000,
  /** After SIGTERM, wait this long before SIGKILL. */
  termGraceMs: 1_000,
  /** After `exit`, wait at most this long for the child's pipes to close so the stderr tail is complete. */
  closeGraceMs: 200,
  /** getStderr() keeps this many characters. */
  stderrLimit: 64 * 1024,
  /** An ERR_RPC_EXITED message quotes this many characters of stderr. */
  stderrInMessage: 2_000,
} as const;

/** How {@link RpcChild} runs the child. */
export interface RpcChildOptions {
  /** Path of lifeline's CLI, run with `execPath`. */
  cliPath: string;
  /** The program that runs the CLI: node, or Electron's binary with ELECTRON_RUN_AS_NODE=1 in `env`. */
  execPath: string;
  /** The mode the CLI runs in: `rpc` (one session, `RpcClient`) or `host` (many, `RpcHostClient`). */
  mode: "rpc" | "host";
  /** CLI arguments after `--mode <mode>`. */
  args: string[];
  cwd: string | undefined;
  env: NodeJS.ProcessEnv;
  /** Longest stdout record read; a longer one is skipped and reported to `oversize`. */
  maxLineBytes: number;
}

/** What {@link RpcChild} reports to its owner, synchronously from the child's stream and process events. */
export interface RpcChildHandlers {
  /** One stdout record, in order, without its LF. */
  line(text: string): void;
  /** A stdout record over maxLineBytes was skipped; `head` is its first characters (to find an id). */
  oversize(bytes: number, head: string): void;
  /**
   * The child is gone (exited, killed, or never spawned); `error` (`ERR_RPC_EXITED`) says how and
   * quotes the stderr tail. Called once, before the promise of `stop()` resolves.
   */
  gone(error: LifelineError): void;
}

/**
 * One `lifeline --mode rpc` (or `--mode host`) child process, owned by a client. Spawned by the constructor;
 * gone once, after which no timer or handle of it keeps the process alive.
 */
export class RpcChild {
  readonly #child: ChildProcessWithoutNullStreams;
  readonly #handlers: RpcChildHandlers;
  readonly #detachReader: () => void;
  #gone = false;
  #markGone: () => void = () => {};
  readonly #goneSignal: Promise<void>;
  #stopping = false;
  #closeGraceTimer: NodeJS.Timeout | undefined;
  #termTimer: NodeJS.Timeout | undefined;
  #killTimer: NodeJS.Timeout | undefined;
  #stderr = "";

  /**
   * Spawns the child. One that cannot be spawned at all (a missing `cwd`) is reported to `gone`
   * later, not thrown.
   * @throws whatever `spawn` throws synchronously.
   */
  constructor(options: RpcChildOptions, handlers: RpcChildHandlers) {
    this.#handlers = handlers;
    this.#goneSignal = new Promise((resolve) => {
      this.#markGone = resolve;
    });
    const child = spawn(options.execPath, [options.cliPath, "--mode", options.mode, ...options.args], {
      cwd: options.cwd,
      env: options.env,
      stdio: ["pipe", "pipe", "pipe"],
    });
    this.#child = child;
    // A child that dies makes its pipes fail (EPIPE on a write); its exit is handled below, so
    // these errors must not become uncaught exceptions.
    child.stdin.on("error", () => {});
    child.stdout.on("error", () => {});
    child.stderr.on("error", () => {});
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (text: string) => this.#appendStderr(text));
    this.#detachReader = attachJsonlReader(
      child.stdout,
      {
        line: (text) => handlers.line(text),
        oversize: ({ bytes, head }) => handlers.oversize(bytes, head),
      },
      { maxLineBytes: options.maxLineBytes },
    );
    let exitStatus: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    child.once("exit", (code, signal) => {
      exitStatus = { code, signal };
      // `close` (all pipes drained) normally follows at once; a grandchild holding a pipe open
      // must not delay the news of the exit for long.
      this.#closeGraceTimer = setTimeout(() => this.#childGone(code, signal), DEFAULTS.closeGraceMs);
      this.#closeGraceTimer.unref();
    });
    child.once("close", (code: number | null, signal: NodeJS.Signals | null) => {
      this.#childGone(exitStatus?.code ?? code, exitStatus?.signal ?? signal);
    });
    child.on("error", (error) => {
      // `error` without a pid: the process could not be spawned, and no `exit` will come. Other
      // errors (a failed kill) leave the child running; its exit is reported as usual.
      if (child.pid === undefined) this.#childGone(null, null, error);
    });
  }

  /** The child's process id; undefined when it could not be spawned. */
  get pid(): number | undefined {
    return this.#child.pid;
  }

  /** Writes `line` to the child's stdin; `callback` gets the write's error, if any (a closed stdin). */
  write(line: string, callback: (error: Error | null | undefined) => void): void {
    this.#child.stdin.write(line, callback);
  }

  /**
   * Ends the child cleanly: closes its stdin (EOF means shut down), then SIGTERM after 2 s,
   * SIGKILL 1 s later. Resolves when it is gone, at once if it already is. Never rejects; a second
   * call starts no new timers.
   */
  stop(): Promise<void> {
    if (this.#gone) return Promise.resolve();
    if (!this.#stopping) {
      this.#stopping = true;
      const child = this.#child;
      child.stdin.end();
      this.#termTimer = setTimeout(() => {
        child.kill("SIGTERM");
        this.#killTimer = setTimeout(() => child.kill("SIGKILL"), DEFAULTS.termGraceMs);
      }, DEFAULTS.eofGraceMs);
    }
    return this.#goneSignal;
  }

  /** The child's stderr so far: its last 64 Ki characters. Still readable after the child exited. */
  getStderr(): string {
    return this.#stderr.length > DEFAULTS.stderrLimit ? this.#stderr.slice(-DEFAULTS.stderrLimit) : this.#stderr;
  }

  /** A sentence quoting the end of the child's stderr, for error messages. */
  stderrTail(): string {
    const stderr = this.getStderr().trimEnd();
    if (stderr === "") return "Its stderr is empty.";
    const tail = stderr.length > DEFAULTS.stderrInMessage ? `…${stderr.slice(-DEFAULTS.stderrInMessage)}` : stderr;
    return `Its stderr ends with:\n${tail}`;
  }

  /**
   * The child is gone (exited, killed, or never spawned): free every timer and handle so nothing
   * of it keeps the process alive, report it to `gone`, then resolve `stop()`. Runs once.
   */
  #childGone(code: number | null, signal: NodeJS.Signals | null, cause?: Error): void {
    if (this.#gone) return;
    this.#gone = true;
    clearTimeout(this.#closeGraceTimer);
    clearTimeout(this.#termTimer);
    clearTimeout(this.#killTimer);
    this.#detachReader();
    const child = this.#child;
    child.stdin.destroy();
    child.stdout.destroy();
    child.stderr.destroy();
    const how =
      cause !== undefined
        ? `could not be started (${cause.message}); check execPath, cliPath and cwd`
        : signal !== null
          ? `was killed by ${signal}`
          : `exited with code ${code}`;
    const error = new LifelineError(
      "ERR_RPC_EXITED",
      `The lifeline RPC child${child.pid === undefined ? "" : ` (pid ${child.pid})`} ${how}. ${this.stderrTail()}`,
      cause === undefined ? {} : { cause },
    );
    this.#handlers.gone(error);
    this.#markGone();
  }

  #appendStderr(text: string): void {
    this.#stderr += text;
    // Trimmed only at twice the limit, so a chatty child costs amortised linear time.
    if (this.#stderr.length > 2 * DEFAULTS.stderrLimit) this.#stderr = this.#stderr.slice(-DEFAULTS.stderrLimit);
  }
}
