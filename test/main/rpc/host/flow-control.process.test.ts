/**
 * Flow control of `lifeline --mode host` (connection-output.ts), against one
 * real host process on a Unix socket and the mock model server: client A holds 500 sessions whose
 * replies stream slowly, then stops reading (socket.pause()) for at least 10 s; client B meanwhile
 * opens 50 sessions and prompts them. B's sessions all settle while A is still stalled, the host's
 * RSS grows by less than {@link RSS_GROWTH_BOUND} over the stall, and once A reads again every one
 * of its sessions accounts for each `seq` (host-protocol.ts: an event with `coalesced: n` stands
 * for n deltas and carries the last one's seq, so its seq is the previous one's plus n), its
 * deltas rebuild the final message's text, and all 500 settle. Run `npm run build` first.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { attachJsonlReader } from "../../../../dist/main/rpc/jsonl.js";
import { tempDir, within } from "../../../fixtures/bounded.js";
import { mockServerSuite } from "../../../fixtures/mock-server-suite.js";
import { mockModelsJson } from "../../../fixtures/models.mjs";

const CLI = fileURLToPath(new URL("../../../../dist/main/cli.js", import.meta.url));

const A_SESSIONS = 500;
const B_SESSIONS = 50;
/** A's replies: 100 word tokens of 70 characters, one every 300 ms: 30 s of streaming, 7,000 characters. */
const A_TOKENS = 100;
const A_TOKEN_DELAY_MS = 300;
const A_WORDS = Array.from({ length: 10 }, (_, i) => `a${i}${"x".repeat(67)}`);
/** B's replies: short and quick. */
const B_TOKENS = 20;
const B_TOKEN_DELAY_MS = 20;
const B_WORDS = ["quick", "reply", "from", "the", "mock"];
const STALL_MS = 10_000;
/**
 * The RSS growth allowed over the stall (from the moment A pauses to the stall's end): the output's
 * own bound (64 MiB, connection-output.ts) plus 32 MiB for B's 50 sessions, 550 live streams and
 * the collector's slack. Measured on the shared 2-core machine (load 10 to 40): 25 to 50 MiB with
 * coalescing, of which the waiting output was at most 4.7 MB (the host's catch-up line); 61 MiB in
 * a 10 s stall (137 MB in a 29 s one) when `event()` never merges and the bound is lifted. So RSS
 * alone cannot tell merging from not in 10 s (waiting deltas share their snapshots' strings): a
 * host that does not merge fails this test by its bound closing A's connection (the estimate of
 * what waiting deltas will write passes 64 MiB), or, bound lifted, by A seeing no coalesced event.
 */
const RSS_GROWTH_BOUND = 96 * 1024 * 1024;

/** The mock's reply of `tokens` word tokens cycling through `words` (as its `tokens` option makes it). */
function replyText(words: string[], tokens: number): string {
  return Array.from({ length: tokens }, (_, i) => words[i % words.length]).join(" ");
}

const suite = mockServerSuite({
  script: {
    reply: "unused",
    conversations: [
      {
        match: "flow A",
        steps: [{ type: "ok", text: A_WORDS.join(" "), tokens: A_TOKENS, tokenDelayMs: A_TOKEN_DELAY_MS }],
      },
      {
        match: "flow B",
        steps: [{ type: "ok", text: B_WORDS.join(" "), tokens: B_TOKENS, tokenDelayMs: B_TOKEN_DELAY_MS }],
      },
    ],
  },
});
const { cleanups } = suite;

type Json = Record<string, unknown>;

/** One session as its client sees it, checked record by record (nothing is kept but the text). */
interface SessionView {
  lastSeq: number;
  /** The assistant message's text as its deltas rebuild it. */
  rebuilt: string;
  /** The assistant's text at its message_end. */
  finalText: string | undefined;
  settled: Json | undefined;
  coalescedEvents: number;
  coalescedDeltas: number;
  problems: string[];
}

/** A client of the host's socket: commands by id, each session's events checked as they come. */
class HostClient {
  readonly socket: Socket;
  readonly sessions = new Map<string, SessionView>();
  bytes = 0;
  #next = 0;
  readonly #waiters = new Map<string, (response: Json) => void>();
  readonly #name: string;
  readonly problems: string[] = [];

