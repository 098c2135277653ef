import { editKnowledgeItem } from "@/lib/domain/knowledge-items";
import { deleteKnowledgeItem, withKnowledgeSources } from "@/lib/db/queries/knowledge-items";
import { notFound } from "@/lib/errors";
import { parseId, parseJsonBody, route } from "@/lib/http/http";
import { webEngine } from "@/lib/http/server";
import { updateKnowledgeItemBody } from "./schema";

export const dynamic = "force-dynamic";
type Params = { params: Promise<{ itemId: string }> };

/** The person corrects an item: `{content?, type?, sourceUrl?}` → `{item}` (with its `sources`, as GET /api/knowledge). */
export const PATCH = route(async (request: Request, { params }: Params) => {
  const itemId = parseId((await params).itemId, "knowledge_item");
  const body = await parseJsonBody(request, updateKnowledgeItemBody);
  const { db, jobs } = await webEngine();
  const item = await editKnowledgeItem(db, jobs, itemId, body);
  if (!item) throw notFound("knowledge_item", itemId);
  const [withSources] = await withKnowledgeSources(db, [item]);
  return Response.json({ item: withSources });
});

export const DELETE = route(async (_request: Request, { params }: Params) => {
  const itemId = parseId((await params).itemId, "knowledge_item");
  const { db } = await webEngine();
  if (!(await deleteKnowledgeItem(db, itemId))) throw notFound("knowledge_item", itemId);
  return new Response(null, { status: 204 });
});
