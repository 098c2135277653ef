import type { Db } from "@/lib/db/client";
import { isUniqueViolation } from "@/lib/db/errors";
import { takeAgentInputs } from "@/lib/db/queries/agent-inputs";
import { appendMessages, getConversationContext, getLastMessage } from "@/lib/db/queries/messages";
import type { AgentInput, Message } from "@/lib/db/schema";
import { awaitingDecisionCallIds, listUnresolvedApprovals } from "@/lib/db/queries/approvals";

/**
 * Moves queued input (see queueInput) into the agent's work log, oldest first, in one
 * transaction: each input is in the log once, and only from the moment the session
 * chose to take it — between model calls, so no answer is stored after input its call
 * never saw. `scope` as in takeAgentInputs.
 */
export async function moveQueuedInput(
  db: Db,
  agentId: string,
  conversationId: string,
  scope: { taskId: string | null } | "all",
): Promise<AgentInput[]> {
  return db.transaction(async (tx) => {
    const inputs = await takeAgentInputs(tx, agentId, scope);
    await appendMessages(
      tx,
      conversationId,
      inputs.map((input) => ({ role: "user" as const, content: input.content })),
    );
    return inputs;
  });
}

/** Something in the log wants an answer: new input, a tool result, or a turn cut short. */
export function awaitsReply(tail: Message | null): boolean {
  if (!tail) return false;
  return tail.role === "user" || tail.role === "tool" || tail.role === "summary" || (tail.role === "assistant" && (tail.toolCalls?.length ?? 0) > 0);
}

export async function logAwaitsReply(db: Db, conversationId: string): Promise<boolean> {
  return awaitsReply(await getLastMessage(db, conversationId));
}

/**
 * Gives every tool call in the context that has no result one now, with `content`:
 * "(interrupted …)" for a call whose worker died mid-tool (its effect, if any, was
 * rolled back with it: see runEffect, so the agent may call it again), or the marker
 * of a session that ends. A stored call never stays without its result. Returns how
 * many calls were closed.
 */
export async function closeOpenToolCalls(db: Db, conversationId: string, content: string, options: { keepDecided?: boolean } = {}): Promise<number> {
  const context = await getConversationContext(db, conversationId);
  const answered = new Set(context.flatMap((message) => (message.role === "tool" && message.toolCallId ? [message.toolCallId] : [])));
  const open = context.flatMap((message) => (message.toolCalls ?? []).filter((call) => !answered.has(call.toolCallId)));
  if (open.length === 0) return 0;
  // A call waiting for the person's decision is not broken: it keeps waiting, whatever ends.
  // At a session's start (keepDecided), neither is one the person decided on and nobody carried
  // out yet: the session carries it out next (takeNextWork), and an "interrupted" result here
  // would make that a no-op (an approved call never ran; a denied one never said why).
  const awaiting = options.keepDecided
    ? new Set((await listUnresolvedApprovals(db, conversationId)).map((approval) => approval.toolCallId))
    : await awaitingDecisionCallIds(db, conversationId);
  let closed = 0;
  for (const message of context) {
    for (const call of message.toolCalls ?? []) {
      if (answered.has(call.toolCallId) || awaiting.has(call.toolCallId)) continue;
      try {
        // A savepoint: inside a caller's transaction a duplicate must not abort it.
        await db.transaction((tx) => appendMessages(tx, conversationId, [{ role: "tool", toolCallId: call.toolCallId, content }]));
        closed += 1;
      } catch (error) {
        if (!isUniqueViolation(error)) throw error;
      }
    }
  }
  return closed;
}
