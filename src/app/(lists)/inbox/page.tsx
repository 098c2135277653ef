import type { Metadata } from "next";
import { InboxList } from "@/components/inbox";
import { LiveRefresh } from "@/components/live-events";
import { toWire } from "@/lib/client/api-client";
import { requirePageSession } from "@/lib/auth/auth";
import { db } from "@/lib/db/client";
import { countInboxNeedingAttention } from "@/lib/db/queries/inbox-items";
import { listTeams } from "@/lib/db/queries/teams";
import { inboxItemTypes } from "@/lib/db/schema";
import { CadreError } from "@/lib/errors";
import { isUuid } from "@/lib/util/ids";
import { getInboxPage, type InboxPage as InboxPageData } from "@/lib/views/inbox-page";

export const dynamic = "force-dynamic";
export const metadata: Metadata = { title: "Inbox" };

type Props = { searchParams: Promise<Record<string, string | string[] | undefined>> };

const single = (value: string | string[] | undefined) => (typeof value === "string" ? value : undefined);

export default async function InboxPage({ searchParams }: Props) {
  await requirePageSession();
  const params = await searchParams;
  // Unknown filters show everything rather than an error: they are only filters.
  const type = inboxItemTypes.find((known) => known === single(params.type)) ?? null;
  const team = single(params.team);
  const teamId = team && isUuid(team) ? team : null;
  const archived = single(params.archived) === "1";
  let before = single(params.before) ?? null;
  const filter = { type: type ?? undefined, teamId: teamId ?? undefined, archived };
  let page: InboxPageData;
  try {
    page = await getInboxPage(db(), { ...filter, before: before ?? undefined });
  } catch (error) {
    // A cursor from an old link that no longer reads: start at the newest.
    if (!(error instanceof CadreError && error.code === "bad_request:cursor")) throw error;
    before = null;
    page = await getInboxPage(db(), filter);
  }
  const [counts, teams] = await Promise.all([countInboxNeedingAttention(db()), listTeams(db())]);
  return (
    <div className="page">
      {/* Questions end when their task does (tasks), approvals change state (approvals). */}
      <LiveRefresh tables={["inbox_items", "approvals", "tasks"]} />
      <InboxList
        view={{ type, teamId, archived, before }}
        teams={teams.map(({ id, name }) => ({ id, name }))}
        nextCursor={page.nextCursor}
        unreadCount={counts.unread}
        waitingCount={counts.waiting}
        items={page.items.map((item) => ({
          id: item.id,
          type: item.type,
          title: item.title,
          summary: item.summary,
          teamId: item.teamId,
          teamName: item.teamName,
          agentId: item.agentId,
          agentName: item.agentName,
          read: item.readAt !== null,
          createdAt: item.createdAt.toISOString(),
          question: item.question && toWire(item.question),
          approval: item.approval && toWire(item.approval),
        }))}
      />
    </div>
  );
}
