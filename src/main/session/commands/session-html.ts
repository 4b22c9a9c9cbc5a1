/**
 * A session's transcript as one self-contained HTML page (pi's `export_html`): every message of
 * the history in order, failed attempts and the retries after them marked as such (lifeline's
 * history keeps them, R4), thinking, tool calls with their arguments, tool results, the commands
 * the client ran (`bash`), compaction summaries, and the session's statistics. The page has no script and loads nothing: its styles
 * are inline and its Content-Security-Policy forbids any fetch, so it opens offline and a
 * transcript cannot make it run code. Every text from the transcript is HTML-escaped.
 */
import { writeFile } from "node:fs/promises";
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import type { AssistantMessage } from "@mariozechner/pi-ai";
import type { BashExecutionMessage } from "../../../shared/bash/bash-message.js";
import { LifelineError } from "../../../shared/errors.js";
import { errorText } from "../../../shared/failures/error-text.js";
import type { SessionStats } from "../state/session-stats.js";

/** What the page shows. */
export interface HtmlSource {
  readonly id: string;
  readonly sessionFile: string | undefined;
  readonly sessionName: string | undefined;
  readonly model: { provider: string; id: string };
  readonly history: readonly AgentMessage[];
  readonly stats: SessionStats;
}

const STYLE = `
body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#1d1d1f;background:#fafafa}
header{border-bottom:1px solid #ddd;margin-bottom:1rem}h1{font-size:1.3rem}dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem}dt{color:#666}
.message{border:1px solid #ddd;border-left-width:5px;border-radius:6px;padding:.5rem .8rem;margin:.8rem 0;background:#fff}
.role{font-weight:600;font-size:.85rem;color:#555}.role-name{text-transform:uppercase;letter-spacing:.04em}
.user,.bashExecution{border-left-color:#0a66c2}.assistant{border-left-color:#2e7d32}.toolResult{border-left-color:#8e44ad}.other{border-left-color:#999}
.failed{border-left-color:#c62828;background:#fff5f5}.aborted{border-left-color:#ef6c00;background:#fff8f0}
.retry{border-left-color:#f9a825}.badge{display:inline-block;font-size:.8rem;padding:0 .4rem;border-radius:4px;margin-left:.5rem;background:#eee}
.failed .badge{background:#c62828;color:#fff}.retry .badge{background:#f9a825}.error{color:#c62828;font-weight:600}
pre{white-space:pre-wrap;word-break:break-word;background:#f4f4f4;padding:.5rem;border-radius:4px;margin:.4rem 0}
.text{white-space:pre-wrap;word-break:break-word}.meta{color:#777;font-size:.8rem}
`;

/**
 * Writes `source`'s page to `path` (replacing a file there), asynchronously.
 * @throws LifelineError ERR_SESSION_FILE naming the path when it cannot be written.
 */
export async function writeSessionHtml(source: HtmlSource, path: string): Promise<void> {
  try {
    await writeFile(path, sessionHtml(source), "utf8");
  } catch (error) {
    throw new LifelineError(
      "ERR_SESSION_FILE",
      `Could not write the HTML export to ${path}: ${errorText(error)}. Pass an outputPath in a writable directory.`,
      { cause: error },
    );
  }
}

