// Types of scripts/test-prereqs.mjs, for the tests that import it.

/** One thing the tests need from Debian's packages. */
export interface Prerequisite {
  /** What the tests call: a program, or a shared library's soname. */
  name: string;
  /** The tier of the tests that need it: the file-name suffix, as "tmux" for *.tmux.test.ts. */
  tier: string;
  /** Which tests need it, for the message. */
  neededBy: string;
  /** Debian's package that provides it. */
  debianPackage: string;
  present(): boolean;
}

export interface Command {
  program: string;
  args: string[];
  env?: Record<string, string>;
}

export type Plan =
  | { action: "none" }
  | { action: "install"; packages: string[]; commands: Command[] }
  | { action: "stop"; message: string };

export interface System {
  root: boolean;
  aptGet: boolean;
  run(command: Command): unknown;
  log(line: string): void;
}

export function commandRuns(program: string, args: string[]): boolean;
export function sharedLibraryKnown(soname: string): boolean;
export const PREREQUISITES: Prerequisite[];
export function installCommand(packages: string[]): string;
export function missingMessage(prerequisites: Prerequisite | Prerequisite[]): string;
export function plan(missing: Prerequisite[], system: Pick<System, "root" | "aptGet">): Plan;
export function requirePrerequisites(tier: string, prerequisites?: Prerequisite[]): void;
export const thisSystem: System;
export function provision(
  prerequisites?: Prerequisite[],
  system?: System,
): { ok: true } | { ok: false; message: string };
