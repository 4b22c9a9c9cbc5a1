#!/usr/bin/env node
/**
 * The `lifeline` command.
 *
 *   lifeline [--provider P] [--model M]              on a terminal: the interactive session (tui/)
 *            [--thinking L]                          (any mode with a session: its thinking level;
 *                                                    or --model provider/id:L, as pi)
 *   lifeline -p "text" [--provider P] [--model M] [--api-key K]   one prompt (host/print-mode.ts); answer on stdout,
 *                                                               retry progress on stderr
 *   lifeline demo                                    the demo job behind `npm start`
 *   lifeline --mode rpc [--provider P] [--model M]   pi's RPC protocol on stdin/stdout (rpc/rpc-mode.ts)
 *   lifeline mock-server [--port N] [--script F]     the fault-injecting model server, until Ctrl+C (mock-server/mock-server-cli.ts)
 *   lifeline auth add|list|remove                    keys in $LIFELINE_DIR/auth.json (auth/auth-cli.ts)
 *   lifeline load --sessions N --prompts M [...]     a load test with reports (load/load-cli.ts); with
 *                 --fleet URL --generators K         the coordinator of a distributed run (load-fleet/)
 *   lifeline load-agent --fleet URL [--once]         a generator of distributed runs (load-fleet/load-fleet-cli.ts)
 *   lifeline load merge A B [...] --out C            merge load reports into one (load/merge-cli.ts)
 *   lifeline load compare A B [--threshold E]       two runs' reports side by side, with verdicts (load/compare-cli.ts)
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
import { Command, CommanderError, Option } from "commander";
import { runMockServerCommand } from "../mock-server/mock-server-cli.js";
import { errorText } from "../shared/error-text.js";
import { THINKING_LEVELS, type ThinkingLevel } from "../shared/thinking.js";
import { addAuthCommand } from "./auth/auth-cli.js";
import { reportCliError } from "./config/cli-errors.js";
import { resolveLifelineDir } from "./config/settings-store.js";
import { cliExtensionPaths } from "./extensions/extensions-cli.js";
import { resolveExtensions } from "./extensions/resolve-extensions.js";
import { type FleetFlags, fleetFromFlags } from "./fleet/fleet-flags.js";
import type { SessionHostOptions } from "./host/host-options.js";
import { runPrintMode, SESSION_USAGE_ERRORS } from "./host/print-mode.js";
import { type CliSessionFlags, cliSessionsOption, cliThinking, resumeUsageError } from "./host/sessions-cli.js";
import { addStoredSessionsCommands } from "./host/stored-sessions-cli.js";
import { addLoadCommand } from "./load/load-cli.js";
import { addLoadAgentCommand, runDistributedLoad } from "./load-fleet/load-fleet-cli.js";
import { runRpcMode } from "./rpc/rpc-mode.js";
import { addFleetCommands } from "./serve/serve-cli.js";
import type { SessionsOptions } from "./session-files/session-persistence.js";

const DEMO_PROMPT = "Say hello to lifeline.";

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
    return reportCliError(error, SESSION_USAGE_ERRORS);
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
        exitCode = reportCliError(error, SESSION_USAGE_ERRORS);
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
      } else exitCode = await runPrintMode({ text: opts.print, model, ...key, sessions, flags, host: global });
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
      exitCode = await runPrintMode({
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
      exitCode = await runMockServerCommand(opts);
    });
  addLoadCommand(
    program,
    (code) => {
      exitCode = code;
    },
    runDistributedLoad,
  );
  addLoadAgentCommand(
    program,
    (code) => {
      exitCode = code;
    },
    () => program.opts<HostFlags & { apiKey?: string }>(),
  );
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
