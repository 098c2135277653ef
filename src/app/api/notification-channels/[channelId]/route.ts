import { parseId, parseJsonBody, route } from "@/lib/http/http";
import { changeNotificationChannel, removeNotificationChannel } from "@/lib/notifications/channels";
import { webEngine } from "@/lib/http/server";
import { updateChannelBody } from "./schema";

export const dynamic = "force-dynamic";
type Params = { params: Promise<{ channelId: string }> };

export const PATCH = route(async (request: Request, { params }: Params) => {
  const channelId = parseId((await params).channelId, "notification_channel");
  const body = await parseJsonBody(request, updateChannelBody);
  const { db } = await webEngine();
  return Response.json({ channel: await changeNotificationChannel(db, channelId, body) });
});

/** DELETE → 204: the channel and its delivery log. */
export const DELETE = route(async (_request: Request, { params }: Params) => {
  const channelId = parseId((await params).channelId, "notification_channel");
  const { db } = await webEngine();
  await removeNotificationChannel(db, channelId);
  return new Response(null, { status: 204 });
});
