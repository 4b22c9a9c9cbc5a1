/**
 * Colours of the terminal UI, as plain SGR sequences (no colour library). Each style closes with
 * its own reset code, so styles nest; pi-tui resets every line at its end anyway. `NO_COLOR`
 * (https://no-color.org) turns every style into the identity.
 */
import type { MarkdownTheme } from "@mariozechner/pi-tui";

type Style = (text: string) => string;

const plain = process.env.NO_COLOR !== undefined && process.env.NO_COLOR !== "";
const sgr =
  (open: number, close: number): Style =>
  (text) =>
    plain ? text : `\x1b[${open}m${text}\x1b[${close}m`;

/** The styles the UI uses, by name. */
export const style = {
  bold: sgr(1, 22),
  dim: sgr(2, 22),
  italic: sgr(3, 23),
  underline: sgr(4, 24),
  strikethrough: sgr(9, 29),
  red: sgr(31, 39),
  green: sgr(32, 39),
  yellow: sgr(33, 39),
  cyan: sgr(36, 39),
  gray: sgr(90, 39),
} satisfies Record<string, Style>;

/** How assistant answers render: headings and code stand out, nothing relies on colour alone. */
export const markdownTheme: MarkdownTheme = {
  heading: (text) => style.bold(style.cyan(text)),
  link: style.underline,
  linkUrl: style.gray,
  code: style.yellow,
  codeBlock: (text) => text,
  codeBlockBorder: style.gray,
  quote: style.italic,
  quoteBorder: style.gray,
  hr: style.gray,
  listBullet: style.cyan,
  bold: style.bold,
  italic: style.italic,
  strikethrough: style.strikethrough,
  underline: style.underline,
};
