import { markAllInboxItemsRead } from "@/lib/db/queries/inbox-items";
import { route } from "@/lib/http/http";
import { webEngine } from "@/lib/http/server";

export const dynamic = "force-dynamic";

/** POST /api/inbox/read-all → { updated }: marks every unread inbox item read. */
export const POST = route(async () => {
  const { db } = await webEngine();
  return Response.json({ updated: await markAllInboxItemsRead(db) });
});
