import { count, desc, eq, isNull, sql } from "drizzle-orm";
import { notFound } from "@/lib/errors";
import type { Db } from "../client";
import { inboxItems, type InboxItem, type InboxItemType } from "../schema";

export type NewInboxItem = {
  teamId: string;
  agentId: string;
  type: InboxItemType;
  title: string;
  summary: string;
  content: string;
  taskId?: string | null;
  dedupeKey?: string | null;
};

export async function createInboxItem(db: Db, input: NewInboxItem): Promise<InboxItem> {
  const [item] = await db.insert(inboxItems).values(input).returning();
  return item!;
}

/**
 * Creates the item unless one with the same dedupe key exists; returns null then.
 * This is what makes an alert one per failed task, however often the failure is seen.
 */
export async function createInboxItemOnce(db: Db, input: NewInboxItem & { dedupeKey: string }): Promise<InboxItem | null> {
  const [item] = await db
    .insert(inboxItems)
    .values(input)
    .onConflictDoNothing({ target: inboxItems.dedupeKey, where: sql`dedupe_key is not null` })
    .returning();
  return item ?? null;
}

/** Newest first. */
export function listInboxItems(db: Db, limit = 100): Promise<InboxItem[]> {
  return db.select().from(inboxItems).orderBy(desc(inboxItems.createdAt)).limit(limit);
}

export async function countUnreadInboxItems(db: Db): Promise<number> {
  const [row] = await db.select({ unread: count() }).from(inboxItems).where(isNull(inboxItems.readAt));
  return row?.unread ?? 0;
}

export async function setInboxItemRead(db: Db, itemId: string, read: boolean): Promise<InboxItem> {
  const [item] = await db
    .update(inboxItems)
    // Keep the first time it was read; re-marking does not move it.
    .set({ readAt: read ? sql`coalesce(${inboxItems.readAt}, now())` : null })
    .where(eq(inboxItems.id, itemId))
    .returning();
  if (!item) throw notFound("inbox_item", itemId);
  return item;
}

export async function markAllInboxItemsRead(db: Db): Promise<number> {
  const updated = await db
    .update(inboxItems)
    .set({ readAt: sql`now()` })
    .where(isNull(inboxItems.readAt))
    .returning({ id: inboxItems.id });
  return updated.length;
}
