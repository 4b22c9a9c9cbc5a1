/**
 * pi's `getThinkingLevel`/`setThinkingLevel` and `thinking_level_select` for extensions
 * (docs/extensions.md), on real threads through the built package: handlers on the main thread
 * read and set the session's level, tools in the worker read it, and what pi refuses while an
 * extension loads is refused. Run `npm run build` first.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createSessionHost, type SessionHost } from "../../../dist/main/index.js";
import { tempDir, within } from "../../fixtures/bounded.js";
import { nextEvent } from "../../fixtures/events.js";
import { workerApiModel } from "../../fixtures/models.mjs";

const TOOL_MODEL_MODULE = new URL("../../fixtures/ext-tool-model.mjs", import.meta.url);
/** The fixture's scripted model, declared with reasoning so that pi-ai supports off … high. */
const MODEL = { ...workerApiModel("lifeline-ext-tools", "ext-tools-1"), reasoning: true };

type Seen = Record<string, unknown>[];
const probes = new Map<string, (record: Record<string, unknown>) => void>();
(globalThis as { __lifelineThinkingProbe?: unknown }).__lifelineThinkingProbe = (
  key: string,
  record: Record<string, unknown>,
) => probes.get(key)?.(record);

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  probes.clear();
});

let keys = 0;
/** A probe key, what it received, and a wait for its `count`-th record. */
function probe(): { key: string; seen: Seen; records: (count: number) => Promise<Seen> } {
  const key = `thinking-${++keys}`;
  const seen: Seen = [];
  const waiters: { count: number; resolve: (seen: Seen) => void }[] = [];
  probes.set(key, (record) => {
    seen.push(record);
    for (const waiter of waiters.filter((w) => w.count <= seen.length)) waiter.resolve(seen);
  });
  return {
    key,
    seen,
    records: (count) =>
      seen.length >= count ? Promise.resolve(seen) : new Promise((resolve) => waiters.push({ count, resolve })),
  };
}

/** A host whose one extension is `source` (TypeScript, loaded through jiti). */
function hostWith(source: string): SessionHost {
  const dir = tempDir(cleanups);
  const file = join(dir, "thinking.ts");
  writeFileSync(file, source);
  const host = createSessionHost({ lifelineDir: dir, cwd: dir, threads: 1, extensions: [file] });
  cleanups.push(() => host.close());
  return host;
}

const PRELUDE = `
type Pi = {
  thread: "main" | "worker";
  on(type: string, handler: (event: Record<string, unknown>) => unknown): void;
  registerTool(tool: unknown): void;
  getThinkingLevel(): string;
  setThinkingLevel(level: string): void;
};
const probe = (globalThis as { __lifelineThinkingProbe?: (key: string, record: unknown) => void }).__lifelineThinkingProbe;
`;

describe("thinking levels for extensions", () => {
  it("a handler reads the level and sets it; handlers get thinking_level_select with the level before, for its change and the host's", async () => {
    const { key, records } = probe();
    const host = hostWith(`${PRELUDE}
export default function (pi: Pi): void {
  pi.on("agent_settled", () => {
    probe?.(${JSON.stringify(key)}, { read: pi.getThinkingLevel() });
    pi.setThinkingLevel("high");
  });
  pi.on("thinking_level_select", (event) => probe?.(${JSON.stringify(key)}, event));
}
`);
    const session = await host.createSession({ model: MODEL, workerModule: TOOL_MODEL_MODULE });
    const changed = nextEvent(session, "thinking_level_changed");
    await within(session.prompt("no tool"), 10_000, "the prompt");
    expect(await within(changed, 10_000, "the handler's change")).toEqual({
      type: "thinking_level_changed",
      level: "high",
    });
    expect(session.thinkingLevel).toBe("high");
    await session.setThinkingLevel("low");
    expect(await within(records(3), 10_000, "the handlers")).toEqual([
      { read: "medium" },
      { type: "thinking_level_select", level: "high", previousLevel: "medium" },
      { type: "thinking_level_select", level: "low", previousLevel: "high" },
    ]);
  });

  it("a tool in the worker reads the level, and is refused when it sets it (the level is the main thread's)", async () => {
    const host = hostWith(`${PRELUDE}
import { Type } from "typebox";
export default function (pi: Pi): void {
  pi.registerTool({
    name: "ext_level",
    label: "Level",
    description: "Reports the thinking level.",
    parameters: Type.Object({ who: Type.String() }),
    async execute() {
      let set = "allowed";
      try {
        pi.setThinkingLevel("low");
      } catch (error) {
        set = (error as { code?: string }).code ?? "thrown";
      }
      return { content: [{ type: "text", text: \`level=\${pi.getThinkingLevel()} set=\${set}\` }], details: {} };
    },
  });
}
`);
    const session = await host.createSession({
      model: MODEL,
      workerModule: TOOL_MODEL_MODULE,
      thinkingLevel: "minimal",
    });
    const result = await within(session.prompt("[call=ext_level]"), 10_000, "the prompt");
    expect(result.message?.content).toEqual([
      { type: "text", text: "the tool said: level=minimal set=ERR_EXTENSION_UNSUPPORTED" },
    ]);
    expect(session.thinkingLevel).toBe("minimal");
  });

  it("calling getThinkingLevel while the factory runs fails the load naming the member, as pi refuses it while extensions load", async () => {
    const host = hostWith(`${PRELUDE}
export default function (pi: Pi): void {
  pi.getThinkingLevel();
}
`);
    const error = await host.createSession({ model: MODEL, workerModule: TOOL_MODEL_MODULE }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "ERR_EXTENSION_LOAD" });
    expect((error as Error).cause).toMatchObject({ code: "ERR_EXTENSION_UNSUPPORTED", member: "getThinkingLevel" });
  });
});
