/**
 * The coordinator's view of a run in progress: one state per generator, fed by the run's stream
 * (snapshots, records, finals) and by the generators' leases. A generator whose lease has lapsed
 * before its final came is lost: its last snapshot is kept, with when it was declared lost and how
 * many prompts it had in flight then. Entries a lost generator sends afterwards are ignored (it
 * aborts its run when it notices it has lost Redis, so they would be partial anyway).
 */
import type { Redis } from "ioredis";
import type { LoadProgress } from "../load/metrics/load-metrics.js";
import type { FleetConnection } from "../redis/fleet-connection.js";
import { readAgents } from "./agent-registry.js";
import { type AgentRegistration, decodeMessage, type RunEntry, type ShareOptions } from "./load-fleet-protocol.js";

type Entry<T extends RunEntry["type"]> = Extract<RunEntry, { type: T }>;

/** Where a generator is in the run. */
export type GeneratorStatus = "starting" | "running" | "finished" | "failed" | "lost";

/** One generator of the run, as the coordinator sees it. */
export interface GeneratorState {
  agent: AgentRegistration;
  index: number;
  share: ShareOptions;
  status: GeneratorStatus;
  snapshot: Entry<"snapshot"> | undefined;
  final: Entry<"run_final"> | undefined;
  failure: { code: string; message: string } | undefined;
  /** When it was declared lost, ms on Redis's clock, and its prompts in flight at its last snapshot. */
  lostAtMs: number | undefined;
  inFlightPrompts: number | undefined;
  /** Its records.jsonl lines, chunk by chunk. */
  records: string[];
  /** Stream entries and bytes it sent: snapshots, and records + final. */
  snapshots: number;
  snapshotBytes: number;
  finalBytes: number;
}

const ENTRY_TYPES: readonly RunEntry["type"][] = ["run_accepted", "snapshot", "records", "run_final", "run_failed"];

/** A generator's state when the run is set: starting, nothing received from it yet. */
export function newGeneratorState(agent: AgentRegistration, index: number, share: ShareOptions): GeneratorState {
  return {
    agent,
    index,
    share,
    status: "starting",
    snapshot: undefined,
    final: undefined,
    failure: undefined,
    lostAtMs: undefined,
    inFlightPrompts: undefined,
    records: [],
    snapshots: 0,
    snapshotBytes: 0,
    finalBytes: 0,
  };
}

/** See the file comment. */
export class RunWatch {
  readonly generators: GeneratorState[];
  readonly #connection: FleetConnection;
  readonly #reader: Redis;
  readonly #stream: string;
  readonly #runId: string;
  #last = "0-0";

  /** `reader` must be a connection of its own: XREAD blocks it. */
  constructor(
    connection: FleetConnection,
    reader: Redis,
    stream: string,
    runId: string,
    generators: { agent: AgentRegistration; share: ShareOptions }[],
  ) {
    this.#connection = connection;
    this.#reader = reader;
    this.#stream = stream;
    this.#runId = runId;
    this.generators = generators.map(({ agent, share }, index) => newGeneratorState(agent, index, share));
  }

  /** Every generator finished, failed or was lost. */
  get settled(): boolean {
    return this.generators.every((g) => g.status === "finished" || g.status === "failed" || g.status === "lost");
  }

  /** Generators still starting or running. */
  get active(): GeneratorState[] {
    return this.generators.filter((g) => g.status === "starting" || g.status === "running");
  }

