#!/usr/bin/env node
/**
 * The `lifeline` command.
 *
 *   lifeline [--provider P] [--model M]              on a terminal: the interactive session (tui/)
 *            [--thinking L]                          (any mode with a session: its thinking level;
 *                                                    or --model provider/id:L, as pi)
 *   lifeline -p "text" [--provider P] [--model M] [--api-key K]   one prompt; answer on stdout,
 *                                                               retry progress on stderr
 *   lifeline demo                                    the demo job behind `npm start`
 *   lifeline --mode rpc [--provider P] [--model M]   pi's RPC protocol on stdin/stdout (rpc/rpc-mode.ts)
 *   lifeline mock-server [--port N] [--script F]     the fault-injecting model server, until Ctrl+C
 *   lifeline auth add|list|remove                    keys in $LIFELINE_DIR/auth.json (auth/auth-cli.ts)
 *   lifeline load --sessions N --prompts M [...]     a load test with reports (load/load-cli.ts)
 *   lifeline serve --fleet URL [--concurrency N]     serve a fleet's queue of prompts (serve/serve-cli.ts)
 *   lifeline submit --fleet URL [--session ID] TEXT  submit a prompt to it; events and result as JSONL
 *   lifeline export <id> [--out F]                   a stored session as pi's JSONL (host/stored-sessions-cli.ts)
 *   lifeline sessions                                this directory's stored sessions, newest first
 *
 * Sessions (-p, rpc, interactive) are saved as pi's session files unless --no-session (see
 * host/sessions-cli.ts); `demo` and `mock-server` never write one.
 *
 * `--extension/-e F` (repeatable) loads an extension, as do the settings' `extensions` unless
 * `--no-extensions` (see extensions/extensions-cli.ts and docs/extensions.md).
 *
 * `--worker-entry F` (or LIFELINE_WORKER_ENTRY) runs the workers from F, such as the worker bundle
 * an Electron app unpacked next to its app.asar (see docs/embedding.md).
 *
 * `--fleet <redis-url>` and `--fleet-name <name>` put the host of any mode in a fleet (the
 * `fleet.redis` and `fleet.name` settings; see fleet/fleet-flags.ts and docs/fleet.md).
 *
 * Exit codes: 0 answered; 1 the prompt failed (final error on stderr); 2 bad usage, settings,
 * models.json, unknown model or missing key, an extension that cannot be loaded, or a session
 * that cannot be opened; 130 interrupted
 * (SIGINT), 143 terminated (SIGTERM): both abort the prompt and close the session file first.
 */
import type { AssistantMessage } from "@mariozechner/pi-ai";
import { Command, CommanderError, Option } from "commander";
import { loadMockScript, type MockScript, startMockServer } from "../mock-server/index.js";
import { isFailedStop } from "../shared/classify.js";
import { errorText } from "../shared/error-text.js";
import { LifelineError } from "../shared/errors.js";
import type { PromptResult, SessionEvent } from "../shared/events.js";
import { THINKING_LEVELS, type ThinkingLevel } from "../shared/thinking.js";
import { addAuthCommand } from "./auth/auth-cli.js";
import { compactionNotice } from "./compaction/compaction-notice.js";
import { resolveLifelineDir } from "./config/settings-store.js";
import { cliExtensionPaths } from "./extensions/extensions-cli.js";
import { resolveExtensions } from "./extensions/resolve-extensions.js";
import { type FleetFlags, fleetFromFlags } from "./fleet/fleet-flags.js";
import type { SessionHostOptions } from "./host/host-options.js";
import { createSessionHost } from "./host/session-host.js";
import {
  type CliSessionFlags,
  cliSessionsOption,
  cliThinking,
  openCliSession,
  resumeUsageError,
} from "./host/sessions-cli.js";
import { addStoredSessionsCommands } from "./host/stored-sessions-cli.js";
import { addLoadCommand } from "./load/load-cli.js";
import { runRpcMode } from "./rpc/rpc-mode.js";
import { addFleetCommands } from "./serve/serve-cli.js";
import type { SessionsOptions } from "./session-files/session-persistence.js";
import { workerFate } from "./supervision/interrupted-run.js";

