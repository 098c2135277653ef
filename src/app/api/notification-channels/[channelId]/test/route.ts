import { parseId, route } from "@/lib/http/http";
import { sendTestNotification } from "@/lib/notifications/channels";
import { webEngine } from "@/lib/http/server";

export const dynamic = "force-dynamic";
type Params = { params: Promise<{ channelId: string }> };

/** POST → 202 {notification}: a test notification is queued for this channel; the delivery log shows how it went. */
export const POST = route(async (_request: Request, { params }: Params) => {
  const channelId = parseId((await params).channelId, "notification_channel");
  const { db, jobs } = await webEngine();
  return Response.json({ notification: await sendTestNotification(db, jobs, channelId) }, { status: 202 });
});
