import { removeSubordinate } from "@/lib/domain/tasks";
import { editAgent } from "@/lib/domain/teams";
import { requireAgent } from "@/lib/db/queries/agents";
import { writeUnderAgent } from "@/lib/db/queries/teams";
import { parseId, parseJsonBody, route } from "@/lib/http/http";
import { webEngine } from "@/lib/http/server";
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
  return Response.json({ agent: await editAgent(await webEngine(), agentId, body) });
});

export const DELETE = route(async (_request: Request, { params }: Params) => {
  const agentId = parseId((await params).agentId, "agent");
  const { db, jobs } = await webEngine();
  await writeUnderAgent(db, agentId, (tx) => removeSubordinate(tx, jobs, agentId));
  return new Response(null, { status: 204 });
});
