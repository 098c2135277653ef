import { listToolPolicies, setToolPolicy } from "@/lib/engine/tool-policies";
import { requireTeam } from "@/lib/db/queries/teams";
import { parseId, parseJsonBody, route } from "@/lib/http/http";
import { webEngine } from "@/lib/http/server";
import { setToolPolicyBody } from "./schema";

export const dynamic = "force-dynamic";
type Params = { params: Promise<{ teamId: string }> };

/** `{ tools, team, agents }`: every tool with its default, the team's rules, and each agent's overrides. */
export const GET = route(async (_request: Request, { params }: Params) => {
  const teamId = parseId((await params).teamId, "team");
  const { db } = await webEngine();
  await requireTeam(db, teamId);
  return Response.json(await listToolPolicies(db, teamId));
});

export const PUT = route(async (request: Request, { params }: Params) => {
  const teamId = parseId((await params).teamId, "team");
  const body = await parseJsonBody(request, setToolPolicyBody);
  const { db } = await webEngine();
  await setToolPolicy(db, teamId, { toolName: body.toolName, policy: body.policy, agentId: body.agentId ?? null });
  return Response.json(await listToolPolicies(db, teamId));
});
