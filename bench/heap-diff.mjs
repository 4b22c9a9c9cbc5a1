/**
 * What grew between two V8 heap snapshots, by constructor: a tool for reading the snapshots
 * section (r) writes (BENCH_R_SNAPSHOT=<dir>), not a bench section.
 *
 *   node bench/heap-diff.mjs <before.heapsnapshot> <after.heapsnapshot> [sessions] [rows]
 *
 * Groups every node of each snapshot by type and name (a constructor's name for objects, the
 * kind for closures, strings, arrays and code), sums count and self size, and prints the groups
 * whose self size grew most, divided by `sessions` (default 1) to read as bytes per session.
 * HEAP_DIFF_FUNCTIONS=1 names closures by their function. Snapshots hold live objects only (V8 collects before it writes one), so this is retained size.
 */
import { readFile } from "node:fs/promises";

/** HEAP_DIFF_FUNCTIONS=1: closures grouped by their function's name instead of as one group. */
const BY_FUNCTION = process.env.HEAP_DIFF_FUNCTIONS === "1";

/** Count and self size by "type name" of one snapshot. */
async function groups(file) {
  const snapshot = JSON.parse(await readFile(file, "utf8"));
  const meta = snapshot.snapshot.meta;
  const fields = meta.node_fields;
  const types = meta.node_types[0];
  const width = fields.length;
  const typeAt = fields.indexOf("type");
  const nameAt = fields.indexOf("name");
  const sizeAt = fields.indexOf("self_size");
  const { nodes, strings } = snapshot;
  const out = new Map();
  for (let i = 0; i < nodes.length; i += width) {
    const type = types[nodes[i + typeAt]];
    let name = type === "object" || type === "native" ? strings[nodes[i + nameAt]] : "";
    if (type === "closure") name = BY_FUNCTION ? `${strings[nodes[i + nameAt]] || "(anonymous)"}()` : "(closures)";
    if (name.length > 60) name = `${name.slice(0, 57)}...`;
    const key = `${type} ${name}`.trim();
    const entry = out.get(key) ?? { count: 0, size: 0 };
    entry.count++;
    entry.size += nodes[i + sizeAt];
    out.set(key, entry);
  }
  return out;
}

const [beforeFile, afterFile, sessionsArg = "1", rowsArg = "40"] = process.argv.slice(2);
if (afterFile === undefined) {
  console.error("usage: node bench/heap-diff.mjs <before.heapsnapshot> <after.heapsnapshot> [sessions] [rows]");
  process.exit(2);
}
const sessions = Number(sessionsArg);
const before = await groups(beforeFile);
const after = await groups(afterFile);
const rows = [];
let total = 0;
for (const [key, a] of after) {
  const b = before.get(key) ?? { count: 0, size: 0 };
  const size = a.size - b.size;
  total += size;
  rows.push({ key, count: (a.count - b.count) / sessions, bytes: size / sessions });
}
rows.sort((x, y) => y.bytes - x.bytes);
console.log(`grown self size: ${(total / 2 ** 20).toFixed(1)} MB, ${(total / sessions).toFixed(0)} B per session`);
console.log("| type name | count per session | bytes per session |\n|---|---:|---:|");
for (const r of rows.slice(0, Number(rowsArg))) {
  console.log(`| ${r.key} | ${r.count.toFixed(2)} | ${r.bytes.toFixed(0)} |`);
}
