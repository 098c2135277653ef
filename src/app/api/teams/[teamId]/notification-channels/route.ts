import { parseId, parseJsonBody, route } from "@/lib/http/http";
import { createNotificationChannel, listTeamNotifications } from "@/lib/notifications/channels";
import { webEngine } from "@/lib/http/server";
import { createChannelBody } from "./schema";

export const dynamic = "force-dynamic";
type Params = { params: Promise<{ teamId: string }> };

/** GET → {channels, deliveries}: the team's channels (never their secrets) and its latest deliveries. */
export const GET = route(async (_request: Request, { params }: Params) => {
  const teamId = parseId((await params).teamId, "team");
  const { db } = await webEngine();
  return Response.json(await listTeamNotifications(db, teamId), { headers: { "cache-control": "no-store" } });
});

/** POST → 201 {channel, secret?}: a webhook channel's signing secret is shown this once. */
export const POST = route(async (request: Request, { params }: Params) => {
  const teamId = parseId((await params).teamId, "team");
  const body = await parseJsonBody(request, createChannelBody);
  const { db } = await webEngine();
  return Response.json(await createNotificationChannel(db, teamId, body), {
    status: 201,
    headers: { "cache-control": "no-store" },
  });
});
