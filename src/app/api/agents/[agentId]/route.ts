import { removeSubordinate } from "@/lib/agents/tasks";
import { requireAgent, updateAgent } from "@/lib/db/queries/agents";
import { getTeam, writeUnderAgent } from "@/lib/db/queries/teams";
import { env } from "@/lib/env";
import { parseId, parseJsonBody, route } from "@/lib/http";
import { webEngine } from "@/lib/server";
import { updateAgentBody } from "./schema";

export const dynamic = "force-dynamic";
type Params = { params: Promise<{ agentId: string }> };

export const GET = route(async (_request: Request, { params }: Params) => {
  const agentId = parseId((await params).agentId, "agent");
  const { db } = await webEngine();
  return Response.json({ agent: await requireAgent(db, agentId) });
});

export const PATCH = route(async (request: Request, { params }: Params) => {
  const agentId = parseId((await params).agentId, "agent");
  const body = await parseJsonBody(request, updateAgentBody);
  const { db, jobs } = await webEngine();
  const agent = await writeUnderAgent(db, agentId, (tx) => updateAgent(tx, agentId, body));
  // A lead's new schedule takes effect now, not at the next worker start; a paused team stays unscheduled.
  if (body.schedule !== undefined && agent.role === "lead" && (await getTeam(db, agent.teamId))?.status === "active") {
    await jobs.scheduleLead(agent.id, agent.schedule ?? env().LEAD_SCHEDULE);
  }
  return Response.json({ agent });
});

export const DELETE = route(async (_request: Request, { params }: Params) => {
  const agentId = parseId((await params).agentId, "agent");
  const { db, jobs } = await webEngine();
  await writeUnderAgent(db, agentId, (tx) => removeSubordinate(tx, jobs, agentId));
  return new Response(null, { status: 204 });
});
