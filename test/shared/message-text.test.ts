/**
 * The text of a message (src/shared/message-text.ts), one rule for every caller: a string is its
 * text; text blocks are pieces of one text and join with nothing; other blocks are not text.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { messageText } from "../../src/shared/message-text.js";

/** A text cut at arbitrary points into consecutive pieces. */
const textInPieces = fc
  .tuple(fc.string(), fc.array(fc.nat(), { maxLength: 6 }))
  .map(([text, cuts]): [string, string[]] => {
    const at = [...new Set(cuts.map((cut) => cut % (text.length + 1)))].sort((a, b) => a - b);
    const pieces: string[] = [];
    let from = 0;
    for (const cut of at) {
      pieces.push(text.slice(from, cut));
      from = cut;
    }
    pieces.push(text.slice(from));
    return [text, pieces];
  });

const notText = fc.oneof(
  fc.record({ type: fc.constant("thinking"), thinking: fc.string() }),
  fc.record({ type: fc.constant("toolCall"), id: fc.string(), name: fc.string(), arguments: fc.constant({}) }),
  fc.record({ type: fc.constant("image"), data: fc.string(), mimeType: fc.constant("image/png") }),
  // A text block without a string text (a damaged file) carries no text either.
  fc.record({ type: fc.constant("text"), text: fc.oneof(fc.integer(), fc.constant(null)) }),
  fc.constant(null),
);

describe("messageText", () => {
  it("gives a string content and the same text as one text block the same text", () => {
    fc.assert(
      fc.property(fc.string(), (text) => {
        expect(messageText(text)).toBe(text);
        expect(messageText([{ type: "text", text }])).toBe(text);
      }),
    );
  });

  it("reads a text cut into text blocks back whole: blocks join with nothing", () => {
    fc.assert(
      fc.property(textInPieces, ([text, pieces]) => {
        expect(messageText(pieces.map((piece) => ({ type: "text", text: piece })))).toBe(text);
      }),
    );
  });

  it("leaves thinking, tool calls, images and malformed blocks out of the text", () => {
    fc.assert(
      fc.property(textInPieces, fc.array(fc.tuple(fc.nat(), notText), { maxLength: 6 }), ([text, pieces], others) => {
        const blocks: unknown[] = pieces.map((piece) => ({ type: "text", text: piece }));
        for (const [at, block] of others) blocks.splice(at % (blocks.length + 1), 0, block);
        expect(messageText(blocks)).toBe(text);
      }),
    );
  });

  it("puts the separator between text blocks and the image marker for each image, when asked", () => {
    const blocks = [
      { type: "text", text: "a" },
      { type: "thinking", thinking: "hidden" },
      { type: "image", data: "", mimeType: "image/png" },
      { type: "text", text: "b" },
    ];
    expect(messageText(blocks, { separator: "\n" })).toBe("a\nb");
    expect(messageText(blocks, { image: "[image]" })).toBe("a[image]b");
  });

  it("gives content of any other shape no text", () => {
    for (const content of [undefined, null, 3, { type: "text", text: "x" }]) expect(messageText(content)).toBe("");
  });
});
