/**
 * `lifeline --mode rpc`: one session driven over stdin/stdout in pi's RPC protocol
 * (rpc-protocol.ts, docs/rpc.md), with the fixes its users asked for: `agent_settled` as a
 * reliable completion signal, and the retry state in `get_state` (B4).
 *
 * This file is the process around the protocol: stdout carries protocol records only (the real
 * stdout is taken over at start, so anything else that writes to it, a worker's console.log or a
 * library's progress line, goes to stderr instead); stdin is read as strict JSONL; EOF on stdin,
 * SIGTERM or SIGHUP shut the session down and end the process. Every non-blank line on stdin gets
 * exactly one response, whatever it holds, from the command queue in rpc-server.ts.
 */
import { errorText } from "../../shared/failures/error-text.js";
import { createSessionHost, type SessionHostOptions } from "../host/session-host.js";
import type { CliSessionFlags } from "../host/sessions-cli.js";
import { attachJsonlReader, serializeJsonLine } from "./jsonl.js";
import { RpcExtensionUi } from "./rpc-extension-ui.js";
import { RpcServer } from "./rpc-server.js";

/** Options of {@link runRpcMode}. */
export interface RpcModeOptions {
  /** `"provider/id"` of the session's model. @default "demo/demo-1" */
  model?: string;
  /** The provider's key, passed to the sessions opened at start and by new_session (switch_session resumes without it). */
  apiKey?: string;
  /** Options of the session host the run creates (and closes at the end). */
  host?: SessionHostOptions;
  /** Where commands come from. @default process.stdin */
  input?: NodeJS.ReadableStream;
  /** Where protocol records go. @default process.stdout, taken over (see the module comment) */
  output?: (line: string) => void;
  /** Diagnostics. @default process.stderr */
  errors?: (text: string) => void;
  /** Longest accepted command line in bytes. @default 8 MiB */
  maxLineBytes?: number;
  /** The CLI's -c / --session: the first session is resumed instead of created (see sessions-cli.ts). */
  sessionFlags?: CliSessionFlags;
}

/**
 * Runs RPC mode until stdin ends or a termination signal arrives; resolves with the exit code:
 * 0 after EOF, 143 after SIGTERM, 129 after SIGHUP (as pi), 2 when the session cannot be created
 * (bad model, key or settings; the reason is on stderr).
 */
export async function runRpcMode(options: RpcModeOptions = {}): Promise<number> {
  const errors = options.errors ?? ((text: string) => process.stderr.write(text));
  const output = options.output ?? takeOverStdout();
  // Extensions' ctx.ui goes to the client as pi's extension_ui_request lines.
  const ui = new RpcExtensionUi((request) => output(serializeJsonLine(request)), errors);
  const host = createSessionHost({ ...options.host, extensionUi: ui });
  const server = new RpcServer(host, output, errors, {
    apiKey: options.apiKey,
    sessionFlags: options.sessionFlags,
    ui,
  });
  try {
    await server.open(options.model ?? "demo/demo-1");
  } catch (error) {
    errors(`Error: ${errorText(error)}\n`);
    await host.close();
    return 2;
  }
  const input = options.input ?? process.stdin;
  const code = await new Promise<number>((resolve) => {
    const signals: [NodeJS.Signals, number][] = [
      ["SIGTERM", 143],
      ["SIGHUP", 129],
    ];
    const handlers = signals.map(([signal, exitCode]): [NodeJS.Signals, () => void] => {
      const handler = () => finish(exitCode);
      process.once(signal, handler);
      return [signal, handler];
    });
    let finished = false;
    const finish = (exitCode: number) => {
      if (finished) return;
      finished = true;
      for (const [signal, handler] of handlers) process.off(signal, handler);
      detach();
      server.close();
      resolve(exitCode);
    };
    const detach = attachJsonlReader(
      input,
      {
        line: (text) => server.receive(text),
        oversize: ({ bytes, head }) =>
          server.refuse(head, `Line of ${bytes} bytes exceeds the limit; send smaller commands.`),
        end: (partial) => {
          if (partial !== undefined && partial.trim() !== "") {
            server.refuse(
              partial,
              "The input ended inside a line: every command must end with a newline (LF). It was not run.",
            );
          }
          void server.drained().then(() => finish(0));
        },
      },
      options.maxLineBytes === undefined ? {} : { maxLineBytes: options.maxLineBytes },
    );
  });
  await server.drained();
  await host.close();
  if (options.input === undefined && "unref" in process.stdin) process.stdin.unref?.();
  return code;
}

/**
 * Makes stdout the protocol's alone: returns a writer to the real stdout (false when its buffer is
 * full, as `write`) and sends every other write to process.stdout (a worker's console output is
 * piped there) to stderr.
 */
export function takeOverStdout(): (line: string) => boolean {
  const stdout = process.stdout;
  const write = stdout.write.bind(stdout);
  // Looked up at each write, so a later replacement of process.stderr.write (a spy) sees these too.
  stdout.write = (
    chunk: string | Uint8Array,
    encodingOrCallback?: BufferEncoding | ((error?: Error | null) => void),
    callback?: (error?: Error | null) => void,
  ): boolean =>
    typeof encodingOrCallback === "function"
      ? process.stderr.write(chunk, encodingOrCallback)
      : process.stderr.write(chunk, encodingOrCallback, callback);
  return (line) => write(line);
}
