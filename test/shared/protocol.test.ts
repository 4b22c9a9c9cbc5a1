/**
 * STYLE 2: the worker → main decoder takes a heartbeat with or without a loop report (B9) and
 * refuses a malformed report as a protocol error rather than passing it on.
 */
import { describe, expect, it } from "vitest";
import { decodeWorkerMessage } from "../../src/shared/wire/protocol.js";

describe("a heartbeat's loop report", () => {
  it("B9: a heartbeat decodes with its loop report, and without one", () => {
    const loop = { p50: 0.001, p99: 0.02, max: 0.8 };
    expect(decodeWorkerMessage({ type: "heartbeat", loop })).toEqual({
      kind: "message",
      message: { type: "heartbeat", loop },
    });
    expect(decodeWorkerMessage({ type: "heartbeat" })).toEqual({ kind: "message", message: { type: "heartbeat" } });
  });

  it("B9: a malformed loop report is an invalid message", () => {
    for (const loop of [null, 5, { p50: 0.001, p99: "0.02", max: 0.8 }, { p50: 0.001, max: 0.8 }]) {
      expect(decodeWorkerMessage({ type: "heartbeat", loop }).kind).toBe("invalid");
    }
  });
});