  constructor(path: string, name: string) {
    this.#name = name;
    this.socket = connect(path);
    this.socket.on("error", (error) => this.problems.push(`socket: ${error.message}`));
    this.socket.on("data", (chunk: Buffer) => {
      this.bytes += chunk.length;
    });
    attachJsonlReader(this.socket, { line: (text) => this.#receive(JSON.parse(text) as Json) });
  }

  /** Sends `command` and resolves with its response. */
  request(command: Json): Promise<Json> {
    const id = `${this.#name}${++this.#next}`;
    this.socket.write(`${JSON.stringify({ ...command, id })}\n`);
    return new Promise((resolve) => this.#waiters.set(id, resolve));
  }

  view(sessionId: string): SessionView {
    let view = this.sessions.get(sessionId);
    if (view === undefined) {
      view = {
        lastSeq: 0,
        rebuilt: "",
        finalText: undefined,
        settled: undefined,
        coalescedEvents: 0,
        coalescedDeltas: 0,
        problems: [],
      };
      this.sessions.set(sessionId, view);
    }
    return view;
  }

  count(predicate: (view: SessionView) => boolean): number {
    let n = 0;
    for (const view of this.sessions.values()) if (predicate(view)) n++;
    return n;
  }

  #receive(record: Json): void {
    if (record.type === "response") {
      const waiter = this.#waiters.get(record.id as string);
      this.#waiters.delete(record.id as string);
      if (waiter === undefined) this.problems.push(`unexpected response ${JSON.stringify(record)}`);
      waiter?.(record);
      return;
    }
    const sessionId = record.sessionId as string;
    const view = this.view(sessionId);
    const seq = record.seq as number;
    const coalesced = record.coalesced as number | undefined;
    const inner = record.assistantMessageEvent as { type: string; delta?: string } | undefined;
    const isDelta = inner?.type === "text_delta" || inner?.type === "thinking_delta";
    // The documented rule: the seq jump from the session's previous event equals `coalesced` (1 when absent).
    if (seq !== view.lastSeq + (coalesced ?? 1)) {
      view.problems.push(`${record.type} seq ${seq} after ${view.lastSeq} with coalesced ${coalesced}`);
    }
    view.lastSeq = seq;
    if (coalesced !== undefined) {
      if (!isDelta || coalesced < 2) view.problems.push(`coalesced ${coalesced} on ${record.type}/${inner?.type}`);
      view.coalescedEvents++;
      view.coalescedDeltas += coalesced;
    }
    if (inner?.type === "text_delta") view.rebuilt += inner.delta ?? "";
    const message = record.message as { role?: string; content?: { type: string; text?: string }[] } | undefined;
    if (record.type === "message_end" && message?.role === "assistant") {
      view.finalText = (message.content ?? [])
        .map((block) => (block.type === "text" ? (block.text ?? "") : ""))
        .join("");
    }
    if (record.type === "agent_settled") view.settled = record;
  }
}

/** The host's resident set size, from /proc. */
function rss(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  if (match?.[1] === undefined) throw new Error(`no VmRSS for ${pid}`);
  return Number(match[1]) * 1024;
}

/** Resolves once `condition` holds, polling every 50 ms; rejects after `ms`. */
function until(condition: () => boolean, ms: number, what: string): Promise<void> {
  return within(
    new Promise<void>((resolve) => {
      const timer = setInterval(() => {
        if (condition()) {
          clearInterval(timer);
          resolve();
        }
      }, 50);
      cleanups.push(() => clearInterval(timer));
    }),
    ms,
    what,
  );
}

/** The host on a socket in a fresh LIFELINE_DIR; SIGTERMed after the test. */
async function startHost(): Promise<{ child: ChildProcess; socket: string; stderr: () => string }> {
  const dir = tempDir(cleanups, "lifeline-host-flow-");
  writeFileSync(join(dir, "settings.json"), JSON.stringify({ retry: { baseDelayMs: 5 } }));
  writeFileSync(join(dir, "models.json"), mockModelsJson(suite.server.url));
  const socket = join(dir, "host.sock");
  const child = spawn(
    process.execPath,
    [CLI, "--mode", "host", "--socket", socket, "--provider", "mock", "--model", "mock-1"],
    { cwd: dir, env: { ...process.env, LIFELINE_DIR: dir, NO_COLOR: "1" }, stdio: ["ignore", "ignore", "pipe"] },
  );
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    await within(exited, 20_000, "the host to exit after SIGTERM").catch(() => child.kill("SIGKILL"));
  });
  await until(() => stderr.includes("listening on"), 20_000, "the host to listen");
  return { child, socket, stderr: () => stderr };
}

/** Opens `n` sessions on `client` (sent at once; the host opens them one after another). */
async function openSessions(client: HostClient, n: number): Promise<string[]> {
  const responses = await Promise.all(Array.from({ length: n }, () => client.request({ type: "open_session" })));
  for (const response of responses) expect(response).toMatchObject({ success: true });
  return responses.map((response) => (response.data as { sessionId: string }).sessionId);
}

async function promptAll(client: HostClient, ids: string[], text: string): Promise<void> {
  const responses = await Promise.all(
    ids.map((sessionId, i) => client.request({ type: "prompt", sessionId, message: `${text} ${i}` })),
  );
  for (const response of responses) expect(response).toMatchObject({ success: true });
}

