import type { Metadata } from "next";
import { InboxList } from "@/components/inbox";
import { LiveRefresh } from "@/components/live-events";
import { requirePageSession } from "@/lib/auth";
import { db } from "@/lib/db/client";
import { listInboxView } from "@/lib/db/queries/views";

export const dynamic = "force-dynamic";
export const metadata: Metadata = { title: "Inbox" };

export default async function InboxPage() {
  await requirePageSession();
  const items = await listInboxView(db());
  return (
    <div className="page page-narrow">
      <LiveRefresh tables={["inbox_items"]} />
      <InboxList
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
        }))}
      />
    </div>
  );
}
