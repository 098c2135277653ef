import { z } from "zod";
import { setInboxItemRead } from "@/lib/db/queries/inbox-items";
import { parseId, parseJsonBody, route } from "@/lib/http";
import { webEngine } from "@/lib/server";

export const dynamic = "force-dynamic";
type Params = { params: Promise<{ itemId: string }> };

const updateInboxItemBody = z.strictObject({ read: z.boolean() });

export const PATCH = route(async (request: Request, { params }: Params) => {
  const itemId = parseId((await params).itemId, "inbox_item");
  const body = await parseJsonBody(request, updateInboxItemBody);
  const { db } = await webEngine();
  return Response.json({ item: await setInboxItemRead(db, itemId, body.read) });
});
