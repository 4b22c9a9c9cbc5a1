/**
 * CSV as RFC 4180 writes it, for the report's spreadsheet files: fields separated by commas,
 * records ended by CRLF, and a field that holds a comma, a double quote, CR or LF enclosed in
 * double quotes with its quotes doubled. Pure functions, no I/O.
 */

/** What a CSV cell may hold: null and undefined are empty cells, booleans `true`/`false`. */
export type CsvCell = string | number | boolean | null | undefined;

/** One field, quoted when RFC 4180 requires it. */
export function csvField(cell: CsvCell): string {
  if (cell === null || cell === undefined) return "";
  const text = String(cell);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** A header row and the rows under it as one CSV text, each record ended by CRLF. */
export function toCsv(header: readonly string[], rows: readonly (readonly CsvCell[])[]): string {
  return [header, ...rows].map((row) => `${row.map(csvField).join(",")}\r\n`).join("");
}
