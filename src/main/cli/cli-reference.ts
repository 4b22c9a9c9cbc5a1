/**
 * docs/cli.md's reference: every command's `--help`, as commander prints it, at a fixed width.
 * `npm run docs:cli` writes it below the page's hand-written introduction; a test fails when the
 * page and the program disagree, so the help is the one source of the usage text.
 */
import type { Command } from "commander";
import type { CliContext } from "./cli-context.js";
import { commandPath } from "./command-tree.js";
import { lifelineProgram } from "./program.js";

/** The line that ends docs/cli.md's introduction; what follows it is generated. */
export const REFERENCE_MARKER =
  "<!-- Generated from `lifeline --help` by `npm run docs:cli`: edit the commands, not this part. -->";

/** The help width of the reference, so that the page does not depend on a terminal. */
const WIDTH = 100;

/** Every command's help, root first, as markdown sections. */
export function cliReference(context: CliContext): string {
  const program = lifelineProgram(context, () => {});
  const sections: string[] = [];
  const visit = (command: Command) => {
    command.configureHelp({ helpWidth: WIDTH });
    sections.push(`## \`${commandPath(command)}\`\n\n\`\`\`text\n${command.helpInformation().trimEnd()}\n\`\`\`\n`);
    for (const child of command.commands) visit(child);
  };
  visit(program);
  return sections.join("\n");
}
