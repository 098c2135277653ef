import { testMcpServer } from "@/lib/mcp/servers";
import { parseId, route } from "@/lib/http/http";
import { webEngine } from "@/lib/http/server";

export const dynamic = "force-dynamic";
type Params = { params: Promise<{ serverId: string }> };

/** Test connection: `{ ok: true, tools, ms }` within 2 s, or `{ ok: false, error, ms }` (200 either way: the server answered or not, the request did not fail). */
export const POST = route(async (_request: Request, { params }: Params) => {
  const serverId = parseId((await params).serverId, "mcp_server");
  const { db } = await webEngine();
  return Response.json(await testMcpServer(db, serverId));
});
