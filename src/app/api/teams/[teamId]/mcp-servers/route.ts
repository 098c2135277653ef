import { addMcpServer, listMcpServerViews, mcpServerView, newMcpServerBody } from "@/lib/mcp/servers";
import { requireTeam } from "@/lib/db/queries/teams";
import { parseId, parseJsonBody, route } from "@/lib/http/http";
import { webEngine } from "@/lib/http/server";

export const dynamic = "force-dynamic";
type Params = { params: Promise<{ teamId: string }> };

/** `{ servers }`: each without its secrets (header and environment values), with its last known state and tools. */
export const GET = route(async (_request: Request, { params }: Params) => {
  const teamId = parseId((await params).teamId, "team");
  const { db } = await webEngine();
  await requireTeam(db, teamId);
  return Response.json({ servers: await listMcpServerViews(db, teamId) });
});

export const POST = route(async (request: Request, { params }: Params) => {
  const teamId = parseId((await params).teamId, "team");
  const body = await parseJsonBody(request, newMcpServerBody);
  const { db } = await webEngine();
  return Response.json({ server: mcpServerView(await addMcpServer(db, teamId, body)) }, { status: 201 });
});
