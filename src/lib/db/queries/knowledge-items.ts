import "server-only";
import { and, asc, desc, eq, getTableColumns, inArray, sql, type SQL } from "drizzle-orm";
import type { Db } from "../client";
import type { Embedding } from "@/lib/llm/embeddings";
import { storedEmbedding } from "./knowledge-embeddings";
import {
  agents,
  conversations,
  knowledgeItems,
  knowledgeSources,
  type ConversationMode,
  type KnowledgeItem,
  type KnowledgeItemType,
} from "../schema";

export type NewKnowledgeItem = {
  agentId: string;
  type: KnowledgeItemType;
  content: string;
  confidence?: number;
  sourceConversationId?: string | null;
  /** The web page or search result the fact came from (http or https). */
  sourceUrl?: string | null;
  /** The message it was reported in, for its first source. */
  sourceMessageId?: string | null;
  /** Its content's vector, when it was made before the save (else the embedding job makes it). */
  embedding?: Embedding | null;
};

// Everything but the search vector and the embedding: Postgres and recall (knowledge-embeddings.ts) use them, nobody reads them.
const {
  searchVector: _searchVector,
  embedding: _embedding,
  embeddingModel: _embeddingModel,
  embeddingDimensions: _embeddingDimensions,
  embeddedAt: _embeddedAt,
  ...columns
} = getTableColumns(knowledgeItems);
/** The columns of a KnowledgeItem: what pages, the API and the export read of an item. */
export const knowledgeColumns = columns;

/** A new item with its first source (the reporting agent, its conversation, message and URL). */
export function createKnowledgeItem(db: Db, input: NewKnowledgeItem): Promise<KnowledgeItem> {
  const { sourceMessageId, embedding, ...values } = input;
  return db.transaction(async (tx) => {
    const [item] = await tx
      .insert(knowledgeItems)
      .values({ ...values, ...(embedding ? storedEmbedding(embedding) : {}) })
      .returning(knowledgeColumns);
    await addKnowledgeSource(tx, item!.id, {
      agentId: input.agentId,
      conversationId: input.sourceConversationId,
      messageId: sourceMessageId,
      url: input.sourceUrl,
    });
    return item!;
  });
}

export type NewKnowledgeSource = {
  agentId: string;
  conversationId?: string | null;
  messageId?: string | null;
  url?: string | null;
};

export async function addKnowledgeSource(db: Db, itemId: string, source: NewKnowledgeSource): Promise<void> {
  await db.insert(knowledgeSources).values({
    knowledgeItemId: itemId,
    agentId: source.agentId,
    conversationId: source.conversationId ?? null,
    messageId: source.messageId ?? null,
    url: source.url ?? null,
  });
}

/**
 * A near-duplicate reported again: one more source; the item keeps the higher confidence and
 * gains the source's URL when it had none. Not an edit: `updated_at` stays (it means the person edited it).
 */
export async function mergeKnowledgeSource(
  db: Db,
  itemId: string,
  source: NewKnowledgeSource & { confidence: number },
): Promise<KnowledgeItem | null> {
  // The same agent saying it again in the same conversation (a tool call, then extraction) is not another source.
  const [known] = await db
    .select({ id: knowledgeSources.id })
    .from(knowledgeSources)
    .where(
      and(
        eq(knowledgeSources.knowledgeItemId, itemId),
        eq(knowledgeSources.agentId, source.agentId),
        sql`${knowledgeSources.conversationId} is not distinct from ${source.conversationId ?? null}`,
      ),
    )
    .limit(1);
  if (!known) await addKnowledgeSource(db, itemId, source);
  const [item] = await db
    .update(knowledgeItems)
    .set({
      confidence: sql`greatest(${knowledgeItems.confidence}, ${source.confidence})`,
      sourceUrl: sql`coalesce(${knowledgeItems.sourceUrl}, ${source.url ?? null})`,
    })
    .where(eq(knowledgeItems.id, itemId))
    .returning(knowledgeColumns);
  return item ?? null;
}

/** One report of an item, as the knowledge page, the API and the export show it. */
export type KnowledgeSourceView = {
  agentId: string;
  agentName: string;
  conversationId: string | null;
  /** Which of the agent's conversations: its work log (background) or its chat (foreground). */
  conversationMode: ConversationMode | null;
  messageId: string | null;
  url: string | null;
  createdAt: Date;
};

