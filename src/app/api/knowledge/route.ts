import { z } from "zod";
import { searchKnowledgeItems, withKnowledgeSources } from "@/lib/db/queries/knowledge-items";
import { knowledgeItemTypes } from "@/lib/db/schema";
import { parseSearchParams, route } from "@/lib/http/http";
import { webEngine } from "@/lib/http/server";

export const dynamic = "force-dynamic";

const knowledgeQuery = z.object({
  agentId: z.uuid().optional(),
  teamId: z.uuid().optional(),
  q: z.string().max(400).optional(),
  type: z.enum(knowledgeItemTypes).optional(),
  limit: z.coerce.number().int().min(1).max(500).default(100),
});

/**
 * Knowledge items (`agentId`: those with a source from that agent), each with `sources`: every
 * report of it, oldest first (`{agentId, agentName, conversationId, conversationMode, messageId, url, createdAt}`).
 */
export const GET = route(async (request: Request) => {
  const query = parseSearchParams(request, knowledgeQuery);
  const { db } = await webEngine();
  return Response.json({ items: await withKnowledgeSources(db, await searchKnowledgeItems(db, query)) });
});
