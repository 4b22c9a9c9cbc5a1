/**
 * A model request's fetch without the copy of its body that Node's fetch keeps for the whole
 * request.
 *
 * Why: unless a request has `redirect: "error"` and `window: null`, Node's fetch (undici) clones
 * it before sending, so that it could follow a redirect, and the clone tees the body stream. The
 * branch that is sent is read; the other, the original request's, is never read, so it holds the
 * whole body until the request is over, which for a model call is the whole streamed answer. A
 * model call's body is the conversation so far: 200 in-flight requests of 200 KB held 40 MB of
 * ArrayBuffers this way, and none without the clone (docs/performance.md, section (r)). The tee
 * also builds two more web streams per request.
 *
 * How: the request goes out with `redirect: "error"` and `window: null`, which skips the clone. A
 * server that answers with a redirect makes that fetch fail with "unexpected redirect"; the request
 * is then sent again as the caller asked, which follows the redirect as it would have: a redirect
 * is answered before any model work, so nothing is done twice. Only requests whose body can be
 * sent twice (none, or a string: what the provider SDKs send) and that would follow redirects
 * take this path; any other goes out as the caller built it.
 */

/** Calls `fetch` as above: `init` must already carry the signal the request should have. */
export async function fetchUncopiedBody(
  fetch: typeof globalThis.fetch,
  input: Parameters<typeof globalThis.fetch>[0],
  init: RequestInit | undefined,
): Promise<Response> {
  if (!canSkipClone(input, init)) return fetch(input, init);
  try {
    return await fetch(input, { ...init, redirect: "error", window: null });
  } catch (error) {
    if (!isUnexpectedRedirect(error)) throw error;
    return fetch(input, init);
  }
}

/**
 * Whether the request follows redirects and its body can be sent again: none, or a string (what
 * the provider SDKs send). Not bytes: the first send can detach their buffer. Not a stream or an
 * async iterable, which the first send consumes.
 */
function canSkipClone(input: Parameters<typeof globalThis.fetch>[0], init: RequestInit | undefined): boolean {
  if (input instanceof Request) return false;
  const body = init?.body;
  return (init?.redirect ?? "follow") === "follow" && (body === undefined || body === null || typeof body === "string");
}

/** undici's refusal of a redirect under `redirect: "error"`: a TypeError caused by "unexpected redirect". */
function isUnexpectedRedirect(error: unknown): boolean {
  if (!(error instanceof TypeError)) return false;
  const cause: unknown = error.cause;
  return cause instanceof Error && cause.message === "unexpected redirect";
}
