/**
 * The runs of `lifeline auth add <provider>` / `list` / `remove <provider> [index]`: the keys of
 * `$LIFELINE_DIR/auth.json`. A key is read from stdin (piped) or a hidden prompt (a terminal),
 * never from argv, where other users can see it in the process list and shells keep it in history.
 * Exit codes: 0 done, 2 a usage problem (no key given, bad provider or index, nothing to remove,
 * a malformed or unwritable auth.json).
 */
import { LifelineError } from "../../shared/errors.js";
import { cliErrorLine } from "../config/cli-errors.js";
import { FileAuthStorage, maskKey } from "./file-auth-storage.js";

/** What `lifeline auth add|list|remove` runs. */
export type AuthCommandRequest =
  | { action: "add"; provider: string; lifelineDir: string }
  | { action: "list"; lifelineDir: string }
  | { action: "remove"; provider: string; index?: number; lifelineDir: string };

/** Runs an `auth` subcommand; resolves to the exit code. Never throws a LifelineError. */
export function runAuthCommand(request: AuthCommandRequest): Promise<number> {
  const store = FileAuthStorage.inDir(request.lifelineDir);
  switch (request.action) {
    case "add":
      return guarded(async () => {
        const key = await readKey(request.provider);
        const index = await store.add(request.provider, key);
        process.stdout.write(`Added key ${index} for ${request.provider} (${maskKey(key.trim())}) to ${store.path}\n`);
        return 0;
      });
    case "list":
      return guarded(async () => {
        const entries = store.list();
        if (entries.length === 0) process.stdout.write(`No keys in ${store.path}\n`);
        for (const entry of entries) {
          const index = entry.index < 0 ? "-" : String(entry.index);
          process.stdout.write(`${entry.provider}\t${index}\t${entry.type}\t${entry.masked}\n`);
        }
        return 0;
      });
    case "remove":
      return guarded(async () => {
        const { provider, index } = request;
        const removed = await store.remove(provider, index);
        if (removed === 0) {
          process.stderr.write(
            `Error: no ${index === undefined ? "key" : `key ${index}`} for ${provider} in ${store.path}; see \`lifeline auth list\`.\n`,
          );
          return 2;
        }
        process.stdout.write(`Removed ${removed} key${removed === 1 ? "" : "s"} of ${provider} from ${store.path}\n`);
        return 0;
      });
    default:
      return request satisfies never;
  }
}

/** Runs a subcommand; a LifelineError is a usage problem (exit 2), reported on stderr. */
async function guarded(body: () => Promise<number>): Promise<number> {
  try {
    return await body();
  } catch (error) {
    if (!(error instanceof LifelineError)) throw error;
    process.stderr.write(`${cliErrorLine(error)}\n`);
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
