// What the test suite needs from the system that npm cannot install, provisioned before the tests.
// `npm test` runs this first. Each entry of PREREQUISITES is one thing from Debian's packages; when
// one is missing this script installs its package if it can (root and apt-get: `apt-get update`
// once, then one `apt-get install` for all of them), and otherwise stops at once with the exact
// command to run. It never lets a test skip for want of a program: a test that needs one fails
// with the same message (see missingMessage) when it is run without this script.
//
//   node scripts/test-prereqs.mjs     exit 0 when everything is there (after installing it), else 1
//
// Chromium itself comes from npm (the devDependency @sparticuz/chromium, a Chromium for x64 Linux
// unpacked into the temp folder on first use); the system libraries it links to are entries here.
// To add one, add an entry: what the tests call, which tests need it, Debian's package, and how to
// tell it is there.
import { execFileSync } from "node:child_process";
import { realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** Whether `program` runs (found on the PATH and starts); `args` should make it print and exit. */
export function commandRuns(program, args) {
  try {
    execFileSync(program, args, { stdio: "ignore", timeout: 10_000 });
    return true;
  } catch {
    return false;
  }
}

/** Whether the dynamic linker knows the shared library `soname` (from `ldconfig -p`). */
export function sharedLibraryKnown(soname) {
  try {
    const cache = execFileSync("/sbin/ldconfig", ["-p"], { encoding: "utf8", timeout: 10_000 });
    return cache.split("\n").some((line) => line.trim().startsWith(`${soname} `));
  } catch {
    return false;
  }
}

/** The npm Chromium is used on x64 Linux only; elsewhere the browser test takes a system Chromium. */
const npmChromium = process.platform === "linux" && process.arch === "x64";

/**
 * @type {import("./test-prereqs.d.mts").Prerequisite[]}
 */
export const PREREQUISITES = [
  {
    name: "tmux",
    tier: "tmux",
    neededBy: "the terminal UI tests (test/**/*.tmux.test.ts)",
    debianPackage: "tmux",
    present: () => commandRuns("tmux", ["-V"]),
  },
  {
    name: "redis-server",
    tier: "redis",
    neededBy: "the fleet-mode tests (test/**/*.redis.test.ts), which start their own Redis on loopback",
    debianPackage: "redis-server",
    present: () => commandRuns("redis-server", ["--version"]),
  },
  {
    name: "python3",
    tier: "process",
    neededBy: "the host-mode client in Python (test/main/rpc/host/python-client.process.test.ts)",
    debianPackage: "python3",
    present: () => commandRuns("python3", ["--version"]),
  },
  // The network tests' certificate authority (test/fixtures/test-ca.ts), in both tiers that have one.
  ...["thread", "process"].map((tier) => ({
    name: "openssl",
    tier,
    neededBy: "the custom CA tests (test/fixtures/test-ca.ts)",
    debianPackage: "openssl",
    present: () => commandRuns("openssl", ["version"]),
  })),
  ...(npmChromium
    ? [
        {
          name: "libnss3.so",
          tier: "browser",
          neededBy: "the Chromium of @sparticuz/chromium (test/**/*.browser.test.ts)",
          debianPackage: "libnss3",
          present: () => sharedLibraryKnown("libnss3.so") && sharedLibraryKnown("libnspr4.so"),
        },
        {
          name: "libexpat.so.1",
          tier: "browser",
          neededBy: "the Chromium of @sparticuz/chromium (test/**/*.browser.test.ts)",
          debianPackage: "libexpat1",
          present: () => sharedLibraryKnown("libexpat.so.1"),
        },
      ]
    : []),
];

const APT_INSTALL = ["install", "-y", "--no-install-recommends"];

/** The shell command that installs `packages`, for a person to run as root. */
export function installCommand(packages) {
  return `apt-get update && DEBIAN_FRONTEND=noninteractive apt-get ${APT_INSTALL.join(" ")} ${packages.join(" ")}`;
}

/** The message for a missing prerequisite: what needs it and the exact command that installs it. */
export function missingMessage(prerequisites) {
  const list = [prerequisites].flat();
  const packages = [...new Set(list.map((p) => p.debianPackage))];
  const what = list.map((p) => `${p.name} (needed by ${p.neededBy})`).join("; ");
  return `Missing: ${what}. \`npm test\` installs it when run as root on Debian; otherwise run as root: ${installCommand(packages)}`;
}

/**
 * What to do about the `missing` prerequisites: nothing; install their Debian packages (as root
 * with apt-get: the commands, in order); or stop with the message that says how.
 * @param {import("./test-prereqs.d.mts").Prerequisite[]} missing
 * @param {{ root: boolean; aptGet: boolean }} system
 * @returns {import("./test-prereqs.d.mts").Plan}
 */
export function plan(missing, system) {
  if (missing.length === 0) return { action: "none" };
  if (!system.root || !system.aptGet) {
    const why = system.aptGet ? "not root, so it cannot install them" : "apt-get is not here";
    return { action: "stop", message: `${missingMessage(missing)}\n(test-prereqs: ${why}.)` };
  }
  const packages = [...new Set(missing.map((p) => p.debianPackage))];
  return {
    action: "install",
    packages,
    commands: [
      { program: "apt-get", args: ["update"] },
      { program: "apt-get", args: [...APT_INSTALL, ...packages], env: { DEBIAN_FRONTEND: "noninteractive" } },
    ],
  };
}

/**
 * For a test of a tier (the file name's suffix, as "tmux"): throws the message of missingMessage
 * when one of that tier's prerequisites is missing, so that the test fails and says how to
 * install it, rather than skipping.
 */
export function requirePrerequisites(tier, prerequisites = PREREQUISITES) {
  const missing = prerequisites.filter((p) => p.tier === tier && !p.present());
  if (missing.length > 0) throw new Error(missingMessage(missing));
}

/** This machine: root or not, apt-get or not, running commands for real and logging to stderr. */
export const thisSystem = {
  root: typeof process.getuid === "function" && process.getuid() === 0,
  get aptGet() {
    return process.platform === "linux" && commandRuns("apt-get", ["--version"]);
  },
  run: (command) =>
    execFileSync(command.program, command.args, {
      stdio: ["ignore", "inherit", "inherit"],
      env: { ...process.env, ...command.env },
    }),
  log: (line) => process.stderr.write(`${line}\n`),
};

/**
 * Checks every prerequisite, installs what is missing when it can, and checks again.
 * @returns {{ ok: true } | { ok: false; message: string }}
 */
export function provision(prerequisites = PREREQUISITES, system = thisSystem) {
  const missing = prerequisites.filter((p) => !p.present());
  const decided = plan(missing, system);
  if (decided.action === "none") return { ok: true };
  if (decided.action === "stop") return { ok: false, message: decided.message };
  system.log(`test-prereqs: installing ${decided.packages.join(", ")} from Debian's packages for the tests`);
  try {
    for (const command of decided.commands) system.run(command);
  } catch (error) {
    return { ok: false, message: `${missingMessage(missing)}\n(test-prereqs: the install failed: ${String(error)})` };
  }
  const still = missing.filter((p) => !p.present());
  if (still.length === 0) return { ok: true };
  return { ok: false, message: `${missingMessage(still)}\n(test-prereqs: still missing after the install.)` };
}

const invokedDirectly =
  process.argv[1] !== undefined && realpathSync(process.argv[1]) === realpathSync(fileURLToPath(import.meta.url));
if (invokedDirectly) {
  const result = provision();
  if (!result.ok) {
    process.stderr.write(`${result.message}\n`);
    process.exit(1);
  }
}
