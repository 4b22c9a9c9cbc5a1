/**
 * A mock OpenAI-compatible streaming server for section (c)'s HTTP variant, run as a separate
 * process (child_process.fork) so that its own CPU is not on the measured main thread.
 *
 * POST /v1/chat/completions answers with an SSE stream of `chat.completion.chunk`s: 16 characters
 * of text every 60–100 ms (the demo-stream model's rate: 3–5 tokens of 4 characters at ~50
 * tokens/s), CHUNKS chunks, then a `finish_reason: "stop"` chunk and `[DONE]`. A closed
 * connection stops the stream. Tells the parent its port with process.send({ port }).
 */
import { createServer } from "node:http";
import { sseChunk as chunk, SSE_HEADERS } from "../test/fixtures/models.mjs";

const CHUNKS = Number(process.env.SSE_CHUNKS ?? 400);
const TEXT = "lifeline runs each agent loop in a worker thread while the host thread stays free to serve ";
const LONG = TEXT.repeat(Math.ceil((CHUNKS * 16) / TEXT.length) + 1);

const server = createServer((req, res) => {
  if (req.method !== "POST" || !req.url?.endsWith("/chat/completions")) {
    res.writeHead(404).end();
    return;
  }
  req.resume();
  res.writeHead(200, SSE_HEADERS);
  let sent = 0;
  let timer;
  const send = () => {
    if (sent === CHUNKS) {
      res.write(chunk({}, "stop"));
      res.end("data: [DONE]\n\n");
      return;
    }
    const piece = LONG.slice(sent * 16, sent * 16 + 16);
    res.write(chunk(sent === 0 ? { role: "assistant", content: piece } : { content: piece }));
    sent++;
    timer = setTimeout(send, 60 + Math.random() * 40);
  };
  send();
  res.on("close", () => clearTimeout(timer));
});
server.keepAliveTimeout = 60_000;
server.listen(0, "127.0.0.1", () => process.send?.({ port: server.address().port }));
process.on("disconnect", () => process.exit(0));
