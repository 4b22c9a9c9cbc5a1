/**
 * `lifeline` itself: the modes that talk to one session, as pi's CLI has them.
 *
 *   lifeline [flags]                     on a terminal: the interactive session (tui/)
 *   lifeline [flags] "text" ["more" …]   on a terminal: the same, these prompts sent first;
 *                                        without one: print mode, as -p
 *   lifeline -p [flags] "text" […]       print mode (host/print-mode.ts): the prompts in order,
 *                                        the last answer on stdout, progress on stderr; the
 *                                        prompt may follow -p (pi's `-p "text"`) or stand
 *                                        anywhere (pi's `-p --model m "text"`), or come on stdin
 *   lifeline --mode rpc [flags]          pi's RPC protocol on stdin/stdout (rpc/rpc-mode.ts)
 *   lifeline --mode host [flags]         many sessions over one connection: stdin/stdout, or each
 *                                        client of --socket / --listen (rpc/host/host-mode.ts)
 *
 * Without a terminal and without a prompt, it prints its help. Exit codes: 0 answered; 1 a prompt
 * failed (final error on stderr); 2 bad usage, settings, models.json, unknown model or missing
 * key, an extension that cannot be loaded, or a session that cannot be opened; 130 interrupted
 * (SIGINT), 143 terminated (SIGTERM): both abort the prompt and close the session file first.
 */

import type { HostModeOptions } from "../../rpc/host/host-mode.js";
import { parseTcpAddress, type TcpAddress } from "../../rpc/host/tcp-address.js";
import type { CliContext } from "../cli-context.js";
import { type CommandSpec, command } from "../command-tree.js";
import { switchFlag, textFlag, valueFlag } from "../flag.js";
import { oneOf, usage } from "../flag-values.js";
import { sessionHostFlags, sessionHostOptions } from "../groups/host-flags.js";
import { keyFlags, modelFlags, resolveModelFlags } from "../groups/model-flags.js";
import { resumeUsageError, sessionFlags, sessionsOption } from "../groups/session-flags.js";

/** The mode flags: only `lifeline` itself takes them. */
const modeFlags = {
  print: textFlag(
    "-p, --print [text]",
    "print mode: send the prompt (here, after the flags, or on stdin), print the answer and exit",
  ),
  mode: valueFlag(
    "--mode <mode>",
    "text (the terminal, or -p), rpc (pi's RPC protocol on stdin/stdout) or host (many sessions per connection)",
    oneOf(["text", "rpc", "host"] as const),
    {
      defaultText: "text",
    },
  ),
} as const;

/** Where `--mode host` serves besides stdio: only that mode takes them. */
const hostModeFlags = {
  socket: textFlag(
    "--socket <path>",
    "--mode host: serve each client of this Unix socket (mode 0600) instead of stdio",
  ),
  listen: valueFlag(
    "--listen <host:port>",
    "--mode host: serve each TCP client of this address (loopback; port 0 for any), after the token",
    (raw) => parseTcpAddress(raw),
  ),
  tokenFile: textFlag("--token-file <path>", "--mode host --listen: where the token and port are written (mode 0600)"),
  allowRemote: switchFlag("--allow-remote", "--mode host --listen: accept an address that is not loopback"),
} as const;

