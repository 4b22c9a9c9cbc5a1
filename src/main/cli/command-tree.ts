/**
 * The CLI's commands as data (a tree of {@link CommandSpec}s) and the commander program built
 * from them. The rules of the options model (STYLE 21) live here, once:
 *
 * - A command takes whole option groups (groups/) plus flags of its own; each flag is one
 *   {@link Flag} declaration, registered on every command that takes it, so its `--help` lists
 *   every flag that applies to it, the global ones it uses included.
 * - A flag before the subcommand (`lifeline --fleet URL sessions`) and after it
 *   (`lifeline sessions --fleet URL`) are the same flag: the command reads its value from itself,
 *   else from the nearest command above it that was given the flag (commander's positional
 *   options keep each side with its command).
 * - A flag given on the command line to a command that does not take it, before the subcommand
 *   or after it, is refused with ERR_INVALID_OPTIONS naming the flag and the commands that take
 *   it (exit 2); nothing is ever silently ignored. The flags of the commands above (the global
 *   ones) are registered, hidden, on every command that does not take them, so that the refusal
 *   is this one and not commander's "unknown option". An environment variable that stands in for
 *   a flag (LIFELINE_API_KEY) is not a flag and is never refused.
 * - Every value is parsed by its flag's parser when the command runs, before anything starts.
 */
import { Command, type Option } from "commander";
import { LifelineError } from "../../shared/errors.js";
import { reportCliError, SESSION_USAGE_ERRORS } from "../config/cli-errors.js";
import { type Flag, type FlagValues, toOption } from "./flag.js";

/** A record of flags by the name the command reads them under. */
export type FlagRecord = Readonly<Record<string, Flag>>;

/** What a command's run is handed. */
interface CommandInput<F extends FlagRecord, C> {
  /** Every flag the command takes, parsed; undefined when not given. */
  flags: FlagValues<F>;
  /** The flags typed on the command line (not those an environment variable stood in for). */
  typed: ReadonlySet<keyof F>;
  /** The command's arguments as commander collected them, in declaration order. */
  args: readonly unknown[];
  /** Prints the command's help on stdout; returns 0, the exit code of a help. */
  help: () => number;
  context: C;
}

/** A command: its name, help, arguments, flags, run and subcommands. */
export interface CommandSpec<C, F extends FlagRecord = FlagRecord> {
  name: string;
  description: string;
  /** Commander's argument spellings (`"<text>"`, `"[messages...]"`) and their help. */
  args?: readonly { spelling: string; description: string }[];
  flags: F;
  /** This command's words for some of its flags, where the flag's own would mislead. */
  describe?: Partial<Record<keyof F & string, string>>;
  /** Resolves to the exit code; absent for a command that only holds subcommands (`auth`). */
  run?: (input: CommandInput<F, C>) => Promise<number>;
  subcommands?: readonly CommandSpec<C, FlagRecord>[];
}

/** Declares a command; keeps `F` for the run's typing. */
export function command<C, F extends FlagRecord>(spec: CommandSpec<C, F>): CommandSpec<C, FlagRecord> {
  return spec as unknown as CommandSpec<C, FlagRecord>;
}

/** The declaration behind each commander option the tree made. */
const declarations = new WeakMap<Option, Flag>();
/** The spec behind each commander command the tree made. */
const specs = new WeakMap<Command, CommandSpec<unknown>>();

/** Whether the command takes `flag` (the same declaration, not a namesake). */
function takes(spec: CommandSpec<unknown>, flag: Flag): boolean {
  return Object.values(spec.flags).includes(flag);
}

/**
 * Builds the commander program of `root`. `report` receives each run's exit code. The program
 * throws commander's errors (exitOverride) for the caller to map to exit codes.
 */
export function buildProgram<C>(root: CommandSpec<C>, context: C, report: (code: number) => void): Command {
  const program = new Command(root.name);
  build(program, root, [], context, report);
  return program;
}

