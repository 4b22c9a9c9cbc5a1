// Writes docs/cli.md's reference (every command's --help, from the built program) below the
// page's hand-written introduction. Run by `npm run docs:cli` after changing a command or a flag;
// test/main/cli/cli-reference.test.ts fails until the page matches the program.
import { readFileSync, writeFileSync } from "node:fs";

const { REFERENCE_MARKER, cliReference } = await import("../dist/main/cli/cli-reference.js");
const page = new URL("../docs/cli.md", import.meta.url);
const text = readFileSync(page, "utf8");
const at = text.indexOf(REFERENCE_MARKER);
if (at < 0) throw new Error(`docs/cli.md lacks the marker line ${REFERENCE_MARKER}`);
const context = { cwd: process.cwd(), lifelineDir: "", terminal: false, version: "", runtime: {} };
writeFileSync(page, `${text.slice(0, at + REFERENCE_MARKER.length)}\n\n${cliReference(context)}`);
