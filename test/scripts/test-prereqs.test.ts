/**
 * scripts/test-prereqs.mjs, which `npm test` runs first: it installs Debian's package for a missing
 * system program when it can (root and apt-get), and otherwise stops with the exact command. The
 * real machine is never changed here: a program that exists nowhere stands for a missing one, and
 * the commands go to a recorder instead of apt-get.
 */
import { describe, expect, it } from "vitest";
import {
  type Command,
  commandRuns,
  missingMessage,
  PREREQUISITES,
  type Prerequisite,
  plan,
  provision,
  requirePrerequisites,
  type System,
} from "../../scripts/test-prereqs.mjs";

/** A prerequisite no machine has: the real check looks for it on the PATH. */
const fake: Prerequisite = {
  name: "lifeline-no-such-program",
  tier: "fake",
  neededBy: "no real test",
  debianPackage: "lifeline-no-such-package",
  present: () => commandRuns("lifeline-no-such-program", ["--version"]),
};

/** A system that records the commands it is asked to run; `installs` says what running them provides. */
function recordingSystem(root: boolean, aptGet: boolean, installs: () => void = () => {}) {
  const ran: Command[] = [];
  const system: System = {
    root,
    aptGet,
    run: (command) => {
      ran.push(command);
      if (command.args.includes("install")) installs();
    },
    log: () => {},
  };
  return { system, ran };
}

describe("test-prereqs: what to do about a missing program", () => {
  it("a program that is there needs nothing (tmux, which the tmux tier uses, is on this machine)", () => {
    const tmux = PREREQUISITES.find((p) => p.name === "tmux");
    expect(tmux?.present()).toBe(true);
    expect(plan([], { root: false, aptGet: false })).toEqual({ action: "none" });
  });

  it("as root with apt-get: apt-get update once, then one non-interactive install without recommends", () => {
    expect(fake.present()).toBe(false);
    const second = { ...fake, name: "another", debianPackage: "another-package" };
    expect(plan([fake, second, fake], { root: true, aptGet: true })).toEqual({
      action: "install",
      packages: ["lifeline-no-such-package", "another-package"],
      commands: [
        { program: "apt-get", args: ["update"] },
        {
          program: "apt-get",
          args: ["install", "-y", "--no-install-recommends", "lifeline-no-such-package", "another-package"],
          env: { DEBIAN_FRONTEND: "noninteractive" },
        },
      ],
    });
  });

  it.each([
    ["not root", false, true, "not root"],
    ["without apt-get", true, false, "apt-get is not here"],
  ])("%s: stops at once with the exact command to run as root", (_, root, aptGet, why) => {
    const { system, ran } = recordingSystem(root, aptGet);
    const result = provision([fake], system);
    expect(ran).toEqual([]);
    expect(result.ok).toBe(false);
    const message = result.ok ? "" : result.message;
    expect(message).toContain("lifeline-no-such-program (needed by no real test)");
    expect(message).toContain(
      "apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends lifeline-no-such-package",
    );
    expect(message).toContain(why);
  });

  it("as root: runs the install, then checks again; still missing after it is a stop, not a pass", () => {
    const { system, ran } = recordingSystem(true, true);
    const result = provision([fake], system);
    expect(ran.map((command) => command.args[0])).toEqual(["update", "install"]);
    expect(result).toEqual({ ok: false, message: expect.stringContaining("still missing after the install") });
  });

  it("as root: an install that provides the program passes", () => {
    let installed = false;
    const provided = { ...fake, present: () => installed };
    const { system, ran } = recordingSystem(true, true, () => {
      installed = true;
    });
    expect(provision([provided], system)).toEqual({ ok: true });
    expect(ran).toHaveLength(2);
  });

  it("a failed install stops with the command to run by hand", () => {
    const system: System = {
      ...recordingSystem(true, true).system,
      run: () => {
        throw new Error("E: Unable to locate package lifeline-no-such-package");
      },
    };
    const result = provision([fake], system);
    expect(result.ok).toBe(false);
    expect(result.ok ? "" : result.message).toMatch(/the install failed: .*Unable to locate package/);
  });

  it("a test of a tier whose program is missing fails with the same message, never skips", () => {
    expect(() => requirePrerequisites("fake", [fake])).toThrow(missingMessage(fake));
    expect(() => requirePrerequisites("other tier", [fake])).not.toThrow();
  });
});