function build<C>(
  target: Command,
  spec: CommandSpec<C>,
  above: readonly CommandSpec<C>[],
  context: C,
  report: (code: number) => void,
): void {
  specs.set(target, spec as CommandSpec<unknown>);
  target.description(spec.description).exitOverride();
  for (const arg of spec.args ?? []) target.argument(arg.spelling, arg.description);
  const own = Object.entries(spec.flags);
  for (const [name, flag] of own) {
    const description = (spec.describe as Record<string, string> | undefined)?.[name];
    target.addOption(register(flag, description === undefined ? {} : { description }));
  }
  // The flags of the commands above that this one does not take: hidden, to be refused by name.
  const spellings = new Set(target.options.flatMap((option) => [option.long, option.short]));
  const foreign = new Set(above.flatMap((parent) => Object.values(parent.flags)));
  for (const flag of foreign) {
    if (takes(spec as CommandSpec<unknown>, flag) || spellings.has(flag.long)) continue;
    const option = register(flag, { hidden: true });
    if (option.short !== undefined && spellings.has(option.short)) continue;
    target.addOption(option);
    spellings.add(option.long);
    if (option.short !== undefined) spellings.add(option.short);
  }
  if (spec.run !== undefined) {
    const run = spec.run;
    target.action(async (...params: unknown[]) => {
      const command = params[params.length - 1] as Command;
      try {
        const { values, typed } = readFlags(command);
        const help = () => {
          command.outputHelp();
          return 0;
        };
        const input = { flags: values, typed, args: command.processedArgs, context, help };
        report(await run(input as CommandInput<FlagRecord, C>));
      } catch (error) {
        // A command line that cannot become a request: a bad or foreign flag, bad settings, an
        // unknown model. The runs themselves never throw; they report their own errors.
        report(reportCliError(error, SESSION_USAGE_ERRORS));
      }
    });
  }
  if (spec.subcommands !== undefined && spec.subcommands.length > 0) {
    target.enablePositionalOptions();
    for (const sub of spec.subcommands) {
      const child = target.command(sub.name);
      build(child, sub, [...above, spec], context, report);
    }
  }
}

function register(flag: Flag, options: { description?: string; hidden?: boolean }): Option {
  const option = toOption(flag, options);
  declarations.set(option, flag);
  return option;
}

/** A command and the commands above it, root first. */
function lineage(command: Command): Command[] {
  const chain: Command[] = [];
  for (let current: Command | null = command; current !== null; current = current.parent) chain.unshift(current);
  return chain;
}

/** The full name of a command, `lifeline load merge`. */
export function commandPath(command: Command): string {
  return lineage(command)
    .map((each) => each.name())
    .join(" ");
}

/** Whether `option`'s value on `command` was given for `flag` (a `--no-…` flag owns only `false`). */
function givenFor(command: Command, flag: Flag, sources: readonly string[]): boolean {
  const source = command.getOptionValueSource(flag.attribute);
  if (source === undefined || !sources.includes(source)) return false;
  const value: unknown = command.getOptionValue(flag.attribute);
  if (flag.negate) return value === false;
  return value !== undefined && value !== false;
}

/**
 * The typed values of every flag `command` takes, its own before those given to the commands
 * above it.
 * @throws ERR_INVALID_OPTIONS for a flag given to the command line that the command does not
 *   take, or a value its parser refuses.
 */
function readFlags(command: Command): { values: Record<string, unknown>; typed: Set<string> } {
  const spec = specs.get(command);
  if (spec === undefined) throw new Error(`${command.name()} was not built by the command tree`);
  const chain = lineage(command);
  refuseForeign(command, spec, chain);
  const values: Record<string, unknown> = {};
  const typed = new Set<string>();
  for (const [name, flag] of Object.entries(spec.flags)) {
    const holder = [...chain].reverse().find((each) => registers(each, flag) && givenFor(each, flag, ["cli", "env"]));
    if (holder === undefined) continue;
    const raw: unknown = holder.getOptionValue(flag.attribute);
    values[name] = parseValue(flag, raw);
    if (holder.getOptionValueSource(flag.attribute) === "cli") typed.add(name);
  }
  return { values, typed };
}

function registers(command: Command, flag: Flag): boolean {
  return command.options.some((option) => declarations.get(option) === flag && !isHidden(option));
}

function isHidden(option: Option): boolean {
  return (option as Option & { hidden?: boolean }).hidden === true;
}

function parseValue(flag: Flag, raw: unknown): unknown {
  if (flag.boolean) return flag.parse("", flag.long);
  if (flag.repeatable) return (raw as string[]).flatMap((each) => flag.parse(each, flag.long) as unknown[]);
  return flag.parse(raw === true ? "" : String(raw), flag.long);
}

/** @throws ERR_INVALID_OPTIONS for the first flag typed for `command` that it does not take. */
function refuseForeign(command: Command, spec: CommandSpec<unknown>, chain: readonly Command[]): void {
  for (const holder of chain) {
    for (const option of holder.options) {
      const flag = declarations.get(option);
      if (flag === undefined || takes(spec, flag) || !givenFor(holder, flag, ["cli"])) continue;
      const takers = takersOf(chain[0] as Command, flag);
      const where = takers.length === 0 ? "" : ` It applies to: ${takers.join(", ")}.`;
      throw new LifelineError(
        "ERR_INVALID_OPTIONS",
        `${flag.long} does not apply to \`${commandPath(command)}\`; leave it out.${where}`,
      );
    }
  }
}

/** The full names of the commands under `root` that take `flag`. */
function takersOf(root: Command, flag: Flag): string[] {
  const found: string[] = [];
  const visit = (command: Command) => {
    const spec = specs.get(command);
    if (spec?.run !== undefined && takes(spec, flag)) found.push(commandPath(command));
    for (const child of command.commands) visit(child);
  };
  visit(root);
  return found;
}
