// Stored messages (the HTTP API's shape) → AI SDK UI messages for `useChat`. Shared by the
// server page (first render) and the client (refetch after live events), so it stays pure.
import type { UIMessage } from "ai";
import { isPersonQuestion } from "@/lib/agents/formats";

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

/** `briefing` / `question`: a message of its own that belongs to inbox item `inboxItemId`. */
export type ChatMetadata = { briefing?: boolean; question?: boolean; inboxItemId?: string; createdAt?: string };
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
      out.push({ id: message.id, role: "user", metadata: { createdAt }, parts: [{ type: "text", text: message.content }] });
    } else if (message.role === "assistant") {
      // createInboxItem writes a briefing, askPerson a question, with its inbox item's id: a message of its own.
      const inboxItemId = message.inboxItemId ?? undefined;
      const question = inboxItemId !== undefined && isPersonQuestion(message.content);
      const briefing = inboxItemId !== undefined && !question;
      if (!reply || inboxItemId !== undefined || reply.metadata?.inboxItemId !== undefined) {
        const kind = question ? { question } : { briefing };
        reply = { id: message.id, role: "assistant", metadata: { createdAt, ...kind, ...(inboxItemId ? { inboxItemId } : {}) }, parts: [] };
        out.push(reply);
      }
      if (message.content) reply.parts.push({ type: "text", text: message.content, state: "done" });
      for (const call of message.toolCalls ?? []) {
        reply.parts.push({ type: "dynamic-tool", toolName: call.toolName, toolCallId: call.toolCallId, state: "input-available", input: call.args });
      }
    } else if (message.role === "tool") {
      const index = reply?.parts.findIndex((part) => part.type === "dynamic-tool" && part.toolCallId === message.toolCallId) ?? -1;
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
