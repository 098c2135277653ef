import { and, desc, eq, getTableColumns, sql, type SQL } from "drizzle-orm";
import type { Db } from "../client";
import { knowledgeItems, type KnowledgeItem, type KnowledgeItemType } from "../schema";

export type NewKnowledgeItem = {
  agentId: string;
  type: KnowledgeItemType;
  content: string;
  confidence?: number;
  sourceConversationId?: string | null;
  /** The web page or search result the fact came from (http or https). */
  sourceUrl?: string | null;
};

// Everything but the generated search vector, which nobody outside Postgres needs.
const { searchVector: _searchVector, ...knowledgeColumns } = getTableColumns(knowledgeItems);

export async function createKnowledgeItem(db: Db, input: NewKnowledgeItem): Promise<KnowledgeItem> {
  const [item] = await db.insert(knowledgeItems).values(input).returning(knowledgeColumns);
  return item!;
}

/** `teamId`: knowledge has no team of its own; it is its agents' team's. */
export type KnowledgeSearch = { agentId?: string; agentIds?: string[]; teamId?: string; q?: string; type?: KnowledgeItemType; limit?: number };

/**
 * Knowledge items, best full-text match first when `q` is given (websearch syntax:
 * quotes, OR, -exclusions), newest first otherwise.
 */
export function searchKnowledgeItems(db: Db, search: KnowledgeSearch = {}): Promise<KnowledgeItem[]> {
  const conditions: SQL[] = [];
  if (search.agentId) conditions.push(eq(knowledgeItems.agentId, search.agentId));
  if (search.agentIds) conditions.push(sql`${knowledgeItems.agentId} = any(${sql.param(search.agentIds)}::uuid[])`);
  if (search.teamId) conditions.push(sql`${knowledgeItems.agentId} in (select id from agents where team_id = ${search.teamId})`);
  if (search.type) conditions.push(eq(knowledgeItems.type, search.type));
  const q = search.q?.trim();
  const query = q ? sql`websearch_to_tsquery('english', ${q})` : undefined;
  if (query) conditions.push(sql`${knowledgeItems.searchVector} @@ ${query}`);
  return db
    .select(knowledgeColumns)
    .from(knowledgeItems)
    .where(conditions.length ? and(...conditions) : undefined)
    .orderBy(...(query ? [desc(sql`ts_rank(${knowledgeItems.searchVector}, ${query})`)] : []), desc(knowledgeItems.createdAt))
    .limit(Math.min(search.limit ?? 100, 500));
}

export async function getKnowledgeItem(db: Db, itemId: string): Promise<KnowledgeItem | null> {
  const [item] = await db.select(knowledgeColumns).from(knowledgeItems).where(eq(knowledgeItems.id, itemId));
  return item ?? null;
}

export type KnowledgeChanges = { content?: string; type?: KnowledgeItemType; sourceUrl?: string | null; confidence?: number };

/** The person's edit (or a merge of a near-duplicate): the changed fields and `updated_at`; null when the item is gone. */
export async function updateKnowledgeItem(db: Db, itemId: string, changes: KnowledgeChanges): Promise<KnowledgeItem | null> {
  const [item] = await db
    .update(knowledgeItems)
    .set({ ...changes, updatedAt: sql`now()` })
    .where(eq(knowledgeItems.id, itemId))
    .returning(knowledgeColumns);
  return item ?? null;
}

/** Deletes an item; true when it existed. */
export async function deleteKnowledgeItem(db: Db, itemId: string, agentId?: string): Promise<boolean> {
  const deleted = await db
    .delete(knowledgeItems)
    .where(agentId ? and(eq(knowledgeItems.id, itemId), eq(knowledgeItems.agentId, agentId)) : eq(knowledgeItems.id, itemId))
    .returning({ id: knowledgeItems.id });
  return deleted.length > 0;
}

export function getKnowledgeItemsBySourceConversation(db: Db, conversationId: string): Promise<KnowledgeItem[]> {
  return db
    .select(knowledgeColumns)
    .from(knowledgeItems)
    .where(eq(knowledgeItems.sourceConversationId, conversationId))
    .orderBy(desc(knowledgeItems.createdAt));
}
