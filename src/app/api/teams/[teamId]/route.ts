import { setTeamStatus } from "@/lib/agents/teams";
import { deleteTeam, listTeamAgents, requireTeam, updateTeam } from "@/lib/db/queries/teams";
import { parseId, parseJsonBody, route } from "@/lib/http";
import { webEngine } from "@/lib/server";
import { updateTeamBody } from "./schema";

export const dynamic = "force-dynamic";
type Params = { params: Promise<{ teamId: string }> };

export const GET = route(async (_request: Request, { params }: Params) => {
  const teamId = parseId((await params).teamId, "team");
  const { db } = await webEngine();
  const team = await requireTeam(db, teamId);
  return Response.json({ team, agents: await listTeamAgents(db, team.id) });
});

export const PATCH = route(async (request: Request, { params }: Params) => {
  const teamId = parseId((await params).teamId, "team");
  const body = await parseJsonBody(request, updateTeamBody);
  const engine = await webEngine();
  await requireTeam(engine.db, teamId);
  const { status, ...rest } = body;
  let team = Object.keys(rest).length ? await updateTeam(engine.db, teamId, rest) : await requireTeam(engine.db, teamId);
  if (status && status !== team.status) team = await setTeamStatus(engine, teamId, status);
  return Response.json({ team });
});

export const DELETE = route(async (_request: Request, { params }: Params) => {
  const teamId = parseId((await params).teamId, "team");
  const engine = await webEngine();
  const lead = (await listTeamAgents(engine.db, teamId)).find((agent) => agent.role === "lead");
  await deleteTeam(engine.db, teamId);
  if (lead) await engine.jobs.unscheduleLead(lead.id);
  return new Response(null, { status: 204 });
});
