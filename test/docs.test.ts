/**
 * The repository explains itself (STYLE 15): a clone needs nothing from outside it to read the code.
 *
 * - Every rule id (`R4`, `X7`, `B8`), measured fact (`F3`) and convention (`STYLE 2`) cited in the
 *   code, tests, benchmarks, scripts or docs is defined: rules in docs/requirements.md, facts in
 *   docs/architecture.md, conventions in docs/conventions.md, each as a heading that starts with
 *   the id. A `SPEC` prefix (`SPEC X7`) is only a way of citing a rule and needs no other file.
 * - Nothing points at files that are not in the repository (the design notes the code was written
 *   from, issue numbers of a tracker the reader cannot see).
 * - Every error code of the `ErrorCode` union (and the mock server's) has its row, with its class,
 *   in the table of docs/errors.md.
 * - Every repository path named in a comment, a string or a doc exists.
 *
 * In code files only comments and string literals are read (an identifier that looks like an id
 * is not a citation); Markdown is read whole. This file is left out of the scans: it names the
 * patterns it looks for.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve, sep } from "node:path";
import { describe, expect, it } from "vitest";
import { DEFAULT_SETTINGS } from "../src/main/index.js";

const root = resolve(import.meta.dirname, "..");
const SELF = "test/docs.test.ts";
const CODE_EXTENSIONS = [".ts", ".mts", ".cts", ".js", ".mjs", ".cjs"];

/** A file of the repository, by its path from the root (always with `/`). */
interface SourceFile {
  path: string;
  text: string;
}

function listFiles(dir: string, keep: (path: string) => boolean): string[] {
  const full = join(root, dir);
  if (!existsSync(full)) return [];
  return readdirSync(full, { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return entry.name === "node_modules" ? [] : listFiles(path, keep);
    return keep(path) ? [path] : [];
  });
}

function read(path: string): SourceFile {
  return { path, text: readFileSync(join(root, path), "utf8") };
}

const isCode = (path: string) => CODE_EXTENSIONS.some((ext) => path.endsWith(ext));
const isMarkdown = (path: string) => path.endsWith(".md");

/** Code, docs, README and CONTRIBUTING: everything a reader of the repository reads. */
function repositoryFiles(): SourceFile[] {
  const code = ["src", "test", "bench", "scripts"].flatMap((dir) => listFiles(dir, isCode));
  const docs = [...listFiles("docs", isMarkdown), "README.md", "CONTRIBUTING.md"];
  return [...code, ...docs].filter((path) => path !== SELF).map(read);
}

// ------------------------------------------------------------------------------- reading prose

const REGEX_BEFORE = new Set("(,=:[!&|?{};+-*%<>~^".split(""));
const REGEX_AFTER_WORD = new Set([
  "return",
  "typeof",
  "case",
  "do",
  "else",
  "in",
  "of",
  "new",
  "delete",
  "void",
  "throw",
  "yield",
  "await",
]);

/** Whether a `/` at `at` (in code) starts a regular expression literal rather than a division. */
function startsRegex(source: string, at: number): boolean {
  let i = at - 1;
  while (i >= 0 && /\s/.test(source[i] ?? "")) i--;
  if (i < 0) return true;
  const before = source[i] ?? "";
  if (REGEX_BEFORE.has(before)) return true;
  if (!/[\w$]/.test(before)) return false;
  let start = i;
  while (start > 0 && /[\w$]/.test(source[start - 1] ?? "")) start--;
  return REGEX_AFTER_WORD.has(source.slice(start, i + 1));
}

/**
 * The comments and string literals of a JavaScript or TypeScript source, in place: every other
 * character becomes a space (newlines stay), so offsets and line numbers are the source's.
 * Regular expression literals and the `${…}` parts of template literals count as code. With
 * `strings` false, string literals are blanked too (comments only).
 */
