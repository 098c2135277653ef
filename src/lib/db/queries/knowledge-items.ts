import { and, desc, eq, getTableColumns, sql, type SQL } from "drizzle-orm";
import type { Db } from "../client";
import { knowledgeItems, type KnowledgeItem, type KnowledgeItemType } from "../schema";

export type NewKnowledgeItem = {
  agentId: string;
  type: KnowledgeItemType;
  content: string;
  confidence?: number;
  sourceConversationId?: string | null;
};

// Everything but the generated search vector, which nobody outside Postgres needs.
const { searchVector: _searchVector, ...knowledgeColumns } = getTableColumns(knowledgeItems);

export async function createKnowledgeItem(db: Db, input: NewKnowledgeItem): Promise<KnowledgeItem> {
  const [item] = await db.insert(knowledgeItems).values(input).returning(knowledgeColumns);
  return item!;
}

export type KnowledgeSearch = { agentId?: string; agentIds?: string[]; q?: string; type?: KnowledgeItemType; limit?: number };

/**
 * Knowledge items, best full-text match first when `q` is given (websearch syntax:
 * quotes, OR, -exclusions), newest first otherwise.
 */
export function searchKnowledgeItems(db: Db, search: KnowledgeSearch = {}): Promise<KnowledgeItem[]> {
  const conditions: SQL[] = [];
  if (search.agentId) conditions.push(eq(knowledgeItems.agentId, search.agentId));
  if (search.agentIds) conditions.push(sql`${knowledgeItems.agentId} = any(${sql.param(search.agentIds)}::uuid[])`);
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
