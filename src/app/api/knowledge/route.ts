import { z } from "zod";
import { recallKnowledge } from "@/lib/domain/knowledge-recall";
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
 * With `q`: the items that match it by words or by meaning, best first, each with `matched`
 * (`{words, meaning}`: why it was found), as the knowledge page shows them.
 */
export const GET = route(async (request: Request) => {
  const { q, ...query } = parseSearchParams(request, knowledgeQuery);
  const { db, embedding } = await webEngine();
  const items = q?.trim()
    ? await recallKnowledge({ db, model: embedding, agentId: null, teamId: null }, { ...query, q }).then((found) =>
        found.map(({ similarity: _similarity, ...item }) => item),
      )
    : await searchKnowledgeItems(db, query);
  return Response.json({ items: await withKnowledgeSources(db, items) });
});
