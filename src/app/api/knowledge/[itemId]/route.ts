import { deleteKnowledgeItem } from "@/lib/db/queries/knowledge-items";
import { notFound } from "@/lib/errors";
import { parseId, route } from "@/lib/http";
import { webEngine } from "@/lib/server";

export const dynamic = "force-dynamic";
type Params = { params: Promise<{ itemId: string }> };

export const DELETE = route(async (_request: Request, { params }: Params) => {
  const itemId = parseId((await params).itemId, "knowledge_item");
  const { db } = await webEngine();
  if (!(await deleteKnowledgeItem(db, itemId))) throw notFound("knowledge_item", itemId);
  return new Response(null, { status: 204 });
});
