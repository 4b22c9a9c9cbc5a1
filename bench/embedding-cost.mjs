/**
 * (s) What an app that embeds lifeline pays on its main thread (docs/embedding.md, "What an
 * embedding app pays"), each figure beside its baseline measured in the same run:
 *
 *  - `import("lifeline")` (the package's main entry) in fresh processes, interleaved with
 *    `import("piscina")`, the pool it cannot do without: median wall and CPU time; target ≤ 4×
 *    piscina's. And the packages the import loaded (a resolve hook for ES modules, require's cache
 *    for CommonJS): none of the provider SDKs, pi's packages, typebox, ioredis, bullmq, jiti,
 *    chart.js, commander or OpenTelemetry beyond its API.
 *  - the three-line embedder `import { SessionHost } from "lifeline"` bundled with
 *    `esbuild --bundle --platform=node --format=esm --minify`: its size (target ≤ 1,000 KB) and
 *    whether a listed package is inside.
 *  - from `createSessionHost()` to the first session's first reply (the demo model), and the
 *    longest the main thread was blocked meanwhile (a 1 ms interval probe: the largest gap
 *    between its ticks, less the 1 ms); target ≤ 20 ms. With BENCH_BASE_DIR=<a built checkout of
 *    the base commit>, the same start is measured there too, interleaved, and the ratio printed
 *    (target: within 10 %).
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { median, pick, report } from "./lib.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const BASE = process.env.BENCH_BASE_DIR;
const RUNS = pick(9, 5);
const START_RUNS = pick(9, 3);

/** Packages the main thread of an embedding app must not load or carry (docs/embedding.md, "What an embedding app pays"). */
const FORBIDDEN =
  /^(@mariozechner\/|typebox$|ioredis$|@ioredis\/|bullmq$|jiti$|chart\.js$|commander$|@anthropic-ai\/|openai$|@google\/|google-auth-library$|@mistralai\/|@aws-sdk\/|@smithy\/|@opentelemetry\/(?!api$))/;

const packageOf = (path) => /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path)?.[1];

