/**
 * Parsing the JSON and JSONC files lifeline reads (settings.json, models.json) with errors that
 * point where an editor does: line and column (1-based), not a character offset.
 */
import { type ParseError, parse as parseJsonc, printParseErrorCode } from "jsonc-parser";

/** The value of `text`, or where and why it is not JSON: `line 3, column 14 (CommaExpected)`. */
export function parseJsonText(
  text: string,
  options: { jsonc: boolean },
): { value: unknown; problem?: undefined } | { value?: undefined; problem: string } {
  const errors: ParseError[] = [];
  const value: unknown = parseJsonc(text, errors, {
    allowTrailingComma: options.jsonc,
    disallowComments: !options.jsonc,
    allowEmptyContent: false,
  });
  const first = errors[0];
  if (first === undefined) return { value };
  const { line, column } = position(text, first.offset);
  return { problem: `line ${line}, column ${column} (${printParseErrorCode(first.error)})` };
}

function position(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset);
  const line = before.split("\n").length;
  return { line, column: offset - before.lastIndexOf("\n") };
}
