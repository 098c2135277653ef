import { createHash } from "node:crypto";
import type { FakeChatRequest } from "./fake-openai";

/**
 * OpenAI's prompt cache, as a stand-in server applies it: a request's input repeats the start
 * of an earlier request when their prompts agree from the first token on; the agreeing part is
 * served from the cache in 128-token blocks, once it is at least 1,024 tokens. The prompt is
 * the request as the server receives it, tools first (they are rendered before the messages),
 * then the messages in order; a token is taken as four characters of it.
 *
 * Blocks are matched by a chained hash (each block's key covers every character before it),
 * as providers do, so a request is checked against every earlier one in one pass over it.
 */
export const CHARS_PER_TOKEN = 4;
export const CACHE_BLOCK_TOKENS = 128;
export const CACHE_MIN_TOKENS = 1024;
const BLOCK_CHARS = CACHE_BLOCK_TOKENS * CHARS_PER_TOKEN;

export type CacheMeasure = {
  /** The request's input tokens (prompt_tokens). */
  promptTokens: number;
  /** How many of them repeat the start of an earlier request (prompt_tokens_details.cached_tokens). */
  cachedTokens: number;
};

/** The prompt a request carries, in the order the server renders it: tools, structured-output format, messages. */
export function promptText(request: Pick<FakeChatRequest, "tools" | "messages" | "response_format">): string {
  const parts = [JSON.stringify(request.tools ?? []), JSON.stringify(request.response_format ?? null)];
  for (const message of request.messages) parts.push(JSON.stringify(message));
  return parts.join("\n");
}

export class PromptCache {
  private readonly blocks = new Set<string>();

  /** Measures a request against every earlier one, then remembers it. */
  measure(request: Pick<FakeChatRequest, "tools" | "messages" | "response_format">): CacheMeasure {
    return this.measureText(promptText(request));
  }

  measureText(text: string): CacheMeasure {
    const promptTokens = Math.ceil(text.length / CHARS_PER_TOKEN);
    let key = "";
    let matched = 0;
    let matching = true;
    for (let start = 0; start + BLOCK_CHARS <= text.length; start += BLOCK_CHARS) {
      key = createHash("sha1")
        .update(key)
        .update(text.slice(start, start + BLOCK_CHARS))
        .digest("hex");
      if (matching && this.blocks.has(key)) matched += 1;
      else matching = false;
      this.blocks.add(key);
    }
    const cachedTokens = matched * CACHE_BLOCK_TOKENS;
    return { promptTokens, cachedTokens: cachedTokens >= CACHE_MIN_TOKENS ? cachedTokens : 0 };
  }
}

/**
 * How far a request extends the one before it: the length of their common start, in
 * characters, and whether the earlier one is a prefix of the later one (byte for byte, as
 * promptText renders both).
 */
export function extension(previous: string, next: string): { common: number; extends: boolean } {
  const limit = Math.min(previous.length, next.length);
  let common = 0;
  while (common < limit && previous.charCodeAt(common) === next.charCodeAt(common)) common += 1;
  return { common, extends: common === previous.length };
}