const DEMO_PROMPT = "Say hello to lifeline.";

interface RunOptions {
  text: string;
  model: string;
  apiKey?: string | undefined;
  banner?: string;
  sessions: SessionsOptions | false;
  flags: CliSessionFlags;
  host: SessionHostOptions;
}

/** Errors that mean "fix your command or configuration", exit 2. */
const USAGE_ERRORS = new Set([
  "ERR_INVALID_SETTINGS",
  "ERR_INVALID_OPTIONS",
  "ERR_INVALID_MODELS",
  "ERR_UNKNOWN_MODEL",
  "ERR_MISSING_API_KEY",
  "ERR_AUTH_FILE",
  "ERR_SESSION_NOT_FOUND",
  "ERR_SESSION_LOCKED",
  "ERR_SESSION_FILE",
  "ERR_EXTENSION_LOAD",
]);

/** Whole seconds, rounded up as pi's loader counts them; short delays in ms so they don't read as 1s. */
function formatDelay(ms: number): string {
  return ms < 1000 ? `${ms}ms` : `${Math.ceil(ms / 1000)}s`;
}

/** One line of stderr progress for an event, or undefined for events the CLI does not show. */
export function progressLine(event: SessionEvent): string | undefined {
  switch (event.type) {
    case "auto_retry_start":
      return `Retrying (${event.attempt}/${event.maxAttempts})${event.model === undefined ? "" : ` on ${event.model}`} in ${formatDelay(event.delayMs)}… after: ${event.errorMessage}`;
    case "auto_retry_end":
      if (event.success) return `Recovered after ${event.attempt} ${event.attempt === 1 ? "retry" : "retries"}.`;
      return `Retry failed after ${event.attempt} attempts: ${event.finalError ?? "Unknown error"}`;
    case "compaction_start":
    case "compaction_end":
      return compactionNotice(event);
    case "worker_exited":
      return `Worker exited: ${event.error.message}`;
    case "provider_gate_wait":
      return `Provider ${event.provider} is rate limited: waiting ${formatDelay(event.waitMs)} before the ${event.before === "retry" ? "retry" : "prompt"} (retry.coordinate).`;
    case "coordination_fallback_start":
      return `Lost the Redis of fleet ${event.fleet} (${event.reason}); retry budget, gates and permits are this host's own until it returns.`;
    case "coordination_fallback_end":
      return `Rejoined fleet ${event.fleet} after ${formatDelay(event.fallbackMs)}; retry budget, gates and permits are fleet-wide again.`;
    case "session_restored":
      return `The session's worker ${workerFate(event.reason)}; the session was restored on a fresh worker (restart ${event.restarts}).`;
    case "extension_error":
      return `Extension ${event.extensionPath} failed on ${event.event}: ${event.error}`;
    default:
      return undefined;
  }
}

function answerText(message: AssistantMessage | undefined): string {
  if (message === undefined) return "";
  return message.content.map((block) => (block.type === "text" ? block.text : "")).join("");
}

