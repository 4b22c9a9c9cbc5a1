#!/usr/bin/env node
/**
 * The `lifeline` command.
 *
 *   lifeline -p "text" [--provider P] [--model M]   one prompt; answer on stdout, retry progress on stderr
 *   lifeline demo                                    the demo job behind `npm start`
 *
 * Exit codes: 0 answered; 1 the prompt failed (final error on stderr); 2 bad usage or settings;
 * 130 interrupted.
 */
import type { AssistantMessage } from "@mariozechner/pi-ai";
import { Command, CommanderError, Option } from "commander";
import { isFailedStop } from "../shared/classify.js";
import { LifelineError } from "../shared/errors.js";
import type { PromptResult, SessionEvent } from "../shared/events.js";
import { createSessionHost } from "./session-host.js";

const DEMO_PROMPT = "Say hello to lifeline.";

interface RunOptions {
  text: string;
  model: string;
  banner?: string;
}

/** Whole seconds, rounded up as pi's loader counts them; short delays in ms so they don't read as 1s. */
function formatDelay(ms: number): string {
  return ms < 1000 ? `${ms}ms` : `${Math.ceil(ms / 1000)}s`;
}

/** One line of stderr progress for an event, or undefined for events the CLI does not show. */
export function progressLine(event: SessionEvent): string | undefined {
  switch (event.type) {
    case "auto_retry_start":
      return `Retrying (${event.attempt}/${event.maxAttempts}) in ${formatDelay(event.delayMs)}… after: ${event.errorMessage}`;
    case "auto_retry_end":
      if (event.success) return `Recovered after ${event.attempt} ${event.attempt === 1 ? "retry" : "retries"}.`;
      return `Retry failed after ${event.attempt} attempts: ${event.finalError ?? "Unknown error"}`;
    case "compaction_start":
      return `Context overflow: ${event.errorMessage} (not retried)`;
    case "worker_exited":
      return `Worker exited: ${event.error.message}`;
    default:
      return undefined;
  }
}

function answerText(message: AssistantMessage | undefined): string {
  if (message === undefined) return "";
  return message.content.map((block) => (block.type === "text" ? block.text : "")).join("");
}

async function run(options: RunOptions): Promise<number> {
  const host = createSessionHost({ threads: 1 });
  let interrupted = false;
  try {
    if (options.banner !== undefined) process.stderr.write(`${options.banner}\n`);
    const session = await host.createSession({ model: options.model });
    session.subscribe((event) => {
      const line = progressLine(event);
      if (line !== undefined) process.stderr.write(`${line}\n`);
    });
    const onSignal = () => {
      interrupted = true;
      void session.abort();
    };
    process.once("SIGINT", onSignal);
    let result: PromptResult;
    try {
      result = await session.prompt(options.text);
    } finally {
      process.off("SIGINT", onSignal);
    }
    if (interrupted) return 130;
    if (isFailedStop(result.stopReason)) {
      process.stderr.write(`Error: ${result.errorMessage ?? result.stopReason}\n`);
      return 1;
    }
    process.stdout.write(`${answerText(result.message)}\n`);
    return 0;
  } catch (error) {
    process.stderr.write(`Error: ${error instanceof Error ? error.message : String(error)}\n`);
    if (
      error instanceof LifelineError &&
      ["ERR_INVALID_SETTINGS", "ERR_INVALID_OPTIONS", "ERR_UNKNOWN_MODEL"].includes(error.code)
    ) {
      return 2;
    }
    return 1;
  } finally {
    await host.close();
  }
}

function modelName(provider: string | undefined, model: string | undefined): string {
  if (model?.includes("/") && provider === undefined) return model;
  return `${provider ?? "demo"}/${model ?? (provider === undefined || provider === "demo" ? "demo-1" : "")}`;
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
    .addOption(new Option("--model <id>", 'model id, or "provider/id"'))
    .action(async (opts: { print?: string; provider?: string; model?: string }) => {
      if (opts.print === undefined) {
        program.outputHelp();
        return;
      }
      const model = modelName(opts.provider, opts.model);
      if (model.endsWith("/")) {
        process.stderr.write(`Error: --provider ${opts.provider} needs --model <id> as well.\n`);
        exitCode = 2;
        return;
      }
      exitCode = await run({ text: opts.print, model });
    });
  program
    .command("demo")
    .description("run the demo job: one session on the built-in demo model that fails, retries, recovers and answers")
    .action(async () => {
      exitCode = await run({
        text: DEMO_PROMPT,
        model: "demo/demo-1",
        banner:
          `lifeline demo: prompt "${DEMO_PROMPT}" on demo/demo-1 (a built-in model in a worker thread; no key, no network).\n` +
          "The model fails twice with transient errors; the retry controller on the main thread backs off and retries.",
      });
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
