/**
 * Installs this thread's fetch dispatcher from a {@link DispatcherPlan}: undici's
 * `EnvHttpProxyAgent` given every value explicitly (it reads no variable itself then), or a plain
 * `Agent` when only a CA file is set. Imported by network-setup.ts only when one is needed, so a
 * worker without a proxy never loads undici.
 *
 * Why the npm undici works on Node's built-in fetch: its `setGlobalDispatcher` also sets the
 * global that Node 20's bundled undici reads (`Symbol.for("undici.globalDispatcher.1")`), and the
 * SDKs that pi-ai uses call the global `fetch` (docs/network.md lists the exceptions).
 */

import { X509Certificate } from "node:crypto";
import { readFile } from "node:fs/promises";
import { rootCertificates } from "node:tls";
import { Agent, type Dispatcher, EnvHttpProxyAgent, getGlobalDispatcher, setGlobalDispatcher } from "undici";
import { InvalidSettingsError } from "../../shared/errors.js";

/**
 * The thread's dispatcher, resolved: the proxy of `http:` and of `https:` targets ("" for none),
 * the hosts that bypass them, and the extra CA file. Compared as JSON to tell a change.
 */
export interface DispatcherPlan {
  httpProxy: string;
  httpsProxy: string;
  noProxy: string;
  caFile?: string;
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/**
 * Makes a dispatcher for `plan` (undefined: a direct one, as Node's own) the thread's global one,
 * and closes the one it replaces once that one's requests in flight have ended.
 * @throws InvalidSettingsError for a `caFile` that cannot be read or holds no valid certificate.
 */
export async function installDispatcher(plan: DispatcherPlan | undefined): Promise<void> {
  const dispatcher = plan === undefined ? new Agent() : await dispatcherFor(plan);
  const previous = getGlobalDispatcher();
  setGlobalDispatcher(dispatcher);
  previous.close().catch(() => {});
}

async function dispatcherFor(plan: DispatcherPlan): Promise<Dispatcher> {
  const tls = plan.caFile === undefined ? {} : { ca: await trustedCertificates(plan.caFile) };
  if (plan.httpProxy === "" && plan.httpsProxy === "") return new Agent({ connect: tls });
  return new EnvHttpProxyAgent({
    httpProxy: plan.httpProxy,
    httpsProxy: plan.httpsProxy,
    noProxy: plan.noProxy,
    // Direct connections, the TLS inside a CONNECT tunnel, and the TLS to an https:// proxy.
    connect: tls,
    requestTls: tls,
    proxyTls: tls,
    // http: targets are forwarded as absolute-URL requests, as curl does; https: ones tunnel (CONNECT).
    proxyTunnel: false,
  });
}

/**
 * Node's bundled CAs, NODE_EXTRA_CA_CERTS' and `caFile`'s: a `ca` option replaces the default
 * trust store rather than adding to it, so the first two are listed again.
 */
async function trustedCertificates(caFile: string): Promise<string[]> {
  const own = certificatesIn(await readCaFile(caFile), caFile);
  const extraFile = process.env.NODE_EXTRA_CA_CERTS;
  // Node warned at start-up about an unreadable NODE_EXTRA_CA_CERTS and goes on without it; so does this.
  const extra =
    extraFile === undefined || extraFile === ""
      ? []
      : await readFile(extraFile, "utf8").then(
          (text) => text.match(PEM_CERTIFICATE) ?? [],
          () => [],
        );
  return [...rootCertificates, ...extra, ...own];
}

async function readCaFile(path: string): Promise<string> {
  try {
    return await readFile(path, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? String(error);
    throw new InvalidSettingsError(
      `Invalid settings: caFile ${path} cannot be read (${code}). Give the path of a PEM file of CA certificates (relative paths are taken from the host's cwd), or remove the key.`,
      { cause: error },
    );
  }
}

function certificatesIn(text: string, path: string): string[] {
  const blocks = text.match(PEM_CERTIFICATE) ?? [];
  if (blocks.length === 0) {
    throw new InvalidSettingsError(
      `Invalid settings: caFile ${path} holds no PEM certificate ("-----BEGIN CERTIFICATE-----"). Give a PEM file of CA certificates.`,
    );
  }
  for (const [index, block] of blocks.entries()) {
    try {
      new X509Certificate(block);
    } catch (error) {
      throw new InvalidSettingsError(
        `Invalid settings: certificate ${index + 1} of caFile ${path} is not a valid X.509 certificate (${(error as Error).message}). Fix or remove it.`,
        { cause: error },
      );
    }
  }
  return blocks;
}
