/**
 * `RpcClient`'s waits for a prompt's end: `waitForIdle`, `collectEvents` and `promptAndWait` end on
 * `agent_settled` (not the first `agent_end`: under auto-retry a prompt has several), each an
 * internal watch of the connection's events subscribed before anything is asked, so no settle is
 * missed. It owns the prompts of the client still awaiting their response (prompt, steer and
 * follow_up each may start a run), which `waitForIdle` waits out before it trusts `isIdle`.
 */
import type { AgentSettledEvent } from "../../shared/events.js";
import { CONTINUE, type Watch } from "./event-watches.js";
import { checkTimeout } from "./rpc-client-options.js";
import type { RpcEvent, RpcSessionState } from "./rpc-protocol.js";

/**
 * What the waits need of one session's connection: `RpcClient`'s `RpcConnection`, or a session
 * handle of `RpcHostClient` (its events are that session's alone).
 */
export interface SettleSource {
  /** @throws LifelineError what a command made now would be refused with. */
  assertUsable(method: string): void;
  /** An internal watch of the session's events until `step` returns a value (see `EventWatches.watch`). */
  watch<T>(timeoutMs: number, step: (event: RpcEvent) => T | typeof CONTINUE): Watch<T>;
  /** The session's state (a `get_state`). */
  request(command: { type: "get_state" }): Promise<RpcSessionState>;
}

/** The settle waits of one client (or session); each rejects like `RpcClient.waitForIdle` says. */
export class SettleWaits {
  readonly #connection: SettleSource;
  /** Prompt, steer and follow_up requests not answered yet: each may still start a run that settles. */
  readonly #promptsInFlight = new Set<Promise<unknown>>();

  constructor(connection: SettleSource) {
    this.#connection = connection;
  }

  /** Remembers a request that may start a run until it is answered (see {@link idle}); returns it. */
  track(request: Promise<void>): Promise<void> {
    this.#promptsInFlight.add(request);
    const forget = () => {
      this.#promptsInFlight.delete(request);
    };
    request.then(forget, forget);
    return request;
  }

  /** `waitForIdle`: the next agent_settled, or undefined when the session is idle and no settle is pending. */
  async idle(timeoutMs: number): Promise<AgentSettledEvent | undefined> {
    this.#connection.assertUsable("waitForIdle");
    const watch = this.#connection.watch<AgentSettledEvent | undefined>(
      checkTimeout("timeoutMs", timeoutMs),
      (event) => (event.type === "agent_settled" ? event : CONTINUE),
    );
    // Subscribed before asking: a settle that arrives while get_state is in flight is caught by the
    // watch, and one written before the state the server reports would make isIdle true.
    void this.#settleIfIdle(watch);
    return watch.promise;
  }

  async #settleIfIdle(watch: Watch<AgentSettledEvent | undefined>): Promise<void> {
    try {
      // A prompt sent before this call but not yet answered may be about to start a run: wait for
      // its answer so the state below reflects it.
      await Promise.allSettled([...this.#promptsInFlight]);
      if (watch.done) return;
      const state = await this.#connection.request({ type: "get_state" });
      if (state.isIdle) watch.resolve(undefined);
    } catch (error) {
      watch.reject(error);
    }
  }

  /** `collectEvents`: every event from now until and including the next agent_settled. */
  async collect(timeoutMs: number): Promise<RpcEvent[]> {
    this.#connection.assertUsable("collectEvents");
    const events: RpcEvent[] = [];
    const watch = this.#connection.watch(checkTimeout("timeoutMs", timeoutMs), (event) => {
      events.push(event);
      return event.type === "agent_settled" ? events : CONTINUE;
    });
    return watch.promise;
  }

  /** `promptAndWait`: subscribes, then `send`s the prompt; the events through agent_settled. */
  async promptAndWait(
    send: () => Promise<void>,
    timeoutMs: number,
  ): Promise<{ events: RpcEvent[]; settled: AgentSettledEvent }> {
    this.#connection.assertUsable("promptAndWait");
    const events: RpcEvent[] = [];
    const watch = this.#connection.watch(checkTimeout("timeoutMs", timeoutMs), (event) => {
      events.push(event);
      return event.type === "agent_settled" ? event : CONTINUE;
    });
    try {
      await send();
    } catch (error) {
      watch.cancel();
      throw error;
    }
    return { events, settled: await watch.promise };
  }
}
