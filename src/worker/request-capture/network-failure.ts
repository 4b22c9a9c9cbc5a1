/**
 * What a transport failure of a model request exposes (SPEC B2, X6): the socket error's code and
 * message, and the server's origin, as a {@link RequestFailure}. pi-ai reports such a failure as
 * "Connection error." or a bare "terminated"; the code is only visible on the error fetch threw.
 *
 * Pure functions: request-capture.ts calls them with what fetch or a body read threw.
 */
import type { RequestFailure } from "../../shared/failures/request-failure.js";

/**
 * The failure of a request that got no response (`request`: refused, reset, DNS, timeout), or
 * whose body broke off (`body`, with the status the response had answered).
 */
export function networkFailure(
  phase: "request" | "body",
  error: unknown,
  status?: number,
  origin?: string,
): RequestFailure {
  const network: NonNullable<RequestFailure["network"]> = { phase, ...describeNetworkError(error) };
  if (origin !== undefined) network.origin = origin;
  const failure: RequestFailure = { network };
  if (status !== undefined) failure.status = status;
  return failure;
}

/**
 * The code and message of a transport error: undici's socket error under `cause`, else the
 * error's own `code`, else `TimeoutError`/`AbortError` by name.
 */
function describeNetworkError(error: unknown): { code?: string; message: string } {
  // undici wraps the socket error: TypeError("fetch failed" | "terminated", { cause: { code } }).
  const cause = (error as { cause?: { code?: unknown; message?: unknown } } | undefined)?.cause;
  const own = error as { code?: unknown; name?: unknown; message?: unknown } | undefined;
  const code =
    typeof cause?.code === "string"
      ? cause.code
      : typeof own?.code === "string"
        ? own.code
        : own?.name === "TimeoutError" || own?.name === "AbortError"
          ? own.name
          : undefined;
  const text = typeof cause?.message === "string" ? cause.message : String(own?.message ?? error);
  return code === undefined ? { message: text } : { code, message: text };
}

/** Scheme, host and port only: a path or query may carry a key (Google's `?key=`). */
export function originOf(input: string | URL | Request): string | undefined {
  try {
    return new URL(typeof input === "string" ? input : input instanceof URL ? input.href : input.url).origin;
  } catch {
    return undefined;
  }
}

/** Whether `error` is an abort (the consumer's cancel, not a failure of the connection). */
export function isAbort(error: unknown): boolean {
  return (error as { name?: unknown } | undefined)?.name === "AbortError";
}
