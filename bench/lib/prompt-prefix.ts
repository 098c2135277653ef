// How well a conversation's requests keep to OpenAI's prompt cache: each request should extend
// the one before it byte for byte, so all but what it adds is served from the cache.
import { SUMMARY_PREFIX } from "../../src/lib/engine/model-messages";
import type { FakeChatRequest } from "../../tests/support/fake-openai";
import {
  CACHE_BLOCK_TOKENS,
  CACHE_MIN_TOKENS,
  CHARS_PER_TOKEN,
  extension,
  promptText,
} from "../../tests/support/prompt-cache";
import type { MeasuredCall } from "./model-server";

/** A request that does not extend the one before it in its conversation. */
export type Divergence = {
  conversation: string;
  /** The request's place in its conversation (0 = the first). */
  request: number;
  /** A compaction's summary took the place of the log: a new start by design. */
  afterCompaction: boolean;
  /** Where the two first differ and how, in a line. */
  where: string;
};

export type PrefixReport = {
  requests: number;
  promptTokens: number;
  cachedTokens: number;
  /** What would be cached if every request extended the one before it (never less than what was). */
  limitTokens: number;
  divergences: Divergence[];
};

/** The tokens the cache serves of a common start of `chars` characters: whole blocks, from 1,024 tokens on. */
function cacheableTokens(chars: number): number {
  const tokens = Math.floor(chars / (CACHE_BLOCK_TOKENS * CHARS_PER_TOKEN)) * CACHE_BLOCK_TOKENS;
  return tokens >= CACHE_MIN_TOKENS ? tokens : 0;
}

/** A conversation: an agent's work log (its turns and briefing decision) or its chat. Side calls have none. */
function conversationOf(call: MeasuredCall): string | null {
  if (call.kind === "work" || call.kind === "briefing") return `${call.agent}'s work log`;
  if (call.kind === "chat") return `${call.agent}'s chat`;
  return null;
}

/** The parts promptText joins, with where each starts. */
function parts(request: FakeChatRequest): { label: string; start: number }[] {
  const labels = [
    "tools",
    "response format",
    ...request.messages.map((message, i) => `message ${i} (${message.role})`),
  ];
  const texts = [
    JSON.stringify(request.tools ?? []),
    JSON.stringify(request.response_format ?? null),
    ...request.messages.map((message) => JSON.stringify(message)),
  ];
  let start = 0;
  return labels.map((label, i) => {
    const part = { label, start };
    start += texts[i]!.length + 1;
    return part;
  });
}

const around = (text: string, at: number) => JSON.stringify(text.slice(Math.max(0, at - 12), at + 44));

function describeDivergence(
  previous: FakeChatRequest,
  previousText: string,
  next: FakeChatRequest,
  nextText: string,
  at: number,
): string {
  const part = parts(next).findLast((candidate) => candidate.start <= at)!;
  const previousPart = parts(previous).findLast((candidate) => candidate.start <= at)!;
  const label = part.label === previousPart.label ? part.label : `${previousPart.label} → ${part.label}`;
  return `${label}, char ${at - part.start}: ${around(previousText, at)} → ${around(nextText, at)}`;
}

/** Where the first summary sits in a request's prompt text, and what it says; null without one. */
function summaryOf(request: FakeChatRequest): { at: number; text: string } | null {
  const index = request.messages.findIndex(
    (message) =>
      message.role === "user" && typeof message.content === "string" && message.content.startsWith(SUMMARY_PREFIX),
  );
  if (index < 0) return null;
  return { at: parts(request)[index + 2]!.start, text: String(request.messages[index]!.content) };
}

/**
 * The calls' conversations measured against the cache's best: a conversation's first request
 * can have nothing of its own cached; every later one could have all of the request before it
 * (whole blocks), unless a compaction's summary replaced the log, when only what precedes the
 * summary (tools, instructions) could be. Each request also counts what it did get cached, if
 * more (a start shared with another conversation).
 */
export function measurePrefixes(calls: readonly MeasuredCall[]): PrefixReport {
  const report: PrefixReport = { requests: 0, promptTokens: 0, cachedTokens: 0, limitTokens: 0, divergences: [] };
  const previous = new Map<string, { request: FakeChatRequest; text: string; index: number }>();
  for (const call of calls) {
    const conversation = conversationOf(call);
    if (!conversation) continue;
    const text = promptText(call.request);
    const before = previous.get(conversation);
    let ideal = 0;
    if (before) {
      const summary = summaryOf(call.request);
      const previousSummary = summaryOf(before.request);
      const afterCompaction = summary !== null && summary.text !== previousSummary?.text;
      ideal = afterCompaction
        ? cacheableTokens(summary.at)
        : cacheableTokens(Math.min(before.text.length, text.length));
      const { common, extends: extended } = extension(before.text, text);
      if (!extended) {
        report.divergences.push({
          conversation,
          request: before.index + 1,
          afterCompaction,
          where: describeDivergence(before.request, before.text, call.request, text, common),
        });
      }
    }
    previous.set(conversation, { request: call.request, text, index: (before?.index ?? -1) + 1 });
    report.requests += 1;
    report.promptTokens += call.measure.promptTokens;
    report.cachedTokens += call.measure.cachedTokens;
    report.limitTokens += Math.max(call.measure.cachedTokens, Math.min(ideal, call.measure.promptTokens));
  }
  return report;
}

/** The first divergence worth chasing (one a compaction did not cause), in a line. */
export function describeDivergences(divergences: readonly Divergence[]): string {
  const byCompaction = divergences.filter((divergence) => divergence.afterCompaction).length;
  const others = divergences.filter((divergence) => !divergence.afterCompaction);
  const counts = `${others.length} divergence${others.length === 1 ? "" : "s"}${byCompaction ? ` (+${byCompaction} after compaction, by design)` : ""}`;
  const first = others[0];
  return first ? `${counts}; first: ${first.conversation}, request ${first.request}, ${first.where}` : counts;
}
