// Stored messages (the HTTP API's shape) → AI SDK UI messages for `useChat`. Shared by the
// server page (first render) and the client (refetch after live events), so it stays pure.
import type { UIMessage } from "ai";
import { errorMarkerMessage, isPersonQuestion, isStoppedMarker, splitMarker } from "@/lib/core/formats";
import type { Message } from "@/lib/db/schema";

/** How many stored messages a chat or a work log loads at once (first render, "Load older", refetch). */
export const CHAT_PAGE_SIZE = 100;

export type ApiMessage = {
  id: string;
  role: "user" | "assistant" | "tool" | "summary";
  content: string;
  thinking: string | null;
  toolCalls: { toolCallId: string; toolName: string; args: unknown }[] | null;
  toolCallId: string | null;
  /** Set on a briefing and on a question to the person: the inbox item it belongs to. */
  inboxItemId?: string | null;
  previousMessageId: string | null;
  createdAt: string | Date;
};

/** The API's message shape (seed 004): no conversation id, tool calls as {toolCallId, toolName, args}. */
export function toApiMessage(message: Message): ApiMessage {
  const { id, role, content, thinking, toolCalls, toolCallId, inboxItemId, previousMessageId, createdAt } = message;
  return {
    id,
    role,
    content,
    thinking,
    toolCalls,
    toolCallId,
    inboxItemId,
    previousMessageId,
    createdAt: createdAt.toISOString(),
  };
}

/**
 * `briefing` / `question`: a message of its own that belongs to inbox item `inboxItemId`.
 * `error`: the reply ended in a model failure (its marker, said once, with a Retry);
 * `stopped`: the person stopped it.
 */
type ChatMetadata = {
  briefing?: boolean;
  question?: boolean;
  inboxItemId?: string;
  createdAt?: string;
  error?: string;
  stopped?: boolean;
};
export type ChatMessage = UIMessage<ChatMetadata>;

/** A stored tool result: JSON when it parses, else the text itself. */
export function parseToolOutput(content: string): unknown {
  try {
    return JSON.parse(content);
  } catch {
    return content;
  }
}

/**
 * One UI message per person turn and per reply: a reply's assistant rows and tool rows
 * merge into one message whose tool parts carry input and output. A briefing and a question
 * to the person are messages of their own; summaries are context for the model and are not shown.
 */
export function toChatMessages(stored: ApiMessage[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  let reply: ChatMessage | undefined;
  for (const message of stored) {
    const createdAt = new Date(message.createdAt).toISOString();
    if (message.role === "user") {
      reply = undefined;
      out.push({
        id: message.id,
        role: "user",
        metadata: { createdAt },
        parts: [{ type: "text", text: message.content }],
      });
    } else if (message.role === "assistant") {
      // createInboxItem writes a briefing, askPerson a question, with its inbox item's id: a message of its own.
      const inboxItemId = message.inboxItemId ?? undefined;
      const question = inboxItemId !== undefined && isPersonQuestion(message.content);
      const briefing = inboxItemId !== undefined && !question;
      if (!reply || inboxItemId !== undefined || reply.metadata?.inboxItemId !== undefined) {
        const kind = question ? { question } : { briefing };
        reply = {
          id: message.id,
          role: "assistant",
          metadata: { createdAt, ...kind, ...(inboxItemId ? { inboxItemId } : {}) },
          parts: [],
        };
        out.push(reply);
      }
      // A marker is not the agent's words: the reply says how it ended instead (and a retry's answer supersedes an error).
      const marked = splitMarker(message.content);
      const text = marked ? marked.text.trimEnd() : message.content;
      const metadata = { ...reply.metadata };
      delete metadata.error;
      delete metadata.stopped;
      reply.metadata = metadata;
      if (marked && errorMarkerMessage(marked.marker) !== null)
        reply.metadata.error = errorMarkerMessage(marked.marker)!;
      if (marked && isStoppedMarker(marked.marker)) reply.metadata.stopped = true;
      if (text) reply.parts.push({ type: "text", text, state: "done" });
      for (const call of message.toolCalls ?? []) {
        reply.parts.push({
          type: "dynamic-tool",
          toolName: call.toolName,
          toolCallId: call.toolCallId,
          state: "input-available",
          input: call.args,
        });
      }
    } else if (message.role === "tool") {
      const index =
        reply?.parts.findIndex((part) => part.type === "dynamic-tool" && part.toolCallId === message.toolCallId) ?? -1;
      const part = index >= 0 ? reply!.parts[index] : undefined;
      if (part?.type === "dynamic-tool") {
        reply!.parts[index] = {
          type: "dynamic-tool",
          toolName: part.toolName,
          toolCallId: part.toolCallId,
          state: "output-available",
          input: part.input,
          output: parseToolOutput(message.content),
        };
      }
    }
  }
  return out;
}

/**
 * The newest page joined to what is loaded, by message id: the loaded messages before the
 * page, the page, then the loaded messages after the page's last one. Both are stretches of
 * one append-only chain, so ids place them; a read that answers after a newer one (two
 * overlapping refetches) then adds what it saw and never hides what the newer one showed.
 * Null when the page does not reach back to anything loaded (more than a page was written
 * since): the caller reads further back, or starts over.
 */
export function mergeNewest(loaded: readonly ApiMessage[], newest: readonly ApiMessage[]): ApiMessage[] | null {
  // Messages are never taken out of a chain: an empty page was read before anything loaded was written.
  if (newest.length === 0) return [...loaded];
  const first = newest[0]!;
  let start: number;
  if (first.previousMessageId === null)
    start = 0; // the page starts the conversation
  else {
    const at = loaded.findIndex((message) => message.id === first.id);
    const before = at >= 0 ? -1 : loaded.findIndex((message) => message.id === first.previousMessageId);
    if (at < 0 && before < 0) return null;
    start = at >= 0 ? at : before + 1;
  }
  const lastAt = loaded.findIndex((message) => message.id === newest.at(-1)!.id);
  return [...loaded.slice(0, start), ...newest, ...(lastAt >= start ? loaded.slice(lastAt + 1) : [])];
}

/** Whether messages older than the first loaded one exist (the chain goes on before it). */
export function hasOlder(loaded: readonly ApiMessage[]): boolean {
  return loaded.length > 0 && loaded[0]!.previousMessageId !== null;
}

/** The chat message that shows a stored message (a reply gathers several rows), if it is loaded. */
export function chatMessageShowing(stored: ApiMessage[], storedId: string | undefined): string | undefined {
  const index = storedId ? stored.findIndex((message) => message.id === storedId) : -1;
  if (index < 0) return undefined;
  // The rows up to it group as they do in the whole list: its message is the last of them.
  return toChatMessages(stored.slice(0, index + 1)).at(-1)?.id;
}
