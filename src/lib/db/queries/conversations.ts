import "server-only";
import { and, desc, eq, sql } from "drizzle-orm";
import type { Db } from "../client";
import { conversations, type Conversation, type ConversationMode } from "../schema";

export async function createConversation(db: Db, agentId: string, mode: ConversationMode): Promise<Conversation> {
  const [conversation] = await db.insert(conversations).values({ agentId, mode }).returning();
  return conversation!;
}

/** The agent's most recent conversation, of one mode or of any. */
export async function getLatestConversation(
  db: Db,
  agentId: string,
  mode?: ConversationMode,
): Promise<Conversation | null> {
  const [conversation] = await db
    .select()
    .from(conversations)
    .where(
      mode ? and(eq(conversations.agentId, agentId), eq(conversations.mode, mode)) : eq(conversations.agentId, agentId),
    )
    .orderBy(desc(conversations.createdAt))
    .limit(1);
  return conversation ?? null;
}

/** The agent's conversation of this mode, or null when it has none yet. */
export function getConversationByMode(db: Db, agentId: string, mode: ConversationMode): Promise<Conversation | null> {
  return getLatestConversation(db, agentId, mode);
}

/**
 * The agent's conversation of this mode, created on first use. Two callers racing
 * for a new agent get the same conversation: the background one is unique by index,
 * the foreground one is created under an advisory lock on the agent.
 */
export async function getOrCreateConversation(db: Db, agentId: string, mode: ConversationMode): Promise<Conversation> {
  const existing = await getConversationByMode(db, agentId, mode);
  if (existing) return existing;
  return db.transaction(async (tx) => {
    await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`conversation:${agentId}:${mode}`}))`);
    const created = await getConversationByMode(tx, agentId, mode);
    if (created) return created;
    return createConversation(tx, agentId, mode);
  });
}

export function getBackgroundConversation(db: Db, agentId: string): Promise<Conversation> {
  return getOrCreateConversation(db, agentId, "background");
}

export function getForegroundConversation(db: Db, agentId: string): Promise<Conversation> {
  return getOrCreateConversation(db, agentId, "foreground");
}

/** Whether the conversation is an agent's chat (foreground) or its work log (background); undefined when gone. */
export async function getConversationMode(db: Db, conversationId: string): Promise<Conversation["mode"] | undefined> {
  const [conversation] = await db
    .select({ mode: conversations.mode })
    .from(conversations)
    .where(eq(conversations.id, conversationId));
  return conversation?.mode;
}
