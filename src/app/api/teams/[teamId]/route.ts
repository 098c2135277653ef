import { editTeam, removeTeam, setTeamStatus } from "@/lib/domain/teams";
import { listTeamAgents, requireTeam, writeUnderTeam } from "@/lib/db/queries/teams";
import { parseId, parseJsonBody, route } from "@/lib/http/http";
import { webEngine } from "@/lib/http/server";
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
  const { status, ...rest } = body;
  const team = await writeUnderTeam(engine.db, teamId, async (tx, held) => {
    const team = Object.keys(rest).length ? await editTeam({ ...engine, db: tx }, teamId, rest) : held;
    return status && status !== team.status ? setTeamStatus({ ...engine, db: tx }, teamId, status) : team;
  });
  return Response.json({ team });
});

export const DELETE = route(async (_request: Request, { params }: Params) => {
  const teamId = parseId((await params).teamId, "team");
  await removeTeam(await webEngine(), teamId);
  return new Response(null, { status: 204 });
});
