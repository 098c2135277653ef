// What a model call was given, reduced to comparable identities: the scripted model
// computes them from the request it receives, the invariant checker from the stored
// messages before the answer. Equal multisets mean the answer follows exactly the
// context its call was given.
import type { FakeChatMessage } from "../fake-openai";
import { SUMMARY_PREFIX } from "@/lib/engine/model-messages";
import { hash32 } from "./random";

type StoredLike = {
  role: string;
  content: string;
  toolCalls: { toolCallId: string }[] | null;
  toolCallId: string | null;
};

/** The text of a wire message, whether its content is a string or an array of parts. */
export function wireText(message: FakeChatMessage): string {
  if (!message.content) return "";
  if (typeof message.content === "string") return message.content;
  return message.content.map((part) => (part.type === "text" ? (part.text ?? "") : "")).join("");
}

function identity(role: "user" | "assistant" | "tool", value: string): number {
  return hash32(role, value);
}

/** One identity per message of a request (the system prompt left out). */
export function wireIdentities(messages: readonly FakeChatMessage[]): number[] {
  const out: number[] = [];
  for (const message of messages) {
    if (message.role === "user") out.push(identity("user", wireText(message)));
    else if (message.role === "assistant") {
      const calls = message.tool_calls ?? [];
      out.push(identity("assistant", calls.length > 0 ? calls.map((call) => call.id).join(",") : wireText(message)));
    } else if (message.role === "tool") out.push(identity("tool", message.tool_call_id ?? ""));
  }
  return out.sort((a, b) => a - b);
}

/** The identity of a stored message as the model would receive it. */
export function storedIdentity(message: StoredLike): number {
  switch (message.role) {
    case "summary":
      return identity("user", SUMMARY_PREFIX + message.content);
    case "user":
      return identity("user", message.content);
    case "tool":
      return identity("tool", message.toolCallId ?? "");
    default: {
      const calls = message.toolCalls ?? [];
      return identity("assistant", calls.length > 0 ? calls.map((call) => call.toolCallId).join(",") : message.content);
    }
  }
}

/**
 * Compares what was stored before an answer with what its call was given: the indices
 * of stored messages the call never saw, and how many messages it saw that were not
 * stored before the answer.
 */
export function compareContext(
  stored: readonly number[],
  seen: readonly number[],
): { unseen: number[]; missing: number } {
  const remaining = new Map<number, number>();
  for (const id of seen) remaining.set(id, (remaining.get(id) ?? 0) + 1);
  const unseen: number[] = [];
  stored.forEach((id, index) => {
    const n = remaining.get(id) ?? 0;
    if (n > 0) remaining.set(id, n - 1);
    else unseen.push(index);
  });
  let missing = 0;
  for (const n of remaining.values()) missing += n;
  return { unseen, missing };
}
