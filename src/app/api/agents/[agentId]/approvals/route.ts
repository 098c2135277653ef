import { requireAgent } from "@/lib/db/queries/agents";
import { listAgentApprovals } from "@/lib/db/queries/approvals";
import { parseId, route } from "@/lib/http/http";
import { webEngine } from "@/lib/http/server";

export const dynamic = "force-dynamic";
type Params = { params: Promise<{ agentId: string }> };

/** The agent's approvals, newest first: the chat and the work log show each beside its call. */
export const GET = route(async (_request: Request, { params }: Params) => {
  const agentId = parseId((await params).agentId, "agent");
  const { db } = await webEngine();
  await requireAgent(db, agentId);
  return Response.json({ approvals: await listAgentApprovals(db, agentId) });
});