  /**
   * Reads what the stream holds past the last read, waiting up to `blockMs` for it.
   * @throws what Redis answers when it is away; ERR_PROTOCOL for an entry of an unknown type.
   */
  async read(blockMs: number): Promise<void> {
    const reply = (await this.#reader.xread("COUNT", 100, "BLOCK", blockMs, "STREAMS", this.#stream, this.#last)) as
      | [string, [string, string[]][]][]
      | null;
    for (const [id, fields] of reply?.[0]?.[1] ?? []) {
      this.#last = id;
      const raw = fields[1];
      if (raw === undefined) continue;
      this.#apply(decodeMessage<RunEntry>(raw, ENTRY_TYPES, "load run entry"), Buffer.byteLength(raw));
    }
  }

  /**
   * Declares lost every active generator whose lease has lapsed; returns them.
   * @throws what Redis answers when it is away (then nobody is declared lost: the coordinator cannot tell).
   */
  async checkLeases(nowMs: number): Promise<GeneratorState[]> {
    const active = this.active;
    const leases = await readAgents(
      this.#connection,
      active.map((g) => g.agent.id),
    );
    const lost: GeneratorState[] = [];
    active.forEach((generator, i) => {
      if (leases[i] !== undefined) return;
      generator.status = "lost";
      generator.lostAtMs = nowMs;
      generator.inFlightPrompts = generator.snapshot?.counters.inFlightPrompts ?? 0;
      lost.push(generator);
    });
    return lost;
  }

  /** The merged live counters (last snapshot of each generator, or its final figures). */
  progress(elapsedMs: number, plannedPrompts: number | null, durationMs: number | null): LoadProgress {
    const progress: LoadProgress = {
      elapsedMs: Math.round(elapsedMs),
      plannedPrompts,
      durationMs,
      promptsSent: 0,
      promptsDone: 0,
      promptsFailed: 0,
      inFlightPrompts: 0,
      inFlightRequests: 0,
      retries: 0,
      requests: 0,
      outputTokensPerSecond: 0,
      loopDelayMs: 0,
    };
    for (const generator of this.generators) {
      const totals = generator.final?.report.totals;
      const counters = generator.snapshot?.counters;
      if (totals !== undefined) {
        // A finished generator counts with its final figures (it may have ended before any snapshot).
        progress.promptsSent += totals.prompts.sent;
        progress.promptsDone += totals.prompts.succeeded + totals.prompts.failed + totals.prompts.cancelled;
        progress.promptsFailed += totals.prompts.failed;
        progress.retries += totals.retries;
        progress.requests += totals.requests.sent;
        continue;
      }
      if (counters === undefined) continue;
      progress.promptsSent += counters.promptsSent;
      progress.promptsDone += counters.promptsSucceeded + counters.promptsFailed + counters.promptsCancelled;
      progress.promptsFailed += counters.promptsFailed;
      progress.retries += counters.retries;
      progress.requests += counters.requests;
      if (generator.status !== "starting" && generator.status !== "running") continue;
      const intervalMs = generator.share.sampleIntervalMs ?? 1000;
      progress.inFlightPrompts += counters.inFlightPrompts;
      progress.inFlightRequests += counters.inFlightRequests;
      progress.outputTokensPerSecond += Math.round((generator.snapshot?.point.outputTokens ?? 0) * (1000 / intervalMs));
      progress.loopDelayMs = Math.max(progress.loopDelayMs, generator.snapshot?.point.loopDelayMaxMs ?? 0);
    }
    return progress;
  }

  #apply(entry: RunEntry, bytes: number): void {
    const generator = this.generators.find((g) => g.agent.id === entry.gen);
    if (generator === undefined || generator.status === "lost") return;
    switch (entry.type) {
      case "run_accepted":
        generator.status = "running";
        break;
      case "snapshot":
        generator.snapshots++;
        generator.snapshotBytes += bytes;
        if (generator.snapshot === undefined || entry.seq > generator.snapshot.seq) generator.snapshot = entry;
        break;
      case "records":
        generator.finalBytes += bytes;
        generator.records.push(entry.lines);
        break;
      case "run_final":
        generator.finalBytes += bytes;
        generator.final = entry;
        generator.status = "finished";
        break;
      case "run_failed":
        generator.status = "failed";
        generator.failure = { code: entry.code, message: entry.message };
        break;
      default: {
        const unknown: never = entry;
        throw new Error(`unreachable: ${JSON.stringify(unknown)}`);
      }
    }
  }

  /** The run this watch reads. */
  get runId(): string {
    return this.#runId;
  }
}
