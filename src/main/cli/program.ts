/**
 * The `lifeline` command tree: every command, declared from the option groups (groups/), as one
 * commander program. docs/cli.md is this program's help, generated (npm run docs:cli) and checked
 * against it by a test.
 */
import type { Command } from "commander";
import type { CliContext } from "./cli-context.js";
import { buildProgram, type CommandSpec } from "./command-tree.js";
import { demoCommand } from "./commands/demo-command.js";
import { loadAgentCommand, serveCommand, submitCommand } from "./commands/fleet-commands.js";
import { loadCommand } from "./commands/load-commands.js";
import { rootCommand } from "./commands/root-command.js";
import { exportCommand, sessionsCommand } from "./commands/session-commands.js";
import { authCommand, mockServerCommand } from "./commands/tool-commands.js";

/** The command tree, root first. */
function commandTree(): CommandSpec<CliContext> {
  return rootCommand([
    demoCommand,
    authCommand,
    mockServerCommand,
    loadCommand,
    loadAgentCommand,
    serveCommand,
    submitCommand,
    exportCommand,
    sessionsCommand,
  ]);
}

/**
 * The commander program of the tree, for `context`; `report` receives the exit code of the
 * command that ran. Help and errors go to the process's stdout and stderr.
 */
export function lifelineProgram(context: CliContext, report: (code: number) => void): Command {
  const program = buildProgram(commandTree(), context, report);
  program
    .version(context.version, "-v, --version", "print lifeline's version and exit")
    .configureOutput({
      writeErr: (text) => process.stderr.write(text),
      writeOut: (text) => process.stdout.write(text),
    })
    .showSuggestionAfterError(true);
  return program;
}