/** The whole page. Pure. */
function sessionHtml(source: HtmlSource): string {
  const title = source.sessionName ?? `Session ${source.id}`;
  const { stats } = source;
  const facts: [string, string][] = [
    ["Session", source.id],
    ["File", source.sessionFile ?? "(not persisted)"],
    ["Model", `${source.model.provider}/${source.model.id}`],
    [
      "Messages",
      `${stats.totalMessages} (${stats.userMessages} user, ${stats.assistantMessages} assistant, failed attempts included)`,
    ],
    [
      "Tokens",
      `${stats.tokens.total} (input ${stats.tokens.input}, output ${stats.tokens.output}, cache read ${stats.tokens.cacheRead}, cache write ${stats.tokens.cacheWrite})`,
    ],
    ["Cost", `$${stats.cost.toFixed(6)}`],
  ];
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title><style>${STYLE}</style></head>
<body><header><h1>${escapeHtml(title)}</h1><dl>${facts.map(([k, v]) => `<dt>${k}</dt><dd>${escapeHtml(v)}</dd>`).join("")}</dl></header>
<main>
${renderMessages(source.history).join("\n")}
</main></body></html>
`;
}

/** Each message as an article; an attempt after a failed one is marked as its retry. */
function renderMessages(history: readonly AgentMessage[]): string[] {
  const out: string[] = [];
  let failedInARow = 0;
  for (const message of history) {
    if (message.role === "assistant") {
      const reply = message as AssistantMessage;
      const failed = reply.stopReason === "error" || reply.stopReason === "aborted";
      out.push(renderReply(reply, failed ? undefined : failedInARow, failedInARow + 1));
      failedInARow = reply.stopReason === "error" ? failedInARow + 1 : 0;
      continue;
    }
    if (message.role === "user") failedInARow = 0;
    out.push(renderOther(message));
  }
  return out;
}

/**
 * A reply. `retries`: the failed attempts just before it (it is their retry when > 0); undefined
 * for a failed or aborted reply, which is shown as attempt `attempt` of its chain.
 */
function renderReply(reply: AssistantMessage, retries: number | undefined, attempt: number): string {
  const failed = reply.stopReason === "error";
  const aborted = reply.stopReason === "aborted";
  const classes = ["message", "assistant", failed ? "failed" : aborted ? "aborted" : retries ? "retry" : ""];
  const badge = failed
    ? `Failed attempt ${attempt}`
    : aborted
      ? "Aborted"
      : retries
        ? `Retry after ${retries} failed ${retries === 1 ? "attempt" : "attempts"}`
        : "";
  const body = reply.content.map((block) => {
    switch (block.type) {
      case "text":
        return `<div class="text">${escapeHtml(block.text)}</div>`;
      case "thinking":
        return `<details><summary>Thinking</summary><div class="text">${escapeHtml(block.thinking)}</div></details>`;
      case "toolCall":
        return `<div class="tool-call">Tool call <code>${escapeHtml(block.name)}</code><pre>${escapeHtml(JSON.stringify(block.arguments, null, 2))}</pre></div>`;
      default:
        return "";
    }
  });
  const error = reply.errorMessage === undefined ? "" : `<div class="error">${escapeHtml(reply.errorMessage)}</div>`;
  const meta = `${reply.provider}/${reply.model} · ${reply.stopReason}`;
  return article(classes, "Assistant", badge, `${body.join("")}${error}<div class="meta">${escapeHtml(meta)}</div>`);
}

/** A user message, a tool result, a compaction summary, or another of pi's roles. */
function renderOther(message: AgentMessage): string {
  switch (message.role) {
    case "user":
      return article(["message", "user"], "User", "", contentHtml(message.content));
    case "toolResult": {
      const badge = message.isError ? "Error" : "";
      return article(
        ["message", "toolResult"],
        `Tool result: ${message.toolName}`,
        badge,
        contentHtml(message.content),
      );
    }
    case "bashExecution":
      return renderBash(message);
    case "compactionSummary":
      return article(
        ["message", "other"],
        "Compaction summary",
        "",
        `<div class="text">${escapeHtml(message.summary)}</div>`,
      );
    default: {
      const content = "content" in message ? contentHtml(message.content) : "";
      return article(["message", "other"], message.role, "", content);
    }
  }
}

/**
 * A command the client ran (`bash`), as pi's page shows it: `$ command`, its output, then
 * `(cancelled)` or `(exit N)` for a non-zero code, marked failed when either; plus, as pi's
 * terminal says it, where the whole output is when it was truncated. The output is shown whole
 * (it is at most pi's tail of 2000 lines or 50 KiB): the page has no script to expand a preview.
 */
function renderBash(message: BashExecutionMessage): string {
  const failed = message.cancelled || (message.exitCode !== undefined && message.exitCode !== 0);
  const status = message.cancelled
    ? `<div class="error">(cancelled)</div>`
    : failed
      ? `<div class="error">(exit ${escapeHtml(String(message.exitCode))})</div>`
      : "";
  const output = message.output === "" ? "" : `<pre class="output">${escapeHtml(message.output)}</pre>`;
  const where = message.fullOutputPath === undefined ? "" : `. Full output: ${message.fullOutputPath}`;
  const truncated = message.truncated ? `<div class="meta">${escapeHtml(`Output truncated${where}`)}</div>` : "";
  const command = `<pre class="command">$ ${escapeHtml(message.command)}</pre>`;
  return article(
    ["message", "bashExecution", failed ? "failed" : ""],
    "Bash",
    "",
    `${command}${output}${status}${truncated}`,
  );
}

function article(classes: string[], role: string, badge: string, body: string): string {
  const mark = badge === "" ? "" : `<span class="badge">${escapeHtml(badge)}</span>`;
  return `<article class="${classes.filter((c) => c !== "").join(" ")}"><div class="role"><span class="role-name">${escapeHtml(role)}</span> ${mark}</div>${body}</article>`;
}

/** Text and image blocks (images as a note: the page carries no binary data). */
function contentHtml(content: unknown): string {
  if (typeof content === "string") return `<div class="text">${escapeHtml(content)}</div>`;
  if (!Array.isArray(content)) return "";
  return content
    .map((block: { type?: string; text?: string; mimeType?: string }) => {
      if (block.type === "text") return `<div class="text">${escapeHtml(block.text ?? "")}</div>`;
      if (block.type === "image") return `<div class="meta">[image ${escapeHtml(block.mimeType ?? "")}]</div>`;
      return "";
    })
    .join("");
}

/** Text as HTML text or attribute value. */
function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
