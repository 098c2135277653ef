import type { Metadata } from "next";
import { InboxList } from "@/components/inbox";
import { LiveRefresh } from "@/components/live-events";
import { toWire } from "@/lib/api-client";
import { requirePageSession } from "@/lib/auth";
import { db } from "@/lib/db/client";
import { countInboxNeedingAttention } from "@/lib/db/queries/inbox-items";
import { listInboxView } from "@/lib/db/queries/views";
import { inboxItemTypes, type InboxItemType } from "@/lib/db/schema";

export const dynamic = "force-dynamic";
export const metadata: Metadata = { title: "Inbox" };

type Props = { searchParams: Promise<{ type?: string | string[] }> };

export default async function InboxPage({ searchParams }: Props) {
  await requirePageSession();
  const { type } = await searchParams;
  // An unknown ?type= shows everything rather than an error: it is only a filter.
  const filter = inboxItemTypes.find((known) => known === type) ?? null;
  const [items, counts] = await Promise.all([listInboxView(db(), { type: filter ?? undefined }), countInboxNeedingAttention(db())]);
  return (
    <div className="page page-narrow">
      {/* Questions end when their task does (tasks), approvals change state (approvals). */}
      <LiveRefresh tables={["inbox_items", "approvals", "tasks"]} />
      <InboxList
        filter={filter as InboxItemType | null}
        unreadCount={counts.unread}
        waitingCount={counts.waiting}
        items={items.map((item) => ({
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
