import "server-only";
// How the knowledge page (and what links to knowledge) points at where a fact was reported.
import type { KnowledgeSourceView } from "@/lib/db/queries/knowledge-items";

/**
 * The page showing a source's message: the agent's work log opened at that message
 * (highlighted; see getWorkLogPage's `around`), or its chat at that message. Null when the conversation is gone.
 */
export function sourceHref(
  source: Pick<KnowledgeSourceView, "agentId" | "conversationId" | "conversationMode" | "messageId">,
): string | null {
  if (!source.conversationId) return null;
  if (source.conversationMode === "foreground")
    return source.messageId
      ? `/agents/${source.agentId}/chat?message=${source.messageId}`
      : `/agents/${source.agentId}/chat`;
  return source.messageId
    ? `/agents/${source.agentId}?message=${source.messageId}#m-${source.messageId}`
    : `/agents/${source.agentId}#work-log`;
}

/** Why a search found an item, as the knowledge page says it: its words, its meaning, or both. */
export function whyFound(matched: { words: boolean; meaning: boolean }): string {
  if (matched.words && matched.meaning) return "Matched words, similar meaning";
  return matched.words ? "Matched words" : "Similar meaning";
}
