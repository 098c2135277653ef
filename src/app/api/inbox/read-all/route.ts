import { markAllInboxItemsRead } from "@/lib/db/queries/inbox-items";
import { route } from "@/lib/http";
import { webEngine } from "@/lib/server";

export const dynamic = "force-dynamic";

/** POST /api/inbox/read-all → { updated }: marks every unread inbox item read. */
export const POST = route(async () => {
  const { db } = await webEngine();
  return Response.json({ updated: await markAllInboxItemsRead(db) });
});
