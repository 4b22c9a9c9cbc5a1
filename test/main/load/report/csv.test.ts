/**
 * RFC 4180 CSV of the report's spreadsheet files (src/main/load/report/csv.ts): every text survives a
 * round trip through a strict RFC 4180 reader, and fields are quoted exactly when they must be.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { csvField, toCsv } from "../../../../src/main/load/report/csv.js";

/** A strict RFC 4180 reader: CRLF-ended records, quoted fields with doubled quotes. */
function parseCsv(text: string): string[][] {
  const records: string[][] = [];
  let record: string[] = [];
  let field = "";
  let i = 0;
  while (i < text.length) {
    if (text[i] === '"' && field === "") {
      i++;
      for (;;) {
        const quote = text.indexOf('"', i);
        if (quote < 0) throw new Error("unterminated quoted field");
        field += text.slice(i, quote);
        if (text[quote + 1] === '"') {
          field += '"';
          i = quote + 2;
        } else {
          i = quote + 1;
          break;
        }
      }
      if (text[i] !== "," && !text.startsWith("\r\n", i)) throw new Error(`text after a closing quote at ${i}`);
    } else if (text[i] === ",") {
      record.push(field);
      field = "";
      i++;
    } else if (text.startsWith("\r\n", i)) {
      record.push(field);
      records.push(record);
      record = [];
      field = "";
      i += 2;
    } else {
      if (text[i] === '"' || text[i] === "\r" || text[i] === "\n")
        throw new Error(`bare ${JSON.stringify(text[i])} at ${i}`);
      field += text[i];
      i++;
    }
  }
  if (field !== "" || record.length > 0) throw new Error("last record not ended by CRLF");
  return records;
}

const tricky = fc.oneof(
  fc.string(),
  fc.constantFrom(
    'say "hi"',
    "a,b",
    "line\nbreak",
    "cr\rlf\r\n",
    '"',
    ",",
    "",
    " padded ",
    "503 The engine is overloaded, please try again",
  ),
);

describe("CSV", () => {
  it("every row of texts reads back unchanged through an RFC 4180 reader", () => {
    fc.assert(
      fc.property(fc.array(fc.array(tricky, { minLength: 2, maxLength: 2 }), { maxLength: 20 }), (rows) => {
        expect(parseCsv(toCsv(["a", "b"], rows))).toEqual([["a", "b"], ...rows]);
      }),
    );
  });

  it("quotes a field only when it holds a comma, a quote, CR or LF, doubling its quotes", () => {
    expect(csvField("plain text")).toBe("plain text");
    expect(csvField("a,b")).toBe('"a,b"');
    expect(csvField('say "hi"')).toBe('"say ""hi"""');
    expect(csvField("two\nlines")).toBe('"two\nlines"');
    expect(csvField("cr\r")).toBe('"cr\r"');
  });

  it("writes null and undefined as empty cells, numbers and booleans as JavaScript prints them", () => {
    expect(toCsv(["n", "empty", "none", "ok"], [[1.5, null, undefined, true]])).toBe(
      "n,empty,none,ok\r\n1.5,,,true\r\n",
    );
  });
});
