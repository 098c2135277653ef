import { streamChatReply } from "@/lib/engine/chat";
import { requireAgent } from "@/lib/db/queries/agents";
import { parseId, parseJsonBody, route } from "@/lib/http/http";
import { webEngine } from "@/lib/http/server";
import { CHAT_BODY_LIMIT_BYTES, chatBody } from "./schema";

export const dynamic = "force-dynamic";
export const maxDuration = 300;
type Params = { params: Promise<{ agentId: string }> };

export const POST = route(async (request: Request, { params }: Params) => {
  const agentId = parseId((await params).agentId, "agent");
  const { text, regenerate } = await parseJsonBody(request, chatBody, { maxBytes: CHAT_BODY_LIMIT_BYTES });
  const engine = await webEngine();
  await requireAgent(engine.db, agentId);
  return streamChatReply(engine, agentId, text, request.signal, { regenerate });
});
