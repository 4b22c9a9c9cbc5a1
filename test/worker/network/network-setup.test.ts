/**
 * Which dispatcher a worker thread's model requests get from its host's network settings and its
 * environment (docs/network.md): the precedence of the `proxy` and `noProxy` settings over the
 * variables, of the lower-case variables over the upper-case ones, and none at all when nothing
 * is set (so the thread never loads undici).
 */
import { describe, expect, it } from "vitest";
import { applyNetwork, planDispatcher } from "../../../src/worker/network/network-setup.js";

describe("planDispatcher", () => {
  it("plans nothing when no proxy variable and no network setting is set, or only NO_PROXY", () => {
    expect(planDispatcher(undefined, {})).toBeUndefined();
    expect(planDispatcher(undefined, { NO_PROXY: "localhost", HTTP_PROXY: "" })).toBeUndefined();
    expect(planDispatcher({ noProxy: "localhost" }, {})).toBeUndefined();
  });

  it("an https: target without HTTPS_PROXY uses HTTP_PROXY; HTTPS_PROXY alone leaves http: targets direct", () => {
    expect(planDispatcher(undefined, { HTTP_PROXY: "http://p:1" })).toEqual({
      httpProxy: "http://p:1",
      httpsProxy: "http://p:1",
      noProxy: "",
    });
    expect(planDispatcher(undefined, { HTTPS_PROXY: "http://s:2" })).toEqual({
      httpProxy: "",
      httpsProxy: "http://s:2",
      noProxy: "",
    });
  });

  it("the lower-case variables win over the upper-case ones", () => {
    const env = { HTTP_PROXY: "http://upper:1", http_proxy: "http://lower:1", NO_PROXY: "upper", no_proxy: "lower" };
    expect(planDispatcher(undefined, env)).toMatchObject({ httpProxy: "http://lower:1", noProxy: "lower" });
  });

  it("a variable without a scheme is taken as http://", () => {
    expect(planDispatcher(undefined, { HTTPS_PROXY: "proxy.example:3128" })?.httpsProxy).toBe(
      "http://proxy.example:3128",
    );
  });

  it("the proxy setting serves both schemes over every variable; noProxy replaces NO_PROXY", () => {
    const env = { HTTP_PROXY: "http://v:1", HTTPS_PROXY: "http://v:2", NO_PROXY: "from-env" };
    expect(planDispatcher({ proxy: "http://s:3" }, env)).toEqual({
      httpProxy: "http://s:3",
      httpsProxy: "http://s:3",
      noProxy: "from-env",
    });
    expect(planDispatcher({ proxy: "http://s:3", noProxy: "set" }, env)?.noProxy).toBe("set");
  });

  it("a caFile alone plans a direct dispatcher that trusts it", () => {
    expect(planDispatcher({ caFile: "/ca.pem" }, {})).toEqual({
      httpProxy: "",
      httpsProxy: "",
      noProxy: "",
      caFile: "/ca.pem",
    });
  });

  it("a variable that is not a proxy URL is ERR_INVALID_SETTINGS naming the variable", () => {
    expect(() => planDispatcher(undefined, { https_proxy: "socks5://127.0.0.1:1080" })).toThrow(
      expect.objectContaining({ code: "ERR_INVALID_SETTINGS", message: expect.stringContaining("https_proxy") }),
    );
  });
});

describe("applyNetwork", () => {
  it("does nothing, and so loads no undici, in a thread with no proxy variable and no network setting", () => {
    expect(applyNetwork(undefined, {})).toBeUndefined();
    expect(applyNetwork(undefined, { NO_PROXY: "localhost" })).toBeUndefined();
  });
});
