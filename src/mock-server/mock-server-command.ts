/**
 * `lifeline mock-server`'s run: the mock model server in the foreground, on a port and with a fault
 * script from a file, until Ctrl+C or SIGTERM. Resolves to the exit code: 2 for a bad port or
 * script, 1 when the server cannot start, 0 after a stop.
 */
import { errorText } from "../shared/failures/error-text.js";
import { startMockServer } from "./mock-server.js";
import { loadMockScript, type MockScript } from "./script.js";

/** What `lifeline mock-server` runs. */
export interface MockServerCommandRequest {
  /** 0 picks a free port. */
  port: number;
  host: string;
  /** A fault script file (JSON or JSONC). */
  script?: string;
}

/** Runs the mock server until a signal stops it; resolves to the exit code. */
export async function runMockServerCommand(opts: MockServerCommandRequest): Promise<number> {
  const { port } = opts;
  let script: MockScript | undefined;
  try {
    if (opts.script !== undefined) script = await loadMockScript(opts.script);
  } catch (error) {
    process.stderr.write(`Error: ${errorText(error)}\n`);
    return 2;
  }
  let server: Awaited<ReturnType<typeof startMockServer>>;
  try {
    server = await startMockServer({ port, host: opts.host, ...(script === undefined ? {} : { script }) });
  } catch (error) {
    process.stderr.write(`Error: cannot start the mock server: ${errorText(error)}\n`);
    return 1;
  }
  process.stdout.write(
    `Mock model server listening on ${server.url}\n` +
      `  OpenAI chat completions: ${server.url}/v1   Anthropic messages: ${server.url}\n` +
      `  Counters: GET ${server.url}/_mock/stats   Press Ctrl+C to stop.\n`,
  );
  await new Promise<void>((resolve) => {
    process.once("SIGINT", resolve);
    process.once("SIGTERM", resolve);
  });
  await server.close();
  process.stderr.write(`Mock model server stopped after ${server.stats().total} model requests.\n`);
  return 0;
}
