import { requireAgent } from "@/lib/db/queries/agents";
import { getConversationByMode } from "@/lib/db/queries/conversations";
import { listMessages } from "@/lib/db/queries/messages";
import { toApiMessage } from "@/lib/views/chat-messages";
import { parseId, parseSearchParams, route } from "@/lib/http/http";
import { webEngine } from "@/lib/http/server";
import { messagesQuery } from "./schema";

export const dynamic = "force-dynamic";
type Params = { params: Promise<{ agentId: string }> };

export const GET = route(async (request: Request, { params }: Params) => {
  const agentId = parseId((await params).agentId, "agent");
  const query = parseSearchParams(request, messagesQuery);
  const { db } = await webEngine();
  await requireAgent(db, agentId);
  const conversation = await getConversationByMode(db, agentId, query.mode);
  const messages = conversation
    ? await listMessages(db, conversation.id, { limit: query.limit, before: query.before })
    : [];
  return Response.json({ messages: messages.map(toApiMessage) });
});
