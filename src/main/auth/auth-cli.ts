/**
 * `lifeline auth add <provider>` / `list` / `remove <provider> [index]`: manages the keys of
 * `$LIFELINE_DIR/auth.json`. A key is read from stdin (piped) or a hidden prompt (a terminal),
 * never from argv, where other users can see it in the process list and shells keep it in history.
 * Exit codes: 0 done, 2 a usage problem (no key given, bad provider or index, nothing to remove,
 * a malformed or unwritable auth.json).
 */
import type { Command } from "commander";
import { LifelineError } from "../../shared/errors.js";
import { resolveLifelineDir } from "../config/settings-store.js";
import { FileAuthStorage, maskKey } from "./file-auth-storage.js";

/**
 * Adds the `auth` command to `program` (through `program.command`, so it inherits the program's
 * exit and output settings); `setExit` receives each subcommand's exit code.
 */
export function addAuthCommand(program: Command, setExit: (code: number) => void): void {
  const auth = program
    .command("auth")
    .description("manage API keys in $LIFELINE_DIR/auth.json (several per provider rotate on usage limits)");
  const storage = () => FileAuthStorage.inDir(resolveLifelineDir());
  auth
    .command("add")
    .description("add an API key for <provider>, read from stdin or a hidden prompt (never from the command line)")
    .argument("<provider>", 'provider id, like "openai" or a models.json provider')
    .action(async (provider: string) => {
      setExit(
        await guarded(async () => {
          const store = storage();
          const key = await readKey(provider);
          const index = await store.add(provider, key);
          process.stdout.write(`Added key ${index} for ${provider} (${maskKey(key.trim())}) to ${store.path}\n`);
          return 0;
        }),
      );
    });
  auth
    .command("list")
    .description("list stored keys, masked")
    .action(() =>
      guarded(async () => {
        const store = storage();
        const entries = store.list();
        if (entries.length === 0) process.stdout.write(`No keys in ${store.path}\n`);
        for (const entry of entries) {
          const index = entry.index < 0 ? "-" : String(entry.index);
          process.stdout.write(`${entry.provider}\t${index}\t${entry.type}\t${entry.masked}\n`);
        }
        return 0;
      }).then(setExit),
    );
  auth
    .command("remove")
    .description("remove <provider>'s key at [index] (see list), or all its keys")
    .argument("<provider>", "provider id")
    .argument("[index]", "0-based index from `lifeline auth list`")
    .action((provider: string, index: string | undefined) =>
      guarded(async () => {
        const store = storage();
        if (index !== undefined && !/^\d+$/.test(index)) {
          throw new LifelineError("ERR_INVALID_OPTIONS", `The index must be a whole number ≥ 0, not "${index}".`);
        }
        const removed = await store.remove(provider, index === undefined ? undefined : Number(index));
        if (removed === 0) {
          process.stderr.write(
            `Error: no ${index === undefined ? "key" : `key ${index}`} for ${provider} in ${store.path}; see \`lifeline auth list\`.\n`,
          );
          return 2;
        }
        process.stdout.write(`Removed ${removed} key${removed === 1 ? "" : "s"} of ${provider} from ${store.path}\n`);
        return 0;
      }).then(setExit),
    );
}

/** Runs a subcommand; a LifelineError is a usage problem (exit 2), reported on stderr. */
async function guarded(body: () => Promise<number>): Promise<number> {
  try {
    return await body();
  } catch (error) {
    if (!(error instanceof LifelineError)) throw error;
    process.stderr.write(`Error: ${error.message}\n`);
    return 2;
  }
}

/** The key from piped stdin (its first line), or typed at a hidden prompt on a terminal. */
async function readKey(provider: string): Promise<string> {
  const key = process.stdin.isTTY === true ? await promptHidden(`API key for ${provider}: `) : await readStdin();
  const trimmed = key.trim();
  if (trimmed === "") {
    throw new LifelineError(
      "ERR_INVALID_OPTIONS",
      `No key given for ${provider}. Pipe it in (for example: printenv OPENAI_API_KEY | lifeline auth add ${provider}) or type it at the prompt.`,
    );
  }
  return trimmed;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString("utf8");
  const lines = text.split(/\r?\n/).filter((line) => line.trim() !== "");
  if (lines.length > 1) {
    throw new LifelineError("ERR_INVALID_OPTIONS", "stdin holds more than one line; pipe in exactly one key.");
  }
  return lines[0] ?? "";
}

/** Reads a line from the terminal without echoing it. Ctrl+C cancels. */
function promptHidden(question: string): Promise<string> {
  const stdin = process.stdin;
  process.stderr.write(question);
  stdin.setRawMode(true);
  stdin.setEncoding("utf8");
  stdin.resume();
  return new Promise((resolve, reject) => {
    let value = "";
    const finish = () => {
      stdin.off("data", onData);
      stdin.setRawMode(false);
      stdin.pause();
      process.stderr.write("\n");
    };
    const onData = (chunk: string) => {
      for (const char of chunk) {
        if (char === "\r" || char === "\n") {
          finish();
          resolve(value);
          return;
        }
        if (char === "\u0003" || char === "\u0004") {
          finish();
          reject(new LifelineError("ERR_INVALID_OPTIONS", "Cancelled; no key was added."));
          return;
        }
        if (char === "\u007f" || char === "\b") value = value.slice(0, -1);
        else value += char;
      }
    };
    stdin.on("data", onData);
  });
}