/** The items with their sources, oldest report first. */
export async function withKnowledgeSources<T extends { id: string }>(
  db: Db,
  items: T[],
): Promise<(T & { sources: KnowledgeSourceView[] })[]> {
  if (items.length === 0) return [];
  const rows = await db
    .select({
      itemId: knowledgeSources.knowledgeItemId,
      agentId: knowledgeSources.agentId,
      agentName: agents.name,
      conversationId: knowledgeSources.conversationId,
      conversationMode: conversations.mode,
      messageId: knowledgeSources.messageId,
      url: knowledgeSources.url,
      createdAt: knowledgeSources.createdAt,
    })
    .from(knowledgeSources)
    .innerJoin(agents, eq(agents.id, knowledgeSources.agentId))
    .leftJoin(conversations, eq(conversations.id, knowledgeSources.conversationId))
    .where(
      inArray(
        knowledgeSources.knowledgeItemId,
        items.map((item) => item.id),
      ),
    )
    .orderBy(asc(knowledgeSources.createdAt), asc(knowledgeSources.id));
  const byItem = new Map<string, KnowledgeSourceView[]>();
  for (const { itemId, ...source } of rows) byItem.set(itemId, [...(byItem.get(itemId) ?? []), source]);
  return items.map((item) => ({ ...item, sources: byItem.get(item.id) ?? [] }));
}

/** Which items a search looks at: `teamId`, `agentId`, `agentIds` and `type` as in KnowledgeSearch. */
export type KnowledgeFilter = {
  agentId?: string;
  agentIds?: string[];
  teamId?: string;
  type?: KnowledgeItemType;
};

/**
 * `teamId`: knowledge has no team of its own; it is its agents' team's (the agent that reported
 * it first). `agentId`: items with a source from that agent.
 */
export type KnowledgeSearch = KnowledgeFilter & {
  q?: string;
  limit?: number;
};

function filterConditions(search: KnowledgeFilter): SQL[] {
  const conditions: SQL[] = [];
  // An agent's knowledge: every item it reported, first or again.
  if (search.agentId) {
    conditions.push(
      sql`exists (select 1 from knowledge_sources s where s.knowledge_item_id = ${knowledgeItems.id} and s.agent_id = ${search.agentId})`,
    );
  }
  if (search.agentIds) conditions.push(sql`${knowledgeItems.agentId} = any(${sql.param(search.agentIds)}::uuid[])`);
  if (search.teamId)
    conditions.push(sql`${knowledgeItems.agentId} in (select id from agents where team_id = ${search.teamId})`);
  if (search.type) conditions.push(eq(knowledgeItems.type, search.type));
  return conditions;
}

/**
 * Knowledge items by words only, best full-text match first when `q` is given (websearch
 * syntax: quotes, OR, -exclusions), newest first otherwise. A search by meaning as well is
 * recallKnowledge's (agents/knowledge-recall.ts).
 */
export function searchKnowledgeItems(db: Db, search: KnowledgeSearch = {}): Promise<KnowledgeItem[]> {
  const conditions = filterConditions(search);
  const q = search.q?.trim();
  const query = q ? sql`websearch_to_tsquery('english', ${q})` : undefined;
  if (query) conditions.push(sql`${knowledgeItems.searchVector} @@ ${query}`);
  return db
    .select(knowledgeColumns)
    .from(knowledgeItems)
    .where(conditions.length ? and(...conditions) : undefined)
    .orderBy(
      ...(query ? [desc(sql`ts_rank(${knowledgeItems.searchVector}, ${query})`)] : []),
      desc(knowledgeItems.createdAt),
    )
    .limit(Math.min(search.limit ?? 100, 500));
}

/**
 * The ids of the `depth` items that match `q` best by words, best first. `anyWord`: an item
 * needs one of the words, not all (the near-duplicate check's candidates, ranked by how many
 * it shares); otherwise `q` reads as websearch syntax, as on the knowledge page.
 */
export async function rankKnowledgeByWords(
  db: Db,
  filter: KnowledgeFilter,
  q: string,
  options: { depth: number; anyWord?: boolean },
): Promise<string[]> {
  const query = options.anyWord
    ? sql`replace(plainto_tsquery('english', ${q})::text, ' & ', ' | ')::tsquery`
    : sql`websearch_to_tsquery('english', ${q})`;
  const rows = await db
    .select({ id: knowledgeItems.id })
    .from(knowledgeItems)
    .where(and(...filterConditions(filter), sql`${knowledgeItems.searchVector} @@ ${query}`))
    .orderBy(desc(sql`ts_rank(${knowledgeItems.searchVector}, ${query})`), desc(knowledgeItems.createdAt))
    .limit(options.depth);
  return rows.map((row) => row.id);
}

