import { z } from "zod";
import { countInboxNeedingAttention, listInboxItems } from "@/lib/db/queries/inbox-items";
import { inboxItemTypes } from "@/lib/db/schema";
import { parseSearchParams, route } from "@/lib/http";
import { webEngine } from "@/lib/server";

export const dynamic = "force-dynamic";

const inboxQuery = z.object({
  type: z.enum(inboxItemTypes).optional(),
  teamId: z.uuid().optional(),
  /** Paging back: items created before this time (an item's createdAt). */
  before: z.iso.datetime({ offset: true }).optional(),
  limit: z.coerce.number().int().min(1).max(500).default(100),
});

/**
 * Newest first, each with the question or approval it carries. `unreadCount`: not read yet;
 * `waitingCount`: questions and approvals that wait for the person; `badgeCount`: either (what
 * the navigation shows).
 */
export const GET = route(async (request: Request) => {
  const query = parseSearchParams(request, inboxQuery);
  const { db } = await webEngine();
  const [items, counts] = await Promise.all([
    listInboxItems(db, { ...query, before: query.before ? new Date(query.before) : undefined }),
    countInboxNeedingAttention(db),
  ]);
  return Response.json({ items, unreadCount: counts.unread, waitingCount: counts.waiting, badgeCount: counts.badge });
});
