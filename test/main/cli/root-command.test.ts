/**
 * `lifeline` itself, run in this process with a recording runtime: which mode a command line
 * chooses (pi's rules: a prompt without a terminal is print mode, with one the interactive
 * session's first prompts), and a lone word that looks like a mistyped command refused rather
 * than sent to a model.
 */
import { afterAll, describe, expect, it } from "vitest";
import { cliPlace, runRecorded } from "../../fixtures/cli-runtime.js";

const place = cliPlace();
afterAll(() => place.remove());

describe("lifeline's modes", () => {
  it("a prompt without a terminal is print mode; on a terminal, the interactive session's first prompt", async () => {
    const piped = await runRecorded(["hello", "again"], place);
    expect(piped.calls).toEqual([
      expect.objectContaining({ method: "print", request: expect.objectContaining({ messages: ["hello", "again"] }) }),
    ]);
    const terminal = await runRecorded(["hello"], place, { terminal: true });
    expect(terminal.calls).toEqual([
      expect.objectContaining({
        method: "interactive",
        request: expect.objectContaining({ initialMessages: ["hello"] }),
      }),
    ]);
  });

  it("nothing to do without a terminal prints the help and exits 0", async () => {
    const run = await runRecorded([], place);
    expect({ code: run.code, calls: run.calls }).toEqual({ code: 0, calls: [] });
    expect(run.stdout).toMatch(/^Usage: lifeline/);
  });

  it("a lone word one edit from a command is refused with the command it was probably meant to be", async () => {
    const run = await runRecorded(["sesions"], place);
    expect(run.code).toBe(2);
    expect(run.calls).toEqual([]);
    expect(run.stderr).toContain("did you mean `lifeline sessions`?");
    expect(run.stderr).toContain('-p "sesions"');
    const meant = await runRecorded(["-p", "sesions"], place);
    expect(meant.calls).toEqual([
      expect.objectContaining({ request: expect.objectContaining({ messages: ["sesions"] }) }),
    ]);
  });

  it("--mode rpc takes no prompt on the command line", async () => {
    const run = await runRecorded(["--mode", "rpc", "hello"], place);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("--mode rpc takes its prompts as commands on stdin");
  });
});
