import { z } from "zod";
import { countInboxNeedingAttention } from "@/lib/db/queries/inbox-items";
import { getTeam } from "@/lib/db/queries/teams";
import { notFound } from "@/lib/errors";
import { inboxItemTypes } from "@/lib/db/schema";
import { parseSearchParams, route } from "@/lib/http/http";
import { getInboxPage } from "@/lib/views/inbox-page";
import { webEngine } from "@/lib/http/server";

export const dynamic = "force-dynamic";

const inboxQuery = z.object({
  type: z.enum(inboxItemTypes).optional(),
  teamId: z.uuid().optional(),
  /** false (default): the inbox; true: what the person archived. */
  archived: z.enum(["true", "false"]).default("false"),
  /** Paging back: the `nextCursor` of the page before. */
  before: z.string().max(200).optional(),
  limit: z.coerce.number().int().min(1).max(500).default(100),
});

/**
 * Newest first, each with the question or approval it carries and the names of its team and
 * agent; `nextCursor` pages back. `unreadCount`: not read yet; `waitingCount`: questions and
 * approvals that wait for the person; `badgeCount`: either (what the navigation shows).
 */
export const GET = route(async (request: Request) => {
  const query = parseSearchParams(request, inboxQuery);
  const { db } = await webEngine();
  // A filter by a team that does not exist is a 404, not an empty inbox that looks like all is read.
  if (query.teamId && !(await getTeam(db, query.teamId))) throw notFound("team", query.teamId);
  const [page, counts] = await Promise.all([
    getInboxPage(db, { ...query, archived: query.archived === "true" }),
    countInboxNeedingAttention(db),
  ]);
  return Response.json({ ...page, unreadCount: counts.unread, waitingCount: counts.waiting, badgeCount: counts.badge });
});
