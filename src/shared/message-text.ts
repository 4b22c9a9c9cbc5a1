/**
 * The text of a message, written once for everything that shows, lists, sends or records it: the
 * fork list and the session list, print mode's answer, RPC's last assistant text, the queue
 * events, telemetry, the terminal transcript, the compaction transcript and the demo model.
 */

/** How {@link messageText} writes what is not plain text. */
export interface MessageTextOptions {
  /**
   * Put between two text blocks. Blocks are pieces of one text (a provider may split its answer
   * into several), so by default they join with nothing and a text cut into blocks reads back
   * whole; a display that draws each block as a paragraph of its own passes `"\n"`.
   * @default ""
   */
  separator?: string;
  /** Stands in for an image block; without it, images leave no trace in the text. */
  image?: string;
}

/**
 * The text of a message's `content`: a string as it is; of a block list, the `text` of every
 * `text` block, in order, joined by `options.separator` (with `options.image` for each image when
 * given). Thinking, tool calls and any other block kind are not part of the text. Content of any
 * other shape (a damaged session file) has no text: `""`. Never throws.
 */
export function messageText(content: unknown, options: MessageTextOptions = {}): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  const parts: string[] = [];
  for (const block of content as unknown[]) {
    if (typeof block !== "object" || block === null) continue;
    const { type, text } = block as { type?: unknown; text?: unknown };
    if (type === "text" && typeof text === "string") parts.push(text);
    else if (type === "image" && options.image !== undefined) parts.push(options.image);
  }
  return parts.join(options.separator ?? "");
}
