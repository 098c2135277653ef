import { z } from "zod";
import { getInboxItemView, setInboxItemRead } from "@/lib/db/queries/inbox-items";
import { notFound } from "@/lib/errors";
import { parseId, parseJsonBody, route } from "@/lib/http";
import { webEngine } from "@/lib/server";

export const dynamic = "force-dynamic";
type Params = { params: Promise<{ itemId: string }> };

const updateInboxItemBody = z.strictObject({ read: z.boolean() });

/** One item with the question or approval it carries. */
export const GET = route(async (_request: Request, { params }: Params) => {
  const itemId = parseId((await params).itemId, "inbox_item");
  const { db } = await webEngine();
  const item = await getInboxItemView(db, itemId);
  if (!item) throw notFound("inbox_item", itemId);
  return Response.json({ item });
});

export const PATCH = route(async (request: Request, { params }: Params) => {
  const itemId = parseId((await params).itemId, "inbox_item");
  const body = await parseJsonBody(request, updateInboxItemBody);
  const { db } = await webEngine();
  return Response.json({ item: await setInboxItemRead(db, itemId, body.read) });
});