async function run(options: RunOptions): Promise<number> {
  let host: ReturnType<typeof createSessionHost>;
  try {
    host = createSessionHost({ threads: 1, ...options.host, sessions: options.sessions });
  } catch (error) {
    return reportError(error);
  }
  let interrupted: number | undefined;
  try {
    if (options.banner !== undefined) process.stderr.write(`${options.banner}\n`);
    const session = await openCliSession(host, options.flags, {
      model: options.model,
      ...(options.apiKey === undefined ? {} : { apiKey: options.apiKey }),
    });
    session.subscribe((event) => {
      const line = progressLine(event);
      if (line !== undefined) process.stderr.write(`${line}\n`);
    });
    // Both end the prompt and let the finally below close the host, which flushes the session file.
    const onInterrupt = () => {
      interrupted = 130;
      void session.abort();
    };
    const onTerminate = () => {
      interrupted = 143;
      void session.abort();
    };
    process.once("SIGINT", onInterrupt);
    process.once("SIGTERM", onTerminate);
    let result: PromptResult;
    try {
      result = await session.prompt(options.text);
    } finally {
      process.off("SIGINT", onInterrupt);
      process.off("SIGTERM", onTerminate);
    }
    if (interrupted !== undefined) return interrupted;
    if (isFailedStop(result.stopReason)) {
      process.stderr.write(`Error: ${result.errorMessage ?? result.stopReason}\n`);
      return 1;
    }
    process.stdout.write(`${answerText(result.message)}\n`);
    return 0;
  } catch (error) {
    return reportError(error);
  } finally {
    await host.close();
  }
}

/** Writes the error's message to stderr; returns its exit code (2 for what the user must fix). */
function reportError(error: unknown): number {
  process.stderr.write(`Error: ${errorText(error)}\n`);
  return error instanceof LifelineError && USAGE_ERRORS.has(error.code) ? 2 : 1;
}

async function mockServer(opts: { port: string; host: string; script?: string }): Promise<number> {
  const port = Number(opts.port);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    process.stderr.write(`Error: --port must be a whole number from 0 to 65535, got "${opts.port}".\n`);
    return 2;
  }
  let script: MockScript | undefined;
  try {
    if (opts.script !== undefined) script = await loadMockScript(opts.script);
  } catch (error) {
    process.stderr.write(`Error: ${errorText(error)}\n`);
    return 2;
  }
  let server: Awaited<ReturnType<typeof startMockServer>>;
  try {
    server = await startMockServer({ port, host: opts.host, ...(script === undefined ? {} : { script }) });
  } catch (error) {
    process.stderr.write(`Error: cannot start the mock server: ${errorText(error)}\n`);
    return 1;
  }
  process.stdout.write(
    `Mock model server listening on ${server.url}\n` +
      `  OpenAI chat completions: ${server.url}/v1   Anthropic messages: ${server.url}\n` +
      `  Counters: GET ${server.url}/_mock/stats   Press Ctrl+C to stop.\n`,
  );
  await new Promise<void>((resolve) => {
    process.once("SIGINT", resolve);
    process.once("SIGTERM", resolve);
  });
  await server.close();
  process.stderr.write(`Mock model server stopped after ${server.stats().total} model requests.\n`);
  return 0;
}

function modelName(provider: string | undefined, model: string | undefined): string {
  if (model?.includes("/") && provider === undefined) return model;
  return `${provider ?? "demo"}/${model ?? (provider === undefined || provider === "demo" ? "demo-1" : "")}`;
}

interface ActionOptions {
  print?: string;
  provider?: string;
  model?: string;
  thinking?: string;
  apiKey?: string;
  mode: string;
  continue?: boolean;
  resume?: boolean;
  /** --session <ref>, or false for --no-session. */
  session?: string | boolean;
  sessionDir?: string;
  workerEntry?: string;
  extension?: string[];
  /** False for --no-extensions. */
  extensions?: boolean;
  fleet?: string;
  fleetName?: string;
}

/** The global flags that become host options. */
interface HostFlags extends FleetFlags {
  workerEntry?: string;
  extension?: string[];
  extensions?: boolean;
}

/**
 * Host options from the global flags; a relative --worker-entry or extension path is taken from
 * the current directory. Extension paths are checked here, so a bad one is a usage error (exit 2)
 * in every mode.
 * @throws ExtensionLoadError (ERR_EXTENSION_LOAD) for an extension path that does not exist.
 */
