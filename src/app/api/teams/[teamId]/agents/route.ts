import { createSubordinate } from "@/lib/db/queries/agents";
import { writeUnderTeam } from "@/lib/db/queries/teams";
import { parseId, parseJsonBody, route } from "@/lib/http/http";
import { webEngine } from "@/lib/http/server";
import { createAgentBody } from "./schema";

export const dynamic = "force-dynamic";
type Params = { params: Promise<{ teamId: string }> };

export const POST = route(async (request: Request, { params }: Params) => {
  const teamId = parseId((await params).teamId, "team");
  const body = await parseJsonBody(request, createAgentBody);
  const { db } = await webEngine();
  const agent = await writeUnderTeam(db, teamId, (tx) => createSubordinate(tx, teamId, body));
  return Response.json({ agent }, { status: 201 });
});
