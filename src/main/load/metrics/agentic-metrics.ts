/**
 * What a load run measures of agent turns and tools, from the sessions' events: the turn each
 * model request belongs to, the turns and tool calls of each prompt, and each tool execution's
 * latency and outcome. Fed by `LoadMetrics` (load-metrics.ts); main thread, no clock of its own:
 * tool latencies come stamped from the worker.
 *
 * A *turn* is one step of the agent loop: a model request and its retries, up to the reply the
 * loop acts on. A prompt's first turn is 0; a reply that ends with tool calls (`toolUse`) makes the
 * next request a new turn, while a retry repeats its turn. So a prompt's requests are its turns
 * plus its retries, and without tools a prompt has one turn.
 */
import type { SessionEvent } from "../../../shared/events.js";
import { roundMicros } from "../../../shared/request-timing.js";

/** The tool figures of a run (report.json `agentic`, with the prompts' turns). */
export interface ToolFigures {
  /** `tool_execution_start` events. */
  toolCalls: number;
  /** `tool_execution_end` events with `isError` (the tool threw or was not found). */
  toolFailures: number;
  /**
   * Each ended execution's start → end, in ms, as the worker stamped them around the tool
   * (`tool_execution_end.timing`, X9): never shorter than the tool's own time, whatever the event
   * batching and the main thread's load.
   */
  toolLatenciesMs: number[];
}

interface TurnState {
  /** The turn the session's next or current request belongs to. */
  turn: number;
  /** Turns of the prompt whose request started (`turn_start`). */
  turnsStarted: number;
  /** Tool executions the prompt started. */
  toolCalls: number;
}

/** Turns and tools of a run's sessions; see the file comment. */
export class AgenticMetrics {
  readonly figures: ToolFigures = { toolCalls: 0, toolFailures: 0, toolLatenciesMs: [] };
  readonly #sessions = new Map<number, TurnState>();
  /** The run has ended: executions ending now were cut by its abort. */
  #ended = false;

  /**
   * Feeds one event of `session`. Call it after the request record of a `message_end` is made:
   * a tool-use reply belongs to its turn, and moves the session to the next turn here.
   */
  onEvent(session: number, event: SessionEvent): void {
    const state = this.#state(session);
    switch (event.type) {
      case "turn_start":
        state.turnsStarted = Math.max(state.turnsStarted, state.turn + 1);
        break;
      case "message_end":
        if (event.message.role === "assistant" && event.message.stopReason === "toolUse") state.turn++;
        break;
      case "tool_execution_start":
        this.figures.toolCalls++;
        state.toolCalls++;
        break;
      case "tool_execution_end": {
        // A call cut by the run's end is neither timed nor a failure of the tool.
        if (this.#ended) break;
        // Timed only from the worker's stamps: times taken here, as events arrive, read short
        // under load (see ToolTiming).
        const timing = event.timing;
        if (timing !== undefined) this.figures.toolLatenciesMs.push(roundMicros(timing.endMs - timing.startMs));
        if (event.isError) this.figures.toolFailures++;
        break;
      }
      default:
        break;
    }
  }

  /**
   * The run ended (its duration, Ctrl+C) and aborts its prompts: tool executions that end from now
   * on were cut by that abort, so they count neither as failures nor in the latencies.
   */
  runEnded(): void {
    this.#ended = true;
  }

  /** The turn of `session`'s current request (0-based within its prompt). */
  turnOf(session: number): number {
    return this.#state(session).turn;
  }

  /** A prompt of `session` is about to be sent: its turns and tool calls start from 0. */
  promptStarted(session: number): void {
    this.#sessions.set(session, { turn: 0, turnsStarted: 0, toolCalls: 0 });
  }

  /** The turns (whose request started) and tool calls of `session`'s current prompt. */
  promptFigures(session: number): { turns: number; toolCalls: number } {
    const state = this.#state(session);
    return { turns: state.turnsStarted, toolCalls: state.toolCalls };
  }

  #state(session: number): TurnState {
    let state = this.#sessions.get(session);
    if (state === undefined) {
      state = { turn: 0, turnsStarted: 0, toolCalls: 0 };
      this.#sessions.set(session, state);
    }
    return state;
  }
}
