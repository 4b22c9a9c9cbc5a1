/**
 * The in-process side of bench (o) and (r): pi-agent-core's `Agent` on the calling thread, one per
 * session, with pi's retry after a failed reply (what pi's AgentSession does on a retryable error:
 * drop the failed reply from the transcript, sleep, continue). Both sections compare lifeline
 * against exactly this loop, so it is written once.
 */
import { Agent } from "@mariozechner/pi-agent-core";
import { sleep } from "./lib.mjs";

/**
 * `make()` builds an agent on `model` with `listener` subscribed; `run(agent, text)` prompts it,
 * retrying a failed reply up to 3 times `retryDelayMs` apart, and resolves with its last message.
 */
export function inProcessAgents(model, listener, retryDelayMs) {
  const make = () => {
    const agent = new Agent({
      initialState: { systemPrompt: "", model, tools: [], messages: [] },
      sessionId: crypto.randomUUID(),
      getApiKey: () => "dummy",
    });
    agent.subscribe(listener);
    return agent;
  };
  const run = async (agent, text) => {
    await agent.prompt(text);
    let last = agent.state.messages.at(-1);
    for (let attempt = 0; attempt < 3 && last?.role === "assistant" && last.stopReason === "error"; attempt++) {
      agent.state.messages = agent.state.messages.slice(0, -1);
      await sleep(retryDelayMs);
      await agent.continue();
      last = agent.state.messages.at(-1);
    }
    return last;
  };
  return { make, run };
}