function proseOf(source: string, strings = true): string {
  const out: string[] = source.split("").map((ch) => (ch === "\n" ? "\n" : " "));
  const keep = (from: number, to: number) => {
    for (let k = from; k < to; k++) out[k] = source[k] ?? " ";
  };
  const keepString = strings ? keep : () => {};
  /** Brace depth at which each open template literal's `${` began. */
  const templates: number[] = [];
  let depth = 0;
  let i = 0;
  const n = source.length;
  /** Reads a template literal's text from `i` up to its end or its next `${`. */
  const templateText = () => {
    const from = i;
    while (i < n) {
      const ch = source[i];
      if (ch === "\\") {
        i += 2;
        continue;
      }
      if (ch === "`") {
        keepString(from, i);
        i++;
        return;
      }
      if (ch === "$" && source[i + 1] === "{") {
        keepString(from, i);
        templates.push(depth);
        depth++;
        i += 2;
        return;
      }
      i++;
    }
    keepString(from, n);
  };
  while (i < n) {
    const ch = source[i];
    const next = source[i + 1];
    if (ch === "/" && next === "/") {
      const end = source.indexOf("\n", i);
      const to = end < 0 ? n : end;
      keep(i, to);
      i = to;
    } else if (ch === "/" && next === "*") {
      const end = source.indexOf("*/", i + 2);
      const to = end < 0 ? n : end + 2;
      keep(i, to);
      i = to;
    } else if (ch === '"' || ch === "'") {
      const from = ++i;
      while (i < n && source[i] !== ch && source[i] !== "\n") i += source[i] === "\\" ? 2 : 1;
      keepString(from, Math.min(i, n));
      i++;
    } else if (ch === "`") {
      i++;
      templateText();
    } else if (ch === "/" && startsRegex(source, i)) {
      i++;
      let inClass = false;
      while (i < n && source[i] !== "\n") {
        const c = source[i];
        if (c === "\\") i++;
        else if (c === "[") inClass = true;
        else if (c === "]") inClass = false;
        else if (c === "/" && !inClass) break;
        i++;
      }
      i++;
    } else if (ch === "{") {
      depth++;
      i++;
    } else if (ch === "}") {
      depth--;
      i++;
      if (templates.length > 0 && templates[templates.length - 1] === depth) {
        templates.pop();
        templateText();
      }
    } else {
      i++;
    }
  }
  return out.join("");
}

/** What a reader reads of a file: the comments and strings of code, all of a Markdown file. */
function readable(file: SourceFile): string {
  return isCode(file.path) ? proseOf(file.text) : file.text;
}

/** The words of a file: its comments if it is code (strings hold data as often as words), else all. */
function words(file: SourceFile): string {
  return isCode(file.path) ? proseOf(file.text, false) : file.text;
}

/** The 1-based line of an offset in `text` (a binary search over its line starts). */
function lineOf(text: string): (index: number) => number {
  const starts = [0];
  for (let k = text.indexOf("\n"); k >= 0; k = text.indexOf("\n", k + 1)) starts.push(k + 1);
  return (index) => {
    let low = 0;
    let high = starts.length - 1;
    while (low < high) {
      const mid = (low + high + 1) >> 1;
      if ((starts[mid] ?? 0) <= index) low = mid;
      else high = mid - 1;
    }
    return low + 1;
  };
}

// ------------------------------------------------------------------------------- ids

/**
 * A rule or fact id as a whole token: a capital R, X, B or F and one or two digits, not part of a
 * longer word, a hex literal (`0xB2`), a colour (`#F1F1F1`), a path or a dashed code.
 */
