/**
 * SPEC X5 and X7 on real threads: workers killed at random points while several sessions share
 * them, through the built package and a real piscina pool. Every wait is bounded.
 */
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import {
  type AgentSession,
  createSessionHost,
  type PromptResult,
  type SessionEvent,
} from "../../../dist/main/index.js";
import { tempDir, within } from "../../fixtures/bounded.js";
import { workerApiModel } from "../../fixtures/models.mjs";

const KILLER_MODULE = new URL("../../fixtures/killer-module.mjs", import.meta.url);
const TOOL_MODULE = new URL("../../fixtures/tool-module.mjs", import.meta.url);
const KILLER_MODEL = workerApiModel("lifeline-test-killer", "killer-1");
const TOOLS_MODEL = workerApiModel("lifeline-test-tools", "tools-1");

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function answerOf(result: PromptResult): string {
  return (result.message?.content ?? []).map((block) => (block.type === "text" ? block.text : "")).join("");
}

function noTwoUsersInARow(messages: readonly AgentMessage[]): boolean {
  return messages.every((m, i) => i === 0 || !(m.role === "user" && messages[i - 1]?.role === "user"));
}

function restoredIn(session: AgentSession): SessionEvent[] {
  const seen: SessionEvent[] = [];
  session.subscribe((event) => {
    if (event.type === "session_restored" || event.type === "worker_exited") seen.push(event);
  });
  return seen;
}

describe("a worker killed at random points (SPEC X5, X7)", () => {
  it("X5 X7: 100 kills at random points of a worker's life with a neighbour on it (streaming, in a tool, in a retry sleep, right after prompt()): every prompt settles with its real outcome and no transcript breaks", async () => {
    const dir = tempDir(cleanups, "lifeline-x7-");
    const host = createSessionHost({
      threads: 1,
      lifelineDir: dir,
      cwd: dir,
      settings: { retry: { baseDelayMs: 20 } },
    });
    cleanups.push(() => host.close());
    const rounds = fc.sample(
      fc.record({
        killAfterMs: fc.integer({ min: 0, max: 120 }),
        napMs: fc.integer({ min: 0, max: 120 }),
        words: fc.integer({ min: 1, max: 8 }),
      }),
      { numRuns: 100, seed: 7 },
    );
    let restores = 0;
    const kinds = ["streaming", "in a tool", "in a retry sleep", "right after prompt()"] as const;
    for (const [index, round] of rounds.entries()) {
      const kind = kinds[index % kinds.length];
      const killed = new SharedArrayBuffer(4);
      // Two sessions on the one shared worker; the killer's first model call ends it later.
      const killer = await host.createSession({
        model: KILLER_MODEL,
        workerModule: KILLER_MODULE,
        workerModuleOptions: { killed, killAfterMs: kind === "right after prompt()" ? 0 : round.killAfterMs },
      });
      const neighbour =
        kind === "in a tool"
          ? await host.createSession({ model: TOOLS_MODEL, workerModule: TOOL_MODULE })
          : await host.createSession({ model: kind === "in a retry sleep" ? "demo/demo-1" : "demo/demo-stream" });
      const text =
        kind === "in a tool"
          ? `rest [nap=${round.napMs}]`
          : kind === "in a retry sleep"
            ? "[fail=1] wait"
            : `talk [words=${round.words}]`;
      const sessions = [killer, neighbour];
      const seen = sessions.map(restoredIn);
      const [killerResult, neighbourResult] = await within(
        Promise.all([killer.prompt("go"), neighbour.prompt(text)]),
        30_000,
        `round ${index} (${kind}): both prompts to settle`,
      );
      const what = `round ${index} (${kind})`;
      expect(killerResult?.stopReason, what).toBe("stop");
      expect(answerOf(killerResult as PromptResult), what).toBe("the killer answered after all");
      expect(neighbourResult?.stopReason, what).toBe("stop");
      const answer = answerOf(neighbourResult as PromptResult);
      if (kind === "in a tool") {
        // The nap finished, or was interrupted and reported to the model: never re-run silently.
        expect(answer, what).toMatch(
          new RegExp(`^the tool said: (napped ${round.napMs} ms|Tool call interrupted: the worker running it exited)`),
        );
      } else if (kind !== "in a retry sleep") {
        expect(answer.split(" "), what).toHaveLength(round.words);
      }
      for (const [position, session] of sessions.entries()) {
        expect(noTwoUsersInARow(session.messages), `${what} session ${position}`).toBe(true);
        expect(session.messages.some((m) => m.role === "assistant" && m.stopReason === "error")).toBe(false);
        // Restored, never given up.
        expect(seen[position]?.every((event) => event.type === "session_restored")).toBe(true);
        restores += seen[position]?.length ?? 0;
      }
      await Promise.all(sessions.map((session) => session.dispose()));
    }
    // The kill came after a session's answer in some rounds; most rounds restored someone.
    expect(restores).toBeGreaterThan(50);
  }, 180_000);
});
