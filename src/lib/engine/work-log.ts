import "server-only";
import type { Db } from "@/lib/db/client";
import { isUniqueViolation } from "@/lib/db/errors";
import { takeAgentInputs } from "@/lib/db/queries/agent-inputs";
import { appendMessages, getConversationContext, getLastMessage, type NewMessage } from "@/lib/db/queries/messages";
import type { AgentInput, Message, StoredToolCall } from "@/lib/db/schema";
import { isUuid } from "@/lib/util/ids";
import { parseLogInput } from "@/lib/core/formats";
import { unresolvedCallIds } from "@/lib/db/queries/approvals";

/**
 * Moves queued input (see queueInput) into the agent's work log, oldest first, in one
 * transaction: each input is in the log once, and only from the moment the session
 * chose to take it — between model calls, so no answer is stored after input its call
 * never saw. `scope` as in takeAgentInputs. `before`: a message that goes in ahead of the
 * input, with it or not at all (the note on the agent's open tasks that the input changes).
 */
export async function moveQueuedInput(
  db: Db,
  agentId: string,
  conversationId: string,
  scope: { taskId: string | null } | "all",
  options: { heldBy?: string; before?: NewMessage | null } = {},
): Promise<AgentInput[]> {
  const { before, ...appendOptions } = options;
  return db.transaction(async (tx) => {
    const inputs = await takeAgentInputs(tx, agentId, scope);
    if (inputs.length === 0) return inputs;
    await appendMessages(
      tx,
      conversationId,
      [
        ...(before ? [before] : []),
        // Each input belongs to the task it is about, whatever the session was on before.
        ...inputs.map((input) => ({ role: "user" as const, content: input.content, taskId: storyTaskOfInput(input) })),
      ],
      appendOptions,
    );
    return inputs;
  });
}

/**
 * The task a piece of input belongs to: the recipient's task it is about, else the task it
 * names (a report on a task the person gave a subordinate directly is about no task of the
 * lead's, but belongs to that task's story). Null: input about no task at all.
 */
export function storyTaskOfInput(input: Pick<AgentInput, "taskId" | "content">): string | null {
  if (input.taskId) return input.taskId;
  const parsed = parseLogInput(input.content);
  return parsed && "taskId" in parsed && parsed.taskId && isUuid(parsed.taskId) ? parsed.taskId : null;
}

/** Something in the log wants an answer: new input, a tool result, or a turn cut short. */
export function awaitsReply(tail: Message | null): boolean {
  if (!tail) return false;
  return (
    tail.role === "user" ||
    tail.role === "tool" ||
    tail.role === "summary" ||
    (tail.role === "assistant" && (tail.toolCalls?.length ?? 0) > 0)
  );
}

export async function logAwaitsReply(db: Db, conversationId: string): Promise<boolean> {
  return awaitsReply(await getLastMessage(db, conversationId));
}

/**
 * Gives every tool call in the context that has no result one now, with `content` (or what
 * `content` says for that call): "(interrupted …)" for a call whose worker died mid-tool
 * (its effect, if any, was rolled back with it: see runEffect, so the agent may call it
 * again), "(outcome unknown …)" for one whose effect lies outside Cadre, or the marker of
 * a session that ends. A stored call never stays without its result. Returns the calls closed.
 */
/** Whether any tool call in the context has no result yet (waiting for the person's decision counts). */
/** Whether a call in this context has no result (a worker died mid-tool, or a call waits for the person). */
export function hasOpenToolCalls(context: Message[]): boolean {
  return openToolCalls(context).length > 0;
}

function openToolCalls(context: Message[]): StoredToolCall[] {
  const answered = new Set(
    context.flatMap((message) => (message.role === "tool" && message.toolCallId ? [message.toolCallId] : [])),
  );
  return context.flatMap((message) => (message.toolCalls ?? []).filter((call) => !answered.has(call.toolCallId)));
}

export async function closeOpenToolCalls(
  db: Db,
  conversationId: string,
  content: string | ((call: StoredToolCall) => string),
): Promise<StoredToolCall[]> {
  const open = openToolCalls(await getConversationContext(db, conversationId));
  if (open.length === 0) return [];
  // A call waiting for the person's decision is not broken: it keeps waiting, whatever ends,
  // and a decided one gets its result when the decision is carried out (approvals.ts).
  const awaiting = await unresolvedCallIds(db, conversationId);
  const closed: StoredToolCall[] = [];
  for (const call of open) {
    if (awaiting.has(call.toolCallId)) continue;
    try {
      // A savepoint: inside a caller's transaction a duplicate must not abort it.
      const text = typeof content === "string" ? content : content(call);
      await db.transaction((tx) =>
        appendMessages(tx, conversationId, [{ role: "tool", toolCallId: call.toolCallId, content: text }]),
      );
      closed.push(call);
    } catch (error) {
      if (!isUniqueViolation(error)) throw error;
    }
  }
  return closed;
}