/** Runs `code` as an ES module in a fresh process from `cwd`; its last stdout line, as JSON, and its stderr. */
function node(code, cwd, execArgv = []) {
  const result = spawnSync(process.execPath, [...execArgv, "--input-type=module", "-e", code], {
    cwd,
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  if (result.status !== 0) throw new Error(`child failed (${result.status}): ${result.stderr.slice(-2000)}`);
  return { value: JSON.parse(result.stdout.trim().split("\n").at(-1)), stderr: result.stderr };
}

/** One fresh process importing `specifier` from `cwd`: wall and CPU ms of the import. */
function importOnce(specifier, cwd) {
  return node(
    `const t0 = performance.now(); const c0 = process.cpuUsage();
await import(${JSON.stringify(specifier)});
const c = process.cpuUsage(c0);
console.log(JSON.stringify({ wallMs: performance.now() - t0, cpuMs: (c.user + c.system) / 1000 }));`,
    cwd,
  ).value;
}

/** The packages `specifier`'s import loads: ES modules through a resolve hook, CommonJS through require's cache. */
function loadedPackages(specifier, cwd, scratch) {
  writeFileSync(
    join(scratch, "hooks.mjs"),
    "export async function resolve(s, c, next) { const r = await next(s, c); process.stderr.write('LOADED ' + r.url + '\\n'); return r; }\n",
  );
  writeFileSync(
    join(scratch, "register.mjs"),
    `import { register } from "node:module"; register(${JSON.stringify(`file://${scratch}/hooks.mjs`)});\n`,
  );
  const { value: cjs, stderr } = node(
    `import { createRequire } from "node:module";
await import(${JSON.stringify(specifier)});
console.log(JSON.stringify(Object.keys(createRequire(import.meta.url).cache)));`,
    cwd,
    ["--import", join(scratch, "register.mjs")],
  );
  const urls = [...stderr.matchAll(/^LOADED (.*)$/gm)].map((match) => match[1]);
  return [...new Set([...urls, ...cjs].map(packageOf).filter((name) => name !== undefined))].sort();
}

/** The three-line embedder, bundled with exactly the flags docs/embedding.md names: bytes and packages inside. */
async function embedderBundle(scratch) {
  const app = join(scratch, "app");
  mkdirSync(join(app, "node_modules"), { recursive: true });
  symlinkSync(ROOT, join(app, "node_modules", "lifeline"), "dir");
  writeFileSync(join(app, "embed.mjs"), 'import { SessionHost } from "lifeline";\nconsole.log(typeof SessionHost);\n');
  const outfile = join(app, "out.js");
  const { metafile } = await build({
    entryPoints: [join(app, "embed.mjs")],
    outfile,
    bundle: true,
    platform: "node",
    format: "esm",
    minify: true,
    metafile: true,
    logLevel: "error",
  });
  const bytesByPackage = {};
  const [output] = Object.values(metafile.outputs);
  for (const [input, { bytesInOutput }] of Object.entries(output?.inputs ?? {})) {
    const name = packageOf(input) ?? "(other)";
    bytesByPackage[name] = (bytesByPackage[name] ?? 0) + bytesInOutput;
  }
  return { bytes: statSync(outfile).size, bytesByPackage };
}

/**
 * One fresh process from `cwd` (a checkout, imported by path): `createSessionHost()` to the first
 * reply of a demo session, and the longest gap between the ticks of a 1 ms interval meanwhile.
 */
function startOnce(cwd) {
  // The checkout's main entry, as package.json's exports give it to an app.
  const entry = JSON.parse(readFileSync(join(cwd, "package.json"), "utf8")).exports["."].default;
  return node(
    `const { createSessionHost } = await import(${JSON.stringify(join(cwd, entry))});
let last = performance.now();
let longest = 0;
const probe = setInterval(() => { const now = performance.now(); longest = Math.max(longest, now - last); last = now; }, 1);
await new Promise((resolve) => setTimeout(resolve, 20));
longest = 0; last = performance.now();
const t0 = performance.now();
const host = createSessionHost({ threads: 1, lifelineDir: false });
const session = await host.createSession({ model: "demo/demo-fast" });
await session.prompt("hello");
const firstReplyMs = performance.now() - t0;
clearInterval(probe);
await host.close();
console.log(JSON.stringify({ firstReplyMs, longestBlockMs: Math.max(0, longest - 1) }));`,
    cwd,
  ).value;
}

const scratch = mkdtempSync(join(tmpdir(), "lifeline-bench-embed-"));
try {
  const imports = { piscina: [], lifeline: [] };
  for (let i = 0; i < RUNS; i++) {
    imports.piscina.push(importOnce("piscina", ROOT));
    imports.lifeline.push(importOnce("lifeline", ROOT));
  }
  const packages = loadedPackages("lifeline", ROOT, scratch);
  const bundle = await embedderBundle(scratch);
  const starts = { head: [], base: [] };
  for (let i = 0; i < START_RUNS; i++) {
    starts.head.push(startOnce(ROOT));
    if (BASE !== undefined) starts.base.push(startOnce(BASE));
  }
  const med = (rows, key) => median(rows.map((row) => row[key]));
  report({
    config: { RUNS, START_RUNS, base: BASE ?? null },
    import: {
      piscina: { wallMs: med(imports.piscina, "wallMs"), cpuMs: med(imports.piscina, "cpuMs") },
      lifeline: { wallMs: med(imports.lifeline, "wallMs"), cpuMs: med(imports.lifeline, "cpuMs") },
      packages,
      forbidden: packages.filter((name) => FORBIDDEN.test(name)),
    },
    bundle: {
      bytes: bundle.bytes,
      forbidden: Object.keys(bundle.bytesByPackage).filter((name) => FORBIDDEN.test(name)),
      largest: Object.entries(bundle.bytesByPackage)
        .sort((a, b) => b[1] - a[1])
        .slice(0, 6),
    },
    start: {
      head: { firstReplyMs: med(starts.head, "firstReplyMs"), longestBlockMs: med(starts.head, "longestBlockMs") },
      headWorstBlockMs: Math.max(...starts.head.map((row) => row.longestBlockMs)),
      base:
        BASE === undefined
          ? null
          : { firstReplyMs: med(starts.base, "firstReplyMs"), longestBlockMs: med(starts.base, "longestBlockMs") },
    },
  });
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
