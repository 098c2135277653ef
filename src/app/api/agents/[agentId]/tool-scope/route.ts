import { setToolScope, toolScopeBody } from "@/lib/mcp/servers";
import { parseId, parseJsonBody, route } from "@/lib/http/http";
import { webEngine } from "@/lib/http/server";

export const dynamic = "force-dynamic";
type Params = { params: Promise<{ agentId: string }> };

/** `{ scope: { allow: [...] } | null }` → `{ agent }`: which built-in tools and MCP tools (`SERVER__TOOL`, `SERVER__*`) the agent may use; null: all. */
export const PUT = route(async (request: Request, { params }: Params) => {
  const agentId = parseId((await params).agentId, "agent");
  const body = await parseJsonBody(request, toolScopeBody);
  const { db } = await webEngine();
  return Response.json({ agent: await setToolScope(db, agentId, body.scope) });
});
