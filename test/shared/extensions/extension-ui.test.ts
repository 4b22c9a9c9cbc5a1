/**
 * `ctx.ui` over a transport (extension-ui.ts): pi's defaults without a UI, and a dialog's life
 * with one: the answer, a malformed answer, its timeout, its signal. A transport here is a plain
 * object that records what it was asked, as RPC mode or a library host's `extensionUi` would.
 */
import { describe, expect, it } from "vitest";
import {
  createUiContext,
  type UiAnswer,
  type UiDialogRequest,
  type UiNotice,
  type UiTransport,
} from "../../../src/shared/extensions/extension-ui.js";

/** A transport that shows each dialog until the test answers it; records notices and withdrawals. */
function recordingUi() {
  const shown: { request: UiDialogRequest; answer: (a: UiAnswer | undefined) => void; cancelled: boolean }[] = [];
  const notices: UiNotice[] = [];
  const transport: UiTransport = {
    dialog(request) {
      let answer: (a: UiAnswer | undefined) => void = () => {};
      const entry = { request, answer: (a: UiAnswer | undefined) => answer(a), cancelled: false };
      shown.push(entry);
      return {
        answer: new Promise<UiAnswer | undefined>((resolve) => {
          answer = resolve;
        }),
        cancel: () => {
          entry.cancelled = true;
        },
      };
    },
    notify: (request) => notices.push(request),
  };
  return { transport, shown, notices };
}

describe("ctx.ui without a UI", () => {
  it("resolves dialogs with pi's defaults at once and ignores notices, as pi's print mode", async () => {
    const ui = createUiContext(undefined);
    expect(await ui.select("t", ["a"])).toBeUndefined();
    expect(await ui.confirm("t", "m")).toBe(false);
    expect(await ui.input("t")).toBeUndefined();
    expect(await ui.editor("t", "x")).toBeUndefined();
    expect(() => ui.notify("n")).not.toThrow();
  });

  it("refuses pi's terminal-only members with ERR_EXTENSION_UNSUPPORTED naming them", () => {
    const ui = createUiContext(undefined) as unknown as Record<string, () => unknown>;
    expect(() => ui.custom?.()).toThrow(
      expect.objectContaining({ code: "ERR_EXTENSION_UNSUPPORTED", member: "ctx.ui.custom" }),
    );
    expect(() => ui.theme).toThrow(expect.objectContaining({ member: "ctx.ui.theme" }));
    expect(() => (ui.setWidget as (k: string, c: unknown) => void)("k", () => null)).toThrow(
      expect.objectContaining({ code: "ERR_EXTENSION_UNSUPPORTED" }),
    );
  });
});

describe("ctx.ui with a UI", () => {
  it("sends pi's request shapes and resolves with the answer's field", async () => {
    const { transport, shown, notices } = recordingUi();
    const ui = createUiContext(transport);
    const choice = ui.select("Pick", ["A", "B"], { timeout: 5000 });
    shown[0]?.answer({ value: "B" });
    expect(await choice).toBe("B");
    const ok = ui.confirm("Sure?", "really");
    shown[1]?.answer({ confirmed: true });
    expect(await ok).toBe(true);
    ui.notify("hi", "warning");
    ui.setWidget("w", ["l1"], { placement: "belowEditor" });
    expect(shown.map((s) => s.request)).toEqual([
      { method: "select", title: "Pick", options: ["A", "B"], timeout: 5000 },
      { method: "confirm", title: "Sure?", message: "really" },
    ]);
    expect(notices).toEqual([
      { method: "notify", message: "hi", notifyType: "warning" },
      { method: "setWidget", widgetKey: "w", widgetLines: ["l1"], widgetPlacement: "belowEditor" },
    ]);
  });

  it("a cancelled or malformed answer gives the default", async () => {
    const { transport, shown } = recordingUi();
    const ui = createUiContext(transport);
    const cancelled = ui.select("t", ["a"]);
    shown[0]?.answer({ cancelled: true, value: "a" });
    expect(await cancelled).toBeUndefined();
    const wrongField = ui.confirm("t", "m");
    shown[1]?.answer({ value: "yes" });
    expect(await wrongField).toBe(false);
    const wrongType = ui.input("t");
    shown[2]?.answer({ value: 42 });
    expect(await wrongType).toBeUndefined();
  });

  it("a timeout or an aborted signal resolves with the default and withdraws the dialog", async () => {
    const { transport, shown } = recordingUi();
    const ui = createUiContext(transport);
    expect(await ui.confirm("t", "m", { timeout: 20 })).toBe(false);
    expect(shown[0]?.cancelled).toBe(true);
    const controller = new AbortController();
    const pending = ui.select("t", ["a"], { signal: controller.signal });
    controller.abort();
    expect(await pending).toBeUndefined();
    expect(shown[1]?.cancelled).toBe(true);
    // An answer after the timeout changes nothing.
    shown[0]?.answer({ confirmed: true });
    expect(await ui.confirm("t", "m", { signal: AbortSignal.abort() })).toBe(false);
    expect(shown).toHaveLength(2);
  });
});
