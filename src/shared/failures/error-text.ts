/**
 * The one way lifeline turns a caught value into text for a message: an Error's `message` (its
 * name and stack stay out of user-facing text), anything else through `String()`.
 */
export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
