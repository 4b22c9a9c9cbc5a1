/**
 * `lifeline sessions delete` and `lifeline sessions prune` on session files (real child processes
 * of the built CLI, sessions made by print mode on the demo model, one held open by a live
 * `--mode rpc` child): delete by id or unique prefix removes the file, an unknown id or an
 * ambiguous prefix exits 2, a session open in a live process exits 1 and stays; prune deletes
 * exactly the sessions older than `--older-than` (every directory's, or `--here` this one's),
 * leaves an open one, and `--dry-run` lists what a prune deletes and deletes nothing.
 */
import { existsSync, readdirSync, readFileSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { encodeCwd } from "../../../src/main/session-files/session-format.js";
import { tempDir } from "../../fixtures/bounded.js";
import { type CliAt, holdSessionOpen, idsOf, runLifeline } from "../../fixtures/lifeline-cli.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

type At = CliAt;

const lifeline = (args: string[], at: At) => runLifeline(cleanups, args, at, 20_000);
const holdOpen = (at: At, id: string) => holdSessionOpen(cleanups, [], at, id, 20_000);

/** A LIFELINE_DIR with fast retries, and two working directories that share it. */
function dirs(): { a: At; b: At } {
  const home = tempDir(cleanups);
  writeFileSync(join(home, "settings.json"), JSON.stringify({ retry: { baseDelayMs: 5 } }));
  return { a: { home, cwd: tempDir(cleanups) }, b: { home, cwd: tempDir(cleanups) } };
}

/** The session file of `id` in `at.cwd`'s directory of the store. */
function fileOf(at: At, id: string): string {
  const directory = join(at.home, "sessions", encodeCwd(at.cwd));
  const name = readdirSync(directory).find((entry) => entry.endsWith(`_${id}.jsonl`));
  if (name === undefined) throw new Error(`no session file of ${id} in ${directory}`);
  return join(directory, name);
}

/** The ids of the session files in `at.cwd`'s directory of the store. */
function idsIn(at: At): string[] {
  const directory = join(at.home, "sessions", encodeCwd(at.cwd));
  return readdirSync(directory)
    .filter((name) => name.endsWith(".jsonl"))
    .map((name) => name.slice(name.indexOf("_") + 1, -".jsonl".length))
    .sort();
}

/** Runs `lifeline -p <prompt>` in `at.cwd` and answers the id of the session it stored. */
async function makeSession(at: At, prompt: string): Promise<string> {
  const before = existsSync(join(at.home, "sessions", encodeCwd(at.cwd))) ? idsIn(at) : [];
  const run = await lifeline(["-p", prompt], at);
  expect(run.code, run.stderr).toBe(0);
  const made = idsIn(at).filter((id) => !before.includes(id));
  expect(made).toHaveLength(1);
  return made[0] as string;
}

const TWO_DAYS_AGO = new Date(Date.now() - 2 * 86_400_000);

describe("lifeline sessions delete", () => {
  it("deletes a session by id or by unique prefix (of any directory), exits 2 for an unknown id or an ambiguous prefix, and exits 1 leaving a session open in a live process", async () => {
    const { a, b } = dirs();
    const [a1, b1] = await Promise.all([makeSession(a, "first here"), makeSession(b, "first there")]);
    // After a1: makeSession tells its session by the files it did not see before.
    const a2 = await makeSession(a, "second here");
    const b1File = fileOf(b, b1);

    const byId = await lifeline(["sessions", "delete", a1], a);
    expect(byId.code, byId.stderr).toBe(0);
    expect(byId.stdout.split("\t").slice(0, 1)).toEqual([a1]);
    expect(byId.stdout).toContain(`\t${a.cwd}\tfirst here\n`);
    expect(byId.stderr).toContain(`Deleted session ${a1}.`);
    expect(idsIn(a)).toEqual([a2]);

    // A prefix of another directory's session, from this one.
    const byPrefix = await lifeline(["sessions", "delete", b1.slice(0, 8)], a);
    expect(byPrefix.code, byPrefix.stderr).toBe(0);
    expect(byPrefix.stdout.split("\t")[0]).toBe(b1);
    expect(existsSync(b1File)).toBe(false);
    expect(existsSync(`${b1File}.lock`)).toBe(false);
    const listedThere = await lifeline(["sessions"], b);
    expect({ code: listedThere.code, stdout: listedThere.stdout }).toEqual({ code: 0, stdout: "" });
    const listedHere = await lifeline(["sessions"], a);
    expect(idsOf(listedHere.stdout)).toEqual([a2]);

    const unknown = await lifeline(["sessions", "delete", "0000dead"], a);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("ERR_SESSION_NOT_FOUND");
    expect(unknown.stderr).toContain('"0000dead"');
    expect(unknown.stdout).toBe("");

    // A twin of a2 whose id shares its first 8 characters: the prefix names two sessions.
    const a2File = fileOf(a, a2);
    const twin = `${a2.slice(0, 9)}${a2.slice(9).split("").reverse().join("")}`;
    expect(twin).not.toBe(a2);
    const twinFile = a2File.replace(a2, twin);
    writeFileSync(twinFile, readFileSync(a2File, "utf8").replaceAll(a2, twin));
    const ambiguous = await lifeline(["sessions", "delete", a2.slice(0, 8)], a);
    expect(ambiguous.code).toBe(2);
    expect(ambiguous.stderr).toContain("ERR_INVALID_OPTIONS");
    expect(ambiguous.stderr).toContain("matches 2 sessions");
    expect(idsIn(a)).toEqual([a2, twin].sort());

    const holder = await holdOpen(a, a2);
    const locked = await lifeline(["sessions", "delete", a2], a);
    expect(locked.code).toBe(1);
    expect(locked.stderr).toContain("ERR_SESSION_LOCKED");
    expect(locked.stderr).toContain(`process ${holder.pid}`);
    expect(locked.stdout).toBe("");
    expect(existsSync(a2File)).toBe(true);
    // Its holder killed, the lock left behind names a dead process: the delete goes through.
    await holder.stop();
    expect(existsSync(`${a2File}.lock`)).toBe(true);
    const afterHolder = await lifeline(["sessions", "delete", a2], a);
    expect(afterHolder.code, afterHolder.stderr).toBe(0);
    expect(idsIn(a)).toEqual([twin]);
    expect(existsSync(`${a2File}.lock`)).toBe(false);
  }, 60_000);
});

describe("lifeline sessions prune", () => {
  it("deletes exactly the sessions older than --older-than, of every directory or --here this one's, leaves one open in a live process, and --dry-run lists the same and deletes nothing", async () => {
    const { a, b } = dirs();
    const [aOld, bOld] = await Promise.all([makeSession(a, "old here"), makeSession(b, "old there")]);
    const [aNew, bNew] = await Promise.all([makeSession(a, "new here"), makeSession(b, "new there")]);
    const bOpen = await makeSession(b, "old and open there");
    const holder = await holdOpen(b, bOpen);
    for (const [at, id] of [
      [a, aOld],
      [b, bOld],
      [b, bOpen],
    ] as const) {
      utimesSync(fileOf(at, id), TWO_DAYS_AGO, TWO_DAYS_AGO);
    }
    const everything = { a: [aOld, aNew].sort(), b: [bOld, bNew, bOpen].sort() };

    const noAge = await lifeline(["sessions", "prune"], a);
    expect(noAge.code).toBe(2);
    expect(noAge.stderr).toContain("--older-than");
    const badAge = await lifeline(["sessions", "prune", "--older-than", "3w"], a);
    expect(badAge.code).toBe(2);
    expect(badAge.stderr).toContain('"3w"');
    expect({ a: idsIn(a), b: idsIn(b) }).toEqual(everything);

    const dryRun = await lifeline(["sessions", "prune", "--older-than", "1d", "--dry-run"], a);
    expect(dryRun.code, dryRun.stderr).toBe(0);
    expect(idsOf(dryRun.stdout)).toEqual([aOld, bOld].sort());
    expect(dryRun.stderr).toContain(`Left ${bOpen}: `);
    expect(dryRun.stderr).toContain("Would delete 2 sessions; left 1 open somewhere.");
    expect({ a: idsIn(a), b: idsIn(b) }).toEqual(everything);

    const here = await lifeline(["sessions", "prune", "--older-than", "1d", "--here"], a);
    expect(here.code, here.stderr).toBe(0);
    expect(idsOf(here.stdout)).toEqual([aOld]);
    expect(here.stderr).toContain("Deleted 1 session.");
    expect({ a: idsIn(a), b: idsIn(b) }).toEqual({ a: [aNew], b: everything.b });

    const all = await lifeline(["sessions", "prune", "--older-than", "1d"], a);
    expect(all.code, all.stderr).toBe(0);
    expect(idsOf(all.stdout)).toEqual([bOld]);
    expect(all.stderr).toContain(`Left ${bOpen}: `);
    expect(all.stderr).toContain(`open for writing by process ${holder.pid}`);
    expect(all.stderr).toContain("Deleted 1 session; left 1 open somewhere.");
    expect({ a: idsIn(a), b: idsIn(b) }).toEqual({ a: [aNew], b: [bNew, bOpen].sort() });
    // The dry run listed what the two prunes deleted, line for line.
    expect(`${here.stdout}${all.stdout}`.split("\n").sort()).toEqual(dryRun.stdout.split("\n").sort());

    await holder.stop();
  }, 60_000);
});
