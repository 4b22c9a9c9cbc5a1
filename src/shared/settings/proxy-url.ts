/**
 * What a forward proxy's URL may be (docs/network.md), for the `proxy` setting on the main thread
 * and the HTTPS_PROXY / HTTP_PROXY variables in the worker: `http://` or `https://` (the scheme of
 * the connection to the proxy), a host, an optional port and `user:password@`, and no path.
 */

/** What {@link isProxyUrl} allows, in the words of an error message. */
export const PROXY_URL_RULE = "an http:// or https:// proxy URL with a host and no path, as http://proxy.example:3128";

/** Whether `value` is a proxy URL lifeline can use (see the file comment). Never throws. */
export function isProxyUrl(value: string): boolean {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  return (
    (url.protocol === "http:" || url.protocol === "https:") &&
    url.hostname !== "" &&
    url.pathname === "/" &&
    url.search === "" &&
    url.hash === ""
  );
}
