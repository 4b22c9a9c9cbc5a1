#!/usr/bin/env node
/**
 * The `lifeline` command: runs the command tree of cli/ on this process's arguments, working
 * directory, lifeline directory and terminal, and sets the exit code it returns (1, with the
 * stack on stderr, for an error nothing below caught). What each command takes is said once, by
 * the commands themselves: `lifeline --help`, and docs/cli.md generated from it.
 */
import { quietOnClosedStdout, runCli } from "./cli/main.js";
import { processRuntime } from "./cli/runtime.js";
import { resolveLifelineDir } from "./config/lifeline-dir.js";
import { lifelineVersion } from "./config/lifeline-version.js";

quietOnClosedStdout();
runCli(process.argv.slice(2), {
  cwd: process.cwd(),
  lifelineDir: resolveLifelineDir(),
  terminal: process.stdin.isTTY === true && process.stdout.isTTY === true,
  version: lifelineVersion(),
  runtime: processRuntime,
}).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`lifeline: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  },
);
