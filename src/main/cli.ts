#!/usr/bin/env node
import { quietOnClosedStdout, runCli } from "./cli/main.js";
import { processRuntime } from "./cli/runtime.js";
/**
 * The `lifeline` command: the command tree of cli/ run in this process. `lifeline --help`, and
 * docs/cli.md (generated from it), say what each command takes.
 */
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
