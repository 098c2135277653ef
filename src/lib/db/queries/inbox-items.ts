import "server-only";
import { and, asc, desc, eq, isNotNull, isNull, or, sql, type SQL } from "drizzle-orm";
import { CadreError, notFound } from "@/lib/errors";
import type { Db } from "../client";
import {
  approvals,
  inboxItems,
  questions,
  type Approval,
  type InboxItem,
  type InboxItemType,
  type Question,
} from "../schema";
import type { TimelinePosition } from "./timeline";
import { atMicros, olderThan } from "./keyset";

export type NewInboxItem = {
  teamId: string;
  agentId: string;
  type: InboxItemType;
  title: string;
  summary: string;
  content: string;
  taskId?: string | null;
  dedupeKey?: string | null;
  questionId?: string | null;
  approvalId?: string | null;
};

export async function createInboxItem(db: Db, input: NewInboxItem): Promise<InboxItem> {
  const [item] = await db.insert(inboxItems).values(input).returning();
  return item!;
}

/**
 * Creates the item unless one with the same dedupe key exists; returns null then.
 * This is what makes an alert one per failed task, however often the failure is seen.
 */
export async function createInboxItemOnce(
  db: Db,
  input: NewInboxItem & { dedupeKey: string },
): Promise<InboxItem | null> {
  const [item] = await db
    .insert(inboxItems)
    .values(input)
    .onConflictDoNothing({ target: inboxItems.dedupeKey, where: sql`dedupe_key is not null` })
    .returning();
  return item ?? null;
}

/** An inbox item with what the person can still do about it: the question or approval it carries, in its current state. */
export type InboxItemView = InboxItem & { question: Question | null; approval: Approval | null };

/**
 * `archived`: false (the default) shows the inbox, true what the person archived. `before`: a
 * keyset position (created_at, id), so items created in the same microsecond page without a
 * gap or a repeat.
 */
export type InboxFilter = {
  type?: InboxItemType;
  teamId?: string;
  archived?: boolean;
  before?: TimelinePosition;
  limit?: number;
};

export function inboxFilterWhere(filter: InboxFilter): SQL | undefined {
  return and(
    filter.archived ? isNotNull(inboxItems.archivedAt) : isNull(inboxItems.archivedAt),
    filter.type ? eq(inboxItems.type, filter.type) : undefined,
    filter.teamId ? eq(inboxItems.teamId, filter.teamId) : undefined,
    filter.before ? olderThan(inboxItems.createdAt, inboxItems.id, filter.before) : undefined,
  );
}

/** Newest first — the keyset order; `atMicros` is the item's created_at to the microsecond, for the next cursor. */
export const inboxOrder = [desc(inboxItems.createdAt), desc(inboxItems.id)];
export const inboxAtMicros = atMicros(inboxItems.createdAt);

function viewQuery(db: Db, where: SQL | undefined) {
  return db
    .select({ item: inboxItems, question: questions, approval: approvals })
    .from(inboxItems)
    .leftJoin(questions, eq(questions.id, inboxItems.questionId))
    .leftJoin(approvals, eq(approvals.id, inboxItems.approvalId))
    .where(where);
}

/** Newest first, with the question or approval each carries (the engine's and tests' read; the pages page through getInboxPage). */
export async function listInboxItems(db: Db, filter: InboxFilter = {}): Promise<InboxItemView[]> {
  const rows = await viewQuery(db, inboxFilterWhere(filter))
    .orderBy(...inboxOrder)
    .limit(filter.limit ?? 100);
  return rows.map(({ item, question, approval }) => ({ ...item, question, approval }));
}

/**
 * A team's questions and approvals that still wait for the person (archived or not: archiving
 * does not answer them), the longest-waiting first: what the team page's Overview asks for.
 */
export async function listTeamItemsWaitingForPerson(db: Db, teamId: string, limit = 10): Promise<InboxItemView[]> {
  const rows = await viewQuery(
    db,
    and(eq(inboxItems.teamId, teamId), or(eq(questions.status, "open"), eq(approvals.status, "pending"))),
  )
    .orderBy(asc(inboxItems.createdAt), asc(inboxItems.id))
    .limit(limit);
  return rows.map(({ item, question, approval }) => ({ ...item, question, approval }));
}

