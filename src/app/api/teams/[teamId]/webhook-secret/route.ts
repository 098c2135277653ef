import { deleteWebhookSecret, getWebhookSecret, setWebhookSecret } from "@/lib/db/queries/webhooks";
import { requireTeam, writeUnderTeam } from "@/lib/db/queries/teams";
import { notFound } from "@/lib/errors";
import { parseId, route } from "@/lib/http/http";
import { webEngine } from "@/lib/http/server";
import { generateWebhookSecret } from "@/lib/http/webhook-signature";

export const dynamic = "force-dynamic";
type Params = { params: Promise<{ teamId: string }> };

/** GET → {configured, createdAt}: whether the team accepts webhooks. The secret itself is never shown again. */
export const GET = route(async (_request: Request, { params }: Params) => {
  const teamId = parseId((await params).teamId, "team");
  const { db } = await webEngine();
  await requireTeam(db, teamId);
  const stored = await getWebhookSecret(db, teamId);
  return Response.json({ configured: stored !== null, createdAt: stored?.createdAt ?? null });
});

/** POST → 201 {secret, createdAt}: a new secret (the old one stops working at once), shown this once. */
export const POST = route(async (_request: Request, { params }: Params) => {
  const teamId = parseId((await params).teamId, "team");
  const { db } = await webEngine();
  const stored = await writeUnderTeam(db, teamId, (tx) => setWebhookSecret(tx, teamId, generateWebhookSecret()));
  return Response.json(
    { secret: stored.secret, createdAt: stored.createdAt },
    { status: 201, headers: { "cache-control": "no-store" } },
  );
});

/** DELETE → 204: the team stops accepting webhooks. 404 when it had no secret. */
export const DELETE = route(async (_request: Request, { params }: Params) => {
  const teamId = parseId((await params).teamId, "team");
  const { db } = await webEngine();
  await requireTeam(db, teamId);
  if (!(await deleteWebhookSecret(db, teamId))) throw notFound("webhook_secret", teamId);
  return new Response(null, { status: 204 });
});