async function hostOptions(opts: HostFlags): Promise<SessionHostOptions> {
  const options: SessionHostOptions =
    opts.workerEntry === undefined || opts.workerEntry === "" ? {} : { workerEntry: opts.workerEntry };
  const cwd = process.cwd();
  const extensions = await cliExtensionPaths({
    flags: opts.extension ?? [],
    noExtensions: opts.extensions === false,
    lifelineDir: resolveLifelineDir(),
    cwd,
  });
  if (extensions.length > 0) {
    resolveExtensions(extensions, cwd);
    options.extensions = extensions;
  }
  const fleet = await fleetFromFlags(opts, { lifelineDir: resolveLifelineDir(), cwd });
  if (fleet !== undefined) options.settings = { fleet };
  return options;
}

/** `hostOptions`, or the exit code of its error (written to stderr). */
async function hostOptionsOrExit(opts: HostFlags): Promise<SessionHostOptions | number> {
  try {
    return await hostOptions(opts);
  } catch (error) {
    return reportError(error);
  }
}

/** Parses `argv` (without node and script) and runs the command; resolves to the exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  let exitCode = 0;
  const program = new Command()
    .name("lifeline")
    .description("Run LLM agent sessions in worker threads, with auto-retry supervised from the main thread.")
    .exitOverride()
    .configureOutput({ writeErr: (text) => process.stderr.write(text), writeOut: (text) => process.stdout.write(text) })
    .addOption(new Option("-p, --print <text>", "send one prompt, print the answer and exit"))
    .addOption(new Option("--provider <name>", 'model provider, for example "demo" or "openai"'))
    .addOption(new Option("--model <id>", 'model id, or "provider/id"; a ":<level>" suffix sets the thinking level'))
    .addOption(
      new Option(
        "--thinking <level>",
        `thinking level, clamped to what the model supports: ${THINKING_LEVELS.join(", ")} (default: the session's stored level, else defaultThinkingLevel)`,
      ),
    )
    .addOption(
      new Option(
        "--api-key <key>",
        "API key for the provider (default: auth.json, then models.json, then its environment variable); LIFELINE_API_KEY keeps it off the command line",
      ).env("LIFELINE_API_KEY"),
    )
    .addOption(
      new Option("--mode <mode>", "text: one prompt with -p; rpc: pi's RPC protocol on stdin/stdout")
        .choices(["text", "rpc"])
        .default("text"),
    )
    .addOption(new Option("-c, --continue", "continue the most recent session of this directory"))
    .addOption(new Option("--session <path|id>", "open a session file, or a session by id (a unique prefix will do)"))
    .addOption(new Option("--no-session", "write no session file (ephemeral)"))
    .addOption(new Option("-r, --resume", "pick one of this directory's sessions to resume (interactive mode only)"))
    .addOption(
      new Option(
        "--session-dir <dir>",
        "keep session files directly in this directory (default: $LIFELINE_DIR/sessions/<encoded cwd>/)",
      ),
    )
    .addOption(
      new Option(
        "-e, --extension <path>",
        "load an extension (.ts/.js file or directory, as pi's); repeatable",
      ).argParser((value: string, previous: string[] | undefined) => [...(previous ?? []), value]),
    )
    .addOption(new Option("--no-extensions", "ignore the extensions listed in settings files (-e still loads)"))
    .addOption(
      new Option(
        "--worker-entry <file>",
        "worker script to run the sessions in, such as an unpacked lifeline-worker.mjs (default: the package's own)",
      ).env("LIFELINE_WORKER_ENTRY"),
    )
    .addOption(
      new Option(
        "--fleet <redis-url>",
        "join the fleet on this Redis (fleet.redis): shared retry budget, gates, sessions and queue; see docs/fleet.md",
      ),
    )
    .addOption(new Option("--fleet-name <name>", 'the fleet\'s name on that Redis (fleet.name, default "default")'))
    .action(async (opts: ActionOptions) => {
      const interactive = process.stdin.isTTY === true && process.stdout.isTTY === true;
      const resumeProblem = opts.resume === true ? resumeUsageError(opts, interactive) : undefined;
      if (resumeProblem !== undefined) {
        process.stderr.write(`Error: ${resumeProblem}\n`);
        exitCode = 2;
        return;
      }
      if (opts.mode !== "rpc" && opts.print === undefined && !interactive) {
        program.outputHelp();
        return;
      }
      let model: string;
      let thinkingLevel: ThinkingLevel | undefined;
      try {
        ({ model, thinkingLevel } = cliThinking(modelName(opts.provider, opts.model), opts.thinking));
      } catch (error) {
        exitCode = reportError(error);
        return;
      }
      if (model.endsWith("/")) {
        process.stderr.write(`Error: --provider ${opts.provider} needs --model <id> as well.\n`);
        exitCode = 2;
        return;
      }
      const key = opts.apiKey === undefined ? {} : { apiKey: opts.apiKey };
      const flags: CliSessionFlags = {
        session: opts.session,
        sessionDir: opts.sessionDir,
        continue: opts.continue,
        resume: opts.resume,
        explicitModel: opts.provider !== undefined || opts.model !== undefined,
        thinkingLevel,
      };
      let sessions: SessionsOptions | false;
      try {
        sessions = await cliSessionsOption(flags);
      } catch (error) {
        process.stderr.write(`Error: ${errorText(error)}\n`);
        exitCode = 2;
        return;
      }
      const global = await hostOptionsOrExit(opts);
      if (typeof global === "number") {
        exitCode = global;
        return;
      }
      const host = { ...global, sessions };
      if (opts.mode === "rpc") exitCode = await runRpcMode({ model, ...key, host, sessionFlags: flags });
      else if (opts.print === undefined) {
        // Loaded only here: the terminal UI (pi-tui) costs startup time the other modes don't need.
        const { runInteractive } = await import("./tui/interactive-mode.js");
        exitCode = await runInteractive({ model, ...key, host, sessionFlags: flags });
      } else exitCode = await run({ text: opts.print, model, ...key, sessions, flags, host: global });
    });
  program
    .command("demo")
    .description("run the demo job: one session on the built-in demo model that fails, retries, recovers and answers")
    .action(async () => {
      const host = await hostOptionsOrExit(program.opts<HostFlags>());
      if (typeof host === "number") {
        exitCode = host;
        return;
      }
      exitCode = await run({
        text: DEMO_PROMPT,
        model: "demo/demo-1",
        sessions: false,
        flags: {},
        host,
        banner:
          `lifeline demo: prompt "${DEMO_PROMPT}" on demo/demo-1 (a built-in model in a worker thread; no key, no network).\n` +
          "The model fails twice with transient errors; the retry controller on the main thread backs off and retries.",
      });
    });
  addAuthCommand(program, (code) => {
    exitCode = code;
  });
  program
    .command("mock-server")
    .description("run the fault-injecting model server (OpenAI chat completions and Anthropic messages) until Ctrl+C")
    .addOption(new Option("--port <n>", "port to listen on (0 picks a free one)").default("0"))
    .addOption(new Option("--host <address>", "address to listen on").default("127.0.0.1"))
    .addOption(new Option("--script <file>", "fault script (JSON or JSONC), see docs/mock-server.md"))
    .action(async (opts: { port: string; host: string; script?: string }) => {
      exitCode = await mockServer(opts);
    });
  addLoadCommand(program, (code) => {
    exitCode = code;
  });
  addFleetCommands(program, {
    hostOptions: () => hostOptionsOrExit(program.opts<HostFlags>()),
    globalFlags: () => program.opts<HostFlags & { model?: string; session?: string | boolean }>(),
    setExitCode: (code) => {
      exitCode = code;
    },
  });
  addStoredSessionsCommands(program, (code) => {
    exitCode = code;
  });
  try {
    await program.parseAsync([...argv], { from: "user" });
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 2;
    throw error;
  }
  return exitCode;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`lifeline: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  },
);