/** The team's newest briefing, archived or not (the Overview links to it). */
export async function getLatestTeamBriefing(db: Db, teamId: string): Promise<InboxItem | null> {
  const [item] = await db
    .select()
    .from(inboxItems)
    .where(and(eq(inboxItems.teamId, teamId), eq(inboxItems.type, "briefing")))
    .orderBy(...inboxOrder)
    .limit(1);
  return item ?? null;
}

export async function getInboxItemView(db: Db, itemId: string): Promise<InboxItemView | null> {
  const [row] = await viewQuery(db, eq(inboxItems.id, itemId));
  return row ? { ...row.item, question: row.question, approval: row.approval } : null;
}

/**
 * What the navigation badge counts: items not read yet, and questions and approvals that
 * still wait for the person even after they were opened. Each item counts once.
 */
export async function countInboxNeedingAttention(db: Db): Promise<{ unread: number; waiting: number; badge: number }> {
  const waiting = or(eq(questions.status, "open"), eq(approvals.status, "pending"));
  const [row] = await db
    .select({
      unread: sql<number>`count(*) filter (where ${inboxItems.readAt} is null)`.mapWith(Number),
      waiting: sql<number>`count(*) filter (where ${waiting})`.mapWith(Number),
      badge: sql<number>`count(*) filter (where ${inboxItems.readAt} is null or ${waiting})`.mapWith(Number),
    })
    .from(inboxItems)
    .leftJoin(questions, and(eq(questions.id, inboxItems.questionId), eq(questions.status, "open")))
    .leftJoin(approvals, and(eq(approvals.id, inboxItems.approvalId), eq(approvals.status, "pending")))
    .where(or(isNull(inboxItems.readAt), sql`${questions.id} is not null`, sql`${approvals.id} is not null`));
  return { unread: row?.unread ?? 0, waiting: row?.waiting ?? 0, badge: row?.badge ?? 0 };
}

/** The item that carries a question or an approval, marked read once the person acted on it. */
export async function markInboxItemOfRead(
  db: Db,
  link: { questionId: string } | { approvalId: string },
): Promise<void> {
  await db
    .update(inboxItems)
    .set({ readAt: sql`coalesce(${inboxItems.readAt}, now())` })
    .where(
      "questionId" in link ? eq(inboxItems.questionId, link.questionId) : eq(inboxItems.approvalId, link.approvalId),
    );
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

/**
 * Archives or brings back an item. An archived item is read too (out of sight is dealt with).
 * A question or approval that still waits for the person cannot be archived: its work would
 * wait unseen, so the person is told to answer or decide first.
 */
export async function setInboxItemArchived(db: Db, itemId: string, archived: boolean): Promise<InboxItem> {
  return db.transaction(async (tx) => {
    const [row] = await viewQuery(tx, eq(inboxItems.id, itemId)).for("update", { of: inboxItems });
    if (!row) throw notFound("inbox_item", itemId);
    if (archived && (row.question?.status === "open" || row.approval?.status === "pending")) {
      throw new CadreError(
        "conflict:inbox_item_waiting",
        `“${row.item.title}” still waits for you: ${row.question ? "answer the question" : "approve or deny the call"} first, then archive it.`,
      );
    }
    const [item] = await tx
      .update(inboxItems)
      .set(
        archived
          ? {
              archivedAt: sql`coalesce(${inboxItems.archivedAt}, now())`,
              readAt: sql`coalesce(${inboxItems.readAt}, now())`,
            }
          : { archivedAt: null },
      )
      .where(eq(inboxItems.id, itemId))
      .returning();
    return item!;
  });
}

export async function markAllInboxItemsRead(db: Db): Promise<number> {
  const updated = await db
    .update(inboxItems)
    .set({ readAt: sql`now()` })
    .where(isNull(inboxItems.readAt))
    .returning({ id: inboxItems.id });
  return updated.length;
}
