import { assignTask } from "@/lib/domain/tasks";
import { requireAgent } from "@/lib/db/queries/agents";
import { listTasksByAgent } from "@/lib/db/queries/tasks";
import { writeUnderAgent } from "@/lib/db/queries/teams";
import { parseId, parseJsonBody, route } from "@/lib/http/http";
import { webEngine } from "@/lib/http/server";
import { createTaskBody } from "./schema";

export const dynamic = "force-dynamic";
type Params = { params: Promise<{ agentId: string }> };

export const GET = route(async (_request: Request, { params }: Params) => {
  const agentId = parseId((await params).agentId, "agent");
  const { db } = await webEngine();
  await requireAgent(db, agentId);
  return Response.json({ tasks: await listTasksByAgent(db, agentId) });
});

export const POST = route(async (request: Request, { params }: Params) => {
  const agentId = parseId((await params).agentId, "agent");
  const body = await parseJsonBody(request, createTaskBody);
  const { db, jobs } = await webEngine();
  const task = await writeUnderAgent(db, agentId, (tx) => assignTask(tx, jobs, { agentId, source: "user", ...body }));
  return Response.json({ task }, { status: 201 });
});
