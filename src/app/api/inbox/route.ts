import { countUnreadInboxItems, listInboxItems } from "@/lib/db/queries/inbox-items";
import { route } from "@/lib/http";
import { webEngine } from "@/lib/server";

export const dynamic = "force-dynamic";

export const GET = route(async () => {
  const { db } = await webEngine();
  const [items, unreadCount] = await Promise.all([listInboxItems(db), countUnreadInboxItems(db)]);
  return Response.json({ items, unreadCount });
});
