import { getInboxItemView, setInboxItemArchived, setInboxItemRead } from "@/lib/db/queries/inbox-items";
import { notFound } from "@/lib/errors";
import { parseId, parseJsonBody, route } from "@/lib/http/http";
import { webEngine } from "@/lib/http/server";
import { updateInboxItemBody } from "./schema";

export const dynamic = "force-dynamic";
type Params = { params: Promise<{ itemId: string }> };

/** One item with the question or approval it carries. */
export const GET = route(async (_request: Request, { params }: Params) => {
  const itemId = parseId((await params).itemId, "inbox_item");
  const { db } = await webEngine();
  const item = await getInboxItemView(db, itemId);
  if (!item) throw notFound("inbox_item", itemId);
  return Response.json({ item });
});

/**
 * `{read}` marks it read or unread; `{archived}` archives it (and marks it read) or brings it
 * back. A question or approval still waiting for the person is a 409: answer or decide first.
 * Archiving comes first, so `{archived: true, read: false}` leaves an unread item in the archive.
 */
export const PATCH = route(async (request: Request, { params }: Params) => {
  const itemId = parseId((await params).itemId, "inbox_item");
  const body = await parseJsonBody(request, updateInboxItemBody);
  const { db } = await webEngine();
  const item = await db.transaction(async (tx) => {
    const archived = body.archived !== undefined ? await setInboxItemArchived(tx, itemId, body.archived) : null;
    return body.read !== undefined ? setInboxItemRead(tx, itemId, body.read) : archived;
  });
  return Response.json({ item });
});
