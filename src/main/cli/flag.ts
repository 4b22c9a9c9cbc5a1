/**
 * One CLI flag, declared once (STYLE 21): its commander spelling, its help text, its default as
 * help shows it, and the parser that turns what the user typed into the typed value the library
 * takes. Option groups (groups/) are records of these; a command takes whole groups, and every
 * command that takes a group reads its flags through the same declaration, so a flag means the
 * same everywhere it is accepted.
 *
 * A flag's identity is its declaration object, not its name: `load --seed` (the mock's fault
 * PRNG) and `load compare --seed` (the bootstrap's) are two flags, and a value given to one never
 * reaches the other (see command-tree.ts).
 */
import { Option } from "commander";

/**
 * Turns what the user typed into the flag's typed value; a `[value]` left out arrives as `""`.
 * @throws ERR_INVALID_OPTIONS naming `flag` (the long name) and what it allows.
 */
export type FlagParser<T> = (raw: string, flag: string) => T;

/** A declared flag; `T` is the type of its value once parsed. */
export interface Flag<T = unknown> {
  /** Commander's spelling: `"--timeout <duration>"`, `"-c, --continue"`, `"--no-session"`. */
  readonly flags: string;
  /** The long name, `--timeout`: what messages call the flag. */
  readonly long: string;
  /** Commander's attribute for the value (`--no-session` shares `session` with `--session`). */
  readonly attribute: string;
  /** `--no-…`: its value is `false` when given. */
  readonly negate: boolean;
  /** A bare switch: its value is `true` (or `false` for `--no-…`) when given. */
  readonly boolean: boolean;
  /** The flag may be given many times; the values are collected in order. */
  readonly repeatable: boolean;
  readonly description: string;
  /** The default as help prints it, `(default: …)`; the value itself lives in the library's defaults. */
  readonly defaultText?: string;
  /** An environment variable that stands in for the flag (never refused: it is not a flag). */
  readonly env?: string;
  readonly parse: FlagParser<T>;
}

interface FlagExtras {
  defaultText?: string;
  env?: string;
  repeatable?: boolean;
}

/** A flag that takes a value, parsed by `parse`. */
export function valueFlag<T>(
  flags: string,
  description: string,
  parse: FlagParser<T>,
  extras: FlagExtras = {},
): Flag<T> {
  return declare(flags, description, parse, extras);
}

/** A flag that takes a text as given. */
export function textFlag(flags: string, description: string, extras: FlagExtras = {}): Flag<string> {
  return declare(flags, description, (raw) => raw, extras);
}

/**
 * A switch: `true` when given, whatever its spelling; the name a command reads it under says what
 * it means (`--no-session` is read as `noSession: true`).
 */
export function switchFlag(flags: string, description: string, extras: FlagExtras = {}): Flag<boolean> {
  return declare(flags, description, () => true, extras);
}

/** A repeatable flag: each value parsed by `parse`, in the order given. */
export function listFlag<T>(
  flags: string,
  description: string,
  parse: FlagParser<T>,
  extras: FlagExtras = {},
): Flag<T[]> {
  const each: FlagParser<T[]> = (raw, flag) => [parse(raw, flag)];
  return declare(flags, description, each, { ...extras, repeatable: true });
}

function declare<T>(flags: string, description: string, parse: FlagParser<T>, extras: FlagExtras): Flag<T> {
  const long = longOf(flags);
  const negate = long.startsWith("--no-");
  const plain = long.replace(/^--(no-)?/, "");
  const flag: Flag<T> = {
    flags,
    long,
    attribute: plain.replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase()),
    negate,
    boolean: !/[<[]/.test(flags),
    repeatable: extras.repeatable === true,
    description,
    parse,
  };
  return Object.freeze({
    ...flag,
    ...(extras.defaultText === undefined ? {} : { defaultText: extras.defaultText }),
    ...(extras.env === undefined ? {} : { env: extras.env }),
  });
}

function longOf(flags: string): string {
  const long = /--[a-z][a-z0-9-]*/.exec(flags)?.[0];
  if (long === undefined) throw new Error(`A flag needs a long name: ${flags}`);
  return long;
}

/**
 * The commander option of `flag`, as one command shows it: `description` replaces the flag's own
 * help, default included, where a command says it in its own words; `hidden` ones are registered
 * only to be refused by name (command-tree.ts). Defaults are printed in one style,
 * `(default: …)`, and never given to commander, so a value's source is "cli" exactly when the
 * user typed it.
 */
export function toOption(flag: Flag, options: { description?: string; hidden?: boolean } = {}): Option {
  const own = flag.defaultText === undefined ? flag.description : `${flag.description} (default: ${flag.defaultText})`;
  const option = new Option(flag.flags, options.description ?? own);
  if (flag.env !== undefined) option.env(flag.env);
  if (flag.repeatable)
    option.argParser((value: string, previous: string[] | undefined) => [...(previous ?? []), value]);
  if (options.hidden === true) option.hideHelp();
  return option;
}

/** What a command's flags parse to: each flag's typed value, undefined when not given. */
export type FlagValues<F extends Record<string, Flag>> = {
  [K in keyof F]: F[K] extends Flag<infer T> ? T | undefined : never;
};
