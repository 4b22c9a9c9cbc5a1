/**
 * The request capture's fetch (uncopied-body-fetch.ts) over real HTTP on 127.0.0.1: requests in
 * flight hold no copy of their bodies, and a redirect is still followed as the caller's fetch
 * would follow it.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { afterEach, describe, expect, it } from "vitest";
import { fetchUncopiedBody } from "../../src/worker/request-capture/uncopied-body-fetch.js";
import { within } from "../fixtures/bounded.js";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

async function serve(handler: (request: IncomingMessage, response: ServerResponse, body: string) => void) {
  const server = createServer((request, response) => {
    let body = "";
    request.setEncoding("utf8");
    request.on("data", (chunk: string) => {
      body += chunk;
    });
    request.on("end", () => handler(request, response, body));
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** ArrayBuffer bytes alive after full collections. */
async function liveArrayBuffers(): Promise<number> {
  for (let round = 0; round < 3; round++) {
    gc();
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return process.memoryUsage().arrayBuffers;
}

describe("a model request's fetch without the body copy", () => {
  it("holds no copy of a request's body while its answer streams", async () => {
    // Answers every request with the start of an event stream and keeps it open, as a model does.
    const open: ServerResponse[] = [];
    const url = await serve((_request, response) => {
      response.writeHead(200, { "content-type": "text/event-stream" });
      response.write("data: {}\n\n");
      open.push(response);
    });
    const body = JSON.stringify({ messages: [{ role: "user", content: "x".repeat(400_000) }] });
    const before = await liveArrayBuffers();
    const responses = await within(
      Promise.all(
        Array.from({ length: 50 }, () =>
          fetchUncopiedBody(globalThis.fetch, url, {
            method: "POST",
            body,
            headers: { "content-type": "application/json" },
          }),
        ),
      ),
      10_000,
      "50 responses",
    );
    const held = (await liveArrayBuffers()) - before;
    // Node's fetch as called keeps each 400 KB body for the request's life: 20 MB for these 50.
    expect(held).toBeLessThan(4_000_000);
    for (const response of open) response.end();
    await within(Promise.all(responses.map((response) => response.text())), 10_000, "the bodies' ends");
  });

  it("follows a redirect as the caller's fetch would: 307 resends the POST, 303 turns it into a GET", async () => {
    const url = await serve((request, response, body) => {
      if (request.url === "/307") response.writeHead(307, { location: "/answer" }).end();
      else if (request.url === "/303") response.writeHead(303, { location: "/answer" }).end();
      else response.end(`${request.method} ${request.url} ${body}`);
    });
    const post = { method: "POST", body: "the conversation", headers: { "content-type": "text/plain" } };
    const viaFetch = async (path: string) => (await globalThis.fetch(`${url}${path}`, post)).text();
    const viaUncopied = async (path: string) =>
      (await fetchUncopiedBody(globalThis.fetch, `${url}${path}`, post)).text();
    expect(await viaUncopied("/307")).toBe("POST /answer the conversation");
    expect(await viaUncopied("/303")).toBe("GET /answer ");
    expect(await viaUncopied("/307")).toBe(await viaFetch("/307"));
    expect(await viaUncopied("/303")).toBe(await viaFetch("/303"));
    const outcome = (promise: Promise<Response>) =>
      promise.then(
        (response) => response.text(),
        (error: unknown) => `rejected: ${(error as Error).message}`,
      );
    // Any other body goes out as built (bytes: the first send may detach them; a stream is consumed),
    // and fetch decides what a redirect does to it.
    const bytes = () => ({ method: "POST", body: new TextEncoder().encode("as bytes") });
    expect(await outcome(fetchUncopiedBody(globalThis.fetch, `${url}/307`, bytes()))).toBe(
      await outcome(globalThis.fetch(`${url}/307`, bytes())),
    );
    const streamed = () => ({
      method: "POST",
      body: new Blob(["as a stream"]).stream(),
      duplex: "half" as const,
    });
    expect(await outcome(fetchUncopiedBody(globalThis.fetch, `${url}/307`, streamed()))).toBe(
      await outcome(globalThis.fetch(`${url}/307`, streamed())),
    );
  });

  it("leaves a caller's own redirect mode alone, and rejects on a network failure as fetch does", async () => {
    const url = await serve((_request, response) => response.writeHead(302, { location: "/elsewhere" }).end());
    const manual = await fetchUncopiedBody(globalThis.fetch, url, { method: "POST", body: "x", redirect: "manual" });
    expect(manual.status).toBe(302);
    const refused = await fetchUncopiedBody(globalThis.fetch, "http://127.0.0.1:1/", {
      method: "POST",
      body: "x",
    }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(TypeError);
    expect((refused as TypeError).message).toBe("fetch failed");
  });
});