const RULE_ID = /(?<![\w#$@&.\\-])([RXBF])(\d{1,2})(?!\w)/g;
/** `STYLE 2`, and lists such as `STYLE 1 and 4` or `STYLE 8, 9`. */
const STYLE_ID = /\bSTYLE\s+(\d+)((?:\s*(?:,|and|&)\s*\d+\b)*)/g;

interface Citation {
  id: string;
  line: number;
}

/** Every id a piece of readable text cites, with its line. */
function citedIds(text: string): Citation[] {
  const lineAt = lineOf(text);
  const found: Citation[] = [];
  for (const match of text.matchAll(RULE_ID)) {
    found.push({ id: `${match[1]}${match[2]}`, line: lineAt(match.index) });
  }
  for (const match of text.matchAll(STYLE_ID)) {
    const line = lineAt(match.index);
    const numbers = [match[1], ...(match[2]?.match(/\d+/g) ?? [])];
    for (const number of numbers) found.push({ id: `STYLE ${number}`, line });
  }
  return found;
}

/** Where each kind of id is defined, as the headings that start with it. */
const DEFINITIONS: { doc: string; heading: RegExp; owns: (id: string) => boolean }[] = [
  { doc: "docs/requirements.md", heading: /^#{2,4}\s+([RXB]\d{1,2})\b/gm, owns: (id) => /^[RXB]\d/.test(id) },
  { doc: "docs/architecture.md", heading: /^#{2,4}\s+(F\d{1,2})\b/gm, owns: (id) => /^F\d/.test(id) },
  { doc: "docs/conventions.md", heading: /^#{2,4}\s+(STYLE\s+\d+)\b/gm, owns: (id) => id.startsWith("STYLE ") },
];

/** The ids each defining doc defines (as headings), with any defined twice. */
function definedIds(docs: SourceFile[]): { defined: Set<string>; twice: string[] } {
  const defined = new Set<string>();
  const twice: string[] = [];
  for (const { doc, heading } of DEFINITIONS) {
    const text = docs.find((file) => file.path === doc)?.text ?? "";
    for (const match of text.matchAll(heading)) {
      const id = (match[1] ?? "").replace(/\s+/, " ");
      if (defined.has(id)) twice.push(`${doc}: ${id}`);
      defined.add(id);
    }
  }
  return { defined, twice };
}

/** `file:line: id is not defined in doc` for every cited id that is not defined. */
function undefinedCitations(files: SourceFile[], defined: Set<string>): string[] {
  return files.flatMap((file) =>
    citedIds(readable(file))
      .filter(({ id }) => !defined.has(id))
      .map(({ id, line }) => {
        const doc = DEFINITIONS.find((definition) => definition.owns(id))?.doc;
        return `${file.path}:${line}: ${id} is not defined in ${doc}`;
      }),
  );
}

// ------------------------------------------------------------------------------- outside references

/** Names of documents that are not in the repository, and issue numbers of an unseen tracker. */
const OUTSIDE: { pattern: RegExp; what: string }[] = [
  { pattern: /runtime-notes/g, what: "names research notes outside the repository" },
  { pattern: /pi-rpc-protocol/g, what: "names a protocol write-up outside the repository" },
  { pattern: /\b(?:SPEC|STYLE)\.md\b/g, what: "names a document outside the repository" },
  { pattern: /retry-policy\.es\b/g, what: "names a design document outside the repository" },
  { pattern: /\bshared\/(?:research|seeds)\//g, what: "names a folder outside the repository" },
  { pattern: /\bissues?\s+#?\d+/gi, what: "cites an issue number the reader cannot look up" },
];

/** Relative paths into a `shared` folder: legitimate only when they land in src/shared. */
const SHARED_PATH = /(?:\.\.\/)+shared\b[^\s"'`),\]]*/g;

/** `file:line: "text" what` for every reference to something outside the repository. */
function outsideReferences(file: SourceFile): string[] {
  const hits: { index: number; text: string; what: string }[] = [];
  for (const { pattern, what } of OUTSIDE) {
    for (const match of file.text.matchAll(pattern)) hits.push({ index: match.index, text: match[0], what });
  }
  const srcShared = join(root, "src", "shared");
  for (const match of file.text.matchAll(SHARED_PATH)) {
    const target = resolve(root, dirname(file.path), match[0]);
    if (target === srcShared || target.startsWith(srcShared + sep)) continue;
    hits.push({ index: match.index, text: match[0], what: "points outside the repository" });
  }
  const lineAt = lineOf(file.text);
  // One report per reference: a pattern found inside a path already reported adds nothing.
  hits.sort((a, b) => a.index - b.index || b.text.length - a.text.length);
  let coveredTo = -1;
  return hits.flatMap((hit) => {
    if (hit.index + hit.text.length <= coveredTo) return [];
    coveredTo = Math.max(coveredTo, hit.index + hit.text.length);
    return [`${file.path}:${lineAt(hit.index)}: "${hit.text}" ${hit.what}`];
  });
}

// ------------------------------------------------------------------------------- paths

/**
 * A repository path as prose names it: `src/…`, `test/…`, `bench/…`, `scripts/…` or `docs/…`,
 * not inside another path (`dist/src/…`, `../test/…`).
 */
const REPO_PATH = /(?<![\w./@$-])(?:src|test|bench|scripts|docs)(?:\/[\w.-]+)+/g;

/**
 * Whether a match is meant as a path: a file name (it has an extension) or a folder two levels
 * down. A single extensionless segment (`test/tools-1`) is as likely a `provider/model` name.
 */
function looksLikePath(path: string): boolean {
  return /\.\w+$/.test(path) || path.split("/").length > 2;
}

/**
 * A source or doc file named from inside the tree (`retry/sleep.ts`, `shared/failures/classify.ts`): at
 * least one folder, a word character first (not `./x.ts`), ending in `.ts` or `.md`.
 */
const NAMED_FILE = /(?<![\w./@:$-])(?:\w[\w.-]*\/)+\w[\w.-]*\.(?:ts|md)(?![\w/])/g;
const NAMED_FROM = ["", "src", "src/main", "src/worker", "docs"];
const WHERE_NAMED_FROM = "the root, src, src/main, src/worker, docs or the naming file's folder";

/** `file:line: path does not exist` for every repository path named that is not there. */
function missingPaths(file: SourceFile, exists: (path: string) => boolean): string[] {
  const text = readable(file);
  const lineAt = lineOf(text);
  const rooted = [...text.matchAll(REPO_PATH)].flatMap((match) => {
    const path = match[0].replace(/\.+$/, "");
    if (!looksLikePath(path) || exists(path)) return [];
    return [{ index: match.index, message: `${path} does not exist` }];
  });
  // Files named from a folder inside the tree, in comments and docs: found from the repository's
  // root, src, src/main, src/worker, docs, or the naming file's own folder.
  const here = dirname(file.path);
  const named = [...words(file).matchAll(NAMED_FILE)].flatMap((match) => {
    const path = match[0];
    if (path.endsWith(".d.ts") || /^(?:src|test|bench|scripts|docs)\//.test(path)) return [];
    const found = [...NAMED_FROM, here].some((base) => exists(base === "" ? path : `${base}/${path}`));
    return found ? [] : [{ index: match.index, message: `${path} is in none of ${WHERE_NAMED_FROM}` }];
  });
  return [...rooted, ...named]
    .sort((a, b) => a.index - b.index)
    .map((hit) => `${file.path}:${lineAt(hit.index)}: ${hit.message}`);
}

// ------------------------------------------------------------------------------- error codes

/** The string members of `export type <name> = | "A" | "B";` in a source text. */
function unionMembers(text: string, name: string): string[] {
  const start = text.indexOf(`export type ${name} =`);
  if (start < 0) return [];
  const end = text.indexOf(";", start);
  return [...text.slice(start, end).matchAll(/"(ERR_\w+)"/g)].map((m) => m[1] ?? "");
}

/** The class each error code is thrown as: a subclass whose constructor passes it, else LifelineError. */
function classOfCodes(errorsSource: string): Map<string, string> {
  const classes = new Map<string, string>();
  const declarations = [...errorsSource.matchAll(/export class (\w+) extends LifelineError \{/g)];
  declarations.forEach((declaration, k) => {
    const body = errorsSource.slice(declaration.index, declarations[k + 1]?.index ?? errorsSource.length);
    const code = body.match(/super\(\s*"(ERR_\w+)"/)?.[1];
    if (code !== undefined) classes.set(code, declaration[1] ?? "");
  });
  return classes;
}

/** The rows of the error-code table in docs/errors.md: code → class, in order. */
function documentedCodes(doc: string): { code: string; className: string }[] {
  const start = doc.indexOf("<!-- error-codes:start -->");
  const end = doc.indexOf("<!-- error-codes:end -->");
  if (start < 0 || end < start) return [];
  return [...doc.slice(start, end).matchAll(/^\|\s*`(ERR_\w+)`\s*\|\s*`(\w+)`/gm)].map((m) => ({
    code: m[1] ?? "",
    className: m[2] ?? "",
  }));
}

// ------------------------------------------------------------------------------- the checks

describe("the repository explains itself", () => {
  const files = repositoryFiles();
  const { defined, twice } = definedIds(files);

  it("every cited rule, fact and convention id is defined in docs/", () => {
    expect(undefinedCitations(files, defined)).toEqual([]);
  });

  it("each id is defined once", () => {
    expect(twice).toEqual([]);
  });

  it("nothing points at files outside the repository", () => {
    expect(files.flatMap((file) => outsideReferences(file))).toEqual([]);
  });

  it("every repository path named in code, tests or docs exists", () => {
    const exists = (path: string) => existsSync(join(root, path));
    expect(files.flatMap((file) => missingPaths(file, exists))).toEqual([]);
  });

  it("every error code has its row in docs/errors.md, with the class it is thrown as", () => {
    const errors = readFileSync(join(root, "src/shared/errors.ts"), "utf8");
    const mock = readFileSync(join(root, "src/mock-server/errors.ts"), "utf8");
    const classes = classOfCodes(errors);
    const expected = [
      ...unionMembers(errors, "ErrorCode").map((code) => ({ code, className: classes.get(code) ?? "LifelineError" })),
      ...unionMembers(mock, "MockServerErrorCode").map((code) => ({ code, className: "MockServerError" })),
    ];
    expect(expected.length).toBeGreaterThan(20);
    const rows = documentedCodes(readFileSync(join(root, "docs/errors.md"), "utf8"));
    const byCode = (a: { code: string }, b: { code: string }) => a.code.localeCompare(b.code);
    expect([...rows].sort(byCode)).toEqual([...expected].sort(byCode));
  });
});

describe("the scanner", () => {
  it("reads comments and strings, not identifiers, regular expressions or template code", () => {
    const source = [
      "const B9 = 1; // cites R4",
      'const text = "see X7, not 0xB2, #F1F1F1, AB2, B2C, v-B3 or R123";',
      "const re = /R5[\"']/; /* F3 */ const half = B9 / 2; // B1",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the probe is source text holding a template literal
      "const t = `X1 ${B9 + `F2`} B8`;",
      "const m = a / R6 / b; // STYLE 1 and 4, STYLE 17",
    ].join("\n");
    expect(citedIds(proseOf(source))).toEqual([
      { id: "R4", line: 1 },
      { id: "X7", line: 2 },
      { id: "F3", line: 3 },
      { id: "B1", line: 3 },
      { id: "X1", line: 4 },
      { id: "F2", line: 4 },
      { id: "B8", line: 4 },
      { id: "STYLE 1", line: 5 },
      { id: "STYLE 4", line: 5 },
      { id: "STYLE 17", line: 5 },
    ]);
  });

  it("finds an id cited but not defined, and names the doc that should define it", () => {
    const probe: SourceFile = { path: "src/probe.ts", text: "/** SPEC X7 and R99 (fact F8; STYLE 42). */\n" };
    const defined = new Set(["X7", "F1", "STYLE 1"]);
    expect(undefinedCitations([probe], defined)).toEqual([
      "src/probe.ts:1: R99 is not defined in docs/requirements.md",
      "src/probe.ts:1: F8 is not defined in docs/architecture.md",
      "src/probe.ts:1: STYLE 42 is not defined in docs/conventions.md",
    ]);
  });

  it("finds references outside the repository, and lets imports of src/shared through", () => {
    const probe: SourceFile = {
      path: "src/main/rpc/probe.ts",
      text: [
        'import { LifelineError } from "../../shared/errors.js";',
        "// framing as in ../shared/research/notes.md §2, see the runtime-notes",
        "// (Issue 12, and issue #3)",
      ].join("\n"),
    };
    expect(outsideReferences(probe)).toEqual([
      'src/main/rpc/probe.ts:2: "../shared/research/notes.md" points outside the repository',
      'src/main/rpc/probe.ts:2: "runtime-notes" names research notes outside the repository',
      'src/main/rpc/probe.ts:3: "Issue 12" cites an issue number the reader cannot look up',
      'src/main/rpc/probe.ts:3: "issue #3" cites an issue number the reader cannot look up',
    ]);
    const doc: SourceFile = { path: "docs/probe.md", text: "See [the spec](../shared/SPEC.md).\n" };
    expect(outsideReferences(doc)).toEqual(['docs/probe.md:1: "../shared/SPEC.md" points outside the repository']);
    const notes: SourceFile = { path: "docs/probe.md", text: "As SPEC.md says (shared/seeds/x.txt).\n" };
    expect(outsideReferences(notes)).toEqual([
      'docs/probe.md:1: "SPEC.md" names a document outside the repository',
      'docs/probe.md:1: "shared/seeds/" names a folder outside the repository',
    ]);
  });

  it("finds a repository path that does not exist, not paths under other roots", () => {
    const probe: SourceFile = {
      path: "docs/probe.md",
      text: "See src/main/retry/retry-controller.ts and test/gone.test.ts, not dist/src/x.js, ../test/y or test/model-1.\n",
    };
    const exists = (path: string) => path === "src/main/retry/retry-controller.ts";
    expect(missingPaths(probe, exists)).toEqual(["docs/probe.md:1: test/gone.test.ts does not exist"]);
  });

  it("finds a file named from inside the tree that is nowhere, in comments but not in strings", () => {
    const probe: SourceFile = {
      path: "src/main/probe.ts",
      text: [
        "// as retry/sleep.ts does, and load/load-command.ts (renamed), not ./local.ts",
        'const fixture = "pkg/src/entry.ts"; // shared/failures/classify.ts',
      ].join("\n"),
    };
    const exists = (path: string) => ["src/main/retry/sleep.ts", "src/shared/failures/classify.ts"].includes(path);
    expect(missingPaths(probe, exists)).toEqual([
      `src/main/probe.ts:1: load/load-command.ts is in none of ${WHERE_NAMED_FROM}`,
    ]);
  });
});

// ------------------------------------------------------------------------------- the front door

/** The README's size limit: a front door a newcomer reads whole; reference goes to docs/. */
const README_MAX_BYTES = 15_000;
/** The performance page's limit: the current state of each target; the runs are in its history. */
const PERFORMANCE_MAX_LINES = 300;

/** The lines of `text` between `<!-- name:start -->` and `<!-- name:end -->` (none without both). */
function marked(text: string, name: string): string[] {
  const start = text.indexOf(`<!-- ${name}:start -->`);
  const end = text.indexOf(`<!-- ${name}:end -->`);
  if (start < 0 || end < start) return [];
  return text.slice(start, end).split("\n").slice(1);
}

/** The cells of each table row (`| a | b |`) among `lines`, header and rule left out. */
function tableRows(lines: string[]): string[][] {
  return lines
    .filter((line) => line.startsWith("|") && !/^\|[\s|:-]+\|$/.test(line))
    .slice(1)
    .map((line) =>
      line
        .slice(1, -1)
        .split(/(?<!\\)\|/)
        .map((cell) => cell.trim()),
    );
}

/** A cell's one backquoted value (`` `x` `` → x), or undefined. */
function code(cell: string | undefined): string | undefined {
  return cell?.match(/^`([^`]+)`/)?.[1];
}

/** The package's import names (`lifeline`, `lifeline/rpc`…) and their default files, from package.json. */
function exportedEntries(): Map<string, string> {
  const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
    name: string;
    exports: Record<string, string | Record<string, string>>;
  };
  return new Map(
    Object.entries(manifest.exports).map(([subpath, target]) => [
      subpath === "." ? manifest.name : `${manifest.name}/${subpath.slice(2)}`,
      (typeof target === "string" ? target : (target.default ?? "")).replace(/^\.\//, ""),
    ]),
  );
}

/** Every leaf of a settings object as `a.b.c` → value (arrays and primitives are leaves). */
function leaves(value: unknown, prefix = ""): [string, unknown][] {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return [[prefix, value]];
  return Object.entries(value).flatMap(([key, inner]) => leaves(inner, prefix === "" ? key : `${prefix}.${key}`));
}

/** The members of `export interface <name> { … }` in a TypeScript source: `  member?:` lines. */
function interfaceMembers(source: string, name: string): string[] {
  const start = source.indexOf(`export interface ${name} {`);
  if (start < 0) return [];
  const end = source.indexOf("\n}", start);
  return [...source.slice(start, end).matchAll(/^ {2}(\w+)\??:/gm)].map((m) => m[1] ?? "");
}

const readRoot = (path: string) => readFileSync(join(root, path), "utf8");

/** GitHub's id of a heading: lower case, punctuation dropped, spaces to hyphens. */
function headingSlug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/ /g, "-");
}

/** The ids of a Markdown text's headings, code blocks left out (a repeated one gets `-1`, `-2`…). */
function headingIds(text: string): Set<string> {
  const seen = new Map<string, number>();
  const ids = new Set<string>();
  for (const match of text.replace(/```[\s\S]*?```/g, "").matchAll(/^#{1,6}\s+(.*)$/gm)) {
    const slug = headingSlug(match[1] ?? "");
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    ids.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return ids;
}

/** `file: target#anchor` for every Markdown link to a heading of a repository page that has no such heading. */
function brokenAnchors(file: SourceFile, pages: (path: string) => string | undefined): string[] {
  return [...file.text.matchAll(/\]\(([^)\s#]*)#([^)\s]+)\)/g)].flatMap((match) => {
    const target = match[1] === "" ? file.path : join(dirname(file.path), match[1] ?? "");
    const text = pages(target);
    if (text === undefined || headingIds(text).has(match[2] ?? "")) return [];
    return [`${file.path}: ${match[1]}#${match[2]} names no heading`];
  });
}

describe("the front door and the reference pages", () => {
  const files = repositoryFiles();

  it("every link to a heading of a page lands on a heading", () => {
    const markdown = files.filter((file) => isMarkdown(file.path));
    const byPath = new Map(markdown.map((file) => [file.path, file.text]));
    expect(markdown.flatMap((file) => brokenAnchors(file, (path) => byPath.get(path)))).toEqual([]);
    const probe: SourceFile = {
      path: "docs/probe.md",
      text: "[a](api.md#events) [b](api.md#no-such) [c](#here)\n## Here\n",
    };
    expect(brokenAnchors(probe, (path) => (path === "docs/probe.md" ? probe.text : byPath.get(path)))).toEqual([
      "docs/probe.md: api.md#no-such names no heading",
    ]);
  });
  it(`README.md is a front door: at most ${README_MAX_BYTES} bytes, lines of at most 200 characters`, () => {
    const readme = readFileSync(join(root, "README.md"));
    expect(readme.byteLength).toBeLessThanOrEqual(README_MAX_BYTES);
    const long = readme
      .toString("utf8")
      .split("\n")
      .flatMap((line, k) => (line.length > 200 ? [`README.md:${k + 1}: ${line.length} characters`] : []));
    expect(long).toEqual([]);
  });

  it("README.md cites no rule, fact or convention id before its first section", () => {
    const readme = readRoot("README.md");
    const opening = readme.slice(0, readme.search(/^## /m));
    expect(opening.length).toBeGreaterThan(0);
    expect(citedIds(opening)).toEqual([]);
  });

  it("docs/api.md and docs/embedding.md list the entry points package.json exports, no more, no fewer", () => {
    const exported = exportedEntries();
    const api = tableRows(marked(readRoot("docs/api.md"), "entry-points")).map((row) => code(row[0]));
    expect([...api].sort()).toEqual([...exported.keys()].sort());
    const embedding = tableRows(marked(readRoot("docs/embedding.md"), "entry-points")).map(
      (row): [string | undefined, string | undefined] => [code(row[0]), code(row[1])],
    );
    expect(new Map(embedding)).toEqual(exported);
  });

  it("docs/settings.md gives every default of DEFAULT_SETTINGS, as JSON", () => {
    const rows = tableRows(marked(readRoot("docs/settings.md"), "settings-keys"));
    const documented = new Map(rows.map((row) => [code(row[0]), code(row[1])]));
    const defaults = leaves(DEFAULT_SETTINGS);
    expect(defaults.length).toBeGreaterThan(15);
    const wrong = defaults.flatMap(([key, value]) => {
      const shown = documented.get(key);
      return shown === JSON.stringify(value) ? [] : [`${key}: default ${JSON.stringify(value)}, documented ${shown}`];
    });
    expect(wrong).toEqual([]);
  });

  it("docs/settings.md lists every host option, but the two for tests", () => {
    const source = readRoot("src/main/host/host-options.ts");
    const members = interfaceMembers(source, "SessionHostOptions");
    expect(members).toContain("threads");
    const forTests = ["connect", "sleep"];
    const rows = tableRows(marked(readRoot("docs/settings.md"), "host-options")).map((row) => code(row[0]));
    expect([...rows].sort()).toEqual(members.filter((member) => !forTests.includes(member)).sort());
  });

  it("CONTRIBUTING.md lists the zones src/ has, and names every dependency package.json declares", () => {
    const contributing = readRoot("CONTRIBUTING.md");
    const zones = marked(contributing, "zones").flatMap((line) => line.match(/^- `(src\/[\w-]+)`/)?.[1] ?? []);
    const folders = readdirSync(join(root, "src"), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => `src/${entry.name}`);
    expect([...zones].sort()).toEqual(folders.sort());
    const manifest = JSON.parse(readRoot("package.json")) as Record<string, Record<string, string> | undefined>;
    const declared = ["dependencies", "devDependencies", "peerDependencies"].flatMap((group) =>
      Object.keys(manifest[group] ?? {}),
    );
    expect(declared.filter((name) => !contributing.includes(`\`${name}\``))).toEqual([]);
  });

  it(`docs/performance.md is the current state: at most ${PERFORMANCE_MAX_LINES} lines, a row for every bench section`, () => {
    const page = readRoot("docs/performance.md");
    expect(page.split("\n").length).toBeLessThanOrEqual(PERFORMANCE_MAX_LINES);
    expect(page).toContain("(performance-history.md)");
    const sections = [...readRoot("bench/run.mjs").matchAll(/\bid: "([a-z])"/g)].map((m) => m[1] ?? "");
    expect(sections.length).toBeGreaterThan(10);
    const rows = page.split("\n").filter((line) => line.startsWith("|"));
    expect(sections.filter((id) => !rows.some((row) => row.includes(`(${id})`)))).toEqual([]);
  });
});
