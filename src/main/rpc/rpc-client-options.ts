/**
 * `RpcClient`'s options: their types and defaults, and the check and resolution the constructor
 * makes of them (STYLE 9) into how its child is run. Also the check of the waits' `timeoutMs`.
 */
import { fileURLToPath } from "node:url";
import { LifelineError } from "../../shared/errors.js";
import { MAX_TIMER_MS } from "../../shared/timer-ms.js";
import type { RpcChildOptions } from "./rpc-child.js";
import type { RpcEvent } from "./rpc-protocol.js";

/** Options of `RpcClient`. Validated by its constructor. */
export interface RpcClientOptions {
  /**
   * Path of lifeline's CLI, run with `execPath`.
   * @default the package's own `dist/main/cli.js` (resolved from this module's location)
   */
  cliPath?: string;
  /**
   * The program that runs the CLI. In an Electron main process `process.execPath` is the Electron
   * binary: keep it and add `ELECTRON_RUN_AS_NODE: "1"` to `env` so that it runs the CLI as plain
   * Node, or name a `node` executable here. `LIFELINE_WORKER_ENTRY` in `env` tells the child where
   * an unpacked worker bundle is (see docs/embedding.md).
   * @default process.execPath
   */
  execPath?: string;
  /** Working directory of the child, where `.lifeline/settings.json` is looked up. @default process.cwd() */
  cwd?: string;
  /** Environment variables merged over `process.env` for the child (for example `LIFELINE_DIR`). */
  env?: NodeJS.ProcessEnv;
  /** Passed as `--provider`. @default the CLI's, "demo" */
  provider?: string;
  /** Passed as `--model`: an id, or "provider/id". @default the CLI's, "demo-1" */
  model?: string;
  /** The provider's key, passed in the child's environment as `LIFELINE_API_KEY` (a command line is visible to other local users in `ps`). */
  apiKey?: string;
  /** Extra CLI arguments, after the ones above (for example `["--no-session"]`). */
  args?: string[];
  /**
   * Longest wait for the response to one command, the start handshake included. Past it the call
   * rejects with `ERR_RPC_TIMEOUT`; the child is left running. `Infinity` waits without limit.
   * @default 30000
   */
  requestTimeoutMs?: number;
  /**
   * Receives errors thrown by `onEvent` listeners; such an error never stops event delivery.
   * @default writes the error to process.stderr
   */
  onListenerError?: (error: unknown, event: RpcEvent) => void;
}

export const CLIENT_DEFAULTS = {
  requestTimeoutMs: 30_000,
  /** waitForIdle, collectEvents and promptAndWait. */
  waitTimeoutMs: 60_000,
  /**
   * Longest stdout record read. Larger than the server's 8 MiB command limit: the child is trusted,
   * and a long transcript from get_messages is a legitimate large response.
   */
  maxResponseBytes: 256 * 1024 * 1024,
} as const;

/** The options resolved: how the child runs, and what the client's parts are built with. */
export interface ResolvedClientOptions {
  child: RpcChildOptions;
  /** A checked timeout (see {@link checkTimeout}). */
  requestTimeoutMs: number;
  onListenerError: RpcClientOptions["onListenerError"];
}

/**
 * Checks `options` and fills in the defaults.
 * @throws LifelineError `ERR_INVALID_OPTIONS` naming the option, for an empty `cliPath` or `execPath`, or a
 *   `requestTimeoutMs` that is not a positive number of milliseconds.
 */
export function resolveClientOptions(options: RpcClientOptions): ResolvedClientOptions {
  const cliPath = options.cliPath ?? fileURLToPath(new URL("../cli.js", import.meta.url));
  if (cliPath === "") throw invalidOption("cliPath", "must be a non-empty path to lifeline's cli.js");
  const execPath = options.execPath ?? process.execPath;
  if (execPath === "") throw invalidOption("execPath", "must be a non-empty path to node or Electron's binary");
  const requestTimeoutMs = checkTimeout(
    "requestTimeoutMs",
    options.requestTimeoutMs ?? CLIENT_DEFAULTS.requestTimeoutMs,
  );
  const env = {
    ...process.env,
    ...options.env,
    ...(options.apiKey === undefined ? {} : { LIFELINE_API_KEY: options.apiKey }),
  };
  const args = [
    ...(options.provider === undefined ? [] : ["--provider", options.provider]),
    ...(options.model === undefined ? [] : ["--model", options.model]),
    ...(options.args ?? []),
  ];
  return {
    child: {
      cliPath,
      execPath,
      mode: "rpc",
      args,
      cwd: options.cwd,
      env,
      maxLineBytes: CLIENT_DEFAULTS.maxResponseBytes,
    },
    requestTimeoutMs,
    onListenerError: options.onListenerError,
  };
}

function invalidOption(name: string, problem: string): LifelineError {
  return new LifelineError("ERR_INVALID_OPTIONS", `RpcClient option ${name} ${problem}.`);
}

/**
 * A timeout in ms: a positive number no larger than Node's timer limit, or Infinity for none.
 * @throws LifelineError `ERR_INVALID_OPTIONS` naming `name` otherwise.
 */
export function checkTimeout(name: string, ms: number): number {
  if (ms === Number.POSITIVE_INFINITY) return ms;
  if (typeof ms !== "number" || !Number.isFinite(ms) || ms <= 0 || ms > MAX_TIMER_MS) {
    throw invalidOption(
      name,
      `must be a positive number of milliseconds up to ${MAX_TIMER_MS}, or Infinity; got ${ms}`,
    );
  }
  return ms;
}
