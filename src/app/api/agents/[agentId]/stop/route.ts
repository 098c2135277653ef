import { stopAgent } from "@/lib/engine/stop";
import { writeUnderAgent } from "@/lib/db/queries/teams";
import { parseId, route } from "@/lib/http/http";
import { webEngine } from "@/lib/http/server";

export const dynamic = "force-dynamic";
type Params = { params: Promise<{ agentId: string }> };

/**
 * Stops the agent (flow 7): its running work session, if any (`session`, with
 * stopRequestedAt; null when it was not working), and every task it was given so far,
 * including what was about to start (`cancelled`).
 */
export const POST = route(async (_request: Request, { params }: Params) => {
  const agentId = parseId((await params).agentId, "agent");
  const { db, jobs } = await webEngine();
  return Response.json(await writeUnderAgent(db, agentId, (tx) => stopAgent(tx, jobs, agentId)));
});
