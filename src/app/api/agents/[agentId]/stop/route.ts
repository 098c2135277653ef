import { requireAgent } from "@/lib/db/queries/agents";
import { requestSessionStop } from "@/lib/db/queries/work-sessions";
import { parseId, route } from "@/lib/http";
import { webEngine } from "@/lib/server";

export const dynamic = "force-dynamic";
type Params = { params: Promise<{ agentId: string }> };

/** Stops the agent's running work session (flow 7). `session` is null when it was not working. */
export const POST = route(async (_request: Request, { params }: Params) => {
  const agentId = parseId((await params).agentId, "agent");
  const { db } = await webEngine();
  await requireAgent(db, agentId);
  return Response.json({ session: await requestSessionStop(db, agentId) });
});
