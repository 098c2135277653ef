import "server-only";
// A page of an agent's work log as the agent page shows it: messages in chain order, the
// work sessions they were written in, and each step's model call (time and tokens), matched
// the way the session trace matches them (usage rows carry their session; a call's row and
// its assistant message are written together when the call ends).
import type { Db } from "@/lib/db/client";
import { CHAT_PAGE_SIZE, toApiMessage, type ApiMessage } from "@/lib/views/chat-messages";
import { getConversationByMode } from "@/lib/db/queries/conversations";
import { getMessagesSince, getPreviousMessageId, listMessages } from "@/lib/db/queries/messages";
import type { Message } from "@/lib/db/schema";
import { CadreError } from "@/lib/errors";
import { listSessionCalls, listSessionsBetween, type LogSessionRow } from "@/lib/db/queries/work-log";
import { splitMarker } from "@/lib/core/formats";

/** A call's row and its message land within moments of each other; farther apart, they are not the same step. */
const STEP_MATCH_MS = 2_000;

export type LogSession = Omit<LogSessionRow, "windowEnd">;
export type LogStep = { inputTokens: number; cachedTokens: number; outputTokens: number; durationMs: number };

export type WorkLogPage = {
  messages: ApiMessage[];
  /** The sessions the page's messages were written in, by id. */
  sessions: Record<string, LogSession>;
  /** Each message's session (absent: written outside any, like a Stop with no session running). */
  sessionOf: Record<string, string>;
  /** Each step's model call, by the assistant message it wrote. */
  steps: Record<string, LogStep>;
};

/** How many older messages a page around a message shows before it (what led to it). */
const CONTEXT_BEFORE = 10;
/** How many messages after it a page around a message reaches at most (to the newest, normally). */
const MAX_AFTER = 500;

/**
 * A message of a conversation and everything after it (up to MAX_AFTER), with a few messages
 * before it: the page a link to that message opens (a work log's, a chat's), which later
 * re-renders and resyncs extend like the newest page.
 * A message of another conversation is not found.
 */
export async function listMessagesAround(
  db: Db,
  conversationId: string,
  messageId: string,
  where = "this work log: it may belong to the agent's chat, or be gone",
): Promise<Message[]> {
  const target = await getPreviousMessageId(db, conversationId, messageId);
  if (!target) throw new CadreError("not_found:message", `No message ${messageId} in ${where}.`);
  const [before, from] = await Promise.all([
    listMessages(db, conversationId, { before: messageId, limit: CONTEXT_BEFORE }),
    getMessagesSince(db, conversationId, target.previous, { limit: MAX_AFTER }),
  ]);
  return [...before, ...from];
}

/**
 * A page of the log: the newest, the one `before` a message (paging back), or the one `around`
 * a message (a link to it: see listMessagesAround).
 */
export async function getWorkLogPage(
  db: Db,
  agentId: string,
  options: { before?: string; around?: string; limit?: number } = {},
): Promise<WorkLogPage> {
  const conversation = await getConversationByMode(db, agentId, "background");
  if (!conversation && options.around)
    throw new CadreError("not_found:message", `No message ${options.around} in this work log.`);
  const stored = !conversation
    ? []
    : options.around
      ? await listMessagesAround(db, conversation.id, options.around)
      : await listMessages(db, conversation.id, { before: options.before, limit: options.limit ?? CHAT_PAGE_SIZE });
  const page: WorkLogPage = { messages: stored.map(toApiMessage), sessions: {}, sessionOf: {}, steps: {} };
  if (stored.length === 0) return page;
  const sessions = await listSessionsBetween(db, agentId, stored[0]!.createdAt, stored.at(-1)!.createdAt);
  const calls = await listSessionCalls(
    db,
    sessions.map((session) => session.id),
  );
  // Each message in the latest session started by then, if it was still writing then.
  for (const message of stored) {
    const at = message.createdAt.getTime();
    const session = sessions.findLast((candidate) => Date.parse(candidate.startedAt) <= at);
    if (session && (session.windowEnd === null || at < Date.parse(session.windowEnd)))
      page.sessionOf[message.id] = session.id;
  }
  for (const { windowEnd: _end, ...session } of sessions) page.sessions[session.id] = session;
  // A step is an assistant message written by a model call (not a marker); each call is matched once, in order.
  const unmatched = new Map<string, typeof calls>();
  for (const call of calls) unmatched.set(call.sessionId, [...(unmatched.get(call.sessionId) ?? []), call]);
  for (const message of stored) {
    const sessionId = page.sessionOf[message.id];
    if (message.role !== "assistant" || !sessionId || splitMarker(message.content.trim())?.text === "") continue;
    const queue = unmatched.get(sessionId) ?? [];
    const at = message.createdAt.getTime();
    // Calls that ended well before this message wrote nothing that is on this page.
    while (queue.length > 0 && Date.parse(queue[0]!.createdAt) < at - STEP_MATCH_MS) queue.shift();
    const call = queue[0];
    if (call && Math.abs(Date.parse(call.createdAt) - at) <= STEP_MATCH_MS) {
      queue.shift();
      page.steps[message.id] = {
        inputTokens: call.inputTokens,
        cachedTokens: call.cachedTokens,
        outputTokens: call.outputTokens,
        durationMs: call.durationMs,
      };
    }
  }
  return page;
}
