import { createTeam } from "@/lib/domain/teams";
import { listTeams } from "@/lib/db/queries/teams";
import { parseJsonBody, route } from "@/lib/http/http";
import { webEngine } from "@/lib/http/server";
import { createTeamBody } from "./schema";

export const dynamic = "force-dynamic";

export const GET = route(async () => {
  const { db } = await webEngine();
  return Response.json({ teams: await listTeams(db) });
});

export const POST = route(async (request: Request) => {
  const body = await parseJsonBody(request, createTeamBody);
  const engine = await webEngine();
  const { team, lead } = await createTeam(engine, body);
  return Response.json({ team, lead }, { status: 201 });
});