/** The ids of the items `agentId` reported, first or again (the knowledge page's agent filter, for ranking by meaning). */
export async function knowledgeIdsReportedBy(db: Db, agentId: string): Promise<Set<string>> {
  const rows = await db
    .selectDistinct({ id: knowledgeSources.knowledgeItemId })
    .from(knowledgeSources)
    .where(eq(knowledgeSources.agentId, agentId));
  return new Set(rows.map((row) => row.id));
}

/** The items of `ids` that still exist, in no order; `excluding`: not those matching these words (websearch syntax). */
export function getKnowledgeItemsById(
  db: Db,
  ids: readonly string[],
  options: { excluding?: string } = {},
): Promise<KnowledgeItem[]> {
  if (ids.length === 0) return Promise.resolve([]);
  const excluded = options.excluding?.trim();
  return db
    .select(knowledgeColumns)
    .from(knowledgeItems)
    .where(
      and(
        inArray(knowledgeItems.id, [...ids]),
        excluded
          ? sql`not (${knowledgeItems.searchVector} @@ websearch_to_tsquery('english', ${excluded}))`
          : undefined,
      ),
    );
}

export async function getKnowledgeItem(db: Db, itemId: string): Promise<KnowledgeItem | null> {
  const [item] = await db.select(knowledgeColumns).from(knowledgeItems).where(eq(knowledgeItems.id, itemId));
  return item ?? null;
}

export type KnowledgeChanges = {
  content?: string;
  type?: KnowledgeItemType;
  sourceUrl?: string | null;
  confidence?: number;
};

/**
 * The person's edit: the changed fields and `updated_at`; null when the item is gone. New
 * words drop the old words' vector (the item is found by words until it is embedded again).
 */
export async function updateKnowledgeItem(
  db: Db,
  itemId: string,
  changes: KnowledgeChanges,
): Promise<{ item: KnowledgeItem; unembedded: boolean } | null> {
  const keepsVector = changes.content === undefined ? undefined : sql`${knowledgeItems.content} = ${changes.content}`;
  const [row] = await db
    .update(knowledgeItems)
    .set({
      ...changes,
      updatedAt: sql`now()`,
      ...(keepsVector && {
        embedding: sql`case when ${keepsVector} then ${knowledgeItems.embedding} end`,
        embeddingModel: sql`case when ${keepsVector} then ${knowledgeItems.embeddingModel} end`,
        embeddingDimensions: sql`case when ${keepsVector} then ${knowledgeItems.embeddingDimensions} end`,
        embeddedAt: sql`case when ${keepsVector} then ${knowledgeItems.embeddedAt} end`,
      }),
    })
    .where(eq(knowledgeItems.id, itemId))
    .returning({ ...knowledgeColumns, unembedded: sql<boolean>`${knowledgeItems.embedding} is null` });
  if (!row) return null;
  const { unembedded, ...item } = row;
  return { item, unembedded };
}

/** Deletes an item; true when it existed. */
export async function deleteKnowledgeItem(db: Db, itemId: string, agentId?: string): Promise<boolean> {
  const deleted = await db
    .delete(knowledgeItems)
    .where(
      agentId ? and(eq(knowledgeItems.id, itemId), eq(knowledgeItems.agentId, agentId)) : eq(knowledgeItems.id, itemId),
    )
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

/**
 * Before an agent (and, by cascade, its subordinates) is removed: each item it reported first
 * that another agent reported too passes to the earliest remaining reporter, instead of going
 * with the removed agent's items. Its removed reporters' sources go with them.
 */
export async function handOverSharedKnowledge(db: Db, agentId: string): Promise<void> {
  await db.execute(sql`
    with recursive removed as (
      select id from agents where id = ${agentId}
      union all
      select a.id from agents a join removed r on a.parent_agent_id = r.id
    ), heir as (
      select distinct on (s.knowledge_item_id) s.knowledge_item_id, s.agent_id, s.conversation_id
        from knowledge_sources s join knowledge_items k on k.id = s.knowledge_item_id
       where k.agent_id in (select id from removed) and s.agent_id not in (select id from removed)
       order by s.knowledge_item_id, s.created_at, s.id
    )
    update knowledge_items k set agent_id = heir.agent_id, source_conversation_id = heir.conversation_id
      from heir where k.id = heir.knowledge_item_id`);
}

/** Holds the team's knowledge for the transaction: two saves of one fact do not both find it missing. */
export async function lockTeamKnowledge(tx: Db, teamId: string): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`knowledge:${teamId}`}, 0))`);
}
