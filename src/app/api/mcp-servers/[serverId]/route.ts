import { changeMcpServer, mcpServerChangesBody, mcpServerView, removeMcpServer } from "@/lib/mcp/servers";
import { parseId, parseJsonBody, route } from "@/lib/http/http";
import { webEngine } from "@/lib/http/server";

export const dynamic = "force-dynamic";
type Params = { params: Promise<{ serverId: string }> };

export const PATCH = route(async (request: Request, { params }: Params) => {
  const serverId = parseId((await params).serverId, "mcp_server");
  const body = await parseJsonBody(request, mcpServerChangesBody);
  const { db } = await webEngine();
  return Response.json({ server: mcpServerView(await changeMcpServer(db, serverId, body)) });
});

export const DELETE = route(async (_request: Request, { params }: Params) => {
  const serverId = parseId((await params).serverId, "mcp_server");
  const { db } = await webEngine();
  await removeMcpServer(db, serverId);
  return new Response(null, { status: 204 });
});