describe("--mode host flow control", () => {
  it("a stalled client holds up no other client, costs the host bounded memory, and loses nothing but merged deltas", async () => {
    const started = performance.now();
    const host = await startHost();
    const pid = host.child.pid as number;
    const a = new HostClient(host.socket, "a");
    const b = new HostClient(host.socket, "b");
    cleanups.push(() => {
      a.socket.destroy();
      b.socket.destroy();
    });

    const aIds = await within(openSessions(a, A_SESSIONS), 60_000, "A's 500 sessions to open");
    await within(promptAll(a, aIds, "flow A"), 30_000, "A's prompts to be accepted");
    // Every A session streams before A stops reading: from here on, all 500 produce deltas.
    const streaming = (view: SessionView) => view.rebuilt !== "";
    await until(() => aIds.every((id) => streaming(a.view(id))), 45_000, "every A session to stream");
    expect(a.count((view) => view.settled !== undefined)).toBe(0);

    a.socket.pause();
    const pausedAt = performance.now();
    const bytesAtPause = a.bytes;
    const rssBefore = rss(pid);
    let rssPeak = rssBefore;
    const sampler = setInterval(() => {
      rssPeak = Math.max(rssPeak, rss(pid));
    }, 100);
    cleanups.push(() => clearInterval(sampler));

    const bIds = await within(openSessions(b, B_SESSIONS), 20_000, "B's sessions to open while A is stalled");
    await within(promptAll(b, bIds, "flow B"), 20_000, "B's prompts to be accepted while A is stalled");
    await until(
      () => bIds.every((id) => b.view(id).settled !== undefined),
      30_000,
      "every B session to settle while A is stalled",
    );
    const bSettledAfterMs = performance.now() - pausedAt;
    // A has read nothing since it paused: the host has been holding A's output all along.
    expect(a.bytes).toBe(bytesAtPause);
    await until(() => performance.now() - pausedAt >= STALL_MS, STALL_MS + 1000, "the stall's 10 s");
    clearInterval(sampler);
    rssPeak = Math.max(rssPeak, rss(pid));
    const stalledMs = performance.now() - pausedAt;

    const stallFigures = `B settled ${(bSettledAfterMs / 1000).toFixed(1)} s into A's stall of ${(stalledMs / 1000).toFixed(1)} s; host RSS ${(rssBefore / 2 ** 20).toFixed(0)} MiB before, peak growth ${((rssPeak - rssBefore) / 2 ** 20).toFixed(1)} MiB (bound ${RSS_GROWTH_BOUND / 2 ** 20} MiB)`;
    console.log(`flow control, the stall: ${stallFigures}`);
    const bReply = replyText(B_WORDS, B_TOKENS);
    for (const id of bIds) {
      const view = b.view(id);
      expect(view.problems, id).toEqual([]);
      expect(view.settled, id).toMatchObject({ stopReason: "stop" });
      expect(view.finalText, id).toBe(bReply);
    }
    expect(host.stderr(), "A's connection outlives the stall (no overflow)").not.toContain("connection is closed");
    expect(rssPeak - rssBefore).toBeLessThan(RSS_GROWTH_BOUND);

    a.socket.resume();
    await until(
      () => a.socket.destroyed || aIds.every((id) => a.view(id).settled !== undefined),
      60_000,
      "every A session to settle after A reads again",
    );
    expect(host.stderr(), "A's connection stays open").not.toContain("connection is closed");
    const aReply = replyText(A_WORDS, A_TOKENS);
    let coalescedEvents = 0;
    let coalescedDeltas = 0;
    for (const id of aIds) {
      const view = a.view(id);
      expect(view.problems, id).toEqual([]);
      expect(view.settled, id).toMatchObject({ stopReason: "stop" });
      expect(view.finalText, id).toBe(view.rebuilt);
      expect(view.finalText, id).toBe(aReply);
      coalescedEvents += view.coalescedEvents;
      coalescedDeltas += view.coalescedDeltas;
    }
    expect(a.problems).toEqual([]);
    expect(b.problems).toEqual([]);
    // The host merged A's deltas while A was behind (nothing merges while a client keeps up).
    expect(coalescedEvents).toBeGreaterThan(0);
    // The host's report of A's longest stretch behind (host-connection.ts prints each of 1 s or more).
    const reports = [
      ...host
        .stderr()
        .matchAll(/caught up after ([\d.]+) s behind \(at most (\d+) bytes waited; (\d+) text deltas merged\)/g),
    ];
    const longest = reports.sort((x, y) => Number(y[1]) - Number(x[1]))[0];
    expect(Number(longest?.[1])).toBeGreaterThanOrEqual(STALL_MS / 1000);
    expect(host.stderr()).not.toContain("connection is closed");
    console.log(
      [
        "flow control, after:",
        `A read ${((a.bytes - bytesAtPause) / 2 ** 20).toFixed(1)} MiB after resuming;`,
        `host: ${longest?.[0]};`,
        `A got ${coalescedEvents} coalesced events standing for ${coalescedDeltas} deltas;`,
        `${((performance.now() - started) / 1000).toFixed(1)} s in all`,
      ].join(" "),
    );
  }, 300_000);
});
