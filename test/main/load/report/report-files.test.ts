/**
 * report.json's text (src/main/load/report/report-files.ts): indented, with arrays of numbers (a
 * sketch's buckets, a histogram's edges) on one line, and the same JSON value as ever.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { summarize } from "../../../../src/main/load/metrics/stats.js";
import type { LoadReport } from "../../../../src/main/load/report/load-report.js";
import { reportJson } from "../../../../src/main/load/report/report-files.js";

describe("report.json's text", () => {
  it("parses back to the same value, whatever the strings and numbers in it", () => {
    fc.assert(
      fc.property(
        fc.jsonValue(),
        fc.array(fc.double({ min: 0, max: 1e9, noNaN: true }), { maxLength: 50 }),
        (value, samples) => {
          const report = {
            value,
            summary: summarize(samples),
            text: "got [1,\t2] and [3, 4]",
          } as unknown as LoadReport;
          expect(JSON.parse(reportJson(report))).toEqual(JSON.parse(JSON.stringify(report)));
        },
      ),
    );
  });

  it("keeps a sketch's buckets and a histogram's edges on one line each, and strings unchanged", () => {
    const report = { summary: summarize([1, 2, 2, 300.5]), text: "got [1,2]" } as unknown as LoadReport;
    const text = reportJson(report);
    expect(text).toMatch(/"buckets": \[\[0, 1\], \[35, 2\], \[286, 1\]\]/);
    expect(text).toMatch(/"edges": \[1, [\d., ]+, 300\.5\]/);
    expect(text).toContain('"text": "got [1,2]"');
  });
});
