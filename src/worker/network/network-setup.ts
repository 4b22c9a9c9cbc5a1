/**
 * The network of this worker thread's model requests (docs/network.md): which forward proxy, which
 * hosts bypass it, which CAs TLS trusts. pi-ai's providers send their requests through the
 * thread's global fetch dispatcher (most SDKs call the global `fetch`), so this decides once per
 * session open whether the thread needs one other than Node's default, and installs it.
 *
 * Pay only for what you use: with no proxy variable and no network setting, this reads six
 * environment variables and returns; undici (in proxy-dispatcher.ts) is imported only when a
 * dispatcher is needed.
 */
import { InvalidSettingsError } from "../../shared/errors.js";
import { isProxyUrl, PROXY_URL_RULE } from "../../shared/settings/proxy-url.js";
import type { WorkerNetwork } from "../../shared/wire/protocol.js";
import type { DispatcherPlan } from "./proxy-dispatcher.js";

/** The plan the thread's dispatcher was built from; "direct": Node's own (none was installed). */
let installed = "direct";
/** Installs run one after another: two sessions opening at once must not race. */
let queue: Promise<void> = Promise.resolve();
/** The proxies of the installed dispatcher, without credentials (see {@link proxiesInUse}). */
let installedProxies: readonly string[] = [];

/**
 * The proxies this thread's model requests may go through (none when no dispatcher was
 * installed), without their `user:password@`: for messages that cross the thread. Never throws.
 */
export function proxiesInUse(): readonly string[] {
  return installedProxies;
}

/**
 * Brings the thread's dispatcher in line with `network` (a session's init) and the thread's
 * environment. Called before each session opens; returns undefined when nothing changes (the
 * usual case: no await), else a promise of the install. A change (the host re-read its settings
 * files) replaces the dispatcher for the thread's later requests; requests in flight finish on
 * the old one.
 * @throws InvalidSettingsError (at once, or by the promise) for a proxy variable that is not a
 *   proxy URL, or a `caFile` that cannot be read or holds no certificate.
 */
export function applyNetwork(
  network: WorkerNetwork | undefined,
  env: NodeJS.ProcessEnv = process.env,
): Promise<void> | undefined {
  const plan = planDispatcher(network, env);
  const key = plan === undefined ? "direct" : JSON.stringify(plan);
  if (key === installed) return undefined;
  const install = queue.then(async () => {
    if (key === installed) return;
    const { installDispatcher } = await import("./proxy-dispatcher.js");
    await installDispatcher(plan);
    installed = key;
    installedProxies = plan === undefined ? [] : withoutCredentials([plan.httpProxy, plan.httpsProxy]);
  });
  queue = install.catch(() => {});
  return install;
}

/**
 * The dispatcher `network` and `env` call for, or undefined for Node's own. The `proxy` setting
 * serves both schemes over the variables; otherwise, as curl and undici read them, the lower-case
 * variable wins over the upper-case one, and an `https:` target without an HTTPS proxy uses the
 * HTTP one. `noProxy` replaces NO_PROXY. A variable's value without a scheme is taken as http://.
 * @throws InvalidSettingsError for a variable that is not a proxy URL.
 */
export function planDispatcher(network: WorkerNetwork | undefined, env: NodeJS.ProcessEnv): DispatcherPlan | undefined {
  const httpProxy = network?.proxy ?? fromEnv(env, "http_proxy", "HTTP_PROXY");
  const httpsProxy = network?.proxy ?? fromEnv(env, "https_proxy", "HTTPS_PROXY") ?? httpProxy;
  const caFile = network?.caFile;
  if (httpProxy === undefined && httpsProxy === undefined && caFile === undefined) return undefined;
  const plan: DispatcherPlan = {
    httpProxy: httpProxy ?? "",
    httpsProxy: httpsProxy ?? "",
    noProxy: network?.noProxy ?? nonEmpty(env.no_proxy) ?? nonEmpty(env.NO_PROXY) ?? "",
  };
  if (caFile !== undefined) plan.caFile = caFile;
  return plan;
}

function fromEnv(env: NodeJS.ProcessEnv, lower: string, upper: string): string | undefined {
  const name = nonEmpty(env[lower]) !== undefined ? lower : upper;
  const value = nonEmpty(env[name]);
  if (value === undefined) return undefined;
  const url = value.includes("://") ? value : `http://${value}`;
  if (!isProxyUrl(url)) {
    throw new InvalidSettingsError(
      `The environment variable ${name} is ${JSON.stringify(value)}, not ${PROXY_URL_RULE}. Fix or unset it, or set the proxy setting, which wins over it.`,
    );
  }
  return url;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === "" ? undefined : value.trim();
}

function withoutCredentials(proxies: readonly string[]): string[] {
  const shown = proxies
    .filter((proxy) => proxy !== "")
    .map((proxy) => {
      const url = new URL(proxy);
      url.username = "";
      url.password = "";
      return url.origin;
    });
  return [...new Set(shown)];
}
