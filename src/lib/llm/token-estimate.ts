import "server-only";
import type { ModelMessage } from "ai";

/** Characters per token, roughly, for English text and JSON. */
const CHARS_PER_TOKEN = 4;

/** Rough token count of some characters of text. */
export function tokensOfChars(chars: number): number {
  return Math.ceil(chars / CHARS_PER_TOKEN);
}

/**
 * Rough token count: ~4 characters per token of the text, or of the messages as JSON, which
 * is what budgets need, not exactness. A message's JSON length is kept with it (model
 * messages are remade only when their stored message changed, see model-messages.ts), so a
 * long context is not serialized again before every call.
 */
export function estimateTokens(value: string | readonly ModelMessage[]): number {
  if (typeof value === "string") return tokensOfChars(value.length);
  // JSON.stringify(value).length, from its parts: the brackets, the commas and each message.
  let length = 2 + Math.max(0, value.length - 1);
  for (const message of value) {
    let own = serializedLength.get(message);
    if (own === undefined) {
      own = JSON.stringify(message).length;
      serializedLength.set(message, own);
    }
    length += own;
  }
  return tokensOfChars(length);
}

const serializedLength = new WeakMap<ModelMessage, number>();