/** `lifeline`, with `subcommands` under it. */
export function rootCommand(subcommands: readonly CommandSpec<CliContext>[]): CommandSpec<CliContext> {
  return command<CliContext, typeof rootFlags>({
    name: "lifeline",
    description: "Run LLM agent sessions in worker threads, with auto-retry supervised from the main thread.",
    args: [{ spelling: "[messages...]", description: "prompts to send, in order (print mode without a terminal)" }],
    flags: rootFlags,
    subcommands,
    run: async ({ flags, args, context, help }) => {
      const messages = [
        ...(flags.print !== undefined && flags.print !== "" ? [flags.print] : []),
        ...((args[0] as string[] | undefined) ?? []),
      ];
      const positional = (args[0] as string[] | undefined) ?? [];
      const meant = positional.length === 1 ? commandLike(positional[0] ?? "", subcommands) : undefined;
      if (meant !== undefined && flags.print === undefined) {
        usage(
          `"${positional[0]}" is not a command; did you mean \`lifeline ${meant}\`? To send it as a prompt, use -p "${positional[0]}".`,
        );
      }
      const hostMode = flags.mode === "host";
      const rpc = flags.mode === "rpc" || hostMode;
      const print = flags.print !== undefined || (!rpc && messages.length > 0 && !context.terminal);
      if (rpc && (flags.print !== undefined || messages.length > 0)) {
        usage(`--mode ${flags.mode} takes its prompts as commands on stdin; leave -p and the prompt text out.`);
      }
      const listening = hostListening(flags, hostMode);
      if (flags.resume === true) {
        const problem = resumeUsageError(flags, { print, rpc, terminal: context.terminal });
        if (problem !== undefined) usage(problem);
      }
      if (!rpc && !print && !context.terminal) return help();
      const choice = await resolveModelFlags(flags, context);
      const host = { ...(await sessionHostOptions(flags, context)), sessions: await sessionsOption(flags, context) };
      const key = flags.apiKey === undefined ? {} : { apiKey: flags.apiKey };
      const sessionFlagValues = {
        ...(flags.session === undefined ? {} : { session: flags.session }),
        ...(flags.continue === true ? { continue: true } : {}),
        ...(flags.resume === true ? { resume: true } : {}),
        explicitModel: choice.explicit,
        ...(choice.thinkingLevel === undefined ? {} : { thinkingLevel: choice.thinkingLevel }),
      };
      if (hostMode) return context.runtime.host({ model: choice.model, ...key, host, ...listening });
      if (rpc) return context.runtime.rpc({ model: choice.model, ...key, host, sessionFlags: sessionFlagValues });
      if (print) {
        return context.runtime.print({ messages, model: choice.model, ...key, flags: sessionFlagValues, host });
      }
      return context.runtime.interactive({
        model: choice.model,
        ...key,
        host,
        sessionFlags: sessionFlagValues,
        ...(messages.length === 0 ? {} : { initialMessages: messages }),
      });
    },
  });
}

/**
 * `--mode host`'s listening flags as its options; refused in another mode, where they would mean
 * nothing, and when they do not fit together.
 */
function hostListening(
  flags: {
    socket?: string | undefined;
    listen?: TcpAddress | undefined;
    tokenFile?: string | undefined;
    allowRemote?: boolean | undefined;
    session?: string | undefined;
    continue?: boolean | undefined;
    resume?: boolean | undefined;
  },
  hostMode: boolean,
): Pick<HostModeOptions, "socket" | "listen" | "tokenFile" | "allowRemote"> {
  const given = (["socket", "listen", "tokenFile", "allowRemote"] as const).filter((name) => flags[name] !== undefined);
  const spelled = { socket: "--socket", listen: "--listen", tokenFile: "--token-file", allowRemote: "--allow-remote" };
  if (!hostMode) {
    if (given.length > 0) usage(`${given.map((name) => spelled[name]).join(", ")} only apply to --mode host.`);
    return {};
  }
  if (flags.session !== undefined || flags.continue === true || flags.resume === true) {
    usage("--mode host opens sessions by command (open_session, resume_session); leave -c, -r and --session out.");
  }
  if (flags.socket !== undefined && flags.listen !== undefined) usage("--socket and --listen: choose one.");
  if (flags.listen === undefined && (flags.tokenFile !== undefined || flags.allowRemote === true)) {
    usage("--token-file and --allow-remote go with --listen.");
  }
  if (flags.listen !== undefined && flags.tokenFile === undefined) {
    usage(
      "--listen needs --token-file <path>: the token clients send first is written there (mode 0600), never to stdout.",
    );
  }
  return {
    ...(flags.socket === undefined ? {} : { socket: flags.socket }),
    ...(flags.listen === undefined ? {} : { listen: flags.listen }),
    ...(flags.tokenFile === undefined ? {} : { tokenFile: flags.tokenFile }),
    ...(flags.allowRemote === true ? { allowRemote: true } : {}),
  };
}

/**
 * The command a lone word was probably meant to be (`sesions`: `sessions`): one edit away from a
 * command's name, or two from a name of six letters or more; undefined for anything else, which
 * is a prompt, as in pi.
 */
function commandLike(word: string, commands: readonly CommandSpec<CliContext>[]): string | undefined {
  if (!/^[a-z][a-z-]{2,}$/.test(word)) return undefined;
  return commands
    .map((each) => each.name)
    .find((name) => name !== word && editDistance(word, name) <= (name.length >= 6 ? 2 : 1));
}

/** Levenshtein distance, for short words. */
function editDistance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      next[j] = Math.min(
        (row[j] ?? 0) + 1,
        (next[j - 1] ?? 0) + 1,
        (row[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    }
    row = next;
  }
  return row[b.length] ?? 0;
}

const rootFlags = {
  ...modeFlags,
  ...hostModeFlags,
  ...modelFlags,
  ...keyFlags,
  ...sessionFlags,
  ...sessionHostFlags,
} as const;
