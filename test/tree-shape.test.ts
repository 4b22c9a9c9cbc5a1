/**
 * STYLE 6 and the layout's limits, held by the tree itself so that the next feature adds a part
 * rather than lines to a hub (docs/conventions.md): no `src/` file over 400 lines (as `wc -l`
 * counts them, no list of exceptions), the two facades thinner still, no folder holding more than
 * 20 `.ts` files directly (a bigger room gets inner rooms), and no import circle anywhere in
 * `src/`, type-only imports included.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const root = resolve(import.meta.dirname, "..", "src");

/** Most lines of any file in src/. */
const MAX_FILE_LINES = 400;
/** The facades: what they may not grow past (the session's, and the host's). */
const FACADE_LINES: Readonly<Record<string, number>> = {
  "main/session/agent-session.ts": 350,
  "main/host/session-host.ts": 260,
};
/** Most `.ts` files one folder of src/ holds directly. */
const MAX_FOLDER_FILES = 20;

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return tsFiles(path);
    return path.endsWith(".ts") ? [path] : [];
  });
}

function folders(dir: string): string[] {
  const inner = readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory());
  return [dir, ...inner.flatMap((e) => folders(join(dir, e.name)))];
}

/** Lines as `wc -l` counts them: newline characters. */
function lineCount(text: string): number {
  return text.split("\n").length - 1;
}

/** Every relative module a file's text imports: static, dynamic, type-only and re-exports. */
function importsOf(file: string, text: string): string[] {
  const specifiers = [...text.matchAll(/(?:from|import)\s*\(?\s*["'](\.[^"']+)["']/g)].map((m) => m[1] ?? "");
  return specifiers.map((specifier) => resolve(dirname(file), specifier).replace(/\.js$/, ".ts"));
}

/** The import circles of a graph (its strongly connected components of more than one file, or a file importing itself). */
function importCircles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  // Tarjan's algorithm, iterative so that a deep chain cannot overflow the stack.
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const circles: string[][] = [];
  let next = 0;
  for (const start of graph.keys()) {
    if (index.has(start)) continue;
    const work: { node: string; edge: number }[] = [{ node: start, edge: 0 }];
    index.set(start, next);
    low.set(start, next++);
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const frame = work[work.length - 1] as { node: string; edge: number };
      const edges = graph.get(frame.node) ?? [];
      if (frame.edge < edges.length) {
        const to = edges[frame.edge++] as string;
        if (!graph.has(to)) continue;
        if (!index.has(to)) {
          index.set(to, next);
          low.set(to, next++);
          stack.push(to);
          onStack.add(to);
          work.push({ node: to, edge: 0 });
        } else if (onStack.has(to)) {
          low.set(frame.node, Math.min(low.get(frame.node) ?? 0, index.get(to) ?? 0));
        }
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent !== undefined) low.set(parent.node, Math.min(low.get(parent.node) ?? 0, low.get(frame.node) ?? 0));
      if (low.get(frame.node) === index.get(frame.node)) {
        const component: string[] = [];
        let member: string | undefined;
        do {
          member = stack.pop() as string;
          onStack.delete(member);
          component.push(member);
        } while (member !== frame.node);
        if (component.length > 1 || edges.includes(frame.node)) circles.push(component.sort());
      }
    }
  }
  return circles;
}

describe("the shape of src/", () => {
  const files = tsFiles(root);
  const texts = new Map(files.map((file) => [file, readFileSync(file, "utf8")]));

  it(`no file is over ${MAX_FILE_LINES} lines, and the facades stay under their own limits`, () => {
    const over = files.flatMap((file) => {
      const name = relative(root, file);
      const limit = FACADE_LINES[name] ?? MAX_FILE_LINES;
      const lines = lineCount(texts.get(file) ?? "");
      return lines > limit ? [`${name}: ${lines} lines (limit ${limit})`] : [];
    });
    expect(over).toEqual([]);
    // The facades named exist: a rename must carry its limit along.
    for (const name of Object.keys(FACADE_LINES)) expect(texts.has(join(root, name)), name).toBe(true);
  });

  it(`no folder holds more than ${MAX_FOLDER_FILES} .ts files directly`, () => {
    const crowded = folders(root).flatMap((dir) => {
      const count = readdirSync(dir).filter((name) => name.endsWith(".ts")).length;
      return count > MAX_FOLDER_FILES ? [`${relative(root, dir) || "."}: ${count} files`] : [];
    });
    expect(crowded).toEqual([]);
  });

  it("no import circle, type-only imports included", () => {
    const graph = new Map(files.map((file) => [file, importsOf(file, texts.get(file) ?? "")]));
    const circles = importCircles(graph).map((circle) => circle.map((file) => relative(root, file)).join(" ↔ "));
    expect(circles).toEqual([]);
  });

  it("the circle scan finds a circle of type-only imports, a longer one and a self-import, and nothing in a chain", () => {
    const graph = new Map<string, string[]>([
      ["a", ["b"]],
      ["b", ["a"]],
      ["c", ["d"]],
      ["d", ["e"]],
      ["e", ["c", "f"]],
      ["f", []],
      ["g", ["g"]],
      ["h", ["f"]],
    ]);
    expect(importCircles(graph)).toEqual([["a", "b"], ["c", "d", "e"], ["g"]]);
    const file = join(root, "main", "x", "probe.ts");
    expect(importsOf(file, 'import type { T } from "./t.js";\nexport * from "../y/z.js";')).toEqual([
      join(root, "main", "x", "t.ts"),
      join(root, "main", "y", "z.ts"),
    ]);
  });

  it("lines are counted as wc -l counts them", () => {
    expect(lineCount("a\nb\n")).toBe(2);
    expect(lineCount("a\nb")).toBe(1);
  });
});
