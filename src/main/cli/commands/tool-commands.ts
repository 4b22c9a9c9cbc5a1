/**
 * The commands that run no session: `lifeline auth add|list|remove` (the keys of
 * `$LIFELINE_DIR/auth.json`; a key is read from stdin or a hidden prompt, never from argv) and
 * `lifeline mock-server` (the fault-injecting model server, until Ctrl+C). They take no global
 * flag; one given is refused.
 */
import { resolve } from "node:path";
import type { CliContext } from "../cli-context.js";
import { command } from "../command-tree.js";
import { textFlag, valueFlag } from "../flag.js";
import { nonBlank, port, usage } from "../flag-values.js";

/** `lifeline auth` and its subcommands. */
export const authCommand = command<CliContext, Record<string, never>>({
  name: "auth",
  description: "manage API keys in $LIFELINE_DIR/auth.json (several per provider rotate on usage limits)",
  flags: {},
  subcommands: [
    command<CliContext, Record<string, never>>({
      name: "add",
      description: "add an API key for <provider>, read from stdin or a hidden prompt (never from the command line)",
      args: [{ spelling: "<provider>", description: 'provider id, like "openai" or a models.json provider' }],
      flags: {},
      run: ({ args, context }) =>
        context.runtime.auth({ action: "add", provider: args[0] as string, lifelineDir: context.lifelineDir }),
    }),
    command<CliContext, Record<string, never>>({
      name: "list",
      description: "list stored keys, masked",
      flags: {},
      run: ({ context }) => context.runtime.auth({ action: "list", lifelineDir: context.lifelineDir }),
    }),
    command<CliContext, Record<string, never>>({
      name: "remove",
      description: "remove <provider>'s key at [index] (see list), or all its keys",
      args: [
        { spelling: "<provider>", description: "provider id" },
        { spelling: "[index]", description: "0-based index from `lifeline auth list`" },
      ],
      flags: {},
      run: async ({ args, context }) => {
        const [provider, index] = args as [string, string | undefined];
        if (index !== undefined && !/^\d+$/.test(index)) usage(`The index must be a whole number ≥ 0, not "${index}".`);
        return context.runtime.auth({
          action: "remove",
          provider,
          ...(index === undefined ? {} : { index: Number(index) }),
          lifelineDir: context.lifelineDir,
        });
      },
    }),
  ],
});

const mockServerFlags = {
  port: valueFlag("--port <n>", "port to listen on, 0 for any free one", port, { defaultText: "0" }),
  host: valueFlag("--host <address>", "address to listen on", nonBlank, { defaultText: "127.0.0.1" }),
  script: textFlag("--script <file>", "fault script (JSON or JSONC), see docs/mock-server.md"),
} as const;

/** `lifeline mock-server`. */
export const mockServerCommand = command<CliContext, typeof mockServerFlags>({
  name: "mock-server",
  description: "run the fault-injecting model server (OpenAI chat completions and Anthropic messages) until Ctrl+C",
  flags: mockServerFlags,
  run: ({ flags, context }) =>
    context.runtime.mockServer({
      port: flags.port ?? 0,
      host: flags.host ?? "127.0.0.1",
      ...(flags.script === undefined ? {} : { script: resolve(context.cwd, flags.script) }),
    }),
});
