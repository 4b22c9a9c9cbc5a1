/**
 * `--listen host:port`, parsed where the CLI reads its flags: kept apart from host-listen.ts so
 * the CLI's dispatch does not load the network modules to read a flag.
 */
import { LifelineError } from "../../../shared/errors.js";

/** A TCP address to listen on. */
export interface TcpAddress {
  host: string;
  /** 0: any free port (written to the token file). */
  port: number;
}

/**
 * Parses `host:port` (`[::1]:port` for IPv6).
 * @throws LifelineError ERR_INVALID_OPTIONS naming the expected form.
 */
export function parseTcpAddress(text: string): TcpAddress {
  const match = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(text);
  const host = match?.[1] ?? match?.[2];
  const port = Number(match?.[3]);
  if (host === undefined || !Number.isInteger(port) || port > 65535) {
    throw new LifelineError(
      "ERR_INVALID_OPTIONS",
      `--listen "${text}" is not host:port (e.g. 127.0.0.1:7300, or 127.0.0.1:0 for any free port).`,
    );
  }
  return { host, port };
}
